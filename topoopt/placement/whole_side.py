"""The level below a proven split level when one side stays whole in the split's switches.

For the ``lex`` objective, the bound of level ``l + 1`` needs to hold only for the placements
whose level ``l`` (the walk's split level, proven optimal at ``S*``) scores ``S*`` (Arnold
eq. 2 at level ``l``). Such a placement's level-``l`` spreads ``(A1, B1)`` (most switches of
level ``l`` per column, per row) score ``S*``. When ``A1 = 1`` every column lies whole in one
switch ``g`` of level ``l``; exactly ``G = B1`` switches are used, switch ``g`` holding
``m_g >= 1`` whole columns (``sum m_g = cols``), and every row touches all ``G`` of them.
``B1 = 1`` is the same with rows and columns swapped.

**Counting per switch** (:func:`conditional_floor`). Take such a placement whose level-``l + 1``
spreads are at most ``(A2, B2)``. Let child ``j`` of switch ``g`` be touched by ``a_j`` rows
and ``b_j`` columns: it holds at most ``min(f_j, a_j b_j)`` cells (Arnold eq. 1, one cell per
node). The columns touching ``j`` are among the ``m_g`` of ``g``, each touching at most
``A2`` children, all inside ``g``: ``sum_{j in g} b_j <= m_g A2``, and the children of ``g``
hold its ``rows * m_g`` cells. With ``T_g[sa, sb]`` the counting table of ``g``'s children
(:class:`~topoopt.placement.exact_mip.targets.CountingBound`: the most cells with
``sum a <= sa``, ``sum b <= sb``, ``a_j <= rows``, ``b_j <= m_g``), the rows' incidences inside
``g`` are at least ``h_g(m_g) = min { sa : T_g[sa, m_g A2] >= rows m_g }``, and over all
switches they are at most ``rows * B2`` (each row touches at most ``B2`` children). So

    some G switches and m_g >= 1 with sum m_g = cols have  sum_g h_g(m_g) <= rows * B2

is necessary; a dynamic programme over the switches decides it. Walking the pairs ``(A2, B2)``
in increasing score (:func:`~topoopt.placement.exact_mip.targets.iter_target_pairs`), the
first pair that every pair ``(A1, B1)`` of score ``S*`` admits is a lower bound on ``S_(l+1)``
among the placements with ``S_l = S*``. A pair ``(A1, B1)`` with no 1 that the Lagrangian
counting bound at level ``l`` does not refute admits every pair (no conditional bound).

**Construction** (:func:`realise`). The programme's switches and column counts, each switch's
sub-job (``rows x m_g``) placed on its children by ``exact-mip``'s constructions with
``(A2, b_g)``, the least ``b_g`` each: a row touches ``sum_g b_g`` children, a column at most
``A2``, and the level-``l`` spreads are ``(1, G)``. At the pair of the bound,
:func:`realise_splits` tries the same on other splits than the programme's, and
:func:`realise_paired` lets the rows share ``B2`` unevenly between the ``G`` switches
(:mod:`topoopt.placement.paired_racks`, ``G`` from 2 to 4).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from topoopt.placement.exact_mip.targets import (
    Constructions,
    CountingBound,
    LagrangianCounting,
    iter_target_pairs,
)
from topoopt.placement.instance import Minipod, PlacementInstance
from topoopt.placement.paired_racks import Paired
from topoopt.placement.solution import Placement
from topoopt.placement.tree import DIGITS, d

MAX_SPLIT_CHOICES = 20_000
"""The most choices of switches :meth:`WholeSide.splits` enumerates."""

DENSE_SPLITS = 2_000_000
"""The most (choice of switches, counts) entries :meth:`WholeSide.splits` scores at once with
array operations; with more it searches by branch and bound."""

CHOICE_CHUNK = 1024
"""Choices of switches :meth:`WholeSide.splits` convolves at once (memory: ``CHOICE_CHUNK
(count + 1)^2`` floats)."""

MORE_SPLITS = 4
"""The splits :func:`realise_splits` tries per pair."""

PAIRED_SPLITS = 8
"""The most splits :func:`realise_paired` tries per pair (measured on the benchmark's 32 x 8
jobs: at most 4 two-switch splits admitted per pod, the first realised in every pod that
admits any)."""

PAIRED_QUICK = 0.25
"""The time :func:`realise_paired` first gives each split's programme (on the benchmark's
32 x 8 jobs those of the pair ``(6, 4)`` decided in 0.02-0.06 s, those of ``(5, 5)`` in
0.4-0.9 s)."""

PAIRED_SECONDS = 2.0
"""The time :func:`realise_paired` gives each programme in all: the undecided ones are
resumed after the first pass (SCIP keeps their search)."""

PAIRED_SHARE = 0.5
"""The share of the time left that :func:`realise_paired` may take in all."""

Grid = np.ndarray
"""``(rows, cols, 2)``: per cell the index of its switch of level ``l`` among those given and
of its child among that switch's children (both local)."""


