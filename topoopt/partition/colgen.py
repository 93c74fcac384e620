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
cut). Rounds price every group heuristically (:func:`candidates`: parametric min cuts,
:func:`min_cut`, over a multiplier of ``g(S)``; sets grown from seed vertices,
:func:`grown_columns`; the group's best columns; each repaired into the range and improved by
single moves, :func:`local_search`) until no improving column is found, then exactly
within a share of the time, whose bounds give ``L``: by branch and bound on Lagrangian min
cuts (:func:`price_by_cuts`, :mod:`topoopt.partition.cut_pricing`; the default, each group's
search starting from the leaves of its last one, kept by the master) or by a MIP
(:func:`price_exactly`: ``y_e ≥ |x_u − x_v|``, the range on ``g · x``, HiGHS without
presolve, warm started). The master's nesting
duals are kept in a box around the best ``π`` found (box-step stabilisation, :class:`Master`).
Once the master's optimum is proven, branch and price (:func:`branch_and_price`) fixes
vertices in or out of groups' sets (:meth:`Problem.fix`), kept by the prizes in the
heuristics and as the root of the exact cut pricer's search, so the same pricers bound
every node.
SpiderFlow §4.2 (eq. 9) states the cut; ``docs/partition.md`` (B4) the proof and the
measurements.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from topoopt.core.backends import quiet_highs
from topoopt.partition.bounds import Bound, hierarchy
from topoopt.partition.cut_pricing import CutNetwork, CutProblem, Frontier
from topoopt.partition.cut_pricing import price_by_cuts as search_by_cuts
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment, evaluate

BOX = 0.125
"""Initial half-width of the dual box, in units of ``median_N c_N · mean_e t_e`` (the cost of
moving a typical vertex)."""
LEAST_BOX = 0.125
"""Least half-width of the dual box, as a share of its initial one (it halves after each
exact round that finds no better ``L``)."""
HEURISTIC_ROUNDS = 5
"""Most heuristic pricing rounds between two exact ones."""
SEEDS = 8
"""Vertices from which :func:`grown_columns` grows sets."""
COLUMNS_PER_GROUP = 6
"""Most columns added per group and round."""
EXACT_SHARE = 0.5
"""Share of the time left that one exact pricing round may take."""
TOLERANCE = 1e-9
"""Reduced costs below ``−TOLERANCE`` improve the master."""
PRICING = "cuts"
"""The exact pricer by default (a key of :data:`PRICERS`; ``docs/partition.md``, B4)."""
PENALTY = 4.0
"""The fixings' prize (:attr:`Problem.penalty`), in units of ``Σ_N c_N · Σ_e t_e + 1``, more
than a group's boundary term can move a set's price: any value keeps the bound valid, a
smaller one makes it weak, a larger one costs precision (the min cuts' integer scale is
shared with it: with 1000, half a unit of the ``2⁴⁰`` scale per arc comes to about ``10⁻⁴``
per exact round at 128 units, an estimate, the size of the gaps left after one branch)."""
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
    cluster
        The cluster of every group of one cluster (``-1`` for the others).
    internal
        Groups with children, the root (index ``len(cost)``) included, in row order.
    inside, outside
        A branch-and-price node's fixings (group × vertex: the vertex fixed in or out of
        the group's set; ``None``: none), kept by the prizes (:meth:`prizes`), the exact
        cut pricer's search (:func:`price_by_cuts`) and the columns (:meth:`admits`).
    penalty
        The prize that keeps a fixed vertex in or out (:meth:`prizes`).
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
    cluster: np.ndarray
    internal: list[int] = field(default_factory=list)
    inside: np.ndarray | None = None
    outside: np.ndarray | None = None
    penalty: float = 0.0

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
            cluster=np.array(
                [min(node.clusters) if len(node.clusters) == 1 else -1 for node in groups]
            ),
            internal=internal,
        )

    def boundary(self, mask: np.ndarray) -> float:
        """``δ(S)`` of the vertex set ``mask``."""
        return float(self.traffic[mask[self.heads] != mask[self.tails]].sum())

    def prizes(self, duals: np.ndarray, group: int) -> np.ndarray:
        """``p_N(v) = π_{parent, v} − π_{N, v}`` from the nesting duals (one row per internal
        group, vertices as columns), plus :attr:`penalty` on the vertices fixed in ``N`` and
        minus it on those fixed out: a set that keeps the fixings then prices
        :meth:`offset` below its reduced cost, one that breaks one at least ``penalty``
        above that (``docs/partition.md``, B4, branch and price)."""
        rows = {m: i for i, m in enumerate(self.internal)}
        prize = duals[rows[int(self.parent[group])]].copy()
        if group in rows:
            prize -= duals[rows[group]]
        if self.inside is not None and self.outside is not None:
            prize += self.penalty * self.inside[group] - self.penalty * self.outside[group]
        return prize

    def offset(self, group: int) -> float:
        """What the fixings' prizes take off the price of a set that keeps them:
        :attr:`penalty` per vertex fixed in ``group``."""
        return 0.0 if self.inside is None else self.penalty * float(self.inside[group].sum())

    def admits(self, group: int, mask: np.ndarray) -> bool:
        """Whether the set ``mask`` keeps ``group``'s fixings."""
        if self.inside is None or self.outside is None:
            return True
        return bool(mask[self.inside[group]].all() and not mask[self.outside[group]].any())

    def fix(self, group: int, vertex: int, inside: bool) -> Problem | None:
        """This problem with ``vertex`` fixed in ``group``'s set (then also in its
        ancestors' and out of every group neither above nor below it: the vertex's cluster
        lies below ``group``) or out of it (then also out of its descendants'); ``None``
        when that contradicts a fixing already made."""
        groups, n = len(self.cost), len(self.gpus)
        inner = np.zeros((groups, n), bool) if self.inside is None else self.inside.copy()
        outer = np.zeros((groups, n), bool) if self.outside is None else self.outside.copy()
        above = self.ancestors(group)
        below = [h for h in range(groups) if group in self.ancestors(h)]
        if inside:
            inner[[group, *above], vertex] = True
            path = {group, *above, *below}
            outer[[h for h in range(groups) if h not in path], vertex] = True
        else:
            outer[[group, *below], vertex] = True
        if (inner & outer).any():
            return None
        penalty = self.penalty or PENALTY * (float(self.cost.sum() * self.traffic.sum()) + 1.0)
        return replace(self, inside=inner, outside=outer, penalty=penalty)

    def ancestors(self, group: int) -> list[int]:
        """The non-root groups above ``group``."""
        root, out = len(self.cost), []
        while int(self.parent[group]) != root:
            group = int(self.parent[group])
            out.append(group)
        return out


