"""The models a cross-cluster job trains, and how a trace job gets one.

A trace (Philly, Helios, ...) gives a job's GPUs, submit time and running time, not its model.
The cost model (:mod:`~topoopt.sim.crosscluster.cost`) needs one: its parameters (gradient
bytes of the data-parallel all-reduce, compute), its layers (how deep a pipeline can be) and
its hidden size and sequence length (activations sent between pipeline stages). The catalog is
SpiderFlow's *NewWorkload* (§5.1): GPT-2 350M, 1.3B, 4.2B, OPT 6.7B, 13B, BERT 110M, 340M,
with the published shapes of those models (GPT-2 4.2B, which has no public shape, as 36 layers
of hidden size 3072).

**Memory.** Training with mixed-precision Adam holds :data:`STATE_BYTES_PER_PARAM` bytes per
parameter (fp16 weights and gradients, fp32 master weights and two moments); a pipeline stage
holds ``ceil(L / p) / L`` of them, and must fit :data:`GPU_MEMORY_BYTES` (an 80 GB A100;
activations are not counted). :meth:`Model.min_stages` is the shallowest pipeline that fits:
1 for the models up to GPT-2 4.2B, 2 for OPT 6.7B, 3 for OPT 13B.

**Which model a job trains** (:func:`model_for`): with ``mix="newworkload"`` (default), one of
the catalog's models drawn uniformly among those a job of its GPUs can train (a divisor ``p``
of its GPUs with ``min_stages <= p <= layers``), from a generator seeded by the run's seed and
the job id, so that a job trains the same model under every policy and in every run with that
seed; with a model's name, every job trains that model (a job too small for it is rejected by
the simulator with that reason).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

from topoopt.core.errors import TopooptError

GPU_MEMORY_BYTES = 80e9
"""Memory of one GPU (an 80 GB A100, SpiderFlow's testbed GPU)."""
STATE_BYTES_PER_PARAM = 16
"""Training state per parameter under mixed-precision Adam: fp16 weights (2) and gradients (2),
fp32 master weights (4) and two moments (8)."""


@dataclass(frozen=True)
class Model:
    """A transformer trained with data and pipeline parallelism (no tensor parallelism,
    SpiderFlow §2.2.1).

    Attributes
    ----------
    name
        Catalog name.
    params
        Parameters.
    layers
        Transformer layers (the most pipeline stages).
    hidden
        Hidden size (the width of the activations a stage sends on).
    seq_len
        Tokens per sequence (a micro-batch is one sequence).
    """

    name: str
    params: float
    layers: int
    hidden: int
    seq_len: int

    def min_stages(self) -> int:
        """The shallowest pipeline whose stages fit one GPU's memory (module docstring)."""
        for p in range(1, self.layers + 1):
            share = math.ceil(self.layers / p) / self.layers
            if STATE_BYTES_PER_PARAM * self.params * share <= GPU_MEMORY_BYTES:
                return p
        raise TopooptError(f"model {self.name}: a layer does not fit one GPU")  # pragma: no cover

    def stage_choices(self, gpus: int) -> list[int]:
        """The pipeline depths ``p`` a job of ``gpus`` GPUs can use: divisors of ``gpus``
        (``d = gpus / p`` replicas) from :meth:`min_stages` to the layers, ascending."""
        low = self.min_stages()
        return [p for p in range(low, min(gpus, self.layers) + 1) if gpus % p == 0]


CATALOG: dict[str, Model] = {
    m.name: m
    for m in (
        Model("bert-110m", 110e6, 12, 768, 512),
        Model("bert-340m", 340e6, 24, 1024, 512),
        Model("gpt2-350m", 350e6, 24, 1024, 1024),
        Model("gpt2-1.3b", 1.3e9, 24, 2048, 1024),
        Model("gpt2-4.2b", 4.2e9, 36, 3072, 1024),
        Model("opt-6.7b", 6.7e9, 32, 4096, 2048),
        Model("opt-13b", 13e9, 40, 5120, 2048),
    )
}
"""SpiderFlow's NewWorkload models (§5.1)."""

MIX = "newworkload"
"""The default ``mix``: a catalog model drawn per job."""


def check_mix(mix: str) -> str:
    """``mix`` if it is :data:`MIX` or a catalog name, else a :class:`TopooptError` listing
    them."""
    if mix != MIX and mix not in CATALOG:
        raise TopooptError(
            f"model: unknown {mix!r}; give {MIX} (a model drawn per job) or one of "
            f"{', '.join(CATALOG)}"
        )
    return mix


def model_for(job_id: str, gpus: int, seed: int, mix: str = MIX) -> Model | str:
    """The model job ``job_id`` of ``gpus`` GPUs trains (module docstring), or why it can
    train none.

    Examples
    --------
    >>> model_for("7", 1, seed=0, mix="gpt2-1.3b").name
    'gpt2-1.3b'
    >>> print(model_for("7", 1, seed=0, mix="opt-13b"))
    model opt-13b does not fit 1 GPUs: its memory needs 3 to 40 pipeline stages dividing them
    >>> model_for("7", 4, seed=0) == model_for("7", 4, seed=0)
    True
    """
    if mix != MIX:
        model = CATALOG[check_mix(mix)]
        if not model.stage_choices(gpus):
            return (
                f"model {model.name} does not fit {gpus} GPUs: its memory needs "
                f"{model.min_stages()} to {model.layers} pipeline stages dividing them"
            )
        return model
    fits = [m for m in CATALOG.values() if m.stage_choices(gpus)]
    rng = np.random.default_rng([seed, zlib.crc32(job_id.encode("utf-8"))])
    return fits[int(rng.integers(len(fits)))]  # bert-110m trains on any number of GPUs


__all__ = [
    "CATALOG",
    "GPU_MEMORY_BYTES",
    "MIX",
    "STATE_BYTES_PER_PARAM",
    "Model",
    "check_mix",
    "model_for",
]