def _level(caps: Sequence[int], rows: int, cols: int, alpha: float) -> PlacementInstance:
    """A single-level instance over switches of free nodes ``caps`` (one node per cell)."""
    pods = tuple(Minipod(f"s{i}", int(c)) for i, c in enumerate(caps))
    return PlacementInstance("level", pods, rows, 1, cols, alpha, gpus_per_node=1)


def whole_side_pairs(
    caps: Sequence[int], rows: int, cols: int, alpha: float, upper: float
) -> list[_Side] | None:
    """The orientations of the pairs ``(A, B)`` scoring ``upper`` (Arnold eq. 2) over
    switches of free nodes ``caps``: ``(1, B)`` is the columns whole in ``B`` switches,
    ``(A, 1)`` the rows whole in ``A``; ``None`` when one of the pairs has no 1 and is not
    refuted by the Lagrangian counting bound (the job may then spread over many switches)."""
    n = len(caps)
    out = []
    lagrangian = None
    for a in range(1, min(rows, n) + 1):
        for b in range(1, min(cols, n) + 1):
            if round(alpha * d(a) + (1 - alpha) * d(b), DIGITS) != round(upper, DIGITS):
                continue
            if a == 1:
                out.append(_Side(b, False))
            elif b == 1:
                out.append(_Side(a, True))
            else:
                if lagrangian is None:
                    lagrangian = LagrangianCounting(_level(caps, rows, cols, alpha))
                if lagrangian.allows(a, b):
                    return None
    return out


IMPOSSIBLE = 2**62
"""The spread :func:`least_spreads` gives when no placement of the orientation reaches any."""


def least_spreads(
    subtrees: Sequence[Sequence[int]], rows: int, cols: int, side: _Side
) -> tuple[int, int]:
    """The least column and row spreads ``(A, B)`` at a level below a split, among the
    placements of one orientation ``side`` of the split's pairs (:func:`whole_side_pairs`),
    over the free nodes of that level's switches under each of the split's switches
    (``subtrees``).

    Columns whole in a split switch (``(1, B1)``): the ``c_s`` columns of switch ``s``, each
    on at most ``A`` of its switches below, take at most ``c_s A`` incidences there and at
    least the fewest of those switches that hold their ``c_s rows`` cells (largest first),
    so ``c_s <= cap_s(A)`` = the most ``c`` with ``c A >=`` that number; a row has a cell in
    every column, so at most ``B1`` switches hold columns, and the ``B1`` largest
    ``cap_s(A)`` hold all ``cols`` columns: ``A`` is at least the least such value, ``B`` at
    least 1. Rows whole (``(A1, 1)``) give ``B`` likewise. :data:`IMPOSSIBLE` when no
    ``A`` (``B``) does.

    Examples
    --------
    Two switches below which four columns of 4 cells lie: two columns need four of the
    first switch's racks of 2, two of its own each; two columns in the second switch's
    racks (3, 3, 2) need three, one and a half each, so ``A >= 2``.

    >>> least_spreads([[2, 2, 2, 2], [3, 3, 2]], 4, 4, _Side(2, False))
    (2, 1)
    """
    length, count = (cols, rows) if side.swap else (rows, cols)
    spread = _least_whole_spread(subtrees, length, count, side.switches)
    return (1, spread) if side.swap else (spread, 1)


