"""Blocks in the split's switches: a construction for the level below a proven split level.

For the ``lex`` objective the walk proves the split level ``l`` at its optimum ``S*`` (Arnold
eq. 2 at level ``l``) and then places every switch's cells on its children. Which placement of
level ``l`` it walks down matters below: a placement filling few switches to the brim uses
their smallest children too. This construction chooses the level-``l`` placement with level
``l + 1`` in view, for every level-``l`` pair ``(p, q)`` of score ``S*`` (one side whole or
not):

* rows in ``p`` bands, columns in ``q`` strips (balanced sizes, the larger first), the block
  of band ``i`` and strip ``k`` whole in one switch of level ``l``, distinct switches for
  distinct blocks (a column then touches ``p`` switches of level ``l``, a row ``q``: level
  ``l`` scores ``S*``);
* a level-``l + 1`` target ``(A, B)`` is split over the bands and strips, ``a_i`` for band
  ``i`` (``sum_i a_i = A``) and ``b_k`` for strip ``k`` (``sum_k b_k = B``), as evenly as
  possible with the larger shares to the larger bands;
* block ``(i, k)`` (``h x w`` cells) goes to a switch whose children hold it with every column
  of the block on at most ``a_i`` children and every row on at most ``b_k``
  (:func:`least_column_spread`, ``exact-mip``'s constructions without integer programmes); the
  blocks are matched to switches by augmenting paths.

A column then touches ``sum_i a_i = A`` children and a row ``sum_k b_k = B``: the placement
has level-``l + 1`` spreads at most ``(A, B)``. The targets are walked in increasing score
(:func:`~topoopt.placement.exact_mip.targets.iter_target_pairs`) and the first matched one is
returned. It proves nothing (a construction); :func:`realise_blocks` checks the time left
before every target and every switch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from topoopt.placement.exact_mip.targets import Constructions, _split
from topoopt.placement.instance import Minipod, PlacementInstance
from topoopt.placement.solution import Placement
from topoopt.placement.tree import DIGITS, d, fewest_holding

Grid = np.ndarray
"""``(rows, cols, 2)``: per cell its switch of level ``l`` and its child (both local)."""


def _level(caps: Sequence[int], rows: int, cols: int) -> PlacementInstance:
    """A single-level instance over children of free nodes ``caps`` (one node per cell)."""
    pods = tuple(Minipod(f"s{i}", int(c)) for i, c in enumerate(caps))
    return PlacementInstance("block", pods, rows, 1, cols, 0.5, gpus_per_node=1)


def _construct(build: Constructions, a: int, b: int) -> Placement | None:
    """A placement of ``build``'s instance with spreads at most ``(a, b)``: the closed forms
    (exact when ``a`` or ``b`` is 1), else block designs (guillotine cuts left out: they took
    90 % of the time on the benchmark's 1,024-node jobs)."""
    if a == 1:
        return build.monochrome_columns(b)
    if b == 1:
        return build.monochrome_rows(a)
    return build.block_design(a, b)


def least_column_spread(caps: Sequence[int], h: int, w: int, b: int) -> tuple[int, Placement]:
    """The least ``a`` for which the constructions place an ``h x w`` block on children of
    free nodes ``caps`` with spreads at most ``(a, b)``, and that placement (local children).

    The search bisects between the fewest children holding one column (no column needs
    fewer) and all of them, taking the constructions as monotone in ``a`` (a miss only
    makes the construction weaker).

    Raises
    ------
    LookupError
        When the block does not fit or no construction places it.
    """
    caps = [int(c) for c in caps if c > 0]
    if sum(caps) < h * w:
        raise LookupError("the block does not fit")
    if b >= w:  # rows unconstrained: the columns packed alone, then below that by bisection
        hi, best = columns_greedy(caps, h, w)
        lo = fewest_holding(caps, h)
        while lo < hi:
            mid = (lo + hi) // 2
            found = columns_balanced(caps, h, w, mid)
            if found is None:
                lo = mid + 1
            else:
                hi, best = mid, found
        return hi, best
    build = Constructions(_level(caps, h, w))
    lo, hi = fewest_holding(caps, h), min(h, len(caps))
    top = _construct(build, hi, min(b, w)) if lo <= hi else None
    if top is None:
        raise LookupError("no construction")
    best = top
    while lo < hi:  # bisection: the constructions are taken as monotone in a
        mid = (lo + hi) // 2
        found = _construct(build, mid, min(b, w))
        if found is None:
            lo = mid + 1
        else:
            hi, best = mid, found
    return hi, best


def columns_greedy(caps: Sequence[int], h: int, w: int) -> tuple[int, Placement]:
    """The ``w`` columns of ``h`` cells on children of free nodes ``caps``, one column after
    the other: each takes the children with the most free nodes left until the rest of the
    column fits in one, then the child with the fewest free nodes that holds the rest (best
    fit, which keeps the larger children for the columns after). Returns the most children
    a column touches and the placement (rows unconstrained: a row has only ``w`` cells).

    Examples
    --------
    >>> columns_greedy([5, 4, 3], 4, 3)[0]
    2
    """
    left = [int(c) for c in caps]
    if sum(left) < h * w:
        raise LookupError("the block does not fit")
    matrix = np.zeros((h, w), dtype=np.int64)
    most = 0
    for col in range(w):
        need, at, used = h, 0, 0
        while need:
            fits = [j for j, f in enumerate(left) if f >= need]
            j = (
                min(fits, key=lambda j: (left[j], j))
                if fits
                else max(range(len(left)), key=lambda j: (left[j], -j))
            )
            take = min(need, left[j])
            matrix[at : at + take, col] = j
            left[j] -= take
            need -= take
            at += take
            used += 1
        most = max(most, used)
    return most, Placement.from_rows(matrix.tolist())


def columns_balanced(caps: Sequence[int], h: int, w: int, a: int) -> Placement | None:
    """The ``w`` columns of ``h`` cells, each on at most ``a`` children, from the ``w * a``
    children with the most free nodes dealt largest first to the column holding the fewest
    cells among those with fewer than ``a`` children (longest processing time first); the
    placement when every column then holds ``h`` cells, else ``None`` (proves nothing).

    Examples
    --------
    >>> columns_balanced([5, 4, 3, 3], 7, 2, 2).matrix
    ((0, 1), (0, 1), (0, 1), (0, 1), (0, 2), (3, 2), (3, 2))
    """
    order = sorted(range(len(caps)), key=lambda j: (-caps[j], j))[: w * a]
    owned: list[list[int]] = [[] for _ in range(w)]
    held = [0] * w
    for j in order:
        open_ = [c for c in range(w) if len(owned[c]) < a]
        if not open_ or caps[j] <= 0:
            break
        c = min(open_, key=lambda c: (held[c], c))
        owned[c].append(j)
        held[c] += int(caps[j])
    if min(held) < h:
        return None
    matrix = np.zeros((h, w), dtype=np.int64)
    for c in range(w):
        cells = [j for j in owned[c] for _ in range(int(caps[j]))][:h]
        matrix[:, c] = cells
    return Placement.from_rows(matrix.tolist())


class Frontier:
    """Per switch of level ``l`` and block shape ``(h, w)``: for each row target ``b`` the
    least column target the constructions reach and their placement (computed lazily and
    kept, so the classes of a walk that meet the same switches share them).

    Parameters
    ----------
    children
        Free nodes of the children of each switch of level ``l``.
    """

    def __init__(self, children: Sequence[Sequence[int]]) -> None:
        self.children = [[int(f) for f in kids if f > 0] for kids in children]
        self._table: dict[tuple[int, int, int, int], tuple[float, Placement | None]] = {}

    def get(self, g: int, h: int, w: int, b: int) -> tuple[float, Placement | None]:
        """The least column target of an ``h x w`` block on switch ``g``'s children with
        rows on at most ``b`` of them (``inf`` when none) and the placement reaching it."""
        b = min(b, w)
        key = (g, h, w, b)
        if key not in self._table:
            try:
                a, found = least_column_spread(self.children[g], h, w, b)
                self._table[key] = (float(a), found)
            except LookupError:
                self._table[key] = (math.inf, None)
        return self._table[key]


def _shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` shares as evenly as possible, the larger first."""
    return _split(total, parts)


def _match(allowed: list[list[int]], n_right: int) -> list[int] | None:
    """A matching of every left vertex (``allowed[i]``: its right neighbours) to distinct
    right vertices by augmenting paths (Kuhn), or ``None``."""
    owner = [-1] * n_right

    def augment(i: int, seen: list[bool]) -> bool:
        for g in allowed[i]:
            if not seen[g]:
                seen[g] = True
                if owner[g] < 0 or augment(owner[g], seen):
                    owner[g] = i
                    return True
        return False

    for i in range(len(allowed)):
        if not augment(i, [False] * n_right):
            return None
    out = [-1] * len(allowed)
    for g, i in enumerate(owner):
        if i >= 0:
            out[i] = g
    return out


def split_pairs(
    n_switches: int, rows: int, cols: int, alpha: float, upper: float
) -> list[tuple[int, int]]:
    """The level-``l`` pairs ``(p, q)`` of score ``upper`` (Arnold eq. 2) with at most
    ``n_switches`` blocks."""
    out = []
    for p in range(1, min(rows, n_switches) + 1):
        for q in range(1, min(cols, n_switches) + 1):
            score = alpha * d(p) + (1 - alpha) * d(q)
            if round(score, DIGITS) == round(upper, DIGITS) and p * q <= n_switches:
                out.append((p, q))
    return out


@dataclass(frozen=True)
class Blocks:
    """What :func:`realise_blocks` found: the placement and its level-``l + 1`` target."""

    grid: Grid
    score: float
    max_dp_use: int
    max_pp_use: int


def realise_blocks(
    frontier: Frontier,
    rows: int,
    cols: int,
    alpha: float,
    upper: float,
    start: float,
    below: float,
    seconds: Callable[[], float] = lambda: math.inf,
    whole_sides: bool = True,
) -> Blocks | None:
    """The least-scoring target pair (score in ``[start, below)``) that the blocks realise
    (see the module docstring) over the switches of ``frontier``, with level ``l`` at
    ``upper``; ``None`` when none scores below ``below`` or ``seconds()`` (the time left)
    runs out first. Per design ``(p, q)`` and row target ``B`` the least column target
    ``A`` is found by bisection (a matching for ``A`` is one for ``A + 1``: the shares only
    grow), below the ``A`` of the ``B`` before and below the scores that reach ``below``.
    Without ``whole_sides`` the designs with one band or one strip are left out
    (:mod:`topoopt.placement.whole_side` builds those with uneven shares)."""
    n_children = sum(len(k) for k in frontier.children)
    designs = [
        (p, q)
        for p, q in split_pairs(len(frontier.children), rows, cols, alpha, upper)
        if whole_sides or (p > 1 and q > 1)
    ]
    best: Blocks | None = None
    for p, q in designs:
        top = min(rows, n_children)  # the least A of the B before (more B needs no more A)
        for big_b in range(q, min(cols, n_children) + 1):
            reach = below if best is None else best.score
            room = round(reach - (1 - alpha) * d(big_b), DIGITS)
            if room <= 0:
                break
            if alpha > 0 and math.isfinite(room):
                most = min(top, math.ceil(room / alpha - 1e-9) - 1)
            else:
                most = top
            lo, hi, grid = p, most, None
            while lo <= hi:  # the least A matched, by bisection
                if seconds() <= 0:
                    return best
                mid = (lo + hi) // 2
                found = _design(frontier, rows, cols, p, q, mid, big_b, seconds)
                if found is None:
                    lo = mid + 1
                else:
                    hi, grid = mid - 1, found
            if grid is None:
                continue
            big_a = top = hi + 1
            score = alpha * d(big_a) + (1 - alpha) * d(big_b)
            if round(score, DIGITS) < round(reach, DIGITS):
                best = Blocks(grid, max(score, start), big_a, big_b)
    return best


def _design(
    frontier: Frontier,
    rows: int,
    cols: int,
    p: int,
    q: int,
    big_a: int,
    big_b: int,
    seconds: Callable[[], float],
) -> Grid | None:
    """Bands ``p`` x strips ``q`` with the targets ``(big_a, big_b)`` shared out, each block
    matched to a switch that holds it within its shares; the grid or ``None``."""
    heights, widths = _shares(rows, p), _shares(cols, q)
    a_share, b_share = _shares(big_a, p), _shares(big_b, q)
    blocks = [(i, k) for i in range(p) for k in range(q)]
    allowed: list[list[int]] = []
    for i, k in blocks:
        ok = []
        for g, caps in enumerate(frontier.children):
            if sum(caps) < heights[i] * widths[k]:
                continue
            if seconds() <= 0:
                return None
            least, _ = frontier.get(g, heights[i], widths[k], b_share[k])
            if least <= a_share[i]:
                ok.append(g)
        if not ok:
            return None
        allowed.append(ok)
    owner = _match(allowed, len(frontier.children))
    if owner is None:
        return None
    grid = np.zeros((rows, cols, 2), dtype=np.int64)
    top = np.cumsum([0, *heights])
    left = np.cumsum([0, *widths])
    for (i, k), g in zip(blocks, owner, strict=True):
        _, found = frontier.get(g, heights[i], widths[k], b_share[k])
        assert found is not None
        grid[top[i] : top[i + 1], left[k] : left[k + 1], 0] = g
        grid[top[i] : top[i + 1], left[k] : left[k + 1], 1] = np.asarray(found.matrix)
    return grid
