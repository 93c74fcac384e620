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
   of radius 1 hold at most the largest group capacity (:func:`spreading_lp`) and together
   at most the largest ``Σ_G s_G²`` the level's groups allow (:func:`squared_sizes`);
   ``Σ_j δ_j LP_j``, each ``LP_j`` certified by the Lagrangian value at PDLP's duals.

4. **Column generation** (:mod:`topoopt.partition.colgen`, option ``columns``): the
   Lagrangian (Farley) bound of the Dantzig–Wolfe master over the tree of groups, a vertex set
   per group with its cardinality range, certified at every round.
5. **Projected eigenvalue bound** (:mod:`topoopt.partition.spectral`): the cut is
   ``½ tr(M · Y U Yᵀ)`` for the scaled traffic Laplacian ``M`` and the ultrametric's
   similarity ``U``; projecting out ``√g`` and von Neumann's trace inequality bound it by the
   Laplacian's eigenvalues against those of the sizes' Gram matrix, least at a vertex of the
   feasible sizes. One eigendecomposition (milliseconds at 512 vertices).

:func:`lower_bounds` runs 5 (it costs nothing), 3 (the strongest where it applies, up to
:func:`spreading_fits`), 1, 2 and 4 in that order within a deadline and
yields each bound as it is proven, with a sentence saying how it was obtained.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import reduce

import numpy as np
import scipy.sparse as sp

from topoopt.core.backends import quiet_highs
from topoopt.core.convolution import min_plus
from topoopt.partition.formulations.cut_mip import level_steps
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.spectral import (
    eigenvalue_bound,
    fill_largest,
    level_bounds,
    level_capacities,
)

MAX_COARSE_GROUPS = 3
"""Largest level coarsening proved by the MIP (with more groups its bound stays near 0)."""
PROFILE_SIZES = 8
"""Most sizes at which the isoperimetric profile is bounded."""
SUB_LIMIT_S = 60.0
"""Time limit of one sub-problem when the call has none."""
SPREADING_MAX_VERTICES = 640
"""Largest job for the spreading-metric LP (``|V|²`` distance columns)."""
SPREADING_MAX_PATH_ROWS = 4_000_000
"""Most shortest-path rows (``2 |V| |E|``) of the spreading-metric LP: 2.1 million at 512
units and 2,048 edges (25-62 s per level by PDLP); a dense job graph of a few hundred
vertices would need tens of millions."""
PDLP_TOLERANCES = {
    "primal_feasibility_tolerance": 1e-4,
    "dual_feasibility_tolerance": 1e-4,
    "pdlp_optimality_tolerance": 1e-3,
}
"""HiGHS options of the spreading LP's PDLP runs. The bound is certified at any duals, so
looser tolerances cost only a little bound: on a level of a fresh 512-unit Table 2 instance
(seed 3, level 0) the defaults' 1e-7 optimality tolerance took 339 s for 513.55, 1e-3 took
40 s for 512.72 (1e-2: 37 s, 510.89); feasibility tolerances of 1e-7 instead of 1e-4 took
462 s on a level of ``t2-512-0-2``."""
COLUMNS_LIMIT_S = 60.0
"""Time limit of the column generation when the call has none."""
COLUMNS_SHARE = 0.5
"""Share of the bounds' time left to the column generation (when asked for) when the
spreading metric does not go first."""
COLUMNS_AUTO_VERTICES = 64
"""Smallest job on which the column generation follows the spreading metric by default, and
from which nothing else follows it (the coarsenings and the profile: at 128 units they never
came near the spreading metric; at 512 units the profile proved 0.287 in the time the
spreading metric left, against its 8.250, ``docs/partition.md``)."""
COLUMNS_AUTO_MAX_VERTICES = 256
"""Largest job on which it does: at 512 units / 2,048 edges it proved 0.493 in 300 s alone
(``docs/partition.md``), against the spreading metric's 8.250; the time goes to the iterated
search of ``partition/mip`` instead."""
MAX_DP_SIZES = 8192
"""Most sizes (in units of the GPUs' greatest common divisor) of the tree dynamic program."""

SubSolver = Callable[[PartitionInstance, float], float]
"""``solve(instance, time_limit) -> proven lower bound`` of a sub-instance (``partition/mip``
without its own bounds)."""


