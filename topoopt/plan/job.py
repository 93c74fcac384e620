"""A training job for ``topoopt plan``: its GPUs, its model and how it is cut into the
partition graph's vertices (SpiderFlow §4.2).

JSON (``"format": "topoopt-job"``, version 1; the JSON Schema is :data:`SCHEMA`)::

    {"format": "topoopt-job", "version": 1, "name": "gpt-small",
     "gpus": 12,
     "model": {"layers": 12, "compute_s": 0.004, "param_bytes": 1.5e8,
               "activation_bytes": 1.6e7, "micro_batches": 8},
     "blocks": 6, "replicas": 1,
     "alpha": 1.0, "beta": 1.0, "use_all_gpus": true, "source": "a"}

``model.layers`` is a layer count with ``compute_s`` and ``param_bytes`` per layer (the
compact form), or a list of ``{"compute_s", "param_bytes"}`` objects. The figures are those of
a parallelconfig layer: forward + backward time of one micro-batch (s), gradient bytes
all-reduced per iteration; ``activation_bytes`` cross a stage boundary per micro-batch
(forward and backward together); ``micro_batches`` make one iteration of the whole job.

**Units.** The layers are split into ``blocks`` contiguous blocks (by layer count, the first
``L mod blocks`` one layer longer, as parallelconfig splits stages), and the job runs
``replicas`` data-parallel copies of the block chain *between* clusters: the partition graph
has ``blocks × replicas`` vertices (units) ``b<i>`` (one replica) or ``b<i>r<j>``, in replica-major
order, each of ``gpus / (blocks × replicas)`` GPUs. Edges (traffic in GB per step, as the
partition family reads it):

* *activation* ``b<i>r<j> – b<i+1>r<j>``: ``activation_bytes × M_r / 10⁹`` with
  ``M_r = micro_batches / replicas`` the micro-batches of one replica;
* *gradient* (``replicas ≥ 2``): a ring over the replicas of each block, each edge
  ``2 (R − 1) / R × param_bytes(block) / 10⁹`` (what a ring all-reduce sends per link; one
  edge when ``R = 2``).

Every rule is checked on construction and names the field; :meth:`Job.load` and
:meth:`Job.from_dict` put the file name first (``job.json: blocks: ...``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.safejson import read_json_file
from topoopt.core.schema import DRAFT, NAME, array, integer, number, obj, validate
from topoopt.parallelconfig.instance import Layer, split_layers
from topoopt.parallelconfig.schema import MAX_BYTES, MAX_WEIGHT

FORMAT = "topoopt-job"
"""The ``"format"`` of a job description."""

VERSION = 1
"""The version this topoopt writes and reads."""

MAX_GPUS = 1_000_000
"""Most GPUs of one job."""

MAX_UNITS = 100_000
"""Most vertices (``blocks × replicas``) of a job's partition graph."""

LAYER = obj(
    {
        "compute_s": number(0.0, 1e6, "Forward + backward time of one micro-batch, s (> 0)."),
        "param_bytes": number(0.0, MAX_BYTES, "Gradient bytes all-reduced per iteration."),
    },
    ["compute_s", "param_bytes"],
)
MODEL = obj(
    {
        "layers": {
            "anyOf": [integer(1, 1_000_000, "Number of identical layers."), array(LAYER, 1)],
            "description": "A layer count (with compute_s and param_bytes) or a list of layers.",
        },
        "compute_s": number(0.0, 1e6, "Per layer, with a layer count."),
        "param_bytes": number(0.0, MAX_BYTES, "Per layer, with a layer count."),
        "activation_bytes": number(
            0.0, MAX_BYTES, "Bytes crossing a stage boundary per micro-batch."
        ),
        "micro_batches": integer(1, 1_000_000, "Micro-batches of one iteration of the job."),
    },
    ["layers", "activation_bytes", "micro_batches"],
)
SCHEMA: dict[str, Any] = {
    "$schema": DRAFT,
    "title": "topoopt job description (topoopt plan)",
    **obj(
        {
            "format": {"const": FORMAT},
            "version": {"const": VERSION},
            "name": NAME,
            "gpus": integer(1, MAX_GPUS, "GPUs the job asks for."),
            "model": MODEL,
            "blocks": integer(1, MAX_UNITS, "Blocks of layers (default: see docs/plan.md)."),
            "replicas": integer(1, MAX_UNITS, "Data-parallel copies between clusters."),
            "alpha": number(0.0, MAX_WEIGHT, "Weight of T_dp (default 1)."),
            "beta": number(0.0, MAX_WEIGHT, "Weight of T_pp (default 1)."),
            "use_all_gpus": {"type": "boolean", "description": "Run a rank on every GPU."},
            "source": {**NAME, "description": "The cluster the job arrives at (optional)."},
        },
        ["format", "version", "gpus", "model"],
    ),
}
"""The JSON Schema (draft 2020-12) of a job description."""

