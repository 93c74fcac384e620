"""Target spreads: the structure behind the fast exact solver of the placement family.

The score depends on a placement only through ``A`` = the most minipods any column (DP
group) touches and ``B`` = the most any row (PP group) touches:
``score = alpha * D(A) + beta * D(B)`` with ``D(k) = k if k >= 2 else 0``. Feasibility of
"every column touches at most ``A`` and every row at most ``B`` minipods" is monotone in both,
so the optimum is the lowest-scoring feasible pair. This module decides pairs:

* :func:`monochrome_columns` / :func:`monochrome_rows` decide ``A = 1`` / ``B = 1`` exactly:
  with ``A = 1`` every column sits in one minipod, which then holds ``floor(f_j / rows)``
  columns at most, and every row touches every minipod used;
* :func:`counting_bound_allows` is a necessary condition (a relaxation): if minipod ``j`` is
  touched by ``a_j`` rows and ``b_j`` columns it hosts at most ``min(f_j, a_j * b_j)`` cells,
  while ``sum_j a_j <= rows * B`` and ``sum_j b_j <= cols * A``;
* :func:`block_design` is a sufficient construction: rows in ``p <= A`` groups, columns in
  ``q <= B`` groups, each of the ``p * q`` blocks packed whole into one minipod.

Pairs these cannot decide go to the feasibility MIP
(:func:`topoopt.placement.formulations.exact.build_feasibility`).

Cost on large instances: :func:`iter_target_pairs` yields the pairs lazily (a heap over
``A``, ``O(min(rows, M))`` memory); :class:`Constructions` sorts the minipods once per group
size and decides the closed forms from prefix sums; block designs place each block by
bisection in a sorted list of free capacities and skip at once a design whose largest block
fits no minipod; :class:`CountingBound` gives up (admits every pair) when its table would
exceed :data:`MAX_COUNTING_CELLS`. The long loops take an ``expired`` callable and stop when
it says so.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement

if TYPE_CHECKING:
    from topoopt.placement.exact_mip.fractional import FractionalCounting

MAX_COUNTING_WORK = 400_000_000
"""Most element operations (table cells times array operations, see
:meth:`CountingBound._work`) a counting table may take (measured 2.3-4.7 ns each, so about
1-2 s at the limit); beyond it :class:`CountingBound` uses its Lagrangian relaxation
(:class:`LagrangianCounting`), which is weaker but takes milliseconds."""

LAGRANGE_STEPS = 64
"""Multipliers ``lambda`` the Lagrangian counting bound tries, evenly on ``[0, cols]``."""

LAGRANGE_EXACT_SWITCHES = 64
"""Above this many minipods (switches), :class:`LagrangianCounting` decides by the linear
relaxation of its knapsack alone
(:class:`~topoopt.placement.exact_mip.fractional.FractionalCounting`): its exact knapsack
costs one array operation per switch (1.5 s over the 511 racks of two pods of a 16,384-node
tree), the relaxation milliseconds, and their counting floors were equal on the 89 rack
sets of 65-1,022 switches compared (``docs/levels.md``)."""

MAX_COUNTING_CELLS = 4_000_000
"""Largest table (``(rows * min(cols, M) + 1) * (cols * min(rows, M) + 1)`` cells, 8 bytes
each, held twice) the counting relaxation builds; beyond it the relaxation admits every pair
(so it refutes nothing and the decomposition stays exact)."""

_CHECK_EVERY = 1024
"""Blocks placed (or table updates made) between two looks at the clock."""

Expired = Callable[[], bool]


def _never() -> bool:
    return False


def _d(k: int) -> int:
    """``D`` of a group touching ``k`` minipods: ``spread(range(k))`` in constant time."""
    return k if k >= 2 else 0


@dataclass(frozen=True)
class TargetPair:
    """A candidate ``(A, B)``: most minipods per column (DP) and per row (PP)."""

    score: float
    max_dp_use: int
    max_pp_use: int


def iter_target_pairs(instance: PlacementInstance) -> Iterator[TargetPair]:
    """Every ``(A, B)`` with ``1 <= A <= min(rows, M)``, ``1 <= B <= min(cols, M)``, by score.

    Ties are broken by ``A + B`` so that smaller (easier to refute) pairs come first, then by
    ``A``. The pairs are generated lazily: for a fixed ``A`` the order grows with ``B``, so a
    heap over ``A`` merges the sequences.
    """
    n_pods = instance.n_minipods
    alpha, beta = instance.alpha, instance.beta
    max_b = min(instance.cols, n_pods)

    def entry(a: int, b: int) -> tuple[float, int, int, int, float]:
        score = alpha * _d(a) + beta * _d(b)
        return (round(score, 12), a + b, a, b, score)

    heap = [entry(a, 1) for a in range(1, min(instance.rows, n_pods) + 1)]
    heapq.heapify(heap)
    while heap:
        _, _, a, b, score = heap[0]
        yield TargetPair(score=score, max_dp_use=a, max_pp_use=b)
        if b < max_b:
            heapq.heapreplace(heap, entry(a, b + 1))
        else:
            heapq.heappop(heap)


def target_pairs(instance: PlacementInstance) -> list[TargetPair]:
    """Every target pair in the order of :func:`iter_target_pairs`, as a list."""
    return list(iter_target_pairs(instance))


def _split(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + 1] * extra + [base] * (parts - extra)


class Constructions:
    """The closed forms and block designs of one instance, with what they share cached.

    Parameters
    ----------
    instance
        The placement instance.

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", (Minipod("a", 3), Minipod("b", 3)), dp=3, tp=8, pp=2,
    ...                          alpha=0.5)
    >>> build = Constructions(inst)
    >>> build.monochrome_columns(1) is None, build.monochrome_columns(2).matrix
    (True, ((0, 1), (0, 1), (0, 1)))
    """

    def __init__(self, instance: PlacementInstance) -> None:
        self.instance = instance
        self.caps = instance.capacities
        self._orders: dict[int, tuple[list[int], list[int]]] = {}
        self.tried: set[tuple[int, int]] = set()  # block designs known to fail
        self.interrupted = False  # whether expired() stopped the last design or cut

    def _groups_order(self, group_size: int) -> tuple[list[int], list[int]]:
        """Minipods by decreasing ``free // group_size`` (ties by index) and the prefix sums
        of those quotients."""
        if group_size not in self._orders:
            caps = self.caps
            order = sorted(range(len(caps)), key=lambda j: (-(caps[j] // group_size), j))
            sums = [0]
            for j in order:
                sums.append(sums[-1] + caps[j] // group_size)
            self._orders[group_size] = (order, sums)
        return self._orders[group_size]

    def whole_groups(self, group_size: int, n_groups: int, max_pods: int) -> list[int] | None:
        """Pods for ``n_groups`` groups of ``group_size`` cells, each group whole in one pod,
        using at most ``max_pods`` pods; ``None`` if impossible. Largest pods first."""
        order, sums = self._groups_order(group_size)
        if sums[min(max_pods, len(order))] < n_groups:
            return None
        owner: list[int] = []
        for j in order[:max_pods]:
            owner += [j] * min(self.caps[j] // group_size, n_groups - len(owner))
        return owner

    def monochrome_columns(self, max_pp_use: int) -> Placement | None:
        """See :func:`monochrome_columns`."""
        inst = self.instance
        owner = self.whole_groups(inst.rows, inst.cols, max_pp_use)
        return None if owner is None else Placement.from_rows([owner] * inst.rows)

    def monochrome_rows(self, max_dp_use: int) -> Placement | None:
        """See :func:`monochrome_rows`."""
        inst = self.instance
        owner = self.whole_groups(inst.cols, inst.rows, max_dp_use)
        return None if owner is None else Placement.from_rows([[j] * inst.cols for j in owner])

    @cached_property
    def _by_free(self) -> list[tuple[int, int]]:
        return sorted((f, j) for j, f in enumerate(self.caps))

    def block_design(
        self, max_dp_use: int, max_pp_use: int, expired: Expired = _never
    ) -> Placement | None:
        """See :func:`block_design`; :attr:`interrupted` says whether ``expired()`` stopped
        this call.

        Designs ``(p, q)`` that failed before are not tried again (the outcome of a design
        depends only on ``p`` and ``q``), so a walk over target pairs tries each at most once.
        """
        self.interrupted = False
        inst = self.instance
        rows, cols = inst.rows, inst.cols
        largest = self._by_free[-1][0]
        for p in range(1, min(max_dp_use, rows) + 1):
            for q in range(1, min(max_pp_use, cols) + 1):
                if (p, q) in self.tried:
                    continue
                if -(-rows // p) * -(-cols // q) > largest:  # the largest block fits nowhere
                    self.tried.add((p, q))
                    continue
                if expired():
                    self.interrupted = True
                    return None
                found = self._design(p, q, expired)
                if found is not None:
                    return found
                if self.interrupted:
                    return None
                self.tried.add((p, q))
        return None

    def _design(self, p: int, q: int, expired: Expired) -> Placement | None:
        """Rows in ``p`` groups, columns in ``q``, blocks best-fit decreasing; or ``None``."""
        inst = self.instance
        rows, cols = inst.rows, inst.cols
        row_sizes, col_sizes = _split(rows, p), _split(cols, q)
        blocks = sorted(
            ((rs * cs, i, k) for i, rs in enumerate(row_sizes) for k, cs in enumerate(col_sizes)),
            reverse=True,
        )
        free = list(self._by_free)  # (free nodes, minipod), sorted
        owner: dict[tuple[int, int], int] = {}
        for n, (size, i, k) in enumerate(blocks):
            if n % _CHECK_EVERY == _CHECK_EVERY - 1 and expired():
                self.interrupted = True
                return None
            at = bisect.bisect_left(free, (size, -1))  # the fewest free nodes that hold it
            if at == len(free):
                return None
            left, j = free.pop(at)
            bisect.insort(free, (left - size, j))
            owner[i, k] = j
        row_group = [g for g, size in enumerate(row_sizes) for _ in range(size)]
        col_group = [g for g, size in enumerate(col_sizes) for _ in range(size)]
        return Placement.from_rows(
            [[owner[row_group[r], col_group[c]] for c in range(cols)] for r in range(rows)]
        )

    def guillotine(
        self, max_dp_use: int, max_pp_use: int, expired: Expired = _never
    ) -> Placement | None:
        """See :func:`guillotine`; only the ``A * B`` largest minipods take part (no more
        can be used), so a try costs ``O(A * B * log(A * B))`` per band whatever ``M``.
        :attr:`interrupted` says whether ``expired()`` stopped this call."""
        self.interrupted = False
        inst = self.instance
        for transpose in (False, True):
            length, width = (inst.cols, inst.rows) if transpose else (inst.rows, inst.cols)
            groups, strips = (max_pp_use, max_dp_use) if transpose else (max_dp_use, max_pp_use)
            largest = sorted(self._by_free[-groups * strips :], key=lambda fj: (-fj[0], fj[1]))
            pods = [j for _, j in largest]
            for sizes, best_fit in itertools.product(_band_sizes(length, groups), (False, True)):
                if expired():
                    self.interrupted = True
                    return None
                caps = [f for f, _ in largest]
                cut = _guillotine(caps, length, width, groups, strips, sizes, best_fit)
                if cut is None:
                    continue
                matrix = [[-1] * width for _ in range(length)]
                top = 0
                for size, pieces in cut:
                    left = 0
                    for w, k in pieces:
                        for r in range(top, top + size):
                            matrix[r][left : left + w] = [pods[k]] * w
                        left += w
                    top += size
                if transpose:
                    matrix = [list(col) for col in zip(*matrix, strict=True)]
                return Placement.from_rows(matrix)
        return None


GUILLOTINE_PARTITIONS = 64
"""Band sizes the guillotine construction tries exactly (partitions of the lines, largest
first) when there are few lines; beyond them it sizes the bands greedily."""


def _band_sizes(length: int, groups: int) -> Iterator[str | tuple[int, ...]]:
    """The greedy rules ``"balanced"`` and ``"largest"``, then the partitions of ``length``
    into at most ``groups`` parts (largest part first), at most
    :data:`GUILLOTINE_PARTITIONS` of them."""
    yield "balanced"
    yield "largest"

    def parts(total: int, most: int, largest: int) -> Iterator[tuple[int, ...]]:
        if total == 0:
            yield ()
            return
        if most == 0:
            return
        for first in range(min(total, largest), 0, -1):
            if first * most < total:
                break
            for rest in parts(total - first, most - 1, first):
                yield (first, *rest)

    yield from itertools.islice(parts(length, groups, length), GUILLOTINE_PARTITIONS)


def _guillotine(
    caps: list[int],
    length: int,
    width: int,
    groups: int,
    strips: int,
    sizes: str | tuple[int, ...],
    best_fit: bool = False,
) -> list[tuple[int, list[tuple[int, int]]]] | None:
    """Cut ``length`` lines of ``width`` cells into at most ``groups`` bands of consecutive
    lines, each band into at most ``strips`` strips (consecutive positions, every line of the
    band alike), each strip whole in one minipod. The band sizes are ``sizes`` (a partition
    of ``length``) or greedy: each band takes the most lines the ``strips`` largest free
    capacities hold (``"balanced"``: at most an even share of the lines left); the strips of a
    band are the widest the ``strips`` largest free capacities allow, or with ``best_fit``
    the band's last strip goes to the fewest free nodes that complete it (see
    :func:`_strips`). ``[(lines, [(width, pod), ...])]`` or ``None``."""
    out: list[tuple[int, list[tuple[int, int]]]] = []
    left = length
    for g in range(groups):
        if not left:
            break
        if not isinstance(sizes, str):
            if g == len(sizes):
                break
            size = sizes[g]
            top = sorted(range(len(caps)), key=lambda j: (-caps[j], j))[:strips]
            if sum(min(caps[j] // size, width) for j in top) < width:
                return None
            out.append((size, _strips(caps, top, size, width, best_fit)))
            left -= size
            continue
        top = sorted(range(len(caps)), key=lambda j: (-caps[j], j))[:strips]

        def fits(size: int, top: list[int] = top) -> bool:
            return sum(min(caps[j] // size, width) for j in top) >= width

        if not fits(1):
            return None
        lo, hi = 1, left  # the largest size that fits (fits is monotone)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid - 1
        size = min(lo, -(-left // (groups - g))) if sizes == "balanced" else lo
        out.append((size, _strips(caps, top, size, width, best_fit)))
        left -= size
    return out if not left else None


def _strips(
    caps: list[int], top: list[int], size: int, width: int, best_fit: bool = False
) -> list[tuple[int, int]]:
    """Strips of a band of ``size`` lines over the minipods ``top`` (which hold it), widest
    first; takes their nodes from ``caps``.

    With ``best_fit``, as soon as one minipod of ``caps`` holds the rest of the band alone,
    the one with the fewest free nodes that does takes it (it never needs more strips than
    widest first, and it keeps the larger minipods for the bands after). Example: bands of
    2 lines, 2 strips each, 128 wide, on free nodes 132, 131, 129 and 124: widest first
    gives the first band 66 + 65 and leaves 64 + 62 < 128 for the second; best fit gives it
    66 + 62 and the second 65 + 64.
    """
    pieces = []
    done = 0
    for j in top:
        rest = width - done
        if best_fit:
            fitting = [k for k, f in enumerate(caps) if f // size >= rest]
            if fitting:
                k = min(fitting, key=lambda k: (caps[k], k))
                pieces.append((rest, k))
                caps[k] -= rest * size
                return pieces
        w = min(caps[j] // size, rest)
        if w:
            pieces.append((w, j))
            caps[j] -= w * size
            done += w
        if done == width:
            break
    return pieces


def guillotine(instance: PlacementInstance, max_dp_use: int, max_pp_use: int) -> Placement | None:
    """Rows in at most ``max_dp_use`` bands of consecutive rows, each band's columns cut
    into at most ``max_pp_use`` strips of its own widths, each block whole in one minipod (or
    the same with rows and columns swapped); greedy. A column then touches at most one minipod
    per band and a row at most one per strip. Returns a placement or ``None`` (which proves
    nothing). Unlike :func:`block_design`, the bands need not be cut alike."""
    return Constructions(instance).guillotine(max_dp_use, max_pp_use)


def monochrome_columns(instance: PlacementInstance, max_pp_use: int) -> Placement | None:
    """A placement with every column in one minipod and rows touching ``<= max_pp_use``
    minipods, or ``None`` when none exists (exact)."""
    return Constructions(instance).monochrome_columns(max_pp_use)


def monochrome_rows(instance: PlacementInstance, max_dp_use: int) -> Placement | None:
    """A placement with every row in one minipod and columns touching ``<= max_dp_use``
    minipods, or ``None`` when none exists (exact)."""
    return Constructions(instance).monochrome_rows(max_dp_use)


def block_design(instance: PlacementInstance, max_dp_use: int, max_pp_use: int) -> Placement | None:
    """Try row groups x column groups with each block whole in one minipod.

    For ``p <= max_dp_use`` row groups and ``q <= max_pp_use`` column groups of balanced
    sizes, blocks are packed best-fit decreasing into minipods. Returns the first placement
    found, or ``None`` (which proves nothing).
    """
    return Constructions(instance).block_design(max_dp_use, max_pp_use)


class CountingBound:
    """The counting relaxation of every target pair at once (one dynamic program).

    The table's cell ``[sa, sb]`` is the largest ``sum_j min(f_j, a_j * b_j)`` over choices
    with ``sum_j a_j <= sa`` and ``sum_j b_j <= sb`` (``0 <= a_j <= rows``,
    ``0 <= b_j <= cols``). A pair ``(A, B)`` survives when the cell
    ``[rows * B, cols * A]`` reaches ``rows * cols``.

    The Lagrangian relaxation (:class:`LagrangianCounting`, milliseconds) is asked first, and
    the table is built only for a pair it admits, only as far as the pairs asked so far need
    (grown geometrically, see :meth:`_table`). A pair whose table would be over
    :data:`MAX_COUNTING_CELLS` cells or :data:`MAX_COUNTING_WORK` operations is admitted
    (the relaxation stays valid), and so is every pair once ``expired()`` stopped a build
    (then :attr:`interrupted` is set).
    """

    def __init__(self, instance: PlacementInstance, expired: Expired = _never) -> None:
        self.instance = instance
        self.expired = expired
        self.interrupted = False

    @property
    def shape(self) -> tuple[int, int]:
        """Shape of the table."""
        inst = self.instance
        return (
            inst.rows * min(inst.cols, inst.n_minipods) + 1,
            inst.cols * min(inst.rows, inst.n_minipods) + 1,
        )

    @property
    def work(self) -> int:
        """Element operations of the table's build (cells times per-minipod updates)."""
        return self._work(*self.shape)

    def _work(self, size_a: int, size_b: int) -> int:
        """Element operations of a build of ``size_a x size_b`` cells: per minipod and ``b``,
        the doublings of :func:`_window_max` and two more array operations."""
        inst = self.instance
        ops = 0
        for f, count in self._free_counts.items():
            for b in range(1, min(inst.cols, size_b - 1) + 1):
                most = min(inst.rows, size_a - 1, -(-f // b))
                if most >= 1:
                    ops += count * (2 + max(0, most - 1).bit_length())
        return size_a * size_b * ops

    @cached_property
    def _free_counts(self) -> Counter[int]:
        return Counter(self.instance.capacities)

    @cached_property
    def lagrangian(self) -> LagrangianCounting:
        """The fallback used when the table is too large (see :data:`MAX_COUNTING_WORK`)."""
        return LagrangianCounting(self.instance, self.expired)

    def full(self) -> np.ndarray | None:
        """The whole table (every sum up to :attr:`shape`), ``None`` when it is over the
        limits or ``expired()`` stops its build: the reference the lazily grown tables of
        :meth:`allows` answer like (property tests).

        Kept per process (read-only, up to :data:`COUNTING_CACHE_BYTES` in all, oldest dropped
        first) by the job's shape and the multiset of free nodes, and the table of the
        transposed job ``cols x rows`` is this one transposed (the gain ``min(f, a b)`` is
        symmetric in the rows' and columns' incidences): the walk of ``placement/levels``
        asks for both orientations of every switch's children, which coincide for a square
        job."""
        size_a, size_b = self.shape
        if size_a * size_b > MAX_COUNTING_CELLS or self.work > MAX_COUNTING_WORK:
            return None
        inst = self.instance
        free = tuple(sorted(inst.capacities))
        if (inst.rows, inst.cols, free) in _FULL_TABLES:
            return _FULL_TABLES[inst.rows, inst.cols, free]
        if (inst.cols, inst.rows, free) in _FULL_TABLES:
            return _FULL_TABLES[inst.cols, inst.rows, free].T
        table = self._build(size_a, size_b)
        if table is not None:
            table.setflags(write=False)
            _FULL_TABLES[inst.rows, inst.cols, free] = table
            while sum(kept.nbytes for kept in _FULL_TABLES.values()) > COUNTING_CACHE_BYTES:
                del _FULL_TABLES[next(iter(_FULL_TABLES))]
        return table

    def _build(self, size_a: int, size_b: int) -> np.ndarray | None:
        """The table of the sums ``sum a < size_a``, ``sum b < size_b`` (``None`` when
        ``expired()`` stops it).

        One max-plus step per minipod and per ``b``: the gain ``min(f, a b)`` is ``a b`` up
        to the ``a`` that fills the minipod, then ``f``, so the best over the linear part,
        ``max_a table[A - a] + a b = b A + max_{A - a_lin <= i < A} (table[i] - b i)``, is a
        sliding-window maximum (:func:`_window_max`, ``O(log a)`` array operations instead of
        one per ``a``). Two things leave the final (accumulated) table unchanged and save
        half the work: the options a minipod dominates are skipped (``b > f``, whose gain
        ``a = 1`` already gives with ``b = f``, and a full minipod at ``b`` when ``b - 1``
        fills it with as many rows: fewer incidences, the same gain; a dominated state only
        ever leads to dominated states), and each step covers only the sums reachable so far
        (``min(rows, f)`` and ``min(cols, f)`` more per minipod)."""
        inst = self.instance
        max_a, max_b = size_a - 1, size_b - 1
        # Every value is an integer of magnitude at most the larger of the free nodes and
        # cols * size_a: single precision holds it exactly below 2**24 and halves the traffic.
        largest = max(sum(inst.capacities), inst.cols * size_a)
        dtype = np.float32 if 2 * largest < 2**24 else np.float64
        table = np.full((size_a, size_b), -np.inf, dtype=dtype)
        table[0, 0] = 0.0
        index = np.arange(size_a, dtype=dtype)[:, None]
        reach_a = reach_b = 0  # the largest sums reachable by the minipods so far
        for free in inst.capacities:
            if self.expired():
                self.interrupted = True
                return None
            new = table.copy()
            for b in range(1, min(inst.cols, max_b, free) + 1):
                whole = -(-free // b)  # the a that fills the minipod
                most = min(inst.rows, max_a, whole)
                width = min(reach_b + 1, size_b - b)  # source sums of b, shifted by b
                linear = most if most < whole else whole - 1
                if linear >= 1:
                    high = min(reach_a + linear, max_a)
                    best = _window_max(table[:high, :width] - b * index[:high], linear)
                    target = new[1 : high + 1, b : b + width]
                    np.maximum(target, best + b * index[1 : high + 1], out=target)
                if most == whole and (b == 1 or -(-free // (b - 1)) > whole):
                    high = min(reach_a, max_a - whole)
                    target = new[whole : whole + high + 1, b : b + width]
                    np.maximum(target, table[: high + 1, :width] + free, out=target)
            table = new
            reach_a = min(max_a, reach_a + min(inst.rows, free))
            reach_b = min(max_b, reach_b + min(inst.cols, free))
        return np.maximum.accumulate(np.maximum.accumulate(table, axis=0), axis=1)

    def _table(self, sa: int, sb: int) -> np.ndarray | None:
        """A table covering the sums ``(sa, sb)``: the one built for an earlier pair if it
        covers them, else a larger one, each grown dimension at least doubled (capped at the
        full :attr:`shape`) so that the builds of a walk cost about twice the last one.
        ``None`` when that table is over :data:`MAX_COUNTING_CELLS` or
        :data:`MAX_COUNTING_WORK`, or ``expired()`` stopped its build."""
        have = self._partial
        if have is not None and have.shape[0] > sa and have.shape[1] > sb:
            return have
        full_a, full_b = self.shape
        size_a, size_b = sa + 1, sb + 1
        if have is not None:
            old_a, old_b = have.shape
            size_a = max(old_a, size_a if size_a <= old_a else min(full_a, max(size_a, 2 * old_a)))
            size_b = max(old_b, size_b if size_b <= old_b else min(full_b, max(size_b, 2 * old_b)))
        for size in ((size_a, size_b), (sa + 1, sb + 1)):  # grown, else just enough
            if size[0] < sa + 1 or size[1] < sb + 1:
                continue
            if size[0] * size[1] > MAX_COUNTING_CELLS or self._work(*size) > MAX_COUNTING_WORK:
                continue
            table = self._build(*size)
            if table is not None:
                self._partial = table
            return table
        return None

    _partial: np.ndarray | None = None

    def allows(self, max_dp_use: int, max_pp_use: int) -> bool:
        """Whether the relaxation admits the pair (``False`` proves it infeasible).

        The table is built lazily, only up to the sums the pairs asked so far need
        (``sum a <= rows * B``, ``sum b <= cols * A``); its cells are those of the full table,
        so it answers every pair exactly as the full table would.
        """
        if not self.lagrangian.allows(max_dp_use, max_pp_use):
            return False
        if self.lagrangian.interrupted:
            self.interrupted = True
            return True
        inst = self.instance
        full_a, full_b = self.shape
        sa = min(inst.rows * max_pp_use, full_a - 1)
        sb = min(inst.cols * max_dp_use, full_b - 1)
        table = None if self.interrupted else self._table(sa, sb)
        if table is None:
            return True
        return bool(table[sa, sb] >= inst.n_nodes)


def _gains(free: int, cols: int, rows: int, lams: np.ndarray) -> np.ndarray:
    """``v(b, lambda) = max_{0 <= a <= rows} min(free, a b) - lambda a`` for ``b = 1 ..
    cols`` (columns) and every ``lambda`` of ``lams`` (rows), ``-inf`` where it is not
    positive (taking ``b = 0`` is then as good): the maximum is at ``a = floor(free / b)``
    or ``ceil(free / b)`` (capped at ``rows``), see :class:`LagrangianCounting`.

    Examples
    --------
    >>> _gains(5, 2, 4, np.array([0.0, 1.0, 2.0])).tolist()
    [[4.0, 5.0], [-inf, 2.0], [-inf, -inf]]
    """
    b = np.arange(1, cols + 1)
    best = np.zeros((len(lams), cols))
    for a in (np.minimum(rows, free // b), np.minimum(rows, -(-free // b))):
        best = np.maximum(best, np.minimum(free, a * b) - lams[:, None] * a)
    return np.where(best > 0, best, -np.inf)


def _window_max(values: np.ndarray, length: int) -> np.ndarray:
    """``out[i] = max(values[max(0, i - length + 1) : i + 1])`` along the first axis, by
    doubling windows (``O(log length)`` array operations).

    Examples
    --------
    >>> _window_max(np.array([[3.0], [1.0], [4.0], [1.0], [5.0]]), 2).ravel().tolist()
    [3.0, 3.0, 4.0, 4.0, 5.0]
    """
    out = values.copy()
    span = 1
    while span < length:
        step = min(span, length - span)  # windows of span and step overlap into span + step
        # out[i] for i < step keeps its window; numpy buffers the overlapping operands
        np.maximum(out[step:], out[:-step], out=out[step:])
        span += step
    return out


COUNTING_CACHE_BYTES = 64 * 2**20
"""Memory of the whole counting tables kept per process (:meth:`CountingBound.full`; 66 KB
each for the children of a group of 16 racks under a 16 x 8 job, so about a thousand)."""

_FULL_TABLES: dict[tuple[int, int, tuple[int, ...]], np.ndarray] = {}

LAGRANGE_CACHE = 32
"""Lagrangian tables kept per process (each ``(LAGRANGE_STEPS + 1) x (cols * min(rows, M) +
1)`` values: 0.5 MB for a 64 x 16 job over 256 switches)."""

_LAGRANGE_TABLES: dict[tuple[int, int, tuple[tuple[int, int], ...]], list[tuple[float, np.ndarray]]]
_LAGRANGE_TABLES = {}


class LagrangianCounting:
    """The counting relaxation with the row budget dualised: fast, weaker, still valid.

    For ``lambda >= 0`` a feasible pair ``(A, B)`` has counts with
    ``sum_j min(f_j, a_j b_j) >= rows * cols``, ``sum_j a_j <= rows * B`` and
    ``sum_j b_j <= cols * A``, so

        rows * cols <= lambda * rows * B + max_{sum_j b_j <= cols * A} sum_j v_j(b_j, lambda)

    with ``v_j(b, lambda) = max_{0 <= a <= rows} min(f_j, a b) - lambda a``. That function of
    ``a`` is concave and piecewise linear (slope ``b - lambda`` up to ``a = f_j / b``, then
    ``-lambda``), so its maximum over the integers is at ``a = 0`` or at
    ``floor(f_j / b)`` / ``ceil(f_j / b)`` (capped at ``rows``). The right-hand side is a
    one-dimensional knapsack over ``sum_j b_j``, solved once per ``lambda`` for every ``A``;
    a pair is refuted when some ``lambda`` of the grid (:data:`LAGRANGE_STEPS` values on
    ``[0, cols]``; beyond ``cols`` every ``v_j`` is 0) makes the right-hand side smaller.
    """

    def __init__(self, instance: PlacementInstance, expired: Expired = _never) -> None:
        self.instance = instance
        self.expired = expired
        self.interrupted = False

    @cached_property
    def tables(self) -> list[tuple[float, np.ndarray]]:
        """See :meth:`_tables`; empty (every pair admitted) when ``expired()`` stops the
        build, which then sets :attr:`interrupted`. Kept per process by the job's shape and
        the multiset of free nodes (:data:`LAGRANGE_CACHE` of them, oldest dropped first):
        the walk of ``placement/levels`` asks for the same switches from its counting floors,
        ``exact-mip``'s decomposition and its second pass."""
        inst = self.instance
        key = (inst.rows, inst.cols, tuple(sorted(Counter(inst.capacities).items())))
        known = _LAGRANGE_TABLES.get(key)
        if known is not None:
            return known
        out = self._tables()
        if not self.interrupted:
            if len(_LAGRANGE_TABLES) >= LAGRANGE_CACHE:
                del _LAGRANGE_TABLES[next(iter(_LAGRANGE_TABLES))]
            _LAGRANGE_TABLES[key] = out
        return out

    def _tables(self) -> list[tuple[float, np.ndarray]]:
        """``(lambda, best)`` where ``best[s]`` is the knapsack value with ``sum_j b_j <= s``.

        The knapsack depends on the minipods only through their free nodes: the gains
        ``v(b, lambda)`` are computed once per distinct free-node count (a *capacity type*)
        for every ``lambda`` at once, and each minipod of the type is one max-plus step of
        all the multipliers' tables together (one array operation per ``b``)."""
        inst = self.instance
        rows, cols = inst.rows, inst.cols
        size = cols * min(rows, inst.n_minipods) + 1
        lams = cols * np.arange(LAGRANGE_STEPS + 1) / LAGRANGE_STEPS
        table = np.full((len(lams), size), -np.inf)
        table[:, 0] = 0.0
        for f, count in sorted(Counter(f for f in inst.capacities if f > 0).items()):
            if self.expired():
                self.interrupted = True
                return []
            gains = _gains(f, min(cols, size - 1), rows, lams)
            for _ in range(count):
                new = table.copy()
                for b in range(1, gains.shape[1] + 1):
                    shifted = table[:, : size - b] + gains[:, b - 1 : b]
                    np.maximum(new[:, b:], shifted, out=new[:, b:])
                table = new
        best = np.maximum.accumulate(table, axis=1)
        return [(float(lam), best[i]) for i, lam in enumerate(lams)]

    @cached_property
    def fractional(self) -> FractionalCounting:
        """The linear relaxation of the knapsack, asked first (it refutes only what the
        exact knapsack refutes) and alone above :data:`LAGRANGE_EXACT_SWITCHES`."""
        from topoopt.placement.exact_mip.fractional import FractionalCounting

        return FractionalCounting(self.instance)

    def allows(self, max_dp_use: int, max_pp_use: int) -> bool:
        """Whether every multiplier of the grid admits the pair (``False`` proves it
        infeasible); above :data:`LAGRANGE_EXACT_SWITCHES` switches, whether the linear
        relaxation of every multiplier's knapsack admits it."""
        if not self.fractional.allows(max_dp_use, max_pp_use):
            return False
        inst = self.instance
        if inst.n_minipods > LAGRANGE_EXACT_SWITCHES:
            return True
        need = inst.n_nodes - 1e-9 * max(1, inst.n_nodes)
        for lam, best in self.tables:
            s = min(inst.cols * max_dp_use, len(best) - 1)
            if lam * inst.rows * max_pp_use + best[s] < need:
                return False
        return True


def counting_floor(
    instance: PlacementInstance, below: float = np.inf, least: tuple[int, int] = (1, 1)
) -> float:
    """A lower bound on the optimum (eq. 2) in milliseconds: the least score of a target
    pair that neither the closed forms (exact for ``A = 1`` or ``B = 1``) nor the
    Lagrangian counting bound (:class:`LagrangianCounting`) refute, or the first pair's
    score at or above ``below`` when every pair under it is refuted. ``least``: spreads
    ``(A, B)`` the caller proved every placement reaches, so that pairs below either are
    refuted too (``inf`` when that leaves none).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> pods = tuple(Minipod(f"m{j}", f) for j, f in enumerate((5, 2, 2)))
    >>> counting_floor(PlacementInstance("x", pods, dp=4, tp=8, pp=2, alpha=0.5))
    1.5
    """
    build = Constructions(instance)
    lagrangian = LagrangianCounting(instance)
    for pair in iter_target_pairs(instance):
        a, b = pair.max_dp_use, pair.max_pp_use
        if round(pair.score, 12) >= round(below, 12):
            return pair.score
        if a < least[0] or b < least[1]:
            continue
        if a == 1:
            if build.whole_groups(instance.rows, instance.cols, b) is not None:
                return pair.score
        elif b == 1:
            if build.whole_groups(instance.cols, instance.rows, a) is not None:
                return pair.score
        elif lagrangian.allows(a, b):
            return pair.score
    if least != (1, 1):
        return math.inf  # no pair reaches the least spreads
    raise AssertionError("the pair (min(rows, M), min(cols, M)) is never refuted")