@dataclass(frozen=True)
class Bound:
    """A proven lower bound on the optimum and how it was obtained, with the assignment (a
    cluster index per vertex) the method found on its way, if any (the branch and price's
    integral nodes), whose cut the bound may have reached."""

    value: float
    method: str
    where: list[int] | None = None


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
                table = min_plus(table, best[child])
            table[room + 1 :] = np.inf
        if node.parent >= 0:
            table = table + node.cost * size_cost
        best.append(table)
    return float(best[-1][units])


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


def squared_sizes(need: float, capacities: Sequence[float]) -> float:
    """The most ``Σ_G s_G²`` over group sizes ``0 ≤ s_G ≤ K_G`` with ``Σ_G s_G = need``: at
    the sizes that fill the largest groups first (:func:`~topoopt.partition.spectral.fill_largest`;
    a convex function is largest at the vertex whose sizes majorise every other feasible
    vector's).

    Examples
    --------
    >>> squared_sizes(10, [4, 8, 2])
    68.0
    """
    return float((fill_largest(need, capacities) ** 2).sum())


def spreading_level(
    instance: PartitionInstance,
    capacity: float,
    squares: float | None = None,
    time_limit: float | None = None,
) -> float:
    """``LP_j`` of the spreading-metric relaxation for the largest group capacity ``capacity``
    and, when given, the bound ``squares`` on ``Σ_s g_s · ball(s)`` (:func:`squared_sizes`;
    :func:`spreading_lp` writes the LP out). HiGHS' first-order solver (PDLP) gives the row duals
    ``y`` of the LP with every row divided by its largest coefficient; the bound is the
    Lagrangian value :func:`safe_dual_bound` at ``y``, valid for any ``y`` whatever the
    solver's tolerances (0 without a dual solution, e.g. when ``time_limit`` seconds pass
    first)."""
    import highspy

    matrix, rows, columns, cost = scaled_rows(*spreading_lp(instance, capacity, squares))
    highs = quiet_highs()  # no "threads": HiGHS refuses to run when it differs from the scheduler
    highs.setOptionValue("solver", "pdlp")  # 128 units: 1-2 s for all levels (the IPM: 22-29 s)
    for option, value in PDLP_TOLERANCES.items():
        highs.setOptionValue(option, value)
    if time_limit is not None:
        highs.setOptionValue("time_limit", max(time_limit, 1e-3))
    count = len(cost)
    highs.addVars(count, *columns)
    highs.changeColsCost(count, np.arange(count, dtype=np.int32), cost)
    inf = highspy.kHighsInf
    highs.addRows(
        matrix.shape[0],
        np.where(np.isinf(rows[0]), -inf, rows[0]),
        np.where(np.isinf(rows[1]), inf, rows[1]),
        matrix.nnz,
        matrix.indptr[:-1].astype(np.int32),
        matrix.indices.astype(np.int32),
        matrix.data,
    )
    highs.run()
    solution = highs.getSolution()
    if not solution.dual_valid:
        return 0.0
    y = np.asarray(solution.row_dual)
    bound = max(
        safe_dual_bound(matrix, rows, columns, cost, sign * y)
        for sign in (1.0, -1.0)  # whichever sign convention the duals follow
    )
    return max(0.0, bound)


def scaled_rows(
    matrix: sp.csr_matrix,
    rows: tuple[np.ndarray, np.ndarray],
    columns: tuple[np.ndarray, np.ndarray],
    cost: np.ndarray,
) -> tuple[sp.csr_matrix, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], np.ndarray]:
    """The same LP with every row (and its sides) divided by its largest absolute
    coefficient. PDLP's tolerances are relative to the norm of the right-hand sides: the
    aggregate ball row's ``Σ_G s_G²`` (about ``10⁷`` at 512 units) made it stop at the zero
    point as "optimal"."""
    largest = np.abs(matrix).max(axis=1).toarray().ravel()
    factor = 1.0 / np.where(largest > 0, largest, 1.0)
    return sp.diags(factor).dot(matrix).tocsr(), (rows[0] * factor, rows[1] * factor), columns, cost


