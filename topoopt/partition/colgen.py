r"""Column generation (Dantzig–Wolfe) over the tree of groups: a lower bound on the eq. 9 cut.

With (B0) of ``docs/partition.md``, ``cut(π) = Σ_N c_N δ(S_N)`` over the non-root groups ``N``
of the cluster hierarchy (:func:`topoopt.partition.bounds.hierarchy`), ``S_N`` the vertices
placed in ``N``'s clusters. An assignment is a choice of one vertex set per group, of size
``lo_N ≤ g(S_N) ≤ K_N`` (``K_N`` its capacity, ``lo_N = n − (ΣK − K_N)``: the clusters outside
``N`` hold at most ``ΣK − K_N``), nested: each internal group's set is the disjoint union of its
children's, the root's is ``V``. The master LP has a column ``λ_{N,S}`` per group and set (cost
``c_N δ(S)``), a convexity row per group and a nesting row per internal group ``M`` and vertex
``v``:

.. math::

    \sum_S λ_{N,S} = 1 \;∀N, \qquad
    \sum_{N ∈ \mathrm{ch}(M)} \sum_{S ∋ v} λ_{N,S} - \sum_{S ∋ v} λ_{M,S}
        = [M = \mathrm{root}] \;∀M, v

(the root has no column: its set is ``V``). Relaxing the nesting rows with multipliers
``π_{M,v}`` leaves one independent problem per group, so for **any** ``π``

.. math::

    \mathrm{cut}(π) \ge L(π) = \sum_v π_{\mathrm{root},v}
        + \sum_N \min_{lo_N \le g(S) \le K_N} \big(c_N δ(S) - p_N(S)\big),
    \qquad p_N(v) = π_{\mathrm{parent}(N),v} - π_{N,v}

(``π_{N,v} = 0`` for a leaf): an assignment's sets satisfy the relaxed rows, so its cut equals
the Lagrangian's value there, which is at least ``L(π)``. Any lower bound of each pricing
problem (a MIP's dual bound when stopped early) keeps ``L`` a valid bound: the bound is
certified at every iteration, not only at convergence (Farley's bound). ``max_π L(π)`` is the
master LP's optimum.

Pricing ``min c δ(S) − p(S)`` under the cardinality range is NP-hard (a capacitated two-way
cut). Every round prices every group heuristically (parametric min cut, :func:`min_cut`, over
a multiplier of ``g(S)``, repaired into the range and improved by single moves,
:func:`local_search`), then exactly (:func:`price_exactly`: ``y_e ≥ |x_u − x_v|``, the range on
``g · x``, warm started from the best heuristic set, within a share of the time), whose dual
bounds give ``L``. The duals are smoothed (Wentges: pricing at
``α π_best + (1 − α) π_master``, :data:`SMOOTHING`). SpiderFlow §4.2 (eq. 9) states the cut;
``docs/partition.md`` (B4) the proof and the measurements: the bound is tight on small
instances but does not converge at the Table 2 sizes within minutes, so it is opt-in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

from topoopt.core.backends import quiet_highs
from topoopt.partition.bounds import Bound, hierarchy
from topoopt.partition.instance import PartitionInstance

SMOOTHING = 0.7
"""Wentges' ``α``: weight of the best dual point when pricing."""
COLUMNS_PER_GROUP = 6
"""Most columns added per group and round."""
FLOW_SCALE = 1e9
"""Total integer capacity of a min-cut network (``maximum_flow`` needs integers)."""
EXACT_SHARE = 0.5
"""Share of the time left that one exact pricing round may take."""
TOLERANCE = 1e-9
"""Reduced costs below ``−TOLERANCE`` improve the master."""
BOUND_MARGIN = 1e-6
"""Relative safety margin taken off the bound for the LP/MIP tolerances."""