def min_cut(network: CutNetwork, prize: np.ndarray) -> np.ndarray:
    """A set minimising ``δ_w(S) − prize(S)`` without the cardinality, ``δ_w`` the capacities
    ``network`` was built with (a group's ``c_N t_e``): the least source side of
    :meth:`~topoopt.partition.cut_pricing.CutNetwork.minimum` (an s–t min cut on capacities
    scaled to integers, so optimal up to the rounding)."""
    nothing = np.zeros(len(prize), dtype=bool)
    return network.minimum(-prize, nothing, nothing)[0]


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
    network = CutNetwork(problem.heads, problem.tails, weight * problem.traffic, len(prize))
    found: list[np.ndarray] = []
    for target in sorted({low, high}):
        lo_a, hi_a = -span, span  # at lo_a the set is V, at hi_a it is empty
        for _ in range(steps):
            a = (lo_a + hi_a) / 2
            mask = min_cut(network, prize - a * gpus)
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


def grown_columns(
    problem: Problem, group: int, prize: np.ndarray, seeds: np.ndarray
) -> list[np.ndarray]:
    """Candidate sets for group ``group`` grown greedily from each vertex of ``seeds``: add
    the vertex lowering ``c δ(S) − prize(S)`` most (or raising it least) while ``g(S) ≤ K``,
    keep the best set within the range, improved by :func:`local_search`. Whole blocks of
    heavily linked vertices (a stage's ring) join together, which the parametric cuts of
    :func:`heuristic_columns` miss between their breakpoints."""
    weight = float(problem.cost[group])
    low, high = int(problem.low[group]), int(problem.high[group])
    gpus, adjacency = problem.gpus, problem.adjacency
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    out = []
    for seed in seeds:
        mask = np.zeros(len(prize), dtype=bool)
        inner = np.zeros(len(prize))  # traffic from each vertex into S
        size, best, value, best_value = 0, None, 0.0, math.inf
        v = int(seed)
        while True:
            mask[v] = True
            value += weight * (degree[v] - 2 * inner[v]) - prize[v]
            row = slice(adjacency.indptr[v], adjacency.indptr[v + 1])  # symmetric: v's column
            inner[adjacency.indices[row]] += adjacency.data[row]
            size += int(gpus[v])
            if low <= size <= high and value < best_value:
                best, best_value = mask.copy(), value
            change = weight * (degree - 2 * inner) - prize  # of adding each vertex
            change[mask | (size + gpus > high)] = math.inf
            if not np.isfinite(change).any():
                break
            v = int(np.argmin(change))
        if best is not None:
            better = local_search(problem, weight, prize, best, low, high)
            out.append(best if better is None else better)
    return out


