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

The leaves of a search (its nodes closed, solved or left open) cover every admissible set:
branching splits a node's sets by one vertex, and a child is dropped only when its fixed
vertices alone take the size out of the range, which no prize changes. A search of the same
graph and range at other prizes may therefore start from them instead of the root
(:class:`Frontier`): the column generation prices each group at duals that move little from
one round to the next, and most leaves close again at their first cut.

The min cuts are on capacities scaled to integers (OR-Tools' ``SimpleMaxFlow``, exact in
integer arithmetic), so each bound subtracts the rounding's worst case, half a unit per arc,
and a node whose bound is within twice that of the incumbent is closed: a search that ends
proves the minimum up to the rounding (about ``10⁻⁹`` of the network's capacities). The
bound returned is the least bound of the nodes closed or open: a valid lower bound at any
time, the time limit included. Measured against the MIP of
:func:`~topoopt.partition.colgen.price_exactly`: ``docs/partition.md`` (B4).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from ortools.graph.python import max_flow

SCALE = 2.0**40
"""Sum of a network's scaled capacities (a fixed vertex's arc is above twice it); with up to
``2²¹`` fixed vertices every capacity and flow fits an int64, and the rounding's worst case is
about ``10⁻¹²`` of the capacities per arc."""
KELLEY_STEPS = 60
"""Most min cuts in one node's search for its multiplier."""
COLUMNS = 6
"""Most admissible sets returned (the best found)."""
GROWTH = 4.0
"""A frontier grown to more than this many times the leaves of its last search from the
root is dropped: the next search starts from the root again."""


class CutNetwork:
    """The s–t network of one pricing problem, its arcs built once (OR-Tools' push-relabel
    ``SimpleMaxFlow``, which keeps the residual arcs itself).

    Vertices ``0 .. n−1``, source ``n``, sink ``n + 1``; every edge both ways, and an arc
    ``s → v`` and ``v → t`` for every vertex, so that each cut only rewrites the capacities.
    """

    def __init__(self, heads: np.ndarray, tails: np.ndarray, capacity: np.ndarray, n: int):
        self.n = n
        self.m = len(heads)
        v = np.arange(n)
        self.flow = max_flow.SimpleMaxFlow()
        self.ids = self.flow.add_arcs_with_capacity(
            np.concatenate([heads, tails, np.full(n, n), v]),
            np.concatenate([tails, heads, v, np.full(n, n + 1)]),
            np.zeros(2 * self.m + 2 * n, dtype=np.int64),
        )
        self.edges = np.concatenate([capacity, capacity, np.zeros(2 * n)]).astype(float)
        self.arcs = 2 * self.m + n  # arcs that may carry a capacity (each rounded once)

    def minimum(
        self, weight: np.ndarray, inside: np.ndarray, outside: np.ndarray
    ) -> tuple[np.ndarray, float, float]:
        """The least source side ``S`` of ``Σ_e δ(S) + weight(S)`` with ``inside ⊆ S`` and
        ``outside ∩ S = ∅``, a lower bound on that minimum (the scaled max flow less the
        rounding's worst case) and that worst case (the bound is within twice of it)."""
        n, to_source = self.n, 2 * self.m
        to_sink = to_source + n
        free = ~(inside | outside)
        gain = free & (weight < 0)
        constant = float(weight[gain].sum() + weight[inside].sum())
        data = self.edges.copy()
        data[to_source:to_sink] = np.where(gain, -weight, 0.0)
        data[to_sink:] = np.where(free & (weight > 0), weight, 0.0)
        total = float(data.sum())
        if not total > 0:
            return inside.copy(), constant, 0.0
        scale = min(SCALE / total, 1e300)  # finite for a subnormal total too
        capacity = np.rint(data * scale).astype(np.int64)
        infinite = 2 * int(SCALE) + len(capacity)  # above every cut of the finite arcs
        capacity[to_source + np.flatnonzero(inside)] = infinite
        capacity[to_sink + np.flatnonzero(outside)] = infinite
        self.flow.set_arcs_capacity(self.ids, capacity)
        status = self.flow.solve(n, n + 1)
        if status != self.flow.OPTIMAL:
            raise RuntimeError(f"OR-Tools max flow ended with status {status}")
        reached = np.asarray(self.flow.get_source_side_min_cut(), dtype=np.int64)
        side = inside.copy()
        side[reached[reached < n]] = True
        slack = 0.5 * self.arcs / scale
        return side, constant + self.flow.optimal_flow() / scale - slack, slack


class _Cut(NamedTuple):
    """A vertex set with its value ``f(S)`` and size ``g(S)`` (each computed once)."""

    mask: np.ndarray
    value: float
    size: float

    def line(self, mu: float, side: float) -> float:
        """``f(S) + μ (g(S) − b)``: an upper bound on ``h(μ)`` when ``side`` is ``b(μ)``."""
        return self.value + mu * (self.size - side)


@dataclass(order=True)
class _Node:
    """An open node: its bound, then creation order (the heap's key)."""

    bound: float
    order: int
    multiplier: float = field(compare=False)
    inside: np.ndarray = field(compare=False)
    outside: np.ndarray = field(compare=False)
    slack: float = field(compare=False, default=0.0)
    first: tuple[float, _Cut, float] | None = field(compare=False, default=None)
    lines: tuple[np.ndarray | None, np.ndarray | None] = field(compare=False, default=(None, None))


class Leaf(NamedTuple):
    """A node's fixings and multiplier, kept to start the next search there."""

    inside: np.ndarray
    outside: np.ndarray
    multiplier: float


@dataclass
class Frontier:
    """The leaves of a group's last search (module docstring), which the next search of the
    same graph, sizes and range starts from; a search from the root when it is empty.

    Attributes
    ----------
    leaves
        The last search's leaves (replaced by every search given this frontier).
    range
        The sizes ``(low, high)`` the leaves were made for; a search of another range starts
        from the root (a dropped child's size may fit it).
    fresh
        The leaves of the last search from the root: a search that leaves more than
        :data:`GROWTH` times as many empties the frontier (each leaf costs at least one cut).
    """

    leaves: list[Leaf] = field(default_factory=list)
    range: tuple[int, int] | None = None
    fresh: int = 0

    def copy(self) -> Frontier:
        """A frontier with the same leaves (which no search changes) in a list of its own."""
        return Frontier(list(self.leaves), self.range, self.fresh)

    def keep(self, leaves: list[Leaf], span: tuple[int, int], warm: bool) -> None:
        """Keep the ``leaves`` of a search of the range ``span`` (``warm``: started from this
        frontier), unless they outgrew :data:`GROWTH` times the last search from the root."""
        if not warm:
            self.fresh = len(leaves)
        grown = warm and len(leaves) > GROWTH * max(self.fresh, 1)
        self.leaves, self.range = ([] if grown else leaves), span


@dataclass(frozen=True)
class CutProblem:
    """``min Σ_e capacity_e [e crosses S] − prize(S)`` over ``low ≤ gpus(S) ≤ high``,
    ``inside ⊆ S``, ``S ∩ outside = ∅``.

    Attributes
    ----------
    heads, tails, capacity
        The edges and their capacities (``c t_e`` of a group's pricing problem).
    gpus, prize
        ``g_v`` and ``p_v`` of every vertex.
    low, high
        The range of ``gpus(S)``.
    inside, outside
        Vertices every set holds and vertices none holds (a node of the branch and price;
        ``None``: none), the root of the search's fixings.
    """

    heads: np.ndarray
    tails: np.ndarray
    capacity: np.ndarray
    gpus: np.ndarray
    prize: np.ndarray
    low: int
    high: int
    inside: np.ndarray | None = None
    outside: np.ndarray | None = None

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

    def fits(self, inside: np.ndarray, outside: np.ndarray) -> bool:
        """Whether some set keeping the fixings ``inside`` and ``outside`` may fit the range
        (no vertex both in and out, ``g(inside) ≤ high``, ``g(V ∖ outside) ≥ low``)."""
        return bool(
            not (inside & outside).any()
            and self.gpus[inside].sum() <= self.high
            and self.gpus[~outside].sum() >= self.low
        )

    def cut(self, mask: np.ndarray) -> _Cut:
        """``mask`` with its value and size."""
        return _Cut(mask, self.value(mask), float(self.gpus[mask].sum()))

    def line(self, cut: _Cut, mu: float) -> float:
        """``f(S) + μ (g(S) − b(μ))``, an upper bound on ``h(μ)`` from the set ``S``."""
        return cut.line(mu, self.side(mu))

    def side(self, mu: float) -> float:
        """``b(μ)``: the bound of the cardinality range that the multiplier ``μ`` prices."""
        return float(self.high if mu >= 0 else self.low)

    def offer(self, cut: _Cut) -> None:
        """Keep ``cut`` if it is admissible (the incumbents and the columns returned)."""
        if self.low <= cut.size <= self.high:
            self.found.setdefault(np.packbits(cut.mask).tobytes(), (cut.value, cut.mask.copy()))
            self.best = min(self.best, cut.value)

    def bound_at(
        self, mu: float, inside: np.ndarray, outside: np.ndarray
    ) -> tuple[float, _Cut, float]:
        """``h(μ)`` at a node (a valid lower bound), its least min cut and the rounding's worst
        case in it (:meth:`CutNetwork.minimum`)."""
        mask, least, slack = self.network.minimum(mu * self.gpus - self.prize, inside, outside)
        cut = self.cut(mask)
        self.offer(cut)
        return least - mu * self.side(mu), cut, slack

    def closes(self, node: _Node) -> bool:
        """Whether the incumbent closes ``node``: its bound is within twice its rounding's
        worst case of the incumbent's value (or above it)."""
        return node.bound >= self.best - 2 * node.slack - 1e-12 * max(1.0, abs(self.best))

    def solved(self, cut: _Cut, mu: float) -> bool:
        """Whether ``cut``, a min cut at ``μ``, is admissible and attains ``h(μ)``."""
        return bool(self.low <= cut.size <= self.high and (mu == 0 or cut.size == self.side(mu)))

    def peak(self, node: _Node) -> tuple[_Cut | None, _Cut | None]:
        """Kelley's cutting planes for ``max_μ h(μ)`` at ``node``, raising its bound (and
        setting its multiplier and slack to those of the best cut): the two bracketing cuts
        (``None`` when the node is solved, or closed by the incumbent on the way)."""
        inside, outside = node.inside, node.outside
        big, small = (None if mask is None else self.cut(mask) for mask in node.lines)
        mu = node.multiplier
        for step in range(KELLEY_STEPS):
            if step == 0 and node.first is not None:
                h, cut, slack = node.first
            else:
                h, cut, slack = self.bound_at(mu, inside, outside)
            if h > node.bound:
                node.bound, node.multiplier, node.slack = h, mu, slack
            if self.solved(cut, mu) or self.closes(node):
                return None, None  # f(S) = h(μ) up to the rounding, or no better set
            if big is not None and small is not None and step > 0:
                model = min(self.line(big, mu), self.line(small, mu))
                if self.line(cut, mu) >= model - 1e-9 * max(1.0, abs(model)):
                    break  # the model's peak is h's
            if (mu >= 0 and cut.size > self.high) or (mu < 0 and cut.size >= self.low):
                big = cut  # h rises to the right of μ
            else:
                small = cut
            big = self.cut(~outside) if big is None else big
            small = self.cut(inside.copy()) if small is None else small
            points = [0.0]
            if big.size > small.size:
                points.append((small.value - big.value) / (big.size - small.size))
            step_to = max(points, key=lambda x: min(self.line(big, x), self.line(small, x)))
            if step_to == mu:
                break
            mu = step_to
        return big, small

    def children(
        self, node: _Node, big: _Cut, small: _Cut, count: Iterator[int]
    ) -> Iterator[_Node]:
        """The two children of ``node`` on the branching vertex, each bounded at the node's
        multiplier (its first cut) and given the node's two cuts, adjusted, as its first
        lines."""
        mu = node.multiplier
        free = ~(node.inside | node.outside)
        candidates = np.flatnonzero((big.mask ^ small.mask) & free)
        if len(candidates) == 0:
            candidates = np.flatnonzero(free)
        if len(candidates) == 0:
            return
        v = candidates[np.argmax(self.priority[candidates])]
        for inward in (False, True):
            inside, outside = node.inside.copy(), node.outside.copy()
            (inside if inward else outside)[v] = True
            if not self.fits(inside, outside):
                continue
            h, cut, slack = self.bound_at(mu, inside, outside)
            if inward:
                lines = (big.mask | inside, small.mask | inside)
            else:
                lines = (big.mask & ~outside, small.mask & ~outside)
            bound, slack = max((h, slack), (node.bound, node.slack))
            yield _Node(bound, next(count), mu, inside, outside, slack, (h, cut, slack), lines)


def price_by_cuts(
    problem: CutProblem,
    start: np.ndarray | None,
    limit: float,
    frontier: Frontier | None = None,
) -> tuple[float, list[np.ndarray], bool]:
    """``problem``'s minimum by branch and bound (module docstring), within ``limit`` seconds,
    from the admissible set ``start`` if given, and from the leaves of ``frontier`` (then
    replaced by this search's) when they were made for ``problem``'s range, each with
    ``problem``'s fixings added (a leaf that contradicts them holds no set that keeps them).

    Returns a lower bound on the minimum (the least bound of the nodes closed or open:
    the minimum, up to the rounding, when the search ends; ``-inf`` when it met no admissible
    set), the best admissible sets found, best first (at most :data:`COLUMNS`), and whether the
    search ended (the minimum proven).
    """
    stop = time.perf_counter() + limit
    pricer = CutPricer(problem)
    if start is not None:
        pricer.offer(pricer.cut(start))
    count = itertools.count()
    none = np.zeros(len(problem.prize), dtype=bool)
    held = none if problem.inside is None else problem.inside
    barred = none if problem.outside is None else problem.outside
    if not pricer.fits(held, barred) or problem.low > problem.high:
        return -math.inf, [], False
    span = (problem.low, problem.high)
    kept = frontier.leaves if frontier is not None and frontier.range == span else []
    heap = [
        _Node(-math.inf, next(count), mu, inside | held, outside | barred)
        for inside, outside, mu in kept
        if pricer.fits(inside | held, outside | barred)
    ]
    warm = bool(heap)
    if not warm:
        heap = [_Node(-math.inf, next(count), 0.0, held.copy(), barred.copy())]
    leaves = []
    floor = math.inf  # the least bound of a node closed by the incumbent
    while heap and time.perf_counter() < stop:
        node = heapq.heappop(heap)
        big, small = (None, None) if pricer.closes(node) else pricer.peak(node)
        if big is None or small is None:
            floor = min(floor, node.bound)  # closed by the incumbent, solved or infeasible
            leaves.append(Leaf(node.inside, node.outside, node.multiplier))
            continue
        for child in pricer.children(node, big, small, count):
            heapq.heappush(heap, child)
    if frontier is not None:
        leaves += [Leaf(node.inside, node.outside, node.multiplier) for node in heap]
        frontier.keep(leaves, span, warm)
    if not pricer.found:
        return -math.inf, [], False  # nothing admissible met: no claim
    lower = min([pricer.best, floor, *(node.bound for node in heap)])
    ranked = sorted(pricer.found.values(), key=lambda item: item[0])[:COLUMNS]
    return lower, [mask for _, mask in ranked], not heap


__all__ = ["CutNetwork", "CutPricer", "CutProblem", "Frontier", "Leaf", "price_by_cuts"]