@dataclass
class Problem:
    """The column-generation data of an instance.

    Attributes
    ----------
    gpus, heads, tails, traffic
        ``g_v`` and the edges.
    adjacency
        Symmetric sparse matrix of the traffic.
    cost, low, high, parent
        ``c_N``, ``lo_N``, ``K_N`` and the parent (``-1``: the root) of every non-root group.
    internal
        Groups with children, the root (index ``len(cost)``) included, in row order.
    """

    gpus: np.ndarray
    heads: np.ndarray
    tails: np.ndarray
    traffic: np.ndarray
    adjacency: sp.csr_matrix
    cost: np.ndarray
    low: np.ndarray
    high: np.ndarray
    parent: np.ndarray
    internal: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, instance: PartitionInstance) -> Problem:
        """The data of ``instance``."""
        nodes = hierarchy(instance)
        root = len(nodes) - 1
        u, w, t = instance.edge_arrays
        nv = instance.n_vertices
        adjacency = sp.coo_matrix(
            (np.concatenate([t, t]), (np.concatenate([u, w]), np.concatenate([w, u]))),
            shape=(nv, nv),
        ).tocsr()
        n, total = instance.total_gpus, instance.total_capacity
        groups = nodes[:root]
        internal = sorted({node.parent for node in groups})
        return cls(
            gpus=np.array([v.gpus for v in instance.vertices], dtype=np.int64),
            heads=np.asarray(u),
            tails=np.asarray(w),
            traffic=np.asarray(t, dtype=float),
            adjacency=adjacency,
            cost=np.array([node.cost for node in groups]),
            low=np.array([max(0, n - (total - node.capacity)) for node in groups]),
            high=np.array([min(node.capacity, n) for node in groups]),
            parent=np.array([node.parent for node in groups]),
            internal=internal,
        )

    def boundary(self, mask: np.ndarray) -> float:
        """``δ(S)`` of the vertex set ``mask``."""
        return float(self.traffic[mask[self.heads] != mask[self.tails]].sum())

    def prizes(self, duals: np.ndarray, group: int) -> np.ndarray:
        """``p_N(v) = π_{parent, v} − π_{N, v}`` from the nesting duals (one row per internal
        group, vertices as columns)."""
        rows = {m: i for i, m in enumerate(self.internal)}
        prize = duals[rows[int(self.parent[group])]].copy()
        if group in rows:
            prize -= duals[rows[group]]
        return prize


def min_cut(problem: Problem, weight: float, prize: np.ndarray) -> np.ndarray:
    """A set minimising ``weight · δ(S) − prize(S)`` without the cardinality (an s–t min cut
    on capacities scaled to integers, so optimal up to the rounding)."""
    nv = len(prize)
    source, sink = nv, nv + 1
    gain = np.flatnonzero(prize > 0)
    loss = np.flatnonzero(prize < 0)
    rows = np.concatenate([problem.heads, problem.tails, np.full(len(gain), source), loss])
    cols = np.concatenate([problem.tails, problem.heads, gain, np.full(len(loss), sink)])
    caps = np.concatenate(
        [weight * problem.traffic, weight * problem.traffic, prize[gain], -prize[loss]]
    )
    total = float(caps.sum())
    if not total > 1e-12:  # nothing to gain or lose: the empty set
        return np.zeros(nv, dtype=bool)
    scale = FLOW_SCALE / total  # every capacity then fits an int32
    graph = sp.csr_matrix(
        (np.maximum(np.rint(caps * scale), 0).astype(np.int32), (rows, cols)),
        shape=(nv + 2, nv + 2),
    )
    flow = maximum_flow(graph, source, sink, method="dinic").flow
    residual = (graph - flow).tocsr()
    residual.data = (residual.data > 0).astype(np.int8)
    residual.eliminate_zeros()
    reached = breadth_first_order(residual, source, directed=True, return_predecessors=False)
    mask = np.zeros(nv, dtype=bool)
    mask[reached[reached < nv]] = True
    return mask


