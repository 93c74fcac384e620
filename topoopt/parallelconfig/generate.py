"""Instances of the parallelconfig family: the worked example, small random jobs and
transformer-like models on nodes of 8 GPUs.

SpiderFlow gives no per-layer numbers for its intra-cluster ILP, so the instances here are
synthetic. :func:`worked` is the example ``docs/parallelconfig.md`` computes by hand. Random
instances (:func:`random_instance`) draw every figure from a few values so that ties happen
(as with real link and layer classes), and sometimes make the network faster than the node
(``B_cross = min(B_intra, B_inter)`` then applies). :func:`transformer` derives a GPT-style
model's figures from its size (documented estimates, not measurements).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from topoopt.core.errors import InvalidOptionError
from topoopt.core.seeding import make_rng, normalize_seed
from topoopt.core.validate import option_int
from topoopt.parallelconfig.instance import ParallelConfigInstance, TrainingModel

MAX_COUNT = 10_000
"""Most instances one generator call makes."""
INTRA_GBPS = (200.0, 600.0, 800.0, 2400.0)
"""Intra-node bandwidths random instances draw from (PCIe to NVLink, Gb/s)."""
INTER_GBPS = (25.0, 100.0, 200.0, 400.0, 800.0)
"""Inter-node bandwidths random instances draw from (Gb/s; 800 exceeds some intra values)."""
COMPUTE_MS = (1.0, 2.0, 3.0, 5.0)
"""Per-layer compute times random instances draw from (ms per micro-batch)."""
PARAM_MB = (0.0, 50.0, 100.0, 200.0, 400.0)
"""Per-layer gradient sizes random instances draw from (MB)."""
ACTIVATION_MB = (0.0, 4.0, 16.0, 64.0)
"""Activation sizes random instances draw from (MB per micro-batch and boundary)."""
WEIGHTS = (0.0, 0.5, 1.0, 2.0)
"""Values of alpha and beta random instances draw from (1 most often)."""


def worked() -> ParallelConfigInstance:
    """The hand-computed example of ``docs/parallelconfig.md``: two nodes of 4 GPUs (NVLink
    800 Gb/s inside, 80 Gb/s between), 8 identical layers of 10 ms and 250 MB of gradients,
    100 MB of activations per boundary, 8 micro-batches.

    Its optimum is ``d = 4``, ``p = 2`` with stage 0 on ``n0`` and stage 1 on ``n1``
    (``0.155 s``: all-reduce rings inside a node, one cross-node send per replica); the greedy
    baseline packs a replica per node at ``d = 2``, ``p = 4`` (``0.202 s``).
    """
    model = TrainingModel.uniform(
        8, compute_s=0.01, param_bytes=2.5e8, activation_bytes=1e8, micro_batches=8
    )
    return ParallelConfigInstance(
        "worked", [("n0", 4), ("n1", 4)], 800.0, 80.0, model, labels={"setting": "worked"}
    )


def uneven() -> ParallelConfigInstance:
    """Nodes of 3, 2 and 1 GPUs, five layers of unequal cost, 4 micro-batches."""
    layers = [(0.004, 1e8), (0.002, 4e8), (0.003, 2e8), (0.002, 2e8), (0.005, 0.0)]
    model = TrainingModel(layers, activation_bytes=2e7, micro_batches=4)
    return ParallelConfigInstance(
        "uneven", [("a", 3), ("b", 2), ("c", 1)], 600.0, 100.0, model, alpha=0.5, beta=2.0
    )


def random_instance(
    rng: np.random.Generator,
    name: str,
    *,
    max_gpus: int = 8,
    max_nodes: int = 4,
    max_layers: int = 8,
    node_gpus: int = 4,
    micro_batches: int = 8,
    fixed: float = 0.2,
) -> ParallelConfigInstance:
    """A random job: ``1..max_nodes`` nodes of 1 to ``node_gpus`` GPUs (at most ``max_gpus``
    in all), ``1..max_layers`` layers, ``1..micro_batches`` micro-batches, figures from the
    module's value lists; with probability ``fixed`` a fixed admissible ``(d, p)``."""
    nodes = []
    left = max_gpus
    for i in range(int(rng.integers(1, max_nodes + 1))):
        if left == 0:
            break
        gpus = int(rng.integers(1, min(node_gpus, left) + 1))
        nodes.append((f"n{i}", gpus))
        left -= gpus
    layers = [
        (float(rng.choice(COMPUTE_MS)) / 1000, float(rng.choice(PARAM_MB)) * 1e6)
        for _ in range(int(rng.integers(1, max_layers + 1)))
    ]
    model = TrainingModel(
        layers,
        activation_bytes=float(rng.choice(ACTIVATION_MB)) * 1e6,
        micro_batches=int(rng.integers(1, micro_batches + 1)),
    )
    alpha, beta = (float(rng.choice(WEIGHTS, p=(0.1, 0.2, 0.5, 0.2))) for _ in range(2))
    instance = ParallelConfigInstance(
        name,
        nodes,
        float(rng.choice(INTRA_GBPS)),
        float(rng.choice(INTER_GBPS)),
        model,
        alpha=alpha,
        beta=beta,
    )
    if rng.random() < fixed:
        options = list(instance.configurations())
        d, p = options[int(rng.integers(0, len(options)))]
        instance = ParallelConfigInstance(
            name,
            nodes,
            instance.intra_node_gbps,
            instance.inter_node_gbps,
            model,
            alpha=alpha,
            beta=beta,
            parallelism=(d, p),
        )
    return instance