def spreading_lp(
    instance: PartitionInstance, capacity: float, squares: float | None
) -> tuple[sp.csr_matrix, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], np.ndarray]:
    """The LP of :func:`spreading_level` as ``(A, (row lo, row up), (col lo, col up), c)``.

    Columns: ``ℓ_e`` (``m``) and ``d_sv`` (``n²``, ``d_ss = 0``), all in ``[0, 1]``. Rows:
    ``d_sb − d_sa − ℓ_e ≤ 0`` for every source ``s`` and edge ``e`` in both directions
    ``a → b`` (``b ≠ s``; shortest paths), ``Σ_v g_v d_sv ≥ g(V) − capacity`` per source (the
    ball ``Σ_v g_v z_sv ≤ capacity`` with ``z_sv = 1 − d_sv``, the least ``z ≥ 1 − d, z ≥ 0``
    allows since ``d ≤ 1``), and ``Σ_s g_s Σ_v g_v d_sv ≥ g(V)² − squares``.
    """
    n = instance.n_vertices
    u, w, traffic = instance.edge_arrays
    g = np.array([x.gpus for x in instance.vertices], dtype=float)
    total = float(g.sum())
    m = len(traffic)
    d0 = m
    cols = m + n * n
    # shortest paths: per source s and directed edge a -> b with b != s
    heads = np.tile(np.concatenate([w, u]), n)
    tails = np.tile(np.concatenate([u, w]), n)
    edges = np.tile(np.concatenate([np.arange(m), np.arange(m)]), n)
    source = np.repeat(np.arange(n), 2 * m)
    keep = heads != source
    heads, tails, edges, source = heads[keep], tails[keep], edges[keep], source[keep]
    paths = len(source)
    path_cols = np.stack([d0 + source * n + heads, d0 + source * n + tails, edges], axis=1)
    path_vals = np.tile([1.0, -1.0, -1.0], (paths, 1))
    # balls: per source, and all together
    pairs = np.arange(n * n)
    blocks = [(path_cols, path_vals), (d0 + pairs.reshape(n, n), np.tile(g, (n, 1)))]
    lower = [np.full(paths, -np.inf), np.full(n, total - float(capacity))]
    upper = [np.zeros(paths), np.full(n, np.inf)]
    if squares is not None:
        blocks.append(((d0 + pairs)[None, :], np.outer(g, g).ravel()[None, :]))
        lower.append(np.array([total * total - float(squares)]))
        upper.append(np.array([np.inf]))
    indices = np.concatenate([c.ravel() for c, _ in blocks])
    data = np.concatenate([v.ravel() for _, v in blocks])
    lengths = np.concatenate([np.full(c.shape[0], c.shape[1]) for c, _ in blocks])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    matrix = sp.csr_matrix((data, indices, indptr), shape=(len(lengths), cols))
    col_upper = np.ones(cols)
    col_upper[d0 + np.arange(n) * (n + 1)] = 0.0
    cost = np.zeros(cols)
    cost[:m] = traffic
    return (
        matrix,
        (np.concatenate(lower), np.concatenate(upper)),
        (np.zeros(cols), col_upper),
        cost,
    )


def safe_dual_bound(
    matrix: sp.csr_matrix,
    rows: tuple[np.ndarray, np.ndarray],
    columns: tuple[np.ndarray, np.ndarray],
    cost: np.ndarray,
    y: np.ndarray,
) -> float:
    """A lower bound on ``min {c x : lo ≤ A x ≤ up, l ≤ x ≤ u}`` from any multipliers ``y``
    (bounded columns): ``c x = (c − Aᵀy) x + yᵀ A x``, and for every feasible ``x`` each
    term is at least its minimum over the bounds — ``y_i lo_i`` for ``y_i ≥ 0``, ``y_i up_i``
    for ``y_i < 0`` (a multiplier whose side is infinite is set to 0 first) and
    ``min(r_j l_j, r_j u_j)`` for ``r = c − Aᵀy``. Rounding aside (floats), this is the
    Lagrangian bound, exact at the optimal duals and valid at any others, so the LP's
    tolerance cannot make the bound wrong.

    Examples
    --------
    >>> a = sp.csr_matrix(np.array([[1.0, 1.0]]))  # min x0 + 2 x1 : x0 + x1 >= 1, 0 <= x <= 1
    >>> rows = (np.array([1.0]), np.array([np.inf]))
    >>> cols = (np.zeros(2), np.ones(2))
    >>> safe_dual_bound(a, rows, cols, np.array([1.0, 2.0]), np.array([1.0]))
    1.0
    >>> safe_dual_bound(a, rows, cols, np.array([1.0, 2.0]), np.array([0.4]))
    0.4
    """
    lo, up = rows
    y = np.where(np.isinf(lo) & (y > 0), 0.0, y)
    y = np.where(np.isinf(up) & (y < 0), 0.0, y)
    from_rows = np.where(y > 0, y * np.where(np.isinf(lo), 0.0, lo), 0.0)
    from_rows += np.where(y < 0, y * np.where(np.isinf(up), 0.0, up), 0.0)
    reduced = cost - matrix.T @ y
    left, right = columns
    return float(from_rows.sum() + np.minimum(reduced * left, reduced * right).sum())