EdgeKind = Literal["activation", "gradient"]


@dataclass(frozen=True)
class Unit:
    """A vertex of the job's partition graph: block ``block`` of replica ``replica``, its
    GPUs, and the block's compute (s per micro-batch) and gradient bytes."""

    name: str
    block: int
    replica: int
    gpus: int
    compute_s: float
    param_bytes: float


@dataclass(frozen=True)
class JobEdge:
    """Traffic between two units (GB per step) and what causes it."""

    u: str
    v: str
    traffic: float
    kind: EdgeKind


def default_blocks(gpus: int, replicas: int, n_layers: int) -> int:
    """The most blocks (at most one per layer) that cut ``gpus / replicas`` GPUs into equal
    units: the largest divisor of ``gpus // replicas`` not above ``n_layers``.

    Examples
    --------
    >>> default_blocks(256, 1, 24), default_blocks(12, 2, 24), default_blocks(7, 1, 3)
    (16, 6, 1)
    """
    per = max(gpus // replicas, 1)
    return max(b for b in range(1, min(per, n_layers) + 1) if per % b == 0)


@dataclass(frozen=True, init=False)
class Job:
    """A job description (module docstring).

    Parameters
    ----------
    name
        Job name.
    gpus
        GPUs the job asks for.
    layers
        The model's layers: :class:`~topoopt.parallelconfig.instance.Layer` objects,
        ``(compute_s, param_bytes)`` pairs or JSON objects.
    activation_bytes, micro_batches
        Bytes crossing a stage boundary per micro-batch; micro-batches of one iteration.
    blocks
        Blocks of layers (vertices of one replica); default :func:`default_blocks`.
    replicas
        Data-parallel copies of the block chain across clusters (default 1).
    alpha, beta
        Weights of ``T_dp`` and ``T_pp`` (default 1).
    use_all_gpus
        Whether every GPU the job gets must run a rank (default): each cluster's ``(d, p)``
        then has ``d·p`` equal to its GPUs. ``False`` lets the cost model leave GPUs idle;
        the plan then releases them.
    source
        The cluster the job arrives at (SpinSearch's eq. 3 scores), or ``None``.

    Examples
    --------
    >>> job = Job("j", 12, [(0.004, 1.5e8)] * 12, 1.6e7, 8, blocks=6)
    >>> job.unit_gpus, [u.name for u in job.units()][:3], len(job.edges())
    (2, ['b0', 'b1', 'b2'], 5)
    """

    name: str
    gpus: int
    layers: tuple[Layer, ...]
    activation_bytes: float
    micro_batches: int
    blocks: int
    replicas: int
    alpha: float
    beta: float
    use_all_gpus: bool
    source: str | None

    def __init__(
        self,
        name: str,
        gpus: int,
        layers: Iterable[Any],
        activation_bytes: float,
        micro_batches: int,
        *,
        blocks: int | None = None,
        replicas: int = 1,
        alpha: float = 1.0,
        beta: float = 1.0,
        use_all_gpus: bool = True,
        source: str | None = None,
    ) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(name, "name"))
        gpus = v.as_int(gpus, "gpus", minimum=1)
        if gpus > MAX_GPUS:
            raise InvalidInstanceError("gpus", f"must be <= {MAX_GPUS}, got {gpus}")
        put(self, "gpus", gpus)
        parsed = []
        for i, layer in enumerate(v.as_tuple(layers, "model.layers", min_len=1)):
            with v.within(f"model.layers[{i}]"):
                parsed.append(Layer.from_any(layer))
        put(self, "layers", tuple(parsed))
        put(
            self,
            "activation_bytes",
            v.as_float(activation_bytes, "model.activation_bytes", minimum=0, maximum=MAX_BYTES),
        )
        put(self, "micro_batches", v.as_int(micro_batches, "model.micro_batches", minimum=1))
        put(self, "alpha", v.as_float(alpha, "alpha", minimum=0, maximum=MAX_WEIGHT))
        put(self, "beta", v.as_float(beta, "beta", minimum=0, maximum=MAX_WEIGHT))
        if not isinstance(use_all_gpus, bool):
            raise InvalidInstanceError(
                "use_all_gpus", f"must be true or false, got {use_all_gpus!r}"
            )
        put(self, "use_all_gpus", use_all_gpus)
        put(self, "source", None if source is None else v.as_str(source, "source"))
        replicas = v.as_int(replicas, "replicas", minimum=1)
        put(self, "replicas", replicas)
        if gpus % replicas:
            raise InvalidInstanceError(
                "replicas", f"{gpus} GPUs do not split into {replicas} replicas of equal size"
            )
        if self.micro_batches % replicas:
            raise InvalidInstanceError(
                "model.micro_batches",
                f"{self.micro_batches} micro-batches do not split evenly over {replicas} replicas",
            )
        n_layers = len(self.layers)
        if blocks is None:
            blocks = default_blocks(gpus, replicas, n_layers)
        blocks = v.as_int(blocks, "blocks", minimum=1)
        put(self, "blocks", blocks)
        if blocks > n_layers:
            raise InvalidInstanceError(
                "blocks", f"{blocks} blocks exceed the model's {n_layers} layers"
            )
        units = blocks * replicas
        if units > MAX_UNITS:
            raise InvalidInstanceError(
                "blocks", f"blocks × replicas = {units} units exceed the limit of {MAX_UNITS}"
            )
        if gpus % units:
            raise InvalidInstanceError(
                "gpus",
                f"{gpus} GPUs do not split into blocks × replicas = {blocks} × {replicas} = "
                f"{units} units of equal size",
            )
        if use_all_gpus and self.unit_gpus > self.replica_micro_batches:
            raise InvalidInstanceError(
                "model.micro_batches",
                f"use_all_gpus needs at least {self.unit_gpus} micro-batches per replica (a unit "
                f"of {self.unit_gpus} GPUs runs its blocks {self.unit_gpus} times in parallel, "
                f"a micro-batch each), got {self.replica_micro_batches}: raise micro_batches "
                "or blocks, or set use_all_gpus to false",
            )

    # -- derived figures
    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def n_units(self) -> int:
        """Vertices of the partition graph (``blocks × replicas``)."""
        return self.blocks * self.replicas

    @property
    def unit_gpus(self) -> int:
        """GPUs of one unit, ``gpus / (blocks × replicas)``."""
        return self.gpus // self.n_units

    @property
    def replica_micro_batches(self) -> int:
        """``M_r``, the micro-batches of one replica (``micro_batches / replicas``)."""
        return self.micro_batches // self.replicas

    def block_layers(self) -> tuple[tuple[int, int], ...]:
        """The layers ``[start, stop)`` of every block."""
        return split_layers(self.n_layers, self.blocks)

    def unit_name(self, block: int, replica: int) -> str:
        return f"b{block}" if self.replicas == 1 else f"b{block}r{replica}"

    def units(self) -> list[Unit]:
        """The vertices, replica by replica, blocks in order (module docstring)."""
        figures = []
        for start, stop in self.block_layers():
            part = self.layers[start:stop]
            figures.append((sum(la.compute_s for la in part), sum(la.param_bytes for la in part)))
        return [
            Unit(self.unit_name(b, r), b, r, self.unit_gpus, *figures[b])
            for r in range(self.replicas)
            for b in range(self.blocks)
        ]

    def edges(self) -> list[JobEdge]:
        """Activation edges along every replica's chain, then gradient rings (module
        docstring)."""
        out = []
        act = self.activation_bytes * self.replica_micro_batches / 1e9
        for r in range(self.replicas):
            for b in range(self.blocks - 1):
                out.append(
                    JobEdge(self.unit_name(b, r), self.unit_name(b + 1, r), act, "activation")
                )
        big_r = self.replicas
        if big_r >= 2:
            units = {(u.block, u.replica): u for u in self.units()}
            for b in range(self.blocks):
                grad = 2 * (big_r - 1) / big_r * units[b, 0].param_bytes / 1e9
                for r in range(big_r if big_r > 2 else 1):
                    a, c = units[b, r].name, units[b, (r + 1) % big_r].name
                    out.append(JobEdge(a, c, grad, "gradient"))
        return out

    # -- JSON
    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the compact layer form when every layer is alike)."""
        first = self.layers[0]
        model: dict[str, Any]
        if all(la == first for la in self.layers):
            model = {
                "layers": self.n_layers,
                "compute_s": first.compute_s,
                "param_bytes": first.param_bytes,
            }
        else:
            model = {"layers": [la.to_dict() for la in self.layers]}
        model["activation_bytes"] = self.activation_bytes
        model["micro_batches"] = self.micro_batches
        out: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name,
            "gpus": self.gpus,
            "model": model,
            "blocks": self.blocks,
            "replicas": self.replicas,
            "alpha": self.alpha,
            "beta": self.beta,
            "use_all_gpus": self.use_all_gpus,
        }
        if self.source is not None:
            out["source"] = self.source
        return out

    @classmethod
    def from_dict(cls, data: Any, source: str = "job") -> Job:
        """Read the JSON form; errors are :class:`~topoopt.core.errors.InvalidInstanceError`
        naming ``source: json.path``."""
        try:
            validate(SCHEMA, data)
            model = data["model"]
            layers = model["layers"]
            compact = ("compute_s", "param_bytes")
            if isinstance(layers, int):
                for key in compact:
                    if key not in model:
                        raise InvalidInstanceError(
                            f"model.{key}", "required with a layer count (model.layers)"
                        )
                with v.within("model"):
                    layer = Layer(model["compute_s"], model["param_bytes"])
                layers = [layer] * layers
            else:
                for key in compact:
                    if key in model:
                        raise InvalidInstanceError(
                            f"model.{key}", "only with a layer count (the list gives each layer's)"
                        )
            return cls(
                data.get("name", "job"),
                data["gpus"],
                layers,
                model["activation_bytes"],
                model["micro_batches"],
                blocks=data.get("blocks"),
                replicas=data.get("replicas", 1),
                alpha=data.get("alpha", 1.0),
                beta=data.get("beta", 1.0),
                use_all_gpus=data.get("use_all_gpus", True),
                source=data.get("source"),
            )
        except InvalidInstanceError as exc:
            raise InvalidInstanceError(f"{source}: {exc.field}", exc.rule) from None

    @classmethod
    def load(cls, path: str | Path) -> Job:
        """Read a job file; errors name the file and the JSON path."""
        return cls.from_dict(read_json_file(path, what="job file"), source=str(path))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")


def load_job(job: Job | Mapping[str, Any] | str | Path) -> Job:
    """A :class:`Job` from itself, its JSON object or a file."""
    if isinstance(job, Job):
        return job
    if isinstance(job, Mapping):
        return Job.from_dict(job)
    return Job.load(job)


__all__ = ["FORMAT", "SCHEMA", "VERSION", "Job", "JobEdge", "Unit", "default_blocks", "load_job"]