def local_search(
    problem: Problem, weight: float, prize: np.ndarray, mask: np.ndarray, low: int, high: int
) -> np.ndarray | None:
    """``mask`` moved into ``low ≤ g(S) ≤ high`` (single moves, those landing in the range
    first, cheapest first), then improved by single moves that keep it there, best first, while
    ``weight · δ(S) − prize(S)`` drops; ``None`` when the repair does not reach the range within
    ``2 |V|`` moves."""
    mask = mask.copy()
    gpus = problem.gpus
    degree = np.asarray(problem.adjacency.sum(axis=1)).ravel()
    size = int(gpus[mask].sum())
    repairs = 2 * len(mask)
    while True:
        inner = problem.adjacency @ mask.astype(float)
        # objective change of flipping v: leaving S or joining it
        delta = np.where(
            mask, weight * (2 * inner - degree) + prize, weight * (degree - 2 * inner) - prize
        )
        new_size = size + np.where(mask, -gpus, gpus)
        landing = (new_size >= low) & (new_size <= high)
        if low <= size <= high:
            allowed = landing & (delta < -TOLERANCE)
        elif repairs == 0:
            return None
        else:
            repairs -= 1
            allowed = landing if landing.any() else (mask if size > high else ~mask)
        if not allowed.any():
            return mask if low <= size <= high else None
        v = int(np.flatnonzero(allowed)[np.argmin(delta[allowed])])
        mask[v] = not mask[v]
        size = int(new_size[v])


def heuristic_columns(
    problem: Problem, group: int, prize: np.ndarray, steps: int = 14
) -> list[np.ndarray]:
    """Candidate sets for group ``group``: parametric min cuts over a multiplier ``a`` of
    ``g(S)`` (``min c δ(S) − Σ (p_v − a g_v)``, sets shrinking as ``a`` grows), bisected towards
    both ends of the size range, each repaired into it and improved by
    :func:`local_search`."""
    weight = float(problem.cost[group])
    low, high = int(problem.low[group]), int(problem.high[group])
    gpus = problem.gpus
    span = float(np.abs(prize).max() + 2 * weight * problem.traffic.sum() + 1.0)
    found: list[np.ndarray] = []
    for target in sorted({low, high}):
        lo_a, hi_a = -span, span  # at lo_a the set is V, at hi_a it is empty
        for _ in range(steps):
            a = (lo_a + hi_a) / 2
            mask = min_cut(problem, weight, prize - a * gpus)
            found.append(mask)
            if int(gpus[mask].sum()) > target:
                lo_a = a
            else:
                hi_a = a
    out: dict[bytes, np.ndarray] = {}
    for mask in found:
        better = local_search(problem, weight, prize, mask, low, high)
        if better is not None:
            out.setdefault(np.packbits(better).tobytes(), better)
    return list(out.values())