SPREADING_SECONDS = 65.0
"""Seconds one level's spreading-metric LP took at most on the 512-unit, 2,048-edge Table 2
instances (PDLP, one thread: 37-62 s); :func:`spreading_seconds` scales it."""


def spreading_fits(instance: PartitionInstance) -> bool:
    """Whether the spreading-metric LP is small enough to build: at most
    :data:`SPREADING_MAX_VERTICES` vertices and :data:`SPREADING_MAX_PATH_ROWS` path rows."""
    n, m = instance.n_vertices, len(instance.edges)
    return n <= SPREADING_MAX_VERTICES and 2 * n * m <= SPREADING_MAX_PATH_ROWS


def spreading_first(instance: PartitionInstance, seconds: float | None) -> bool:
    """Whether the spreading-metric LP goes before the other bounds: it fits
    (:func:`spreading_fits`) and ``seconds`` (``None``: no limit) cover what one level is
    expected to take (:func:`spreading_seconds`)."""
    return spreading_fits(instance) and (seconds is None or seconds >= spreading_seconds(instance))


def spreading_levels(instance: PartitionInstance) -> list[tuple[int, int, float]]:
    """The levels the spreading-metric LP bounds, those whose largest group cannot hold the
    job: ``(j, K_j, Q_j)`` with ``K_j`` the largest group capacity and ``Q_j`` the most
    ``Σ_G s_G²`` the level's groups allow (:func:`squared_sizes`)."""
    need = instance.total_gpus
    return [
        (j, max(groups), squared_sizes(need, groups))
        for j, groups in enumerate(level_capacities(instance))
        if max(groups) < need
    ]


def spreading_seconds(instance: PartitionInstance) -> float:
    """The time one level's spreading-metric LP is expected to take at most:
    :data:`SPREADING_SECONDS` scaled by ``n² m`` (distance variables times path rows per
    source) against 512 units and 2,048 edges — an estimate that orders the bounds, nothing
    more (0.4-1.0 s measured at 128 units, 1.0 s estimated)."""
    n, m = instance.n_vertices, len(instance.edges)
    return SPREADING_SECONDS * (n / 512) ** 2 * (m / 2048)


def spreading_bound(instance: PartitionInstance, deadline: float | None = None) -> float:
    """``Σ_j δ_j LP_j`` over the levels whose largest group cannot hold the job, each LP with
    the balls' aggregate bound (:func:`squared_sizes` of the level's group capacities); the
    last of :func:`spreading_bounds` (a level cut off by ``deadline`` counts its eigenvalue
    bound)."""
    return max(spreading_bounds(instance, deadline), default=0.0)


