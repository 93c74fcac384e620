r"""Exact pricing of the column generation (B4) by branch and bound on Lagrangian min cuts.

A group's pricing problem (:mod:`topoopt.partition.colgen`) is

.. math::

    \min \; f(S) = c \, δ(S) - p(S) \quad \text{s.t.} \quad lo \le g(S) \le K,
    \qquad S ⊇ I, \; S ∩ O = ∅

at a branch-and-bound node that has fixed the vertices ``I`` inside and ``O`` outside.
Relaxing the cardinality with a multiplier ``μ`` (``b(μ) = K`` for ``μ ≥ 0``, ``lo`` below)
gives, for every ``μ``, the lower bound

.. math::

    h(μ) = \min_{S ⊇ I, S ∩ O = ∅} \big( f(S) + μ \, g(S) \big) - μ \, b(μ) \le f(S^*)

(for an admissible ``S``, ``μ (g(S) − b(μ)) ≤ 0``), an s–t min cut: ``c t_e`` on every edge
both ways, ``μ g_v − p_v`` on ``v → t`` where positive and ``p_v − μ g_v`` on ``s → v`` where
positive, ``I`` tied to ``s`` and ``O`` to ``t``. ``h`` is concave (a minimum of functions
that are concave in ``μ``, with a kink at 0); Kelley's cutting planes find its maximum: each
min cut ``S`` gives the line ``f(S) + μ (g(S) − b(μ)) ≥ h(μ)``, the model is the lower
envelope of the two lines that bracket the peak, and its maximum (their crossing, or the
kink at 0) is where the next cut is taken, until the cut there meets the model. A node whose
cut at its multiplier is admissible with ``g(S) = b(μ)`` (or ``μ = 0``) is solved: ``f(S) =
h(μ)``. Otherwise it branches on a free vertex on which the two bracketing cuts differ (the
largest ``|p_v|`` plus weighted degree), and each child is first bounded at its parent's
multiplier (one cut; it starts the child's own Kelley iterations, with the parent's two
lines adjusted to the fixed vertex). Nodes are taken best bound first; the cuts met on the
way that are admissible are the incumbents (and the columns returned).

The min cuts are on capacities scaled to integers (``scipy.sparse.csgraph.maximum_flow``),
so each bound subtracts the rounding's worst case, half a unit per arc, and a node whose bound
is within twice that of the incumbent is closed: a search that ends proves the minimum up to
the rounding (about ``10⁻⁶`` of the network's capacities). The bound returned is the least
bound of the nodes closed or open: a valid lower bound at any time, the time limit
included. Measured against the MIP of :func:`~topoopt.partition.colgen.price_exactly`:
``docs/partition.md`` (B4).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

SCALE = 2e9
"""Sum of a network's scaled capacities (a fixed vertex's arc is just above it); every
capacity and flow then fits an int32."""
KELLEY_STEPS = 60
"""Most min cuts in one node's search for its multiplier."""
COLUMNS = 6
"""Most admissible sets returned (the best found)."""


class CutNetwork:
    """The s–t network of one pricing problem, its sparsity pattern built once.

    Vertices ``0 .. n−1``, source ``n``, sink ``n + 1``; every edge both ways, and an arc
    ``s → v`` and ``v → t`` (and their reverses) for every vertex, so that the pattern holds
    the residual arcs too and each cut only rewrites the capacities.
    """

    def __init__(self, heads: np.ndarray, tails: np.ndarray, capacity: np.ndarray, n: int):
        self.n = n
        source, sink = n, n + 1
        v = np.arange(n)
        rows = np.concatenate([heads, tails, np.full(n, source), v, v, np.full(n, sink)])
        cols = np.concatenate([tails, heads, v, np.full(n, source), np.full(n, sink), v])
        keys, position = np.unique(rows * (n + 2) + cols, return_inverse=True)
        self.rows = keys // (n + 2)
        self.indices = (keys % (n + 2)).astype(np.int32)
        self.indptr = np.searchsorted(self.rows, np.arange(n + 3)).astype(np.int32)
        m = len(heads)
        self.to_source = position[2 * m : 2 * m + n]
        self.to_sink = position[2 * m + 2 * n : 2 * m + 3 * n]
        self.edges = np.bincount(
            position[: 2 * m], weights=np.concatenate([capacity, capacity]), minlength=len(keys)
        ).astype(float)  # (an empty bincount is of integers)
        self.arcs = 2 * m + n  # arcs that may carry a capacity (each rounded once)

    def minimum(
        self, weight: np.ndarray, inside: np.ndarray, outside: np.ndarray
    ) -> tuple[np.ndarray, float, float]:
        """The least source side ``S`` of ``Σ_e δ(S) + weight(S)`` with ``inside ⊆ S`` and
        ``outside ∩ S = ∅``, a lower bound on that minimum (the scaled max flow less the
        rounding's worst case) and that worst case (the bound is within twice of it)."""
        n = self.n
        free = ~(inside | outside)
        gain = free & (weight < 0)
        constant = float(weight[gain].sum() + weight[inside].sum())
        data = self.edges.copy()
        data[self.to_source] += np.where(gain, -weight, 0.0)
        data[self.to_sink] += np.where(free & (weight > 0), weight, 0.0)
        total = float(data.sum())
        if not total > 0:
            return inside.copy(), constant, 0.0
        scale = SCALE / total
        scaled = np.rint(data * scale)
        scaled[self.to_source[inside]] = SCALE + 1
        scaled[self.to_sink[outside]] = SCALE + 1
        capacity = scaled.astype(np.int32)
        graph = sp.csr_matrix((capacity, self.indices, self.indptr), shape=(n + 2, n + 2))
        result = maximum_flow(graph, n, n + 1, method="dinic")
        flow = result.flow.tocsr()
        flow.sort_indices()
        if flow.nnz == len(capacity) and np.array_equal(flow.indices, self.indices):
            left = capacity - flow.data
        else:  # scipy dropped or added entries: read the flow arc by arc
            left = capacity - np.asarray(flow[self.rows, self.indices]).ravel()
        open_ = left > 0
        counts = np.bincount(self.rows[open_], minlength=n + 2)
        residual = sp.csr_matrix(
            (np.ones(int(open_.sum()), np.int8), self.indices[open_], np.r_[0, np.cumsum(counts)]),
            shape=(n + 2, n + 2),
        )
        reached = breadth_first_order(residual, n, directed=True, return_predecessors=False)
        side = inside.copy()
        side[reached[reached < n]] = True
        slack = 0.5 * self.arcs / scale
        return side, constant + result.flow_value / scale - slack, slack