def price_exactly(
    problem: Problem, group: int, prize: np.ndarray, start: np.ndarray | None, limit: float
) -> tuple[float, np.ndarray | None]:
    """``min c δ(S) − prize(S)`` over ``lo ≤ g(S) ≤ K`` by a MIP (HiGHS, one thread, at most
    ``limit`` s): ``x_v ∈ {0, 1}``, ``y_e ≥ x_u − x_v``, ``y_e ≥ x_v − x_u``. Returns a lower
    bound on the minimum (the optimum when proven; ``-inf`` without an answer) and the best set
    found."""
    import highspy

    nv, m = len(prize), len(problem.traffic)
    weight = float(problem.cost[group])
    h = quiet_highs()
    h.setOptionValue("threads", 1)
    h.setOptionValue("time_limit", max(limit, 0.01))
    h.setOptionValue("mip_rel_gap", 0.0)
    inf = highspy.kHighsInf
    cost = np.concatenate([-prize, weight * problem.traffic])
    h.addVars(nv + m, np.zeros(nv + m), np.ones(nv + m))
    h.changeColsCost(nv + m, np.arange(nv + m, dtype=np.int32), cost)
    h.changeColsIntegrality(
        nv, np.arange(nv, dtype=np.int32), np.full(nv, highspy.HighsVarType.kInteger)
    )
    e = np.arange(m)
    y = nv + e
    starts = np.arange(0, 3 * 2 * m, 3, dtype=np.int32)
    index = np.stack(
        [
            np.stack([y, problem.heads, problem.tails], axis=1),
            np.stack([y, problem.tails, problem.heads], axis=1),
        ]
    ).reshape(-1)
    values = np.tile(np.array([1.0, -1.0, 1.0]), 2 * m)
    h.addRows(
        2 * m, np.zeros(2 * m), np.full(2 * m, inf), 6 * m, starts, index.astype(np.int32), values
    )
    h.addRow(
        float(problem.low[group]),
        float(problem.high[group]),
        nv,
        np.arange(nv, dtype=np.int32),
        problem.gpus.astype(float),
    )
    if start is not None:
        sol = highspy.HighsSolution()
        x = start.astype(float)
        sol.col_value = list(np.concatenate([x, np.abs(x[problem.heads] - x[problem.tails])]))
        h.setSolution(sol)
    h.run()
    info = h.getInfo()
    bound = float(info.mip_dual_bound)
    if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        bound = min(bound, float(info.objective_function_value))
    if not math.isfinite(bound):
        bound = -math.inf
    best = None
    solution = h.getSolution()
    if solution.value_valid:
        best = np.asarray(solution.col_value[:nv]) > 0.5
        if not problem.low[group] <= problem.gpus[best].sum() <= problem.high[group]:
            best = None
    return bound, best


class Master:
    """The restricted master LP (HiGHS, columns added as they are found)."""

    def __init__(self, problem: Problem, nv: int) -> None:
        import highspy

        self.problem = problem
        self.nv = nv
        self.groups = len(problem.cost)
        self.rows = {m: i for i, m in enumerate(problem.internal)}
        self.h = quiet_highs()
        self.h.setOptionValue("threads", 1)
        root = self.groups
        nest = len(problem.internal) * nv
        lower = np.concatenate([np.ones(self.groups), np.zeros(nest)])
        lower[self.groups + self.rows[root] * nv : self.groups + (self.rows[root] + 1) * nv] = 1
        self.h.addRows(
            len(lower), lower, lower.copy(), 0, np.array([], np.int32), np.array([], np.int32), []
        )
        # artificial columns (cost above any assignment's cut) keep the LP feasible before
        # real columns cover every row; L(π) is valid for any duals, so they do not matter
        rows = len(lower)
        penalty = 1.0 + float(problem.cost.sum() * problem.traffic.sum())
        for sign in (1.0, -1.0):
            self.h.addCols(
                rows,
                np.full(rows, penalty),
                np.zeros(rows),
                np.full(rows, highspy.kHighsInf),
                rows,
                np.arange(rows, dtype=np.int32),
                np.arange(rows, dtype=np.int32),
                np.full(rows, sign),
            )
        self.columns: list[tuple[int, np.ndarray]] = []
        self.seen: set[tuple[int, bytes]] = set()

    def add(self, group: int, mask: np.ndarray) -> bool:
        """Add the column of ``mask`` for ``group`` (``False`` if it is already there)."""
        key = (group, np.packbits(mask).tobytes())
        if key in self.seen:
            return False
        self.seen.add(key)
        members = np.flatnonzero(mask)
        nv, g0 = self.nv, self.groups
        index = [np.array([group])]
        values = [np.array([1.0])]
        parent = int(self.problem.parent[group])
        index.append(g0 + self.rows[parent] * nv + members)
        values.append(np.ones(len(members)))
        if group in self.rows:
            index.append(g0 + self.rows[group] * nv + members)
            values.append(-np.ones(len(members)))
        idx = np.concatenate(index).astype(np.int32)
        cost = float(self.problem.cost[group]) * self.problem.boundary(mask)
        self.h.addCol(cost, 0.0, np.inf, len(idx), idx, np.concatenate(values))
        self.columns.append((group, mask))
        return True

    def solve(self) -> tuple[float, np.ndarray, np.ndarray]:
        """The LP's value, the convexity duals and the nesting duals (internal group × vertex)."""
        self.h.run()
        value = float(self.h.getInfo().objective_function_value)
        dual = np.asarray(self.h.getSolution().row_dual)
        return value, dual[: self.groups], dual[self.groups :].reshape(-1, self.nv)