def pool_columns(
    problem: Problem, group: int, prize: np.ndarray, pool: list[np.ndarray], count: int = 4
) -> list[np.ndarray]:
    """The ``count`` sets of ``pool`` (the group's columns) cheapest at ``prize``, improved by
    :func:`local_search` (the duals move little between rounds, so last rounds' best sets are
    near this round's)."""
    weight = float(problem.cost[group])
    low, high = int(problem.low[group]), int(problem.high[group])
    cheapest = sorted(pool, key=lambda mask: _price(problem, group, prize, mask))[:count]
    out = []
    for mask in cheapest:
        better = local_search(problem, weight, prize, mask, low, high)
        out.append(mask if better is None else better)
    return out


def price_exactly(
    problem: Problem,
    group: int,
    prize: np.ndarray,
    start: np.ndarray | None,
    limit: float,
    frontier: Frontier | None = None,
) -> tuple[float, list[np.ndarray], bool]:
    """``min c δ(S) − prize(S)`` over ``lo ≤ g(S) ≤ K`` by a MIP (HiGHS, one thread, presolve
    off, at most ``limit`` s): ``x_v ∈ {0, 1}``, ``y_e ≥ x_u − x_v``, ``y_e ≥ x_v − x_u``.
    Returns a lower bound on the minimum (the optimum when proven; ``-inf`` without an answer),
    the admissible sets HiGHS found on its way (its improving solutions), best first, and
    whether HiGHS proved the minimum. A MIP keeps no tree between rounds: ``frontier`` is
    not used.

    HiGHS' presolve slows it down 2–5× on these models (``docs/partition.md``, B4)."""
    import highspy

    nv, m = len(prize), len(problem.traffic)
    weight = float(problem.cost[group])
    h = quiet_highs()  # no "threads": HiGHS refuses to run when it differs from the scheduler
    h.setOptionValue("presolve", "off")
    h.setOptionValue("time_limit", max(limit, 0.01))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_improving_solution_save", True)
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
    info, status = h.getInfo(), h.getModelStatus()
    bound = -math.inf  # a failed run (no branch and bound) proves nothing
    if status in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit):
        bound = float(info.mip_dual_bound)
    if status == highspy.HighsModelStatus.kOptimal:
        bound = min(bound, float(info.objective_function_value))
    if not math.isfinite(bound):
        bound = -math.inf
    found = [np.asarray(saved.col_value[:nv]) > 0.5 for saved in h.getSavedMipSolutions()]
    solution = h.getSolution()
    if solution.value_valid:
        found.append(np.asarray(solution.col_value[:nv]) > 0.5)
    low, high = problem.low[group], problem.high[group]
    sets = [mask for mask in found if low <= problem.gpus[mask].sum() <= high]
    ranked = sorted(sets, key=lambda mask: _price(problem, group, prize, mask))
    if not ranked or status != highspy.HighsModelStatus.kOptimal:
        return bound, ranked, False
    value = _price(problem, group, prize, ranked[0])
    return bound, ranked, bound >= value - TOLERANCE * max(1.0, abs(value))