@dataclass(order=True)
class _Node:
    """An open node: its bound, then creation order (the heap's key)."""

    bound: float
    order: int
    multiplier: float = field(compare=False)
    inside: np.ndarray = field(compare=False)
    outside: np.ndarray = field(compare=False)
    slack: float = field(compare=False, default=0.0)
    first: tuple[float, np.ndarray, float] | None = field(compare=False, default=None)
    lines: tuple[np.ndarray | None, np.ndarray | None] = field(compare=False, default=(None, None))


@dataclass(frozen=True)
class CutProblem:
    """``min Σ_e capacity_e [e crosses S] − prize(S)`` over ``low ≤ gpus(S) ≤ high``.

    Attributes
    ----------
    heads, tails, capacity
        The edges and their capacities (``c t_e`` of a group's pricing problem).
    gpus, prize
        ``g_v`` and ``p_v`` of every vertex.
    low, high
        The range of ``gpus(S)``.
    """

    heads: np.ndarray
    tails: np.ndarray
    capacity: np.ndarray
    gpus: np.ndarray
    prize: np.ndarray
    low: int
    high: int

    def value(self, mask: np.ndarray) -> float:
        """``f(S) = Σ_e capacity_e [e crosses S] − prize(S)``."""
        crossing = mask[self.heads] != mask[self.tails]
        return float(self.capacity[crossing].sum() - self.prize[mask].sum())


