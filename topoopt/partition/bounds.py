r"""Lower bounds on the eq. 9 cut of capacitated job-graph partitioning (issue #29).

``partition/mip``'s LP relaxation is 0 at the Table 2 sizes (a fractional assignment spreads
every vertex over the clusters and separates nothing), so its backend proves nothing there.
This module computes valid lower bounds by other means; ``docs/partition.md`` ("Lower
bounds") gives the proofs. Every bound below is a lower bound on the cut of *every* feasible
assignment, so on the optimum.

**Notation.** ``n = Σ_v g_v`` (the job's GPUs), ``δ(S)`` the traffic of the edges leaving a
vertex set ``S``, ``P_0 ⊃ … ⊃ P_q`` the levels of the widest-path ultrametric and ``δ_j`` their
steps (:mod:`topoopt.partition.formulations.cut_mip`), so that

.. math::

    \mathrm{cut}(π) = \sum_j δ_j T_j(π), \qquad
    T_j(π) = \tfrac12 \sum_{G ∈ P_j} δ(S_G), \qquad S_G = \{v : π(v) ∈ G\}.

Writing ``c_N = Σ_{j: N ∈ P_j} δ_j / 2`` for every distinct group ``N`` of the hierarchy (a
group present at several levels counts once per level), ``cut(π) = Σ_N c_N δ(S_N)``.

1. **Coarsening** (:func:`merged`): merging clusters into super-clusters with the summed
   capacity, and the smallest cost between two super-clusters' members, can only lower the cost
   of an assignment and keeps it feasible, so the merged instance's optimum (or any proven
   bound on it) bounds the original. Merging each group of a level ``P_j`` keeps the costs
   between groups exactly (they are equal for all members in an ultrametric): the *level-j
   coarsening*, an instance with ``|P_j|`` clusters, proved by the MIP when it has few.
2. **Isoperimetric profile** (:func:`profile_bound`): ``φ(k) = min {δ(S) : k ≤ g(S) ≤ n − k}``
   is non-decreasing in ``k ≤ n / 2``, and every ``S_N`` with ``s = g(S_N)`` has
   ``δ(S_N) ≥ φ(min(s, n − s))``. Lower bounds of ``φ`` at a few sizes (each a two-cluster
   instance, :func:`carve`, proved by the MIP) give a step function ``φ̃ ≤ φ``, and

   .. math:: \mathrm{cut}(π) \ge \min_{s} \sum_N c_N\, φ̃(\min(s_N, n - s_N))

   over the sizes ``s_N ≤ K_N`` that add up the hierarchy (``s_N = Σ`` of its children, ``n`` at
   the root): a dynamic program over the tree of groups (:func:`tree_minimum`).
3. **Spreading metric** (:func:`spreading_bound`): per level, the LP of edge lengths whose balls
   of radius 1 hold at most the largest group capacity (the LP of
   ``benchmarks/partition/spreading_bound.py``); ``Σ_j δ_j LP_j``.

4. **Column generation** (:mod:`topoopt.partition.colgen`, option ``columns``): the
   Lagrangian (Farley) bound of the Dantzig–Wolfe master over the tree of groups, a vertex set
   per group with its cardinality range, certified at every round.

:func:`lower_bounds` runs 1, 2, 4 and 3 in that order within a deadline and yields each bound
as it is proven, with a sentence saying how it was obtained.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import reduce

import numpy as np

from topoopt.core.backends import quiet_highs
from topoopt.partition.formulations.cut_mip import level_steps
from topoopt.partition.instance import PartitionInstance

MAX_COARSE_GROUPS = 3
"""Largest level coarsening proved by the MIP (with more groups its bound stays near 0)."""
PROFILE_SIZES = 8
"""Most sizes at which the isoperimetric profile is bounded."""
SUB_LIMIT_S = 60.0
"""Time limit of one sub-problem when the call has none."""
SPREADING_MAX_VERTICES = 160
"""Largest job for the spreading-metric LP (``|V| · (2|E| + |V| + 1)`` rows)."""
COLUMNS_LIMIT_S = 60.0
"""Time limit of the column generation when the call has none."""
COLUMNS_SHARE = 0.5
"""Share of the bounds' time left to the column generation (when asked for)."""
MAX_DP_SIZES = 8192
"""Most sizes (in units of the GPUs' greatest common divisor) of the tree dynamic program."""

