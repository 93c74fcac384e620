"""The leaf level below the minipods: leaf spreads and the assignment of cells to leaves.

Arnold (§5) places a job at the minipod (spine) level; its rebuttal adds that the same model
can be solved "at every level". A minipod built from a real topology
(:func:`topoopt.placement.cluster.from_topology`) lists its leaf (rack) switches and their free
nodes, so after the minipod decision each minipod's cells can still be put on its leaves so that
DP and PP groups touch few leaves. This module holds

* the leaf spreads of a placement (:func:`leaf_spreads`), computed from the placement's node
  assignment when it has one, else from the nodes the rank-order fill gives
  (:func:`topoopt.placement.solution.rank_order`); and
* :func:`assign_leaves`, the leaf step of ``placement/hierarchical``: constructions, a local
  improvement and, on small jobs, an exact branch and bound.

A group's leaf spread is Arnold's ``D`` (eq. 3) over the leaves it touches: their number when
at least 2, else 0. Leaves of different minipods are different leaves, so a group's leaf
spread is never below its minipod spread. A minipod without leaves counts as one leaf.
See ``docs/placement.md``, "Hierarchical placement".
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from topoopt.placement.instance import PlacementInstance

if TYPE_CHECKING:
    from topoopt.placement.solution import Placement

EXACT_CELLS = 48
"""Jobs of at most this many nodes get the exact branch and bound after the constructions."""

EXACT_NODES = 100_000
"""Search nodes the branch and bound may visit before it stops (then unproven)."""

IMPROVE_PASSES = 3
"""Passes of the local improvement over the minipods (each tries every construction)."""


def has_leaves(instance: PlacementInstance) -> bool:
    """Whether some minipod of ``instance`` lists its leaves."""
    return any(pod.leaves for pod in instance.minipods)


def leaf_sizes(instance: PlacementInstance, pod: int) -> list[int]:
    """Free nodes of each leaf of minipod ``pod`` (one leaf of all its free nodes without
    leaves)."""
    p = instance.minipods[pod]
    return [len(leaf.nodes) for leaf in p.leaves] if p.leaves else [p.free_nodes]


def _d(k: int) -> int:
    return k if k >= 2 else 0


@dataclass(frozen=True)
class LeafScore:
    """The leaf-level spreads of a placement.

    Attributes
    ----------
    dp_spread, pp_spread
        ``max_c D(leaves of column c)`` and ``max_r D(leaves of row r)``.
    score
        ``alpha * dp_spread + beta * pp_spread`` (Arnold eq. 2 one level down).
    touches
        Leaves touched summed over all groups (columns and rows): the tie-breaker, smaller is
        more compact.
    """

    dp_spread: int
    pp_spread: int
    score: float
    touches: int

    def key(self) -> tuple[float, int]:
        """The order of leaf assignments: score, then touches."""
        return (round(self.score, 12), self.touches)


def score_leaves(instance: PlacementInstance, leaves: Sequence[Sequence[object]]) -> LeafScore:
    """The :class:`LeafScore` of ``leaves[r][c]``, any hashable leaf identity per cell (leaves
    of different minipods must differ)."""
    rows = [len(set(row)) for row in leaves]
    cols = [len(set(col)) for col in zip(*leaves, strict=True)] if leaves else []
    dp, pp = _d(max(cols, default=0)), _d(max(rows, default=0))
    return LeafScore(dp, pp, instance.alpha * dp + instance.beta * pp, sum(rows) + sum(cols))


def fill_leaves(instance: PlacementInstance, placement: Placement) -> list[list[int]]:
    """Local leaf index of every cell under the rank-order fill.

    Inside each minipod the cells take its free nodes in leaf order by increasing node rank
    ``c * rows + r`` (what :func:`~topoopt.placement.solution.rank_order` does without a node
    assignment).
    """
    matrix = placement.matrix
    out = [[0] * instance.cols for _ in range(instance.rows)]
    used: Counter[int] = Counter()
    bounds: dict[int, list[int]] = {}
    for c in range(instance.cols):
        for r in range(instance.rows):
            j = matrix[r][c]
            if j not in bounds:
                bounds[j] = np.cumsum(leaf_sizes(instance, j)).tolist()
            k = used[j]
            used[j] += 1
            out[r][c] = bisect_right(bounds[j], k)
    return out


def node_leaves(instance: PlacementInstance, placement: Placement) -> list[list[int]]:
    """Local leaf index of every cell from the placement's node assignment.

    Raises
    ------
    KeyError
        When a node is not a free node of its cell's minipod (:func:`check` reports it).
    """
    assert placement.nodes is not None
    where: dict[int, dict[str, int]] = {}
    out: list[list[int]] = []
    for r, (row, names) in enumerate(zip(placement.matrix, placement.nodes, strict=True)):
        out.append([])
        for j, name in zip(row, names, strict=True):
            if j not in where:
                pod = instance.minipods[j]
                where[j] = (
                    {n: k for k, leaf in enumerate(pod.leaves) for n in leaf.nodes}
                    if pod.leaves
                    else dict.fromkeys(pod.node_names(), 0)
                )
            out[r].append(where[j][name])
    return out


def cell_leaves(instance: PlacementInstance, placement: Placement) -> list[list[tuple[int, int]]]:
    """``(minipod, leaf)`` of every cell: from the node assignment when the placement has one,
    else from the rank-order fill."""
    local = (
        node_leaves(instance, placement)
        if placement.nodes is not None
        else fill_leaves(instance, placement)
    )
    return [
        list(zip(row, loc, strict=True)) for row, loc in zip(placement.matrix, local, strict=True)
    ]


def leaf_spreads(instance: PlacementInstance, placement: Placement) -> LeafScore:
    """The leaf spreads of ``placement`` (see :func:`cell_leaves` for which leaves).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> from topoopt.placement.solution import Placement
    >>> pod = Minipod.from_leaves("a", [("l0", ["h0", "h1"]), ("l1", ["h2", "h3"])])
    >>> inst = PlacementInstance("x", [pod], dp=2, tp=8, pp=2, alpha=0.2)
    >>> leaf_spreads(inst, Placement(((0, 0), (0, 0))))   # fill: stage 0 on l0, stage 1 on l1
    LeafScore(dp_spread=0, pp_spread=2, score=1.6, touches=6)
    """
    return score_leaves(instance, cell_leaves(instance, placement))


def path_spreads(instance: PlacementInstance, placement: Placement) -> list[tuple[int, int]]:
    """``(dp_spread, pp_spread)`` at each level between the minipods and the leaves, top
    first (empty when the leaves have no :attr:`~topoopt.placement.instance.Leaf.path`).

    At depth ``i`` (1 = just below the minipods) a cell is on the switch ``path[i - 1]`` of
    its leaf (:func:`cell_leaves`: from the node assignment, else the rank-order fill);
    switches of different minipods are different switches and a minipod without leaves
    counts as one switch. The spreads are Arnold's ``D`` over these switches, as
    :func:`leaf_spreads` over the leaves.

    Examples
    --------
    >>> from topoopt.placement.instance import Leaf, Minipod
    >>> from topoopt.placement.solution import Placement
    >>> pod = Minipod.from_leaves("a", [Leaf("l0", ["h0"], ["g0"]), Leaf("l1", ["h1"], ["g0"]),
    ...                                 Leaf("l2", ["h2"], ["g1"]), Leaf("l3", ["h3"], ["g1"])])
    >>> inst = PlacementInstance("x", [pod], dp=2, tp=8, pp=2, alpha=0.2)
    >>> path_spreads(inst, Placement(((0, 0), (0, 0))))   # fill: stage 0 on g0, stage 1 on g1
    [(0, 2)]
    """
    depth = instance.path_depth
    if not depth:
        return []
    cells = cell_leaves(instance, placement)
    out = []
    for i in range(depth):
        switches = [
            [
                (j, instance.minipods[j].leaves[k].path[i] if instance.minipods[j].leaves else "")
                for j, k in row
            ]
            for row in cells
        ]
        found = score_leaves(instance, switches)
        out.append((found.dp_spread, found.pp_spread))
    return out


# --- the leaf step of placement/hierarchical --------------------------------------------------


@dataclass(frozen=True)
class LeafAssignment:
    """What :func:`assign_leaves` found.

    Attributes
    ----------
    nodes
        ``nodes[r][c]``: the name of the node hosting cell ``(r, c)``.
    leaves
        ``leaves[r][c]``: the local leaf index of that node in its minipod.
    score
        Its :class:`LeafScore`.
    fill
        The :class:`LeafScore` of the rank-order fill of the same minipod placement.
    lower_bound
        No leaf assignment of the minipod matrix scores less (:func:`_lower_bound`: the
        fewest leaves each group's cells in each minipod need, summed over its minipods).
    proven
        Whether ``score.score`` is the least leaf score of this minipod placement.
    how
        Which method gave it (``"fill"``, a construction, ``"improved"``, ``"branch and bound"``).
    """

    nodes: tuple[tuple[str, ...], ...]
    leaves: tuple[tuple[int, ...], ...]
    score: LeafScore
    fill: LeafScore
    lower_bound: float
    proven: bool
    how: str


Cell = tuple[int, int]


def _segments(cells: list[Cell], by: int) -> list[list[Cell]]:
    """``cells`` grouped by row (``by=0``) or column (``by=1``), largest group first (ties: by
    index), each in order of the other index."""
    groups: dict[int, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell[by], []).append(cell)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [sorted(g, key=lambda cell: cell[1 - by]) for _, g in ordered]


def _pack(segments: list[list[Cell]], sizes: list[int]) -> dict[Cell, int]:
    """Each segment whole into the leaf with the least room that holds it; a segment no leaf
    holds goes over the leaves with the most room, in order."""
    room = list(sizes)
    out: dict[Cell, int] = {}
    for seg in segments:
        fits = [k for k, left in enumerate(room) if left >= len(seg)]
        if fits:
            k = min(fits, key=lambda k: (room[k], k))
            for cell in seg:
                out[cell] = k
            room[k] -= len(seg)
            continue
        i = 0
        for k in sorted(range(len(room)), key=lambda k: (-room[k], k)):
            take = min(room[k], len(seg) - i)
            for cell in seg[i : i + take]:
                out[cell] = k
            room[k] -= take
            i += take
            if i == len(seg):
                break
    return out


def _sequential(cells: list[Cell], sizes: list[int]) -> dict[Cell, int]:
    """``cells`` in the given order onto the leaves in order (a fill)."""
    out: dict[Cell, int] = {}
    k, left = 0, sizes[0] if sizes else 0
    for cell in cells:
        while left == 0:
            k += 1
            left = sizes[k]
        out[cell] = k
        left -= 1
    return out


def _rotated(segments: list[list[Cell]], shift: int) -> list[list[Cell]]:
    """``segments`` with the first ``shift`` (modulo their number) moved to the end: another
    segment gets first pick of the leaves."""
    shift %= max(1, len(segments))
    return segments[shift:] + segments[:shift]


def _rotated_columns(cells: list[Cell], sizes: list[int], shift: int) -> dict[Cell, int]:
    """The DP segments packed as ``"DP segments"`` does, another column first."""
    return _pack(_rotated(_segments(cells, 1), shift), sizes)


def _deal(segments: list[list[Cell]], sizes: list[int]) -> dict[Cell, int]:
    """The leaves, largest first, dealt to the segments in turn: each leaf goes to the next
    segment with cells left (what it cannot use to the one after), so the segments of a
    minipod end on about as many leaves each, rather than the first on the largest."""
    order = sorted(range(len(sizes)), key=lambda k: (-sizes[k], k))
    left = [list(seg) for seg in segments if seg]
    out: dict[Cell, int] = {}
    turn = 0
    for k in order:
        room = sizes[k]
        while room and left:
            turn %= len(left)
            seg = left[turn]
            take = min(room, len(seg))
            for cell in seg[:take]:
                out[cell] = k
            del seg[:take]
            room -= take
            if seg:
                turn += 1
            else:
                left.pop(turn)
        if not left:
            break
    return out


def _blocks(cells: list[Cell], sizes: list[int], by: int, parts: int) -> dict[Cell, int]:
    """Blocks: the minipod's distinct columns (``by=0``) or rows (``by=1``) cut into ``parts``
    contiguous groups; cells in order of (group, row or column, the other index) filled onto
    the leaves largest first, so each leaf holds a block of a few rows by a few columns."""
    keys = sorted({cell[1 - by] for cell in cells})
    group = {key: i * parts // len(keys) for i, key in enumerate(keys)}
    ordered = sorted(cells, key=lambda x: (group[x[1 - by]], x[by], x[1 - by]))
    order = sorted(range(len(sizes)), key=lambda k: (-sizes[k], k))
    placed = _sequential(ordered, [sizes[k] for k in order])
    return {cell: order[k] for cell, k in placed.items()}


CONSTRUCTIONS: dict[str, Callable[[list[Cell], list[int]], dict[Cell, int]]] = {
    "fill": lambda cells, sizes: _sequential(sorted(cells, key=lambda x: (x[1], x[0])), sizes),
    "row-major fill": lambda cells, sizes: _sequential(sorted(cells), sizes),
    "DP segments": lambda cells, sizes: _pack(_segments(cells, 1), sizes),
    "PP segments": lambda cells, sizes: _pack(_segments(cells, 0), sizes),
    **{f"DP segments/{shift}": partial(_rotated_columns, shift=shift) for shift in (1, 2, 3)},
    "DP dealt": lambda cells, sizes: _deal(_segments(cells, 1), sizes),
    "PP dealt": lambda cells, sizes: _deal(_segments(cells, 0), sizes),
    **{
        f"{kind} blocks/{parts}": partial(_blocks, by=by, parts=parts)
        for kind, by in (("PP", 0), ("DP", 1))
        for parts in (2, 4)
    },
}
"""Leaf assignments of one minipod's cells: the rank-order fill (column by column), the fill
row by row, whole DP-column / PP-row segments packed largest first (best fit, split over
the roomiest leaves when none holds one; the columns also with another column first, so
that across minipods the local search can give each column the largest leaves somewhere),
segments dealt the leaves in turn (:func:`_deal`), and blocks (:func:`_blocks`, the columns
or rows in 2 or 4 groups)."""


class _Totals:
    """Leaves touched per row and per column, summed over minipods, for the local search."""

    def __init__(self, instance: PlacementInstance) -> None:
        self.alpha, self.beta = instance.alpha, instance.beta
        self.rows = np.zeros(instance.rows, dtype=np.int64)
        self.cols = np.zeros(instance.cols, dtype=np.int64)

    @staticmethod
    def counts(assign: dict[Cell, int]) -> tuple[Counter[int], Counter[int]]:
        rows = Counter(r for r, _ in {(r, k) for (r, _), k in assign.items()})
        cols = Counter(c for c, _ in {(c, k) for (_, c), k in assign.items()})
        return rows, cols

    def add(self, counts: tuple[Counter[int], Counter[int]], sign: int) -> None:
        for r, n in counts[0].items():
            self.rows[r] += sign * n
        for c, n in counts[1].items():
            self.cols[c] += sign * n

    def key(self) -> tuple[float, int, int]:
        """The global leaf score, then the groups at the largest spreads (a move that takes
        one group off the maximum is progress towards lowering it), then the leaves touched."""
        most_cols, most_rows = int(self.cols.max()), int(self.rows.max())
        score = self.alpha * _d(most_cols) + self.beta * _d(most_rows)
        crowd = int((self.cols == most_cols).sum()) * (self.alpha > 0) * (most_cols >= 2)
        crowd += int((self.rows == most_rows).sum()) * (self.beta > 0) * (most_rows >= 2)
        return (round(score, 12), crowd, int(self.rows.sum() + self.cols.sum()))


def assign_leaves(
    instance: PlacementInstance,
    placement: Placement,
    out_of_time: Callable[[], bool] = lambda: False,
    *,
    exact_cells: int = EXACT_CELLS,
    exact_nodes: int = EXACT_NODES,
) -> LeafAssignment:
    """Put the cells of each minipod on its leaves, minimising the leaf score.

    The leaf score is ``alpha * D(leaf DP spread) + beta * D(leaf PP spread)``, ties broken by
    the leaves touched over all groups (:class:`LeafScore`). Every minipod starts from the best
    of :data:`CONSTRUCTIONS` used by all minipods alike, then up to :data:`IMPROVE_PASSES`
    passes switch one minipod at a time to another construction when that lowers the global
    score. The rank-order fill is one of the candidates, so the result never scores worse
    than it. A job of at most ``exact_cells`` nodes whose result is above the lower bound
    (:func:`_lower_bound`) then goes to a branch and bound over the leaves of each cell
    (:func:`_branch_and_bound`), which proves the least leaf score unless it visits more than
    ``exact_nodes`` search nodes or ``out_of_time()`` says stop.

    Inside a leaf, cells take its free nodes in leaf order by increasing node rank.

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> from topoopt.placement.solution import Placement
    >>> pod = Minipod.from_leaves("a", [("l0", ["h0", "h1"]), ("l1", ["h2", "h3"])])
    >>> inst = PlacementInstance("x", [pod], dp=2, tp=8, pp=2, alpha=0.2)
    >>> found = assign_leaves(inst, Placement(((0, 0), (0, 0))))   # each pipeline on one leaf
    >>> found.nodes, found.score.score, found.fill.score, found.proven
    ((('h0', 'h1'), ('h2', 'h3')), 0.4, 1.6, True)
    """
    matrix = placement.matrix
    by_pod: dict[int, list[Cell]] = {}
    for r, row in enumerate(matrix):
        for c, j in enumerate(row):
            by_pod.setdefault(j, []).append((r, c))
    sizes = {j: leaf_sizes(instance, j) for j in by_pod}
    lower = _lower_bound(instance, matrix, sizes)

    # every construction for every minipod, with its per-group counts
    options: dict[int, dict[str, dict[Cell, int]]] = {}
    counts: dict[int, dict[str, tuple[Counter[int], Counter[int]]]] = {}
    for j, cells in by_pod.items():
        if len(sizes[j]) == 1:  # one leaf: nothing to choose
            only = dict.fromkeys(cells, 0)
            options[j] = {"fill": only}
        else:
            options[j] = {name: make(cells, sizes[j]) for name, make in CONSTRUCTIONS.items()}
        counts[j] = {name: _Totals.counts(a) for name, a in options[j].items()}

    totals = _Totals(instance)

    def uniform(name: str) -> tuple[float, int, int]:
        t = _Totals(instance)
        for j in by_pod:
            t.add(counts[j][name if name in counts[j] else "fill"], 1)
        return t.key()

    best_name = min(CONSTRUCTIONS, key=uniform)
    chosen = {j: best_name if best_name in options[j] else "fill" for j in by_pod}
    for j in by_pod:
        totals.add(counts[j][chosen[j]], 1)
    current = totals.key()
    how = best_name
    for _ in range(IMPROVE_PASSES):
        improved = False
        for j in by_pod:
            if out_of_time():
                break
            for name in options[j]:
                if name == chosen[j]:
                    continue
                totals.add(counts[j][chosen[j]], -1)
                totals.add(counts[j][name], 1)
                key = totals.key()
                if key < current:
                    current, chosen[j], improved, how = key, name, True, "improved"
                else:
                    totals.add(counts[j][name], -1)
                    totals.add(counts[j][chosen[j]], 1)
        if not improved:
            break

    leaves = [[0] * instance.cols for _ in range(instance.rows)]
    for j in by_pod:
        for (r, c), k in options[j][chosen[j]].items():
            leaves[r][c] = k
    proven = current[0] <= round(lower, 12)
    if not proven and instance.n_nodes <= exact_cells and not out_of_time():
        found, complete = _branch_and_bound(
            instance, matrix, sizes, (current[0], current[2]), out_of_time, exact_nodes
        )
        if found is not None:
            leaves, how = found, "branch and bound"
        proven = complete

    fill = leaf_spreads(instance, type(placement)(matrix))
    return LeafAssignment(
        nodes=_name_nodes(instance, matrix, leaves),
        leaves=tuple(map(tuple, leaves)),
        score=score_leaves(instance, _global(matrix, leaves)),
        fill=fill,
        lower_bound=lower,
        proven=proven,
        how=how,
    )


def _lower_bound(
    instance: PlacementInstance, matrix: Sequence[Sequence[int]], sizes: dict[int, list[int]]
) -> float:
    """No leaf assignment of ``matrix`` scores less: a group with ``s`` cells in minipod ``j``
    touches at least the fewest leaves of ``j`` whose free nodes sum to ``s`` (the largest
    first), and its leaf count is the sum over its minipods."""
    prefix = {j: np.cumsum(sorted(s, reverse=True)).tolist() for j, s in sizes.items()}

    def most(groups: Sequence[Sequence[int]]) -> int:
        worst = 0
        for group in groups:
            need = sum(bisect_right(prefix[j], n - 1) + 1 for j, n in Counter(group).items())
            worst = max(worst, need)
        return worst

    dp = most(list(zip(*matrix, strict=True)))
    pp = most(matrix)
    return instance.alpha * _d(dp) + instance.beta * _d(pp)


def _global(matrix: Sequence[Sequence[int]], leaves: Sequence[Sequence[int]]) -> list[list[Cell]]:
    return [list(zip(row, loc, strict=True)) for row, loc in zip(matrix, leaves, strict=True)]


def _name_nodes(
    instance: PlacementInstance,
    matrix: Sequence[Sequence[int]],
    leaves: Sequence[Sequence[int]],
) -> tuple[tuple[str, ...], ...]:
    """Node names per cell: inside each leaf, its free nodes in order by increasing rank."""
    names: dict[int, list[list[str]]] = {}
    taken: Counter[tuple[int, int]] = Counter()
    out = [[""] * instance.cols for _ in range(instance.rows)]
    for c in range(instance.cols):
        for r in range(instance.rows):
            j, k = matrix[r][c], leaves[r][c]
            if j not in names:
                pod = instance.minipods[j]
                names[j] = (
                    [list(leaf.nodes) for leaf in pod.leaves] if pod.leaves else [pod.node_names()]
                )
            out[r][c] = names[j][k][taken[j, k]]
            taken[j, k] += 1
    return tuple(map(tuple, out))


def _branch_and_bound(
    instance: PlacementInstance,
    matrix: Sequence[Sequence[int]],
    sizes: dict[int, list[int]],
    start_key: tuple[float, int],
    out_of_time: Callable[[], bool],
    max_nodes: int,
) -> tuple[list[list[int]] | None, bool]:
    """Least ``(leaf score, touches)`` over all leaf assignments of ``matrix``'s cells.

    Depth-first over the cells in rank order; each cell tries the leaves of its minipod with
    room left, but among the leaves no cell uses yet with the same free nodes only the first
    (they are interchangeable). Each group's leaf count is bounded below by the sum over its
    minipods of the larger of the leaves it already touches there and the fewest leaves its
    cells there need (:func:`_lower_bound`); a branch is cut when the ``(score, touches)`` of
    these bounds is not below the incumbent's (the bounds only grow, and equal the counts
    once every cell is placed). Returns the best assignment found below ``start_key``
    (``None`` if none) and whether the search finished (then it is optimal).
    """
    alpha, beta = instance.alpha, instance.beta
    rows, cols = instance.rows, instance.cols
    cells = [(r, c) for c in range(cols) for r in range(rows)]
    room = {j: list(s) for j, s in sizes.items()}
    used = {j: [0] * len(s) for j, s in sizes.items()}
    prefix = {j: np.cumsum(sorted(s, reverse=True)).tolist() for j, s in sizes.items()}

    def need(j: int, n: int) -> int:
        return bisect_right(prefix[j], n - 1) + 1

    # per group (rows first, then columns): cells per minipod, the leaves they need at least,
    # the leaves of each minipod touched so far, and the bound (sum of the larger of the two)
    groups = rows + cols
    hits = [Counter[tuple[int, int]]() for _ in range(groups)]
    static = [dict[int, int]() for _ in range(groups)]
    for r in range(rows):
        for j, n in Counter(matrix[r]).items():
            static[r][j] = need(j, n)
    for c in range(cols):
        for j, n in Counter(matrix[r][c] for r in range(rows)).items():
            static[rows + c][j] = need(j, n)
    touched = [Counter[int]() for _ in range(groups)]
    bound = [sum(st.values()) for st in static]
    total = sum(bound)
    assign = [[0] * cols for _ in range(rows)]
    best: list[list[int]] | None = None
    best_key = start_key
    visited = 0
    stopped = False

    def partial() -> tuple[float, int]:
        score = alpha * _d(max(bound[rows:])) + beta * _d(max(bound[:rows]))
        return (round(score, 12), total)

    def touch(g: int, leaf: tuple[int, int], sign: int) -> int:
        """Add (``sign=1``) or remove a cell of group ``g`` on ``leaf``; the bound's change."""
        nonlocal total
        j = leaf[0]
        if sign > 0:
            hits[g][leaf] += 1
            if hits[g][leaf] > 1:
                return 0
            touched[g][j] += 1
            grow = int(touched[g][j] > static[g][j])
        else:
            hits[g][leaf] -= 1
            if hits[g][leaf] > 0:
                return 0
            grow = -int(touched[g][j] > static[g][j])
            touched[g][j] -= 1
        bound[g] += grow
        total += grow
        return grow

    def search(i: int) -> None:
        nonlocal best, best_key, visited, stopped
        if stopped:
            return
        if i == len(cells):
            key = partial()
            if key < best_key:
                best_key, best = key, [list(row) for row in assign]
            return
        visited += 1
        if visited > max_nodes or (visited % 1024 == 0 and out_of_time()):
            stopped = True
            return
        r, c = cells[i]
        j = matrix[r][c]
        seen_empty: set[int] = set()
        for k in range(len(room[j])):
            if room[j][k] == 0:
                continue
            if used[j][k] == 0:
                if room[j][k] in seen_empty:
                    continue
                seen_empty.add(room[j][k])
            leaf = (j, k)
            touch(r, leaf, 1)
            touch(rows + c, leaf, 1)
            room[j][k] -= 1
            used[j][k] += 1
            assign[r][c] = k
            if partial() < best_key:
                search(i + 1)
            used[j][k] -= 1
            room[j][k] += 1
            touch(rows + c, leaf, -1)
            touch(r, leaf, -1)
            if stopped:
                return

    search(0)
    if best is None and not stopped:
        return None, True  # the start is optimal
    return best, not stopped