class CutPricer:
    """Branch and bound over one pricing problem (module docstring)."""

    def __init__(self, problem: CutProblem) -> None:
        self.value = problem.value
        self.gpus = problem.gpus.astype(float)
        self.prize = problem.prize
        self.low, self.high = problem.low, problem.high
        n = len(problem.prize)
        self.network = CutNetwork(problem.heads, problem.tails, problem.capacity, n)
        degree = np.bincount(
            np.concatenate([problem.heads, problem.tails]),
            weights=np.concatenate([problem.capacity, problem.capacity]),
            minlength=n,
        )
        self.priority = np.abs(problem.prize) + degree
        self.found: dict[bytes, tuple[float, np.ndarray]] = {}
        self.best = math.inf

    def line(self, mask: np.ndarray, mu: float) -> float:
        """``f(S) + μ (g(S) − b(μ))``, an upper bound on ``h(μ) `` from the set ``S``."""
        return self.value(mask) + mu * (self.gpus[mask].sum() - self.side(mu))

    def side(self, mu: float) -> float:
        """``b(μ)``: the bound of the cardinality range that the multiplier ``μ`` prices."""
        return float(self.high if mu >= 0 else self.low)

    def offer(self, mask: np.ndarray) -> None:
        """Keep ``mask`` if it is admissible (the incumbents and the columns returned)."""
        if self.low <= self.gpus[mask].sum() <= self.high:
            value = self.value(mask)
            self.found.setdefault(np.packbits(mask).tobytes(), (value, mask.copy()))
            self.best = min(self.best, value)

    def bound_at(
        self, mu: float, inside: np.ndarray, outside: np.ndarray
    ) -> tuple[float, np.ndarray, float]:
        """``h(μ)`` at a node (a valid lower bound), its least min cut and the rounding's worst
        case in it (:meth:`CutNetwork.minimum`)."""
        mask, least, slack = self.network.minimum(mu * self.gpus - self.prize, inside, outside)
        self.offer(mask)
        return least - mu * self.side(mu), mask, slack

    def closes(self, node: _Node) -> bool:
        """Whether the incumbent closes ``node``: its bound is within twice its rounding's
        worst case of the incumbent's value (or above it)."""
        return node.bound >= self.best - 2 * node.slack - 1e-12 * max(1.0, abs(self.best))

    def solved(self, mask: np.ndarray, mu: float) -> bool:
        """Whether the cut ``mask`` at ``μ`` is admissible and attains ``h(μ)``."""
        size = self.gpus[mask].sum()
        return bool(self.low <= size <= self.high and (mu == 0 or size == self.side(mu)))

    def peak(self, node: _Node) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Kelley's cutting planes for ``max_μ h(μ)`` at ``node``, raising its bound (and
        setting its multiplier and slack to those of the best cut): the two bracketing cuts
        (``None`` when the node is solved, or closed by the incumbent on the way)."""
        inside, outside = node.inside, node.outside
        big, small = node.lines
        mu = node.multiplier
        for step in range(KELLEY_STEPS):
            if step == 0 and node.first is not None:
                h, mask, slack = node.first
            else:
                h, mask, slack = self.bound_at(mu, inside, outside)
            if h > node.bound:
                node.bound, node.multiplier, node.slack = h, mu, slack
            if self.solved(mask, mu) or self.closes(node):
                return None, None  # f(mask) = h(μ) up to the rounding, or no better set
            if big is not None and small is not None and step > 0:
                model = min(self.line(big, mu), self.line(small, mu))
                if self.line(mask, mu) >= model - 1e-9 * max(1.0, abs(model)):
                    break  # the model's peak is h's
            size = self.gpus[mask].sum()
            if (mu >= 0 and size > self.high) or (mu < 0 and size >= self.low):
                big = mask  # h rises to the right of μ
            else:
                small = mask
            big = ~outside if big is None else big
            small = inside.copy() if small is None else small
            points = [0.0]
            larger, smaller = self.gpus[big].sum(), self.gpus[small].sum()
            if larger > smaller:
                points.append((self.value(small) - self.value(big)) / (larger - smaller))
            step_to = max(points, key=lambda x: min(self.line(big, x), self.line(small, x)))
            if step_to == mu:
                break
            mu = step_to
        return big, small

    def children(
        self, node: _Node, big: np.ndarray, small: np.ndarray, count: Iterator[int]
    ) -> Iterator[_Node]:
        """The two children of ``node`` on the branching vertex, each bounded at the node's
        multiplier (its first cut) and given the node's two cuts, adjusted, as its first
        lines."""
        mu = node.multiplier
        free = ~(node.inside | node.outside)
        candidates = np.flatnonzero((big ^ small) & free)
        if len(candidates) == 0:
            candidates = np.flatnonzero(free)
        if len(candidates) == 0:
            return
        v = candidates[np.argmax(self.priority[candidates])]
        for inward in (False, True):
            inside, outside = node.inside.copy(), node.outside.copy()
            (inside if inward else outside)[v] = True
            if self.gpus[inside].sum() > self.high or self.gpus[~outside].sum() < self.low:
                continue
            h, mask, slack = self.bound_at(mu, inside, outside)
            lines = (big | inside, small | inside) if inward else (big & ~outside, small & ~outside)
            bound, slack = max((h, slack), (node.bound, node.slack))
            yield _Node(bound, next(count), mu, inside, outside, slack, (h, mask, slack), lines)


def price_by_cuts(
    problem: CutProblem, start: np.ndarray | None, limit: float
) -> tuple[float, list[np.ndarray], bool]:
    """``problem``'s minimum by branch and bound (module docstring), within ``limit`` seconds,
    from the admissible set ``start`` if given.

    Returns a lower bound on the minimum (the least bound of the nodes closed or open:
    the minimum, up to the rounding, when the search ends; ``-inf`` when it met no admissible
    set), the best admissible sets found, best first (at most :data:`COLUMNS`), and whether the
    search ended (the minimum proven).
    """
    stop = time.perf_counter() + limit
    pricer = CutPricer(problem)
    if start is not None:
        pricer.offer(start)
    count = itertools.count()
    none = np.zeros(len(problem.prize), dtype=bool)
    if problem.gpus.sum() < problem.low or problem.low > problem.high:
        return -math.inf, [], False
    heap = [_Node(-math.inf, next(count), 0.0, none, none.copy())]
    floor = math.inf  # the least bound of a node closed by the incumbent
    while heap and time.perf_counter() < stop:
        node = heapq.heappop(heap)
        big, small = (None, None) if pricer.closes(node) else pricer.peak(node)
        if big is None or small is None:
            floor = min(floor, node.bound)  # closed by the incumbent, solved or infeasible
            continue
        for child in pricer.children(node, big, small, count):
            heapq.heappush(heap, child)
    if not pricer.found:
        return -math.inf, [], False  # nothing admissible met: no claim
    lower = min([pricer.best, floor, *(node.bound for node in heap)])
    ranked = sorted(pricer.found.values(), key=lambda item: item[0])[:COLUMNS]
    return lower, [mask for _, mask in ranked], not heap


__all__ = ["CutNetwork", "CutPricer", "CutProblem", "price_by_cuts"]