SubSolver = Callable[[PartitionInstance, float], float]
"""``solve(instance, time_limit) -> proven lower bound`` of a sub-instance (``partition/mip``
without its own bounds)."""


@dataclass(frozen=True)
class Bound:
    """A proven lower bound on the optimum and how it was obtained."""

    value: float
    method: str


@dataclass(frozen=True)
class Node:
    """A distinct group of the cluster hierarchy.

    Attributes
    ----------
    clusters
        Its clusters (indices).
    cost
        ``c_N``: half the sum of the steps of the levels it is a group of (0 at the root).
    capacity
        Its clusters' capacity.
    parent
        Index of the smallest group strictly containing it (``-1`` at the root).
    """

    clusters: frozenset[int]
    cost: float
    capacity: int
    parent: int


def hierarchy(instance: PartitionInstance) -> list[Node]:
    """The groups of every level as a tree, children before parents, the root last.

    Examples
    --------
    >>> inst = PartitionInstance(
    ...     "t", [("a", 1), ("b", 1), ("c", 2)], [("a", "b", 100.0), ("b", "c", 10.0)],
    ...     [("u", 1), ("v", 1)], [("u", "v", 1.0)])
    >>> for node in hierarchy(inst):
    ...     print(sorted(node.clusters), round(node.cost, 3), node.capacity, node.parent)
    [0] 0.005 1 3
    [1] 0.005 1 3
    [2] 0.05 2 4
    [0, 1] 0.045 2 4
    [0, 1, 2] 0.0 4 -1
    """
    graph = instance.graph
    steps = level_steps(graph.levels)
    cost: dict[frozenset[int], float] = {}
    for j, part in enumerate(graph.hierarchy[: len(steps)]):
        for group in part:
            cost[frozenset(group)] = cost.get(frozenset(group), 0.0) + steps[j] / 2
    root = frozenset(range(instance.n_clusters))
    groups = sorted(cost, key=lambda s: (len(s), sorted(s)))
    groups = [g for g in groups if g != root] + [root]
    capacity = [c.capacity_gpus for c in instance.clusters]
    out = []
    for group in groups:
        above = [i for i, other in enumerate(groups) if group < other]
        parent = min(above, key=lambda i: len(groups[i])) if above else -1
        out.append(
            Node(
                group,
                cost.get(group, 0.0) if group != root else 0.0,
                sum(capacity[c] for c in group),
                parent,
            )
        )
    return out


def merged(
    instance: PartitionInstance, groups: list[list[int]], name: str = ""
) -> PartitionInstance:
    """The instance with each of ``groups`` (a partition of the clusters) merged into one
    super-cluster: summed capacity, bandwidth between two super-clusters the widest of their
    members' widest paths (so the cost, the smallest of their members' costs). Every
    assignment of the original maps to one of the merged instance of at most the same cost,
    so its optimum is a lower bound.

    Examples
    --------
    >>> from topoopt.partition.generate import small
    >>> inst = small(seed=3, count=1)[0]
    >>> m = merged(inst, [list(range(inst.n_clusters))])
    >>> m.n_clusters, m.total_capacity == inst.total_capacity
    (1, True)
    """
    names = instance.graph.clusters
    capacity = [c.capacity_gpus for c in instance.clusters]
    clusters = [(f"m{i}", sum(capacity[c] for c in group)) for i, group in enumerate(groups)]
    links = []
    for a in range(len(groups)):
        for b in range(a + 1, len(groups)):
            width = max(
                instance.graph.widest(names[x], names[y]) for x in groups[a] for y in groups[b]
            )
            links.append((f"m{a}", f"m{b}", width))
    return PartitionInstance(
        name or f"{instance.name}-merged",
        clusters,
        links,
        [(v.name, v.gpus) for v in instance.vertices],
        [(e.u, e.v, e.traffic) for e in instance.edges],
    )