def spreading_bounds(instance: PartitionInstance, deadline: float | None = None) -> Iterator[float]:
    """The partial sums of :func:`spreading_bound`, one per level solved, each LP within the
    time left before ``deadline`` (``time.perf_counter()``). Every level ``j`` counts
    ``δ_j`` times the larger of its ``LP_j`` (once solved) and its own eigenvalue bound
    (:func:`~topoopt.partition.spectral.level_bounds`): both bound ``T_j(π)``, so every
    partial sum is a bound. The levels go in decreasing order of ``δ_j`` times that
    eigenvalue bound (the LP measured 1.2-1.4 times it at 512 units), so that a deadline
    leaves out the levels that would have added least."""
    steps = level_steps(instance.graph.levels)
    floor = level_bounds(instance)
    terms = np.asarray(steps) * floor
    todo = spreading_levels(instance)
    for j, largest, squares in sorted(todo, key=lambda level: (-terms[level[0]], -steps[level[0]])):
        limit = None if deadline is None else deadline - time.perf_counter()
        if limit is not None and limit <= 0:
            return
        value = spreading_level(instance, largest, squares, limit)
        terms[j] = steps[j] * max(value, floor[j])
        yield float(terms.sum())


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
    columns: bool | None = None,
    workers: int = 1,
) -> Iterator[Bound]:
    """Prove lower bounds (module docstring, items 1–5) until ``deadline``
    (``time.perf_counter()``; ``None``: no limit, each sub-problem at most
    :data:`SUB_LIMIT_S`), yielding each new best one, and each assignment a method found
    (:attr:`Bound.where`, with the best bound so far).

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
        Whether to try the spreading-metric LP (only where :func:`spreading_fits`).
    columns
        Whether to run the column generation of :mod:`topoopt.partition.colgen` (item 4).
        After the spreading metric (when it goes first) it takes all the time left; otherwise
        it follows the profile with :data:`COLUMNS_SHARE` of the time (the profile's
        sub-problems end that much earlier); :data:`COLUMNS_LIMIT_S` without a deadline.
        ``None`` (default): only after the spreading metric, on jobs of
        :data:`COLUMNS_AUTO_VERTICES` to :data:`COLUMNS_AUTO_MAX_VERTICES` vertices under a
        deadline. From :data:`COLUMNS_AUTO_VERTICES` vertices on, when the spreading metric
        went first, the coarsenings and the profile do not follow it.
    workers
        Pricing problems the column generation solves at once (threads).
    """
    best = 0.0
    for found in _every_bound(instance, where, solve, deadline, spreading, columns, workers):
        if found.value > best or found.where is not None:
            best = max(best, found.value)
            yield replace(found, value=best)


def _every_bound(
    instance: PartitionInstance,
    where: list[int] | None,
    solve: SubSolver,
    deadline: float | None,
    spreading: bool,
    columns: bool | None,
    workers: int = 1,
) -> Iterator[Bound]:
    """Every bound :func:`lower_bounds` proves, in its order (each stage's values as they
    come; :func:`lower_bounds` keeps those above the best so far)."""
    final = deadline

    def left() -> float:
        return SUB_LIMIT_S if deadline is None else deadline - time.perf_counter()

    def spreading_metric() -> Iterator[Bound]:
        for value in spreading_bounds(instance, deadline):
            yield Bound(value, "spreading-metric LP")

    def column_generation() -> Iterator[Bound]:
        from topoopt.partition.colgen import colgen_bounds

        end = time.perf_counter() + COLUMNS_LIMIT_S if final is None else final
        yield from colgen_bounds(instance, where, end, workers)

    # 5. the projected eigenvalue bound: one eigendecomposition
    yield Bound(eigenvalue_bound(instance), "projected eigenvalue bound")
    graph = instance.graph
    spread = spreading and spreading_fits(instance)
    # 3. the spreading metric first, the strongest bound where it applies, when the time
    # covers what one level's LP is expected to take (every partial sum over the levels is a
    # bound; else after the others, with what they leave) ...
    if spreading and spreading_first(instance, None if deadline is None else left()):
        spread = False
        yield from spreading_metric()
        large = instance.n_vertices >= COLUMNS_AUTO_VERTICES
        if columns or (
            columns is None
            and deadline is not None
            and large
            and instance.n_vertices <= COLUMNS_AUTO_MAX_VERTICES
        ):
            # ... then the column generation with all the time left
            columns = False
            yield from column_generation()
        if large:
            return  # the coarsenings and the profile never came near it there
    elif columns and deadline is not None:
        deadline = time.perf_counter() + (1 - COLUMNS_SHARE) * (deadline - time.perf_counter())
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
        yield Bound(value, f"level-{j} coarsening ({len(part)} groups)")
    # 2. the isoperimetric profile
    phi: dict[int, float] = {}
    for i, k in enumerate(sizes):
        if left() <= 0:
            break
        sub = carve(instance, k)
        if sub is None:
            continue
        phi[k] = solve(sub, left() / (len(sizes) - i))
        yield Bound(profile_bound(instance, phi), f"isoperimetric profile ({len(phi)} sizes)")
    # 4. column generation over the tree of groups
    if columns:
        deadline = final
        yield from column_generation()
    # 3. the spreading metric, if it did not go first
    if spread and left() > 0:
        yield from spreading_metric()


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