def random_small(seed: int = 0, count: int = 20, gpus: int = 8) -> list[ParallelConfigInstance]:
    """``count`` random jobs of at most ``gpus`` GPUs (1 to 12; the oracle solves them)."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    top = option_int("gpus", gpus, 1, 12)
    rng = make_rng(seed)
    return [random_instance(rng, f"small-{seed}-{i}", max_gpus=top) for i in range(count)]


def random_medium(seed: int = 0, count: int = 20, gpus: int = 32) -> list[ParallelConfigInstance]:
    """``count`` random jobs of at most ``gpus`` GPUs (1 to 256) on up to 8 nodes of up to 8
    GPUs, up to 24 layers and 32 micro-batches, ``(d, p)`` free: beyond the oracle, for the
    MIP against the greedy baseline."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    top = option_int("gpus", gpus, 1, 256)
    rng = make_rng(seed)
    return [
        random_instance(
            rng,
            f"medium-{seed}-{i}",
            max_gpus=top,
            max_nodes=8,
            max_layers=24,
            node_gpus=8,
            micro_batches=32,
            fixed=0.0,
        )
        for i in range(count)
    ]


def transformer(
    layers: int,
    hidden: int,
    *,
    seq: int = 2048,
    micro_batch: int = 1,
    micro_batches: int = 32,
    tflops: float = 120.0,
) -> TrainingModel:
    """A GPT-style model of ``layers`` blocks of width ``hidden`` (estimates, fp16/bf16):

    * parameters per block ``12 h^2``, all-reduced as 2-byte gradients: ``24 h^2`` bytes;
    * compute per block and micro-batch ``6 · 12 h^2 · tokens`` FLOPs (forward and backward) at
      ``tflops`` effective TFLOP/s, ``tokens = seq · micro_batch``;
    * activations per boundary and micro-batch ``tokens · h`` values of 2 bytes, forward and
      backward: ``4 · tokens · h`` bytes.

    Examples
    --------
    >>> m = transformer(24, 2048)  # GPT-2 1.3B-like
    >>> round(m.layers[0].param_bytes / 1e6, 1), round(m.layers[0].compute_s * 1e3, 2)
    (100.7, 5.15)
    """
    tokens = seq * micro_batch
    params = 12 * hidden**2
    return TrainingModel.uniform(
        layers,
        compute_s=6 * params * tokens / (tflops * 1e12),
        param_bytes=2.0 * params,
        activation_bytes=4.0 * tokens * hidden,
        micro_batches=micro_batches,
    )


MODELS = {
    "gpt2-350m": (24, 1024),
    "gpt2-1.3b": (24, 2048),
    "gpt-6.7b": (32, 4096),
}
"""Transformer shapes ``(layers, hidden)`` of :func:`scaling`."""


def scaling(
    seed: int = 0, nodes: Sequence[int] = (1, 2, 3, 4), models: Sequence[str] = tuple(MODELS)
) -> list[ParallelConfigInstance]:
    """Each model of :data:`MODELS` on ``n`` nodes of 8 GPUs (NVLink 2400 Gb/s inside, 200 Gb/s
    between), ``n`` in ``nodes``, 32 micro-batches; ``seed`` is accepted and unused."""
    normalize_seed(seed)
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Sequence) or not nodes:
        raise InvalidOptionError(f"nodes: must be a list of node counts, got {nodes!r}")
    counts = [option_int("nodes[]", n, 1, 128) for n in nodes]
    unknown = [m for m in models if m not in MODELS]
    if unknown or isinstance(models, str):
        raise InvalidOptionError(f"models: must be among {', '.join(MODELS)}, got {models!r}")
    out = []
    for name in models:
        layers, hidden = MODELS[name]
        for n in counts:
            out.append(
                ParallelConfigInstance(
                    f"{name}-{n}x8",
                    [(f"node{i}", 8) for i in range(n)],
                    2400.0,
                    200.0,
                    transformer(layers, hidden),
                    labels={"model": name, "nodes": str(n)},
                )
            )
    return out


MIXED_MODELS = {
    **MODELS,
    "bert-large": (24, 1024),
    "opt-2.7b": (32, 2560),
    "gpt-13b": (40, 5120),
}
"""Transformer shapes ``(layers, hidden)`` of :func:`mixed`."""
MIXED_INTRA_GBPS = (600.0, 2400.0)
"""Intra-node bandwidths of :func:`mixed` (PCIe/NVLink 3, NVLink 4, Gb/s)."""
MIXED_INTER_GBPS = (100.0, 200.0, 400.0)
"""Inter-node bandwidths of :func:`mixed` (one or more NICs, Gb/s)."""
MIXED_MICRO_BATCHES = (8, 16, 32, 64)
"""Micro-batches per iteration of :func:`mixed`."""


