"""Parallel configurations, their cost (the objective) and their feasibility check.

The root of the family's trust chain. A configuration is ``d`` data-parallel replicas of a
``p``-stage pipeline and the GPU of every (replica ``j``, stage ``s``). Its per-iteration time
(SpiderFlow §4.2, ``T_cluster``; ``docs/parallelconfig.md`` writes it out with units) is::

    T = T_comp + alpha·T_dp + beta·T_pp

    m      = ceil(M / d)                              micro-batches per replica
    c_s, P_s                                          compute (s) and gradient bytes of stage s,
                                                      the L layers split evenly (split_layers)
    T_comp = (m + p - 1) · max_s c_s                  1F1B/GPipe schedule: bubble (p - 1) / m
    T_dp   = max_s 2(d - 1)/d · P_s / B(column s)     ring all-reduce of stage s over its d GPUs
    T_pp   = max_j m · sum_{s < p-1} A / B(j, s)      stage boundaries of replica j

``B`` is ``B_intra`` when the GPUs involved (the ``d`` GPUs of stage ``s``; the GPUs of
stages ``s`` and ``s + 1`` of replica ``j``) share one node, else ``B_cross = min(B_intra,
B_inter)``, in bytes/s (``Gb/s · 1e9 / 8``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topoopt.core.errors import InvalidSolutionError
from topoopt.parallelconfig.instance import ParallelConfigInstance, split_layers

DESCRIBE_REPLICAS = 16
"""Replicas :func:`describe` lists before it summarises the rest."""


@dataclass(frozen=True)
class ParallelConfig:
    """``grid[j][s]``: the GPU (``"node/k"``) of replica ``j``, stage ``s``; ``d`` rows of ``p``.

    Examples
    --------
    >>> c = ParallelConfig.of([["a/0", "a/1"], ["b/0", "b/1"]])
    >>> c.d, c.p
    (2, 2)
    """

    grid: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, grid: Iterable[Iterable[str]]) -> ParallelConfig:
        """From any nested iterable of GPU names."""
        return cls(tuple(tuple(str(g) for g in row) for row in grid))

    @property
    def d(self) -> int:
        """Data-parallel degree (rows)."""
        return len(self.grid)

    @property
    def p(self) -> int:
        """Pipeline depth (stages of the first replica; :func:`check` requires equal rows)."""
        return len(self.grid[0]) if self.grid else 0


@dataclass(frozen=True)
class Breakdown:
    """The parts of the objective of one configuration (times in seconds)."""

    d: int
    p: int
    m: int
    t_comp_s: float
    t_dp_s: float
    t_pp_s: float
    alpha: float
    beta: float

    @property
    def objective(self) -> float:
        """``T_comp + alpha·T_dp + beta·T_pp``."""
        return self.t_comp_s + self.alpha * self.t_dp_s + self.beta * self.t_pp_s


def micro_batches_per_replica(instance: ParallelConfigInstance, d: int) -> int:
    """``m = ceil(M / d)``: the replicas share the ``M`` micro-batches; the slowest has ``m``."""
    return -(-instance.model.micro_batches // d)


def breakdown(
    instance: ParallelConfigInstance,
    d: int,
    p: int,
    nodes: Sequence[Sequence[int]],
    stages: tuple[Sequence[float], Sequence[float]] | None = None,
) -> Breakdown:
    """The cost of ``d`` replicas of ``p`` stages whose GPUs lie on ``nodes[j][s]`` (node
    numbers); ``stages`` may pass ``instance.model.stages(p)`` computed once.

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import worked
    >>> b = breakdown(worked(), 2, 4, [[0, 0, 0, 0], [1, 1, 1, 1]])  # a replica per node
    >>> b.m, round(b.t_comp_s, 6), round(b.t_dp_s, 6), round(b.t_pp_s, 6), round(b.objective, 6)
    (4, 0.14, 0.05, 0.012, 0.202)
    """
    compute, params = instance.model.stages(p) if stages is None else stages
    m = micro_batches_per_replica(instance, d)
    intra, cross = instance.intra_bps, instance.cross_bps
    t_comp = (m + p - 1) * max(compute)
    t_dp = 0.0
    if d > 1:
        for s in range(p):
            one_node = len({nodes[j][s] for j in range(d)}) == 1
            t_dp = max(t_dp, 2 * (d - 1) / d * params[s] / (intra if one_node else cross))
    activation = instance.model.activation_bytes
    t_pp = 0.0
    for row in nodes:
        sends = sum(activation / (intra if a == b else cross) for a, b in itertools.pairwise(row))
        t_pp = max(t_pp, m * sends)
    return Breakdown(d, p, m, t_comp, t_dp, t_pp, instance.alpha, instance.beta)


def node_grid(instance: ParallelConfigInstance, config: ParallelConfig) -> list[list[int]]:
    """The node number of every GPU of ``config`` (which must name existing GPUs)."""
    grid = []
    for row in config.grid:
        out = []
        for gpu in row:
            where = instance.locate(gpu)
            if where is None:
                raise InvalidSolutionError(f"unknown GPU {gpu!r}")
            out.append(where[0])
        grid.append(out)
    return grid


def from_nodes(instance: ParallelConfigInstance, nodes: Sequence[Sequence[int]]) -> ParallelConfig:
    """The configuration that puts cell ``(j, s)`` on node ``nodes[j][s]``, taking each node's
    GPUs ``0, 1, ...`` in row-major order (GPUs of one node are interchangeable).

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import worked
    >>> from_nodes(worked(), [[0, 1], [0, 0]]).grid
    (('n0/0', 'n1/0'), ('n0/1', 'n0/2'))
    """
    taken = [0] * instance.n_nodes
    grid = []
    for row in nodes:
        out = []
        for n in row:
            out.append(instance.gpu(n, taken[n]))
            taken[n] += 1
        grid.append(out)
    return ParallelConfig.of(grid)


def check(instance: ParallelConfigInstance, config: ParallelConfig) -> list[str]:
    """The rules ``config`` breaks: a rectangular grid with ``d, p >= 1``, ``d·p <= r``,
    ``p <= L``, ``d <= M``, the fixed ``(d, p)`` if any, existing GPUs each used once.

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import worked
    >>> check(worked(), ParallelConfig.of([["n0/0", "n0/9"], ["n0/0", "x/0"]]))
    ["replica 0 stage 1: unknown GPU 'n0/9'", "replica 1 stage 0: GPU 'n0/0' is already \
replica 0 stage 0", "replica 1 stage 1: unknown GPU 'x/0'"]
    """
    if not config.grid or not config.grid[0]:
        return ["the grid needs at least one replica (d >= 1) and one stage (p >= 1)"]
    d, p = config.d, config.p
    problems = [
        f"replica {j} has {len(row)} stages, replica 0 has {p}"
        for j, row in enumerate(config.grid)
        if len(row) != p
    ]
    if problems:
        return problems
    if d * p > instance.n_gpus:
        problems.append(f"uses d·p = {d * p} GPUs, the job has {instance.n_gpus}")
    if p > instance.model.n_layers:
        problems.append(f"p = {p} stages exceed the {instance.model.n_layers} layers")
    if d > instance.model.micro_batches:
        problems.append(f"d = {d} replicas exceed the {instance.model.micro_batches} micro-batches")
    if instance.parallelism is not None and (d, p) != instance.parallelism:
        problems.append(f"(d, p) = ({d}, {p}), the instance fixes {instance.parallelism}")
    seen: dict[str, tuple[int, int]] = {}
    for j, row in enumerate(config.grid):
        for s, gpu in enumerate(row):
            if instance.locate(gpu) is None:
                problems.append(f"replica {j} stage {s}: unknown GPU {gpu!r}")
            elif gpu in seen:
                a, b = seen[gpu]
                problems.append(
                    f"replica {j} stage {s}: GPU {gpu!r} is already replica {a} stage {b}"
                )
            else:
                seen[gpu] = (j, s)
    return problems


def cost(instance: ParallelConfigInstance, config: ParallelConfig) -> Breakdown:
    """The :class:`Breakdown` of a feasible configuration."""
    return breakdown(instance, config.d, config.p, node_grid(instance, config))


def evaluate(instance: ParallelConfigInstance, config: ParallelConfig) -> float:
    """``T_comp + alpha·T_dp + beta·T_pp`` in seconds per iteration (to minimise).

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import worked
    >>> round(evaluate(worked(), from_nodes(worked(), [[0, 0, 1, 1], [0, 0, 1, 1]])), 6)
    0.193
    """
    return cost(instance, config).objective


def metrics(instance: ParallelConfigInstance, config: ParallelConfig) -> dict[str, float]:
    """``d``, ``p``, ``m`` (micro-batches per replica), ``t_comp_s``, ``t_dp_s``, ``t_pp_s`` and
    ``idle_gpus`` (``r - d·p``)."""
    parts = cost(instance, config)
    return {
        "d": float(parts.d),
        "p": float(parts.p),
        "m": float(parts.m),
        "t_comp_s": parts.t_comp_s,
        "t_dp_s": parts.t_dp_s,
        "t_pp_s": parts.t_pp_s,
        "idle_gpus": float(instance.n_gpus - parts.d * parts.p),
    }


def config_to_json(config: ParallelConfig) -> dict[str, Any]:
    """JSON form ``{"d": 2, "p": 2, "grid": [["n0/0", "n0/1"], ["n1/0", "n1/1"]]}`` (needs no
    instance; also used inside partition solutions)."""
    return {"d": config.d, "p": config.p, "grid": [list(row) for row in config.grid]}


def config_from_json(data: Any, path: str = "solution") -> ParallelConfig:
    """Read ``{"d": 2, "p": 2, "grid": [[...], [...]]}`` (``d`` and ``p`` optional, but when
    given they must match the grid); errors name ``path.grid``, ``path.d``, ...

    Examples
    --------
    >>> config_from_json({"d": 2, "grid": [["a/0"]]}, "configs.c0")
    Traceback (most recent call last):
    ...
    topoopt.core.errors.InvalidSolutionError: configs.c0.d: is 2 but the grid has 1
    """
    grid = data.get("grid") if isinstance(data, Mapping) else None
    if not isinstance(grid, list) or not all(
        isinstance(row, list) and all(isinstance(g, str) for g in row) for row in grid
    ):
        raise InvalidSolutionError(f"{path}.grid: must be a list of replicas, each a list of GPUs")
    config = ParallelConfig.of(grid)
    for key in ("d", "p"):
        if key in data and data[key] != getattr(config, key):
            raise InvalidSolutionError(
                f"{path}.{key}: is {data[key]!r} but the grid has {getattr(config, key)}"
            )
    return config


def to_dict(instance: ParallelConfigInstance, config: ParallelConfig) -> dict[str, Any]:
    """JSON form ``{"d": 2, "p": 2, "grid": [["n0/0", "n0/1"], ["n1/0", "n1/1"]]}``."""
    return config_to_json(config)


def from_dict(instance: ParallelConfigInstance, data: Mapping[str, Any]) -> ParallelConfig:
    """Read ``{"d": 2, "p": 2, "grid": [[...], [...]]}`` (``d`` and ``p`` optional, but when
    given they must match the grid)."""
    return config_from_json(data)


def describe(instance: ParallelConfigInstance, config: ParallelConfig) -> str:
    """The objective with its parts, the shape, one line per replica (the first
    :data:`DESCRIBE_REPLICAS`) and the layers of each stage.

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import worked
    >>> inst = worked()
    >>> print(describe(inst, from_nodes(inst, [[0, 0, 1, 1], [0, 0, 1, 1]])))
    objective 0.193 s per iteration = T_comp 0.14 s + 1 x T_dp 0.005 s + 1 x T_pp 0.048 s
      (SpiderFlow §4.2; lower is better; T_dp: the slowest stage's all-reduce, T_pp: the
      slowest replica's stage-to-stage sends)
    d = 2 replicas x p = 4 stages, 8 of 8 GPUs, m = 4 micro-batches per replica
    replica 0: n0/0 n0/1 n1/0 n1/1
    replica 1: n0/2 n0/3 n1/2 n1/3
    stage layers: 0-1 | 2-3 | 4-5 | 6-7
    """
    parts = cost(instance, config)
    lines = [
        f"objective {parts.objective:.6g} s per iteration = T_comp {parts.t_comp_s:.6g} s + "
        f"{parts.alpha:g} x T_dp {parts.t_dp_s:.6g} s + {parts.beta:g} x T_pp {parts.t_pp_s:.6g} s",
        "  (SpiderFlow §4.2; lower is better; T_dp: the slowest stage's all-reduce, T_pp: the",
        "  slowest replica's stage-to-stage sends)",
        f"d = {parts.d} replicas x p = {parts.p} stages, {parts.d * parts.p} of "
        f"{instance.n_gpus} GPUs, m = {parts.m} micro-batches per replica",
    ]
    for j, row in enumerate(config.grid[:DESCRIBE_REPLICAS]):
        lines.append(f"replica {j}: {' '.join(row)}")
    if parts.d > DESCRIBE_REPLICAS:
        lines.append(f"... and {parts.d - DESCRIBE_REPLICAS} more replicas")
    bounds = split_layers(instance.model.n_layers, parts.p)
    spans = [f"{a}" if b - a == 1 else f"{a}-{b - 1}" for a, b in bounds]
    lines.append(f"stage layers: {' | '.join(spans)}")
    return "\n".join(lines)