def lagrangian(problem: Problem, nest: np.ndarray, minima: np.ndarray) -> float:
    """``L(π)`` (module docstring) from lower bounds ``minima`` of the pricing problems."""
    root = problem.internal.index(len(problem.cost))
    return float(nest[root].sum() + minima.sum())


def colgen_bounds(
    instance: PartitionInstance,
    where: list[int] | None,
    deadline: float,
) -> Iterator[Bound]:
    """Column generation (module docstring) until ``deadline`` (``time.perf_counter()``) or
    until no improving column is found, yielding each new best certified bound.

    Parameters
    ----------
    instance
        The instance (every cut is at least each yielded value).
    where
        An incumbent's cluster per vertex, whose sets start the master (else it starts from
        artificial columns only).
    deadline
        When to stop.
    """
    problem = Problem.of(instance)
    nv, groups = instance.n_vertices, len(problem.cost)
    if groups == 0 or nv == 0:
        return
    master = Master(problem, nv)
    nodes = hierarchy(instance)
    if where is not None:
        at = np.asarray(where)
        for i in range(groups):
            master.add(i, np.isin(at, sorted(nodes[i].clusters)))

    def left() -> float:
        return deadline - time.perf_counter()

    best, center = 0.0, None
    while True:
        if left() <= 0:
            return
        _, conv, nest = master.solve()
        point = nest if center is None else SMOOTHING * center + (1 - SMOOTHING) * nest
        # one round: every group priced at the smoothed duals, exactly (a lower bound of each
        # pricing problem gives L(point)); improving columns at the master's duals are added
        minima = np.empty(groups)
        added = 0
        stop = time.perf_counter() + EXACT_SHARE * left()
        for i in range(groups):
            prize, true_prize = problem.prizes(point, i), problem.prizes(nest, i)
            candidates = heuristic_columns(problem, i, prize)
            if point is not nest:
                candidates += heuristic_columns(problem, i, true_prize)
            limit = (stop - time.perf_counter()) / (groups - i)
            start = min(candidates, key=lambda m: _price(problem, i, prize, m), default=None)
            minima[i], found = price_exactly(problem, i, prize, start, limit)
            if found is not None:
                candidates.append(found)
            scored = sorted(
                (_price(problem, i, true_prize, m) - conv[i], k) for k, m in enumerate(candidates)
            )
            for reduced, k in scored[:COLUMNS_PER_GROUP]:
                if reduced < -TOLERANCE:
                    added += master.add(i, candidates[k])
        bound = lagrangian(problem, point, minima)
        bound -= BOUND_MARGIN * abs(bound)
        if bound > best:
            best = bound
            yield Bound(best, f"column generation ({len(master.columns)} columns)")
        if not added and point is nest:
            return  # no improving column at the master's duals: the master is optimal
        # Wentges: the center is the best dual point; after a mispricing (no column at the
        # smoothed point) the next round prices at the master's duals
        center = None if not added else (point if bound >= best else center)


def _price(problem: Problem, group: int, prize: np.ndarray, mask: np.ndarray) -> float:
    """``c_N δ(S) − prize(S)`` of the set ``mask``."""
    return float(problem.cost[group] * problem.boundary(mask) - prize[mask].sum())


__all__ = ["Problem", "colgen_bounds", "heuristic_columns", "local_search", "min_cut"]