def price_by_cuts(
    problem: Problem,
    group: int,
    prize: np.ndarray,
    start: np.ndarray | None,
    limit: float,
    frontier: Frontier | None = None,
) -> tuple[float, list[np.ndarray], bool]:
    """The pricing problem of :func:`price_exactly` by branch and bound on Lagrangian min cuts
    (:mod:`topoopt.partition.cut_pricing`), from the leaves of ``frontier`` (the group's last
    search, replaced by this one's): a lower bound, the best admissible sets found (best
    first) and whether the search ended (the minimum then proven up to the min cuts' rounding,
    about ``10⁻⁹`` of the network's capacities). At a node of the branch and price the
    minimum runs over the sets that keep the group's fixings (the search's root), at the
    prizes without the penalty, less :meth:`Problem.offset` (``docs/partition.md``, B4)."""
    capacity = float(problem.cost[group]) * problem.traffic
    low, high = int(problem.low[group]), int(problem.high[group])
    inside = None if problem.inside is None else problem.inside[group]
    outside = None if problem.outside is None else problem.outside[group]
    plain = prize  # the fixings are the search's root: their prizes only shift the value
    if inside is not None and outside is not None:
        plain = prize - problem.penalty * inside + problem.penalty * outside
    pricing = CutProblem(
        problem.heads, problem.tails, capacity, problem.gpus, plain, low, high, inside, outside
    )
    lower, sets, proven = search_by_cuts(pricing, start, limit, frontier)
    return lower - problem.offset(group), sets, proven


Pricer = Callable[
    [Problem, int, np.ndarray, "np.ndarray | None", float, "Frontier | None"],
    tuple[float, list[np.ndarray], bool],
]
"""An exact pricer: ``(problem, group, prize, start, limit, frontier)`` to a lower bound, the
admissible sets found (best first) and whether the minimum is proven; ``frontier`` carries a
search's leaves to the group's next one (:class:`~topoopt.partition.cut_pricing.Frontier`)."""
PRICERS: dict[str, Pricer] = {"cuts": price_by_cuts, "mip": price_exactly}
"""The exact pricers of :func:`colgen_bounds` (its option ``pricing``)."""


class Master:
    r"""The restricted master LP (HiGHS, columns added as they are found), its nesting duals
    kept in a box ``|π − center| ≤ ρ`` (box-step stabilisation).

    The box is two artificial columns per nesting row, ``±e_r`` at costs ``ρ ± center_r``: in
    the LP dual they are the constraints ``center_r − ρ ≤ π_r ≤ center_r + ρ``. The LP then
    maximises ``L`` over the box (LP duality), and its duals stay near the centre instead of
    jumping to the extreme points of a degenerate master (with one huge penalty, ``|π|``
    reached ``10⁴`` at cuts of 2). Every ``π`` gives a valid ``L(π)``, so the box costs no
    validity; when the LP's solution uses no artificial nesting column, it is feasible for
    the master without the box and, with no improving column, optimal for it. The convexity
    rows get artificial columns of prohibitive cost, so the LP is always feasible.

    The master also keeps each group's exact pricing tree (:attr:`frontiers`), which the next
    exact round starts from: the duals move little from one round to the next.
    """

    def __init__(self, problem: Problem, nv: int, rho: float) -> None:
        import highspy

        self.problem = problem
        self.nv = nv
        self.groups = len(problem.cost)
        self.rows = {m: i for i, m in enumerate(problem.internal)}
        self.h = quiet_highs()
        root = self.groups
        nest = len(problem.internal) * nv
        lower = np.concatenate([np.ones(self.groups), np.zeros(nest)])
        lower[self.groups + self.rows[root] * nv : self.groups + (self.rows[root] + 1) * nv] = 1
        self.h.addRows(
            len(lower), lower, lower.copy(), 0, np.array([], np.int32), np.array([], np.int32), []
        )
        rows = len(lower)
        self.penalty = 1.0 + float(problem.cost.sum() * problem.traffic.sum())
        for sign in (1.0, -1.0):
            self.h.addCols(
                rows,
                np.full(rows, self.penalty),
                np.zeros(rows),
                np.full(rows, highspy.kHighsInf),
                rows,
                np.arange(rows, dtype=np.int32),
                np.arange(rows, dtype=np.int32),
                np.full(rows, sign),
            )
        self.columns: list[tuple[int, np.ndarray]] = []
        self.seen: set[tuple[int, bytes]] = set()
        self.center = np.zeros((len(problem.internal), nv))
        self.rho = rho
        self.box(self.center, rho)
        self.frontiers = [Frontier() for _ in range(self.groups)]

    def box(self, center: np.ndarray, rho: float) -> None:
        """Keep the nesting duals within ``rho`` of ``center`` (internal group × vertex)."""
        rows = self.groups + center.size
        up = np.full(rows, self.penalty)
        down = np.full(rows, self.penalty)
        up[self.groups :] = center.reshape(-1) + rho
        down[self.groups :] = rho - center.reshape(-1)
        self.h.changeColsCost(
            2 * rows, np.arange(2 * rows, dtype=np.int32), np.concatenate([up, down])
        )
        self.center, self.rho = center.copy(), rho

    def boxed(self) -> bool:
        """Whether the last LP solution uses the box (an artificial column of a nesting row):
        if not, it is feasible for the master without the box, and with no improving column
        it is that master's optimum."""
        rows = self.groups + self.center.size
        value = np.asarray(self.h.getSolution().col_value)
        used = np.concatenate([value[self.groups : rows], value[rows + self.groups : 2 * rows]])
        return bool((used > 1e-9).any())

    def add(self, group: int, mask: np.ndarray) -> bool:
        """Add the column of ``mask`` for ``group`` (``False`` if it is already there)."""
        key = (group, np.packbits(mask).tobytes())
        if key in self.seen or not self.problem.admits(group, mask):
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

    def pool(self, group: int) -> list[np.ndarray]:
        """The sets of ``group``'s columns."""
        return [mask for g, mask in self.columns if g == group]

    def solve(self) -> tuple[float, np.ndarray, np.ndarray] | None:
        """The LP's value, the convexity duals and the nesting duals (internal group × vertex);
        ``None`` if HiGHS did not solve it."""
        import highspy

        self.h.run()
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        value = float(self.h.getInfo().objective_function_value)
        dual = np.asarray(self.h.getSolution().row_dual)
        return value, dual[: self.groups], dual[self.groups :].reshape(-1, self.nv)