def _least_whole_spread(
    subtrees: Sequence[Sequence[int]], length: int, count: int, switches: int
) -> int:
    """The least ``A`` for which the ``switches`` largest ``cap_s(A)`` of
    :func:`least_spreads` sum to ``count`` whole groups of ``length`` cells
    (:data:`IMPOSSIBLE` when none does)."""
    need = []  # per split switch and c = 1, 2, ...: the least A with c <= cap_s(A)
    for caps in subtrees:
        held = np.cumsum(sorted(caps, reverse=True))
        most = min(count, int(held[-1]) // length) if len(held) else 0
        groups = np.arange(1, most + 1)
        fewest = np.searchsorted(held, groups * length) + 1  # switches holding c groups
        spread = -(-fewest // groups)  # the least A passing the test for c groups
        # cap_s(A) is the most c passing it, so c <= cap_s(A) once any c' >= c passes
        need.append(np.minimum.accumulate(spread[::-1])[::-1])
    for a in sorted({int(x) for n in need for x in n}):
        caps = sorted((int(np.searchsorted(n, a, side="right")) for n in need), reverse=True)
        if sum(caps[:switches]) >= count:
            return a
    return IMPOSSIBLE


@dataclass(frozen=True)
class _Side:
    """The placements of one orientation: columns whole in the switches (``swap`` false),
    or rows (``swap`` true: rows and columns exchanged throughout)."""

    switches: int
    swap: bool


class WholeSide:
    """The counting tables of the switches of one split level, cached per orientation.

    Parameters
    ----------
    children
        Free nodes of the children of each switch of level ``l`` (the split's switches).
    rows, cols, alpha
        The job and Arnold's alpha (eq. 2).
    """

    def __init__(
        self, children: Sequence[Sequence[int]], rows: int, cols: int, alpha: float
    ) -> None:
        self.children = [[int(f) for f in kids if f > 0] for kids in children]
        self.rows, self.cols, self.alpha = rows, cols, alpha
        self._tables: dict[bool, list[tuple[int, np.ndarray | None]]] = {}
        self._least: dict[tuple[bool, int, int], tuple[float, list[int]]] = {}
        self._targets: dict[tuple[bool, int, int, int], tuple[int, tuple[int, Placement] | None]]
        self._targets = {}
        self._after: dict[tuple[bool, int, int], tuple[np.ndarray, list[np.ndarray]]] = {}
        self._paired: dict[tuple[bool, int, int, tuple[int, ...], tuple[int, ...]], Paired] = {}

    def _dims(self, swap: bool) -> tuple[int, int]:
        """``(length, count)`` of the whole side: cells per group and groups."""
        return (self.cols, self.rows) if swap else (self.rows, self.cols)

    def tables(self, swap: bool) -> list[tuple[int, np.ndarray | None]]:
        """Per switch the most whole groups it holds and its counting table (``None`` when
        over the limits of :class:`CountingBound`), indexed ``[whole side, other side]``."""
        if swap not in self._tables:
            length, count = self._dims(swap)
            out: list[tuple[int, np.ndarray | None]] = []
            for kids in self.children:
                most = min(count, sum(kids) // length)
                if most == 0:
                    out.append((0, None))
                    continue
                # the job's orientation (b_j runs over the job's columns, the short loop),
                # then indexed [other side's incidences, whole side's]
                sub = _level(kids, most, length, 0.5) if swap else _level(kids, length, most, 0.5)
                table = CountingBound(sub).full()
                out.append((most, table.T if table is not None and swap else table))
            self._tables[swap] = out
        return self._tables[swap]

    def least_target(
        self,
        swap: bool,
        g: int,
        m: int,
        whole: int,
        most: int,
        seconds: Callable[[], float] = lambda: math.inf,
    ) -> tuple[int, Placement] | None:
        """The least target ``t <= most`` on the other side for which :func:`_construct`
        places ``m`` whole groups (each on at most ``whole`` children) on switch ``g``'s
        children, with that placement, or ``None`` (also when ``seconds()`` runs out);
        cached, so the splits and pairs that share a switch's sub-job try each ``t`` once."""
        key = (swap, g, m, whole)
        searched, found = self._targets.get(key, (0, None))
        if found is None and searched < most:
            length, _ = self._dims(swap)
            kids = self.children[g]
            sub = _level(kids, m, length, 0.5) if swap else _level(kids, length, m, 0.5)
            for t in range(searched + 1, most + 1):
                if seconds() <= 0:
                    return None
                a_t, b_t = (t, whole) if swap else (whole, t)
                placed = _construct(sub, a_t, b_t)
                searched = t
                if placed is not None:
                    found = (t, placed)
                    break
            self._targets[key] = (searched, found)
        return found if found is not None and found[0] <= most else None

    def paired(
        self, side: _Side, a: int, b: int, switches: Sequence[int], counts: Sequence[int]
    ) -> Paired:
        """The rack patterns' programme (:class:`~topoopt.placement.paired_racks.Paired`) of
        the pair ``(a, b)`` with ``counts[k]`` whole groups on switch ``switches[k]``: built
        once, kept so that a later call resumes its search."""
        key = (side.swap, a, b, tuple(switches), tuple(counts))
        if key not in self._paired:
            length, _ = self._dims(side.swap)
            w_target, o_target = (b, a) if side.swap else (a, b)
            kids = [self.children[g] for g in switches]
            self._paired[key] = Paired(kids, counts, length, w_target, o_target)
        return self._paired[key]

    def least(self, swap: bool, whole: int, used: int) -> tuple[float, list[int]]:
        """The least ``sum_g h_g(m_g)`` over ``used`` switches and whole groups
        ``m_g >= 1`` summing to the whole side's count, each group on at most ``whole``
        children, and the ``m_g`` per switch (0 when unused) attaining it (cached: the
        pairs of one ``whole`` share it)."""
        key = (swap, whole, used)
        if key not in self._least:
            self._least[key] = self._programme(swap, whole, used)
        return self._least[key]

    def _programme(self, swap: bool, whole: int, used: int) -> tuple[float, list[int]]:
        """The dynamic programme of :meth:`least` over the switches."""
        length, count = self._dims(swap)
        tabs = self.tables(swap)
        dp = np.full((used + 1, count + 1), math.inf)
        dp[0, 0] = 0.0
        history = []
        for most, table in tabs:
            new = dp.copy()
            choice = np.zeros(dp.shape, dtype=np.int64)
            for m in range(1, most + 1):
                h = self._incidences(table, m, length, whole)
                if not math.isfinite(h):
                    continue
                cand = dp[:-1, : count + 1 - m] + h
                better = cand < new[1:, m:]
                new[1:, m:][better] = cand[better]
                choice[1:, m:][better] = m
            history.append(choice)
            dp = new
        total = float(dp[used, count])
        split = [0] * len(tabs)
        if math.isfinite(total):
            k, s = used, count
            for g in range(len(tabs) - 1, -1, -1):
                m = int(history[g][k, s])
                split[g] = m
                if m:
                    k, s = k - 1, s - m
        return total, split

    @staticmethod
    def _incidences(table: np.ndarray | None, m: int, length: int, whole: int) -> float:
        """``h_g(m)``: the fewest incidences of the other side with ``g``'s children when
        ``g`` holds ``m`` whole groups of ``length`` cells, each on at most ``whole``
        children (0 without a table: the relaxation without it)."""
        if table is None:
            return 0.0
        column = table[:, min(m * whole, table.shape[1] - 1)]
        at = int(np.searchsorted(column, length * m - 1e-6))
        return float(at) if at < len(column) else math.inf

    def splits(
        self, side: _Side, max_dp_use: int, max_pp_use: int, most: int | None = None
    ) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """Every choice of ``side.switches`` switches ``g_1 < g_2 < ...`` and whole groups
        ``m_k >= 1`` (summing to the whole side's count) that the counting per switch admits
        for the pair (:meth:`admits` restricted to those switches), as ``(switches,
        counts)``, the most incidences to spare first (ties in the order of the switches,
        then the counts); only the first ``most`` of them when given (found by branch and
        bound: a partial choice is dropped when even the least incidences of the groups left
        on its other switches, :func:`_least_after`, leave less to spare than the
        ``most``-th best so far; or, up to :data:`DENSE_SPLITS` entries, every entry scored
        at once, the same list); ``[]`` past ``MAX_SPLIT_CHOICES`` choices of switches."""
        whole, other = (max_pp_use, max_dp_use) if side.swap else (max_dp_use, max_pp_use)
        length, count = self._dims(side.swap)
        tabs = self.tables(side.swap)
        budget = length * other + 1e-9
        choosing = math.comb(len(tabs), side.switches)
        if choosing > MAX_SPLIT_CHOICES:
            return []
        cost = [
            [math.inf] + [self._incidences(table, m, length, whole) for m in range(1, held + 1)]
            for held, table in tabs
        ]
        if choosing * math.comb(count - 1, side.switches - 1) <= DENSE_SPLITS:
            return _dense_splits(cost, count, side.switches, budget, most)
        best: list[float] = []  # a min-heap of the `most` largest spares found
        found: list[tuple[float, tuple[int, ...], tuple[int, ...]]] = []

        def cut() -> float:
            """The spare below which nothing more is kept."""
            return best[0] if most is not None and len(best) >= most else -math.inf

        def extend(
            chosen: tuple[int, ...],
            least: list[np.ndarray],
            counts: tuple[int, ...],
            used: float,
        ) -> None:
            k = len(counts)
            if k == len(chosen):
                spare = budget - used
                found.append((spare, chosen, counts))
                if most is not None:
                    heapq.heappush(best, spare)
                    if len(best) > most:
                        heapq.heappop(best)
                return
            g, rest, later = chosen[k], count - sum(counts), len(chosen) - k - 1
            low = 1 if later else rest  # the last switch takes what is left
            for m in range(low, min(rest - later, len(cost[g]) - 1) + 1):
                spent = used + cost[g][m]
                if spent <= budget and budget - spent - least[k + 1][rest - m] >= cut():
                    extend(chosen, least, (*counts, m), spent)

        key = (side.swap, whole, side.switches)
        if key not in self._after:  # the pairs of one target (and both callers) share it
            choices = _choices(len(tabs), side.switches)
            self._after[key] = (choices, _least_after(choices, _cost_table(cost, count)))
        choices, least = self._after[key]
        for i in np.argsort(least[0][:, count], kind="stable"):
            if budget - least[0][i, count] < cut():
                break  # the choices after cost at least as much
            chosen = tuple(int(g) for g in choices[i])
            extend(chosen, [after[i] for after in least], (), 0.0)
        found.sort(key=lambda entry: (-entry[0], entry[1], entry[2]))
        return [(chosen, counts) for _, chosen, counts in found[:most]]

    def sides(self, upper: float) -> list[_Side] | None:
        """:func:`whole_side_pairs` of the switches of level ``l`` (their children's free
        nodes summed)."""
        caps = [sum(kids) for kids in self.children]
        return whole_side_pairs(caps, self.rows, self.cols, self.alpha, upper)

    def admits(self, side: _Side, max_dp_use: int, max_pp_use: int) -> tuple[bool, list[int]]:
        """Whether the counting per switch admits the level-``l + 1`` pair in this
        orientation, and the switches' whole-group counts of the programme."""
        whole, other = (max_pp_use, max_dp_use) if side.swap else (max_dp_use, max_pp_use)
        length, _ = self._dims(side.swap)
        total, split = self.least(side.swap, whole, side.switches)
        # the other side's groups: `length` of them, each touching at most `other` children
        return total <= length * other + 1e-9, split


def _dense_splits(
    cost: list[list[float]], count: int, switches: int, budget: float, most: int | None
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """:meth:`WholeSide.splits` by scoring every entry: every choice of ``switches``
    switches (in the order of :func:`itertools.combinations`) times every composition of
    ``count`` into that many positive parts (lexicographic: the cut points in that order),
    ``cost[g][m]`` the incidences of ``m`` groups on switch ``g`` (``inf`` past what it
    holds), summed in the order of the switches; those within ``budget``, the most to spare
    first, then by choice and counts, the first ``most`` of them when given."""
    choices, counts = _choices(len(cost), switches), _compositions(count, switches)
    table = _cost_table(cost, count)
    used = np.zeros((len(choices), len(counts)))
    for k in range(switches):
        used = used + table[choices[:, k][:, None], counts[:, k][None, :]]
    which, parts = np.nonzero(used <= budget)
    spare = budget - used[which, parts]
    order = np.lexsort((parts, which, -spare))[:most]
    return [
        (tuple(int(g) for g in choices[which[i]]), tuple(int(m) for m in counts[parts[i]]))
        for i in order
    ]


def _cost_table(cost: list[list[float]], count: int) -> np.ndarray:
    """``cost[g][m]`` as an array ``[g, m]`` for ``m = 0 .. count`` (``inf`` past what switch
    ``g`` holds)."""
    table = np.full((len(cost), count + 1), math.inf)
    for g, c in enumerate(cost):
        table[g, : min(len(c), count + 1)] = c[: count + 1]
    return table


@functools.lru_cache(maxsize=64)
def _choices(n: int, k: int) -> np.ndarray:
    """Every choice of ``k`` of ``n`` switches, one per row, in the order of
    :func:`itertools.combinations` (cached: the walk asks for the same ones again)."""
    chosen = list(itertools.combinations(range(n), k))
    out = np.array(chosen, dtype=np.int64).reshape(len(chosen), k)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=64)
def _compositions(count: int, k: int) -> np.ndarray:
    """Every composition of ``count`` into ``k`` positive parts, one per row, in
    lexicographic order (the cut points in the order of :func:`itertools.combinations`)."""
    cuts = _choices(count - 1, k - 1) + 1
    ends = np.concatenate(
        [np.zeros((len(cuts), 1), np.int64), cuts, np.full((len(cuts), 1), count)], axis=1
    )
    out = np.diff(ends, axis=1)
    out.setflags(write=False)
    return out


def _least_after(choices: np.ndarray, cost: np.ndarray) -> list[np.ndarray]:
    """``least[k][i, r]``: the fewest incidences of ``r`` whole groups over the switches
    ``choices[i, k:]``, at least one group each (``cost[g, m]`` for ``m`` groups in switch
    ``g``, ``cost[g, 0] = inf``; ``inf`` where impossible): a min-plus convolution per
    switch, last first, for every choice at once (in chunks of ``CHOICE_CHUNK``)."""
    count = cost.shape[1] - 1
    gaps = np.arange(count + 1)[:, None] - np.arange(count + 1)[None, :]  # r - m
    valid, gather = gaps >= 0, np.clip(gaps, 0, count)
    tail = np.full((len(choices), count + 1), math.inf)
    tail[:, 0] = 0.0
    least = [tail]
    for k in range(choices.shape[1] - 1, -1, -1):
        step = np.empty_like(tail)
        for lo in range(0, len(choices), CHOICE_CHUNK):
            part = slice(lo, lo + CHOICE_CHUNK)
            after = np.where(valid, least[0][part][:, gather], math.inf)
            step[part] = (after + cost[choices[part, k]][:, None, :]).min(axis=2)
        least.insert(0, step)
    return least


@dataclass(frozen=True)
class Floor:
    """What :func:`conditional_floor` found: the bound, and a placement realising it or a
    later pair (``None`` when none was realised)."""

    bound: float
    grid: Grid | None
    score: float


def conditional_floor(
    whole: WholeSide,
    upper: float,
    start: float,
    below: float,
    seconds: Callable[[], float] = lambda: math.inf,
    paired_to: float = math.inf,
) -> Floor | None:
    """A lower bound on level ``l + 1``'s score (eq. 2) among the placements whose level
    ``l`` scores ``upper``, at least ``start``, and capped at ``below`` (a bound reaching it
    is enough to cut or prove); ``None`` when no conditional bound applies. On the way, the
    admitted pairs below ``below`` are tried by :func:`realise` until one is realised, and
    the bound's pairs by the rack patterns (:func:`realise_paired`) when the bound is at most
    ``paired_to``.

    ``seconds()`` is the time left (checked before every pair and every construction); the
    pairs are refuted in order of score, so when the time is up at a pair before any pair
    was admitted, that pair's score is still a bound (every pair below it is refuted)."""
    if seconds() <= 0:
        return None
    sides = whole.sides(upper)
    if sides is None:
        return None
    n_children = sum(len(kids) for kids in whole.children)
    fake = _level([whole.rows * whole.cols] * n_children, whole.rows, whole.cols, whole.alpha)
    bound = None
    at_bound: list[tuple[_Side, int, int]] = []  # the bound's pairs left to _realise_at_bound
    for pair in iter_target_pairs(fake):
        if round(pair.score, DIGITS) < round(start, DIGITS):
            continue
        if round(pair.score, DIGITS) >= round(below, DIGITS):
            break
        if at_bound and bound is not None and round(pair.score, DIGITS) > round(bound, DIGITS):
            grid = _realise_at_bound(whole, at_bound, seconds, round(bound, DIGITS) <= paired_to)
            if grid is not None:
                return Floor(bound, grid, bound)
            at_bound = []
        if seconds() <= 0:
            return Floor(pair.score if bound is None else bound, None, math.inf)
        a, b = pair.max_dp_use, pair.max_pp_use
        for side in sides:
            ok, split = whole.admits(side, a, b)
            if not ok:
                continue
            if bound is None:
                bound = pair.score
            grid = realise(whole, side, split, a, b, seconds)
            if grid is not None:
                return Floor(bound, grid, pair.score)
            if side.switches >= 2 and round(pair.score, DIGITS) == round(bound, DIGITS):
                at_bound.append((side, a, b))
    if at_bound and bound is not None:
        grid = _realise_at_bound(whole, at_bound, seconds, round(bound, DIGITS) <= paired_to)
        if grid is not None:
            return Floor(bound, grid, bound)
    return Floor(below if bound is None else bound, None, math.inf)


def _realise_at_bound(
    whole: WholeSide,
    targets: Sequence[tuple[_Side, int, int]],
    seconds: Callable[[], float],
    paired: bool,
) -> Grid | None:
    """The bound's pairs by more splits (:func:`realise_splits`), then (when ``paired``) by
    the rack patterns whose rows need not share the other side's target evenly
    (:func:`realise_paired`)."""
    grid = realise_splits(whole, targets, seconds)
    if grid is not None or not paired:
        return grid
    return realise_paired(whole, targets, seconds)


def realise(
    whole: WholeSide,
    side: _Side,
    split: list[int],
    a: int,
    b: int,
    seconds: Callable[[], float] = lambda: math.inf,
) -> Grid | None:
    """A placement with level-``l + 1`` spreads at most ``(a, b)`` in which switch ``g`` holds
    ``split[g]`` whole groups of the whole side: each switch's sub-job on its children by
    the constructions of ``exact-mip`` with the least target on the other side; ``None``
    when their sum exceeds that side's target or ``seconds()`` (the time left) runs out."""
    length, _ = whole._dims(side.swap)
    w_target, o_target = (b, a) if side.swap else (a, b)
    pieces = []
    spent = 0
    for g, m in enumerate(split):
        if m == 0:
            continue
        least = whole.least_target(side.swap, g, m, w_target, o_target - spent, seconds)
        if least is None:
            return None
        t, found = least
        spent += t
        matrix = np.asarray(found.matrix, dtype=np.int64)
        pieces.append((g, matrix.T if side.swap else matrix))
    total = sum(matrix.shape[1] for _, matrix in pieces)  # the whole groups, as columns
    grid = np.zeros((length, total, 2), dtype=np.int64)
    at = 0
    for g, matrix in pieces:
        width = matrix.shape[1]
        grid[:, at : at + width, 0] = g
        grid[:, at : at + width, 1] = matrix
        at += width
    return grid.transpose(1, 0, 2) if side.swap else grid


def realise_splits(
    whole: WholeSide,
    targets: Sequence[tuple[_Side, int, int]],
    seconds: Callable[[], float] = lambda: math.inf,
) -> Grid | None:
    """A placement with level-``l + 1`` spreads at most ``(a, b)`` for one of the
    ``targets`` ``(side, a, b)`` by :func:`realise` over more splits than the one the
    counting's programme returns: the ``MORE_SPLITS`` of :meth:`WholeSide.splits` with the
    most incidences to spare (the programme's own may be among them: its switches'
    sub-jobs are then answered from :meth:`WholeSide.least_target`'s cache). Measured on
    the benchmark's 24 x 16 job, seed 0: the constructions realise ``(6, 7)`` with three
    groups of 5 + 6 + 5 whole columns on other groups than the programme's. ``None`` when
    none is realised."""
    for side, a, b in targets:
        for switches, counts in whole.splits(side, a, b, MORE_SPLITS):
            split = [0] * len(whole.children)
            for g, m in zip(switches, counts, strict=True):
                split[g] = m
            grid = realise(whole, side, split, a, b, seconds)
            if grid is not None:
                return grid
            if seconds() <= 0:
                return None
    return None


def realise_paired(
    whole: WholeSide,
    targets: Sequence[tuple[_Side, int, int]],
    seconds: Callable[[], float] = lambda: math.inf,
) -> Grid | None:
    """A placement with level-``l + 1`` spreads at most ``(a, b)`` for one of the
    ``targets`` ``(side, a, b)``, by the rack patterns of
    :class:`~topoopt.placement.paired_racks.Paired` (rows may share ``b`` unevenly between
    the switches, which :func:`realise` never does), over the splits the counting admits
    (:meth:`WholeSide.splits`, at most ``PAIRED_SPLITS`` per target). Each programme first
    runs until it has had ``PAIRED_QUICK`` seconds, then those left undecided are resumed
    until ``PAIRED_SECONDS`` in all, within ``PAIRED_SHARE`` of the time left; ``None`` when
    none is realised. The programmes are kept in ``whole``, so a later call (the walk's
    second pass) resumes those a time limit stopped.
    :func:`conditional_floor` calls it with the pairs of its bound, where a placement
    proves the class optimal (above it the other constructions compete, and on the 256-node
    16 x 16 jobs its programmes took 2 s each there for nothing)."""
    stop = time.perf_counter() + PAIRED_SHARE * seconds()
    classes = [
        (side, a, b, split)
        for side, a, b in targets
        for split in whole.splits(side, a, b, PAIRED_SPLITS)
    ]
    # the fewest children per row first: their rows have the fewest partitions (the
    # smallest programmes, decided fastest)
    classes.sort(key=lambda entry: entry[1] if entry[0].swap else entry[2])
    for share in (PAIRED_QUICK, PAIRED_SECONDS):
        for side, a, b, (switches, counts) in classes:
            programme = whole.paired(side, a, b, switches, counts)
            owed = share - programme.spent
            if programme.grid is None and (not programme.open or owed <= 0):
                continue  # decided without a placement, out of reach, or had its share
            left = min(seconds(), stop - time.perf_counter())
            if left <= 0:
                return None
            _, found = programme.run(min(left, owed))
            if found is not None:
                found[..., 0] = np.asarray(switches)[found[..., 0]]
                return found.transpose(1, 0, 2) if side.swap else found
    return None


def _construct(sub: PlacementInstance, max_dp_use: int, max_pp_use: int) -> Placement | None:
    """A placement of ``sub`` realising ``(A, B)`` by ``exact-mip``'s constructions (exact
    for a 1, else block designs and guillotine cuts; the one-sided packing programme of
    :class:`~topoopt.placement.exact_mip.sides.Sides` is left out: on the benchmark's
    256-node jobs it took 1-5 s and realised no better pair), or ``None``."""
    build = Constructions(sub)
    if max_dp_use == 1:
        return build.monochrome_columns(max_pp_use)
    if max_pp_use == 1:
        return build.monochrome_rows(max_dp_use)
    return build.block_design(max_dp_use, max_pp_use) or build.guillotine(max_dp_use, max_pp_use)