def mixed_instance(
    rng: np.random.Generator,
    name: str,
    *,
    max_nodes: int = 16,
    node_gpus: tuple[int, int] = (2, 8),
    min_nodes: int = 2,
) -> ParallelConfigInstance:
    """A transformer of :data:`MIXED_MODELS` on ``min_nodes..max_nodes`` nodes of
    ``node_gpus[0]`` to ``node_gpus[1]`` GPUs each (drawn independently: a cluster's
    leftovers), bandwidths and micro-batches from the module's lists."""
    count = int(rng.integers(min_nodes, max_nodes + 1))
    low, high = node_gpus
    nodes = [(f"n{k}", int(rng.integers(low, high + 1))) for k in range(count)]
    model_name = list(MIXED_MODELS)[int(rng.integers(0, len(MIXED_MODELS)))]
    layers, hidden = MIXED_MODELS[model_name]
    model = transformer(layers, hidden, micro_batches=int(rng.choice(MIXED_MICRO_BATCHES)))
    return ParallelConfigInstance(
        name,
        nodes,
        float(rng.choice(MIXED_INTRA_GBPS)),
        float(rng.choice(MIXED_INTER_GBPS)),
        model,
        labels={"model": model_name, "nodes": str(count)},
    )


def mixed(
    seed: int = 0, count: int = 20, nodes: int = 16, min_nodes: int = 2
) -> list[ParallelConfigInstance]:
    """``count`` transformer jobs on ``min_nodes..nodes`` nodes of 2 to 8 GPUs each (mixed
    sizes, up to ``8 · nodes`` GPUs; ``nodes`` from 2 to 160): the scale suite of
    ``parallelconfig/mip`` (issue #25: 16 nodes, up to 128 GPUs, proven within 2 s)."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    top = option_int("nodes", nodes, 2, 160)
    low = option_int("min_nodes", min_nodes, 2, top)
    rng = make_rng(seed)
    name = "mixed" if low == 2 else f"mixed{low}"
    return [
        mixed_instance(rng, f"{name}-{seed}-{i}", max_nodes=top, min_nodes=low)
        for i in range(count)
    ]


def examples() -> list[ParallelConfigInstance]:
    """Fixed small instances for the conformance suite: the worked example, uneven nodes, a
    fixed ``(d, p)``, one node, a network faster than the node, and random jobs."""
    base = worked()
    fixed = ParallelConfigInstance(
        "fixed-2x2",
        [("a", 2), ("b", 2), ("c", 2)],
        base.intra_node_gbps,
        base.inter_node_gbps,
        TrainingModel.uniform(
            4, compute_s=0.01, param_bytes=2.5e8, activation_bytes=1e8, micro_batches=4
        ),
        parallelism=(2, 2),
    )
    one_node = ParallelConfigInstance(
        "one-node",
        [("solo", 4)],
        300.0,
        100.0,
        TrainingModel([(0.003, 5e7), (0.001, 2e8), (0.002, 1e8)], 1e7, 2),
    )
    fast_network = ParallelConfigInstance(
        "fast-network",
        [("x", 2), ("y", 1), ("z", 2)],
        200.0,
        400.0,
        TrainingModel.uniform(
            3, compute_s=0.002, param_bytes=1e8, activation_bytes=3e7, micro_batches=6
        ),
    )
    rng = make_rng(5)
    randoms = [random_instance(rng, f"random-{i}", fixed=0.0) for i in range(2)]
    return [base, uneven(), fixed, one_node, fast_network, *randoms]


def paper(seed: int = 0) -> list[ParallelConfigInstance]:
    """The worked example of the docs (``seed`` is accepted and unused)."""
    normalize_seed(seed)
    return [worked()]


GENERATORS: dict[str, Callable[..., list[ParallelConfigInstance]]] = {
    "worked": paper,
    "random-small": random_small,
    "random-medium": random_medium,
    "scaling": scaling,
    "mixed": mixed,
}
"""Suites for ``topoopt instances generate parallelconfig --suite NAME --seed N``."""


def slow_examples() -> list[ParallelConfigInstance]:
    """Instances on which the solvers need the longest (the time-limit check of the conformance
    suite, 1 s): a GPT-2 1.3B job on 131 nodes of 2 to 8 GPUs (656 GPUs, 1188 configurations;
    ``parallelconfig/mip`` and ``parallelconfig/paper-mip`` need far more than a second, and
    both accept it: it is the first, so the default run checks both on it), a 6.7B-parameter
    model on 64 nodes of 8 GPUs, and a random job on 12 GPUs within the oracle's limit that
    takes it seconds (about 210,000 assignments)."""
    large = mixed_instance(make_rng(3), "mixed-131-nodes", max_nodes=160)
    enum = random_instance(  # about 210,000 assignments: seconds for the oracle
        make_rng(19),
        "enum-12",
        max_gpus=16,
        max_nodes=8,
        max_layers=16,
        node_gpus=4,
        micro_batches=16,
        fixed=0.0,
    )
    return [large, scaling(0, nodes=(64,), models=("gpt-6.7b",))[0], enum]