def lagrangian(problem: Problem, nest: np.ndarray, minima: np.ndarray) -> float:
    """``L(π)`` (module docstring) from lower bounds ``minima`` of the pricing problems."""
    root = problem.internal.index(len(problem.cost))
    offsets = sum(problem.offset(group) for group in range(len(problem.cost)))
    return float(nest[root].sum() + minima.sum() + offsets)


def initial_box(problem: Problem) -> float:
    """The dual box's first half-width, :data:`BOX` times the cost of moving a typical vertex
    (``median_N c_N · mean_e t_e``)."""
    scale = float(np.median(problem.cost) * problem.traffic.mean()) if len(problem.traffic) else 0
    return BOX * scale if scale > 0 else 1.0


def seeds_of(problem: Problem, prize: np.ndarray, round_: int) -> np.ndarray:
    """:data:`SEEDS` vertices to grow sets from: the largest prizes, and vertices spread over
    the vertex order (shifted every round)."""
    nv = len(prize)
    spread = (np.arange(SEEDS // 2) * nv // max(SEEDS // 2, 1) + round_) % nv
    return np.unique(np.concatenate([np.argsort(-prize)[: SEEDS - len(spread)], spread]))


def candidates(
    problem: Problem, master: Master, group: int, prize: np.ndarray, round_: int
) -> list[np.ndarray]:
    """Heuristic sets of ``group`` at ``prize``: parametric min cuts, sets grown from seeds and
    the group's best columns, each improved by single moves."""
    return (
        heuristic_columns(problem, group, prize)
        + grown_columns(problem, group, prize, seeds_of(problem, prize, round_))
        + pool_columns(problem, group, prize, master.pool(group))
    )


def add_improving(
    problem: Problem,
    master: Master,
    group: int,
    prize: np.ndarray,
    dual: float,
    sets: list[np.ndarray],
) -> int:
    """Add up to :data:`COLUMNS_PER_GROUP` of ``sets`` with negative reduced cost
    ``c δ(S) − prize(S) − dual``, cheapest first; the number added."""
    scored = sorted((_price(problem, group, prize, m) - dual, k) for k, m in enumerate(sets))
    return sum(
        master.add(group, sets[k])
        for reduced, k in scored[:COLUMNS_PER_GROUP]
        if reduced < -TOLERANCE
    )


def colgen_bounds(
    instance: PartitionInstance,
    where: list[int] | None,
    deadline: float,
    workers: int = 1,
    pricing: str = PRICING,
    branch: bool = True,
) -> Iterator[Bound]:
    """Column generation (module docstring) until ``deadline`` (``time.perf_counter()``) or
    until no improving column is found, then branch and price, yielding each new best
    certified bound.

    Rounds price every group heuristically (:func:`candidates`) at the master's duals until
    no improving column is found or :data:`HEURISTIC_ROUNDS` rounds, then exactly
    (``pricing``, within :data:`EXACT_SHARE` of the time left): its bounds give
    ``L`` at the master's duals. The box of :class:`Master` is a trust region: it moves its
    centre to the duals of each better ``L`` (doubling when the LP used the box), halves
    (down to :data:`LEAST_BOX` of its first width) after an exact round that finds no better
    ``L``, and doubles when an exact round proves that no column improves while the LP still
    uses the box; the search ends when it proves that with the box unused (the master LP's
    optimum, the Dantzig–Wolfe bound). Then, with an incumbent and ``branch``, branch and
    price (:func:`branch_and_price`) until the deadline or until it proves the incumbent.

    Parameters
    ----------
    instance
        The instance (every cut is at least each yielded value).
    where
        An incumbent's cluster per vertex, whose sets start the master (else it starts from
        artificial columns only) and whose cut closes the branches.
    deadline
        When to stop.
    workers
        Pricing problems solved at once in an exact round (threads) by the MIP; the cut
        pricer holds the GIL (two threads took twice as long as one), so it prices one group
        at a time.
    pricing
        The exact pricer, a key of :data:`PRICERS`: ``"cuts"`` (:func:`price_by_cuts`) or
        ``"mip"`` (:func:`price_exactly`).
    branch
        Whether to branch once the column generation has converged.
    """
    if pricing not in PRICERS:
        raise ValueError(f"pricing must be one of {sorted(PRICERS)}, got {pricing!r}")
    if pricing != "mip":
        workers = 1
    problem = Problem.of(instance)
    nv, groups = instance.n_vertices, len(problem.cost)
    if groups == 0 or nv == 0:
        return
    master = Master(problem, nv, initial_box(problem))
    nodes = hierarchy(instance)
    if where is not None:
        at = np.asarray(where)
        for i in range(groups):
            master.add(i, np.isin(at, sorted(nodes[i].clusters)))
    search = Search(deadline, workers, PRICERS[pricing], LEAST_BOX * master.rho)
    best = 0.0
    for best in search.converge(problem, master):
        yield Bound(best, f"column generation ({len(master.columns)} columns)")
    if branch and where is not None and search.converged:

        def cut_of(where: list[int]) -> float:
            return float(evaluate(instance, Assignment.from_indices(instance, where)))

        yield from branch_and_price(search, problem, master, best, cut_of(list(where)), cut_of)


@dataclass
class Search:
    """The column generation of one node (:meth:`converge`) and its settings.

    Attributes
    ----------
    deadline, workers, pricer
        When to stop, pricing threads and the exact pricer (:func:`colgen_bounds`).
    least_box
        The trust region's least half-width.
    converged
        Whether the last :meth:`converge` ended with the master's optimum.
    """

    deadline: float
    workers: int
    pricer: Pricer
    least_box: float
    converged: bool = False

    def left(self) -> float:
        """Seconds to the deadline."""
        return self.deadline - time.perf_counter()

    def converge(
        self, problem: Problem, master: Master, best: float = 0.0, enough: float = math.inf
    ) -> Iterator[float]:
        """Rounds on ``master`` (:func:`colgen_bounds`) until its optimum is proven, the
        deadline, or a bound of at least ``enough``, yielding each ``L`` (less
        :data:`BOUND_MARGIN`) that beats ``best`` and every one before it: bounds over the
        assignments that keep ``problem``'s fixings. An exact round is a serious step of
        the trust region when its ``L`` is above them (``best``: 0 at the root, whose cuts
        are never negative; the parent's bound at a node of branch and price)."""
        self.converged = False
        groups = len(problem.cost)
        heuristic, effort = 0, np.zeros(groups)
        for round_ in itertools.count():
            if self.left() <= 0:
                return
            solved = master.solve()
            if solved is None:
                return
            _, conv, nest = solved
            if heuristic < HEURISTIC_ROUNDS:
                heuristic += 1
                added = 0
                for i in range(groups):
                    if self.left() <= 0:
                        return
                    prize = problem.prizes(nest, i)
                    sets = candidates(problem, master, i, prize, round_)
                    added += add_improving(problem, master, i, prize, conv[i], sets)
                if added:
                    continue
            heuristic = 0
            bound, added, proven = exact_round(
                problem, master, conv, nest, self.deadline, effort, self.workers, self.pricer
            )
            bound -= BOUND_MARGIN * abs(bound)
            if bound > best:  # a serious step: recentre, wider if the box held the duals in
                best = bound
                master.box(nest, master.rho * (2 if master.boxed() else 1))
                yield best
                if best >= enough:
                    return
            else:  # a null step: the duals strayed too far from the centre
                master.box(master.center, max(master.rho / 2, self.least_box))
            if not added and proven:
                if not master.boxed():
                    self.converged = True  # no improving column, the box unused: optimal
                    return
                master.box(master.center, 2 * master.rho)


def branch_and_price(
    search: Search,
    problem: Problem,
    master: Master,
    bound: float,
    incumbent: float,
    cut_of: Callable[[list[int]], float],
) -> Iterator[Bound]:
    """Branch and price from the converged root ``master`` (bound ``bound``) against the
    cut ``incumbent``, yielding each better certified bound, until the deadline or until no
    node can beat the incumbent (the bound is then the incumbent: proven optimal).

    A node fixes vertices in or out of groups (:meth:`Problem.fix`); its bound is the best
    ``L`` of its column generation (at least its parent's: its assignments are some of the
    parent's), which starts from the parent's columns that keep its fixings. The node of
    least bound is branched on the group and vertex whose share ``x_{N,v} = Σ_{S ∋ v}
    λ_{N,S}`` in its master's optimum is nearest ½, both children solved at once; a node
    whose optimum has no fractional share is an assignment (:func:`assignment`; its cut,
    ``cut_of``, may become the incumbent, yielded with the bound); a node within
    :data:`BOUND_MARGIN` of the incumbent or above it is closed. Every assignment lies in
    an open node or in a closed one, so the least of the incumbent, the closed nodes'
    bounds and the open ones' is a lower bound on the optimum (``docs/partition.md``,
    B4)."""
    tolerance = BOUND_MARGIN * max(1.0, abs(incumbent))
    count = itertools.count()
    heap = [(bound, next(count), problem, master, True)]
    reported, branched = bound, 0
    closed = math.inf  # the least bound of a node closed within the tolerance of the incumbent

    def least() -> float:
        return min([incumbent, closed, *(entry[0] for entry in heap)])

    while heap and search.left() > 0:
        entry = heapq.heappop(heap)
        node_bound, _, node, node_master, converged = entry
        if node_bound >= incumbent - tolerance:  # and so is every node left
            closed, heap = min(closed, node_bound), []
            break
        if not converged:  # its master failed (HiGHS) before its optimum: left open
            heapq.heappush(heap, entry)
            break
        shares = fractional_share(node, node_master)
        if shares is None:  # the master's optimum is an assignment: the node is solved
            where = assignment(node, node_master)
            value = node_bound if where is None else cut_of(where)
            if value < incumbent:
                incumbent = value
                method = f"branch and price ({branched} branched, an integral node)"
                yield Bound(max(reported, least()), method, where)
            continue
        group, vertex = shares
        for inside in (True, False):
            child = node.fix(group, vertex, inside)
            if child is None:
                continue
            child_master = Master(child, node_master.nv, node_master.rho)
            child_master.box(node_master.center, node_master.rho)
            child_master.frontiers = [frontier.copy() for frontier in node_master.frontiers]
            for g, mask in node_master.columns:
                child_master.add(g, mask)
            child_bound = node_bound
            for value in search.converge(child, child_master, node_bound, incumbent - tolerance):
                child_bound = max(child_bound, value)  # closed once it reaches the incumbent
            if child_bound < incumbent - tolerance:
                entry = (child_bound, next(count), child, child_master, search.converged)
                heapq.heappush(heap, entry)
            else:
                closed = min(closed, child_bound)
        branched += 1
        if least() > reported:
            reported = least()
            yield Bound(reported, f"branch and price ({branched} branched, {len(heap)} open)")
    if least() > reported:
        yield Bound(least(), f"branch and price ({branched} branched, {len(heap)} open)")


def assignment(problem: Problem, master: Master) -> list[int] | None:
    """The cluster of every vertex in the master's last solution, read from the columns of
    the groups of one cluster (``None`` if that is not one cluster per vertex: the solution
    is fractional, or a group of several clusters has no children)."""
    where = np.full(master.nv, -1)
    for (group, mask), weight in zip(master.columns, _column_values(master), strict=True):
        if weight > 0.5 and problem.cluster[group] >= 0:
            if (where[mask] >= 0).any():
                return None
            where[mask] = problem.cluster[group]
    return None if (where < 0).any() else where.tolist()


def _column_values(master: Master) -> np.ndarray:
    """The weights ``λ_{N,S}`` of the master's columns in its last solution."""
    rows = len(master.problem.cost) + master.center.size
    return np.asarray(master.h.getSolution().col_value)[2 * rows :]


def fractional_share(problem: Problem, master: Master) -> tuple[int, int] | None:
    """The group and vertex whose share ``Σ_{S ∋ v} λ_{N,S}`` in the master's last solution
    is nearest ½ among the fractional ones (``None``: every share is 0 or 1)."""
    groups, nv = len(problem.cost), master.nv
    share = np.zeros((groups, nv))
    for (group, mask), weight in zip(master.columns, _column_values(master), strict=True):
        share[group] += weight * mask
    distance = np.abs(share - 0.5)
    distance[(share < 1e-6) | (share > 1 - 1e-6)] = np.inf
    if not np.isfinite(distance).any():
        return None
    at, vertex = np.unravel_index(int(np.argmin(distance)), distance.shape)
    return int(at), int(vertex)


def exact_round(
    problem: Problem,
    master: Master,
    conv: np.ndarray,
    nest: np.ndarray,
    deadline: float,
    effort: np.ndarray,
    workers: int = 1,
    pricer: Pricer = price_by_cuts,
) -> tuple[float, int, bool]:
    """Price every group exactly (by ``pricer``) at the master's duals: ``L`` from the pricing
    bounds, the number of improving columns added, and whether every pricing problem was
    solved to optimality.

    The groups go in the order of ``effort`` (each one's last pricing time, updated), each
    with an equal share of the round's time left (:data:`EXACT_SHARE` of the time left), so
    the time the easy ones leave goes to the hard ones. ``workers`` pricing problems run at
    once (threads: HiGHS releases the GIL while it solves), each share then ``workers`` times
    as long; the columns are added afterwards, in the groups' order."""
    groups = len(problem.cost)
    stop = time.perf_counter() + EXACT_SHARE * (deadline - time.perf_counter())
    order = [int(i) for i in np.argsort(effort, kind="stable")]
    jobs = {}
    for i in order:
        prize = problem.prizes(nest, i)
        sets = pool_columns(problem, i, prize, master.pool(i))
        start = min(sets, key=lambda m: _price(problem, i, prize, m), default=None)
        jobs[i] = (prize, sets, start)

    def price(k: int) -> tuple[float, list[np.ndarray], bool, float] | None:
        """The ``k``-th group's pricing (the pool starts them in order)."""
        began = time.perf_counter()
        if began >= deadline:
            return None
        prize, _, start = jobs[order[k]]
        share = workers * (stop - began) / (groups - k)
        frontier = master.frontiers[order[k]]
        minimum, found, optimal = pricer(problem, order[k], prize, start, share, frontier)
        return minimum, found, optimal, time.perf_counter() - began

    with ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(price, range(groups)))
    minima = np.empty(groups)
    added, proven = 0, True
    for i, outcome in zip(order, outcomes, strict=True):
        if outcome is None:
            return -math.inf, added, False
        minima[i], found, optimal, effort[i] = outcome
        prize, sets, _ = jobs[i]
        proven &= optimal
        added += add_improving(problem, master, i, prize, conv[i], sets + found)
    return lagrangian(problem, nest, minima), added, proven


def _price(problem: Problem, group: int, prize: np.ndarray, mask: np.ndarray) -> float:
    """``c_N δ(S) − prize(S)`` of the set ``mask``, plus the fixings' :meth:`Problem.offset`
    (so that a set keeping them has its reduced cost)."""
    value = problem.cost[group] * problem.boundary(mask) - prize[mask].sum()
    return float(value + problem.offset(group))


__all__ = [
    "Problem",
    "Search",
    "assignment",
    "branch_and_price",
    "colgen_bounds",
    "fractional_share",
    "grown_columns",
    "heuristic_columns",
    "local_search",
    "min_cut",
    "price_exactly",
]