def carve(instance: PartitionInstance, k: int) -> PartitionInstance | None:
    """The two-cluster instance whose optimum is ``φ(k)``: two clusters of ``n − k`` GPUs at
    bandwidth 1 (so each side holds at least ``k``), or ``None`` when a vertex is larger than
    ``n − k`` (the instance would be invalid)."""
    n = instance.total_gpus
    if k <= 0 or 2 * k > n or max((v.gpus for v in instance.vertices), default=0) > n - k:
        return None
    return PartitionInstance(
        f"{instance.name}-carve-{k}",
        [("A", n - k), ("B", n - k)],
        [("A", "B", 1.0)],
        [(v.name, v.gpus) for v in instance.vertices],
        [(e.u, e.v, e.traffic) for e in instance.edges],
    )


def unit(instance: PartitionInstance) -> int:
    """The greatest common divisor of the vertices' GPUs (1 when all are 0)."""
    return reduce(math.gcd, (v.gpus for v in instance.vertices), 0) or 1


def tree_minimum(nodes: list[Node], size_cost: np.ndarray, total: int, step: int) -> float:
    """``min Σ_N c_N · size_cost[s_N / step]`` over sizes ``s_N`` (multiples of ``step``) with
    ``s_N ≤ capacity_N``, each internal group's size the sum of its children's and the root's
    ``total``: a min-plus convolution per child, leaves first.

    Examples
    --------
    Sizes 3 + 1 (cost 5 + 5) beat 2 + 2 (7 + 7):

    >>> nodes = [Node(frozenset({0}), 1.0, 3, 2), Node(frozenset({1}), 1.0, 2, 2),
    ...          Node(frozenset({0, 1}), 0.0, 5, -1)]
    >>> tree_minimum(nodes, np.array([0.0, 5.0, 7.0, 5.0, 0.0]), 4, 1)
    10.0
    """
    units = total // step
    best: list[np.ndarray] = []
    children: list[list[int]] = [[] for _ in nodes]
    for i, node in enumerate(nodes):
        if node.parent >= 0:
            children[node.parent].append(i)
    for i, node in enumerate(nodes):
        room = min(node.capacity // step, units)
        if not children[i]:
            table = np.full(units + 1, np.inf)
            table[: room + 1] = 0.0
        else:
            table = np.full(units + 1, np.inf)
            table[0] = 0.0
            for child in children[i]:
                table = _min_plus(table, best[child])
            table[room + 1 :] = np.inf
        if node.parent >= 0:
            table = table + node.cost * size_cost
        best.append(table)
    return float(best[-1][units])


def _min_plus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``out[s] = min_{t ≤ s} a[t] + b[s − t]`` (same length)."""
    m = len(a)
    out = np.full(m, np.inf)
    for t in np.flatnonzero(np.isfinite(a)):
        np.minimum(out[t:], a[t] + b[: m - t], out=out[t:])
    return out


def profile_bound(instance: PartitionInstance, phi: dict[int, float]) -> float:
    """The bound of item 2 of the module docstring from lower bounds ``phi[k] ≤ φ(k)`` (sizes
    in GPUs); 0 without any.

    Examples
    --------
    One vertex of 2 GPUs must leave a cluster of 6 GPUs (the other holds 2): with ``φ(2) ≥ 3``
    every cut is at least ``3 · w = 0.3``.

    >>> inst = PartitionInstance(
    ...     "t", [("a", 6), ("b", 2)], [("a", "b", 10.0)], [(f"v{i}", 2) for i in range(4)],
    ...     [("v0", "v1", 3.0), ("v1", "v2", 3.0), ("v2", "v3", 3.0), ("v3", "v0", 3.0)])
    >>> round(profile_bound(inst, {2: 3.0}), 6)
    0.3
    """
    total = instance.total_gpus
    step = unit(instance)
    if not phi or total == 0 or total // step > MAX_DP_SIZES:
        return 0.0
    units = total // step
    known = sorted(phi.items())
    size_cost = np.zeros(units + 1)
    for s in range(units + 1):
        small_side = min(s, units - s) * step
        size_cost[s] = max([0.0] + [value for k, value in known if k <= small_side])
    return max(0.0, tree_minimum(hierarchy(instance), size_cost, total, step))


def spreading_level(instance: PartitionInstance, capacity: float) -> float:
    """``LP_j`` of the spreading-metric relaxation for the largest group capacity ``capacity``
    (``benchmarks/partition/spreading_bound.py`` writes the LP out); the dual bound of HiGHS'
    interior point method, 0 when it does not finish."""
    import highspy

    n = instance.n_vertices
    u, w, traffic = instance.edge_arrays
    g = np.array([x.gpus for x in instance.vertices], dtype=float)
    m = len(traffic)
    d0, z0 = m, m + n * n
    cols = m + 2 * n * n
    highs = quiet_highs()  # no "threads": HiGHS refuses to run when it differs from the scheduler
    highs.setOptionValue("solver", "ipm")
    upper = np.ones(cols)
    upper[z0:] = highspy.kHighsInf
    upper[d0 + np.arange(n) * (n + 1)] = 0.0
    cost = np.zeros(cols)
    cost[:m] = traffic
    highs.addVars(cols, np.zeros(cols), upper)
    highs.changeColsCost(cols, np.arange(cols, dtype=np.int32), cost)
    index: list[np.ndarray] = []
    value: list[np.ndarray] = []
    lower: list[float] = []
    upper_rows: list[float] = []
    for s in range(n):
        for e in range(m):
            for a, b in ((u[e], w[e]), (w[e], u[e])):
                if b != s:
                    index.append(np.array([d0 + s * n + b, d0 + s * n + a, e]))
                    value.append(np.array([1.0, -1.0, -1.0]))
                    lower.append(-highspy.kHighsInf)
                    upper_rows.append(0.0)
        for v in range(n):
            index.append(np.array([z0 + s * n + v, d0 + s * n + v]))
            value.append(np.array([1.0, 1.0]))
            lower.append(1.0)
            upper_rows.append(highspy.kHighsInf)
        index.append(z0 + s * n + np.arange(n))
        value.append(g)
        lower.append(-highspy.kHighsInf)
        upper_rows.append(capacity)
    starts = np.cumsum([0] + [len(i) for i in index[:-1]]).astype(np.int32)
    highs.addRows(
        len(index),
        np.array(lower),
        np.array(upper_rows),
        int(sum(len(i) for i in index)),
        starts,
        np.concatenate(index).astype(np.int32),
        np.concatenate(value),
    )
    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return 0.0
    # the dual objective of an optimal IPM solution (after crossover) is the LP value; keep a
    # relative safety margin for the solver's tolerances
    return max(0.0, float(highs.getInfo().objective_function_value) * (1 - 1e-6))


def spreading_bound(instance: PartitionInstance) -> float:
    """``Σ_j δ_j LP_j`` over the levels whose largest group cannot hold the job."""
    steps = level_steps(instance.graph.levels)
    need = instance.total_gpus
    capacity = [c.capacity_gpus for c in instance.clusters]
    bound = 0.0
    for j, part in enumerate(instance.graph.hierarchy[: len(steps)]):
        largest = max(sum(capacity[c] for c in group) for group in part)
        if largest < need:
            bound += steps[j] * spreading_level(instance, largest)
    return bound


def profile_sizes(instance: PartitionInstance, where: list[int] | None) -> list[int]:
    """Sizes (GPUs, at most ``n / 2``) at which to bound ``φ``: the smaller side of every group
    of the incumbent ``where`` (the sizes an optimum near it has), else a geometric grid;
    largest first (the largest are the most useful and the fastest to prove)."""
    n = instance.total_gpus
    step = unit(instance)
    sizes: set[int] = set()
    if where is not None:
        load = np.zeros(instance.n_clusters, dtype=np.int64)
        np.add.at(load, np.asarray(where), [v.gpus for v in instance.vertices])
        for node in hierarchy(instance)[:-1]:
            s = int(load[list(node.clusters)].sum())
            if min(s, n - s) > 0:
                sizes.add(min(s, n - s))
    if not sizes:
        k = step
        while 2 * k <= n:
            sizes.add(k)
            k *= 2
    ordered = sorted(sizes, reverse=True)
    return ordered[:PROFILE_SIZES]


def lower_bounds(
    instance: PartitionInstance,
    where: list[int] | None,
    solve: SubSolver,
    deadline: float | None,
    *,
    spreading: bool = True,
    columns: bool = False,
) -> Iterator[Bound]:
    """Prove lower bounds (module docstring, items 1–3) until ``deadline``
    (``time.perf_counter()``; ``None``: no limit, each sub-problem at most
    :data:`SUB_LIMIT_S`), yielding each new best one.

    Parameters
    ----------
    instance
        The instance.
    where
        The incumbent's cluster per vertex (it picks the profile's sizes), or ``None``.
    solve
        Proves a lower bound of a sub-instance within a time limit.
    deadline
        When to stop.
    spreading
        Whether to try the spreading-metric LP (only up to
        :data:`SPREADING_MAX_VERTICES` vertices).
    columns
        Whether to run the column generation of :mod:`topoopt.partition.colgen` (item 4)
        after the profile, with :data:`COLUMNS_SHARE` of the time (the profile's sub-problems
        end that much earlier); :data:`COLUMNS_LIMIT_S` without a deadline.
    """
    final = deadline
    if columns and deadline is not None:
        deadline = time.perf_counter() + (1 - COLUMNS_SHARE) * (deadline - time.perf_counter())

    def left() -> float:
        return SUB_LIMIT_S if deadline is None else deadline - time.perf_counter()

    best = 0.0
    graph = instance.graph
    sizes = profile_sizes(instance, where)
    need = instance.total_gpus
    capacity = [c.capacity_gpus for c in instance.clusters]
    # 1. level coarsenings with few groups, coarsest first
    for j in range(len(graph.levels) - 1, 0, -1):
        part = [sorted(group) for group in graph.hierarchy[j]]
        if len(part) > MAX_COARSE_GROUPS or left() <= 0:
            continue
        if max(sum(capacity[c] for c in group) for group in part) >= need:
            continue  # one group holds the job: bound 0
        # at most a share of the time per sub-problem: one hard sub-problem must not take all
        value = solve(merged(instance, part, f"{instance.name}-level-{j}"), left() / 2)
        if value > best:
            best = value
            yield Bound(value, f"level-{j} coarsening ({len(part)} groups)")
    # 2. the isoperimetric profile
    phi: dict[int, float] = {}
    for i, k in enumerate(sizes):
        sub = carve(instance, k)
        if sub is None or left() <= 0:
            continue
        phi[k] = solve(sub, left() / (len(sizes) - i))
        value = profile_bound(instance, phi)
        if value > best:
            best = value
            yield Bound(value, f"isoperimetric profile ({len(phi)} sizes)")
    # 4. column generation over the tree of groups
    if columns:
        from topoopt.partition.colgen import colgen_bounds

        deadline = time.perf_counter() + COLUMNS_LIMIT_S if final is None else final
        for found in colgen_bounds(instance, where, deadline):
            if found.value > best:
                best = found.value
                yield found
    # 3. the spreading metric
    if spreading and instance.n_vertices <= SPREADING_MAX_VERTICES and left() > 0:
        value = spreading_bound(instance)
        if value > best:
            best = value
            yield Bound(value, "spreading-metric LP")


__all__ = [
    "Bound",
    "Node",
    "carve",
    "hierarchy",
    "lower_bounds",
    "merged",
    "profile_bound",
    "spreading_bound",
    "tree_minimum",
]
