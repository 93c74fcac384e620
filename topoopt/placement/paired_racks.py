"""Switches holding whole columns, placed on their children by rack patterns.

The whole-side class of :mod:`topoopt.placement.whole_side`: below a proven split level
``l`` whose pair is ``(1, G)``, every column lies whole in one of ``G`` switches of level
``l`` (``m_k`` columns in switch ``k``, ``sum_k m_k = cols``), and the placement of level
``l + 1`` is wanted with every column on at most ``A`` children and every row on at most
``B`` children over all ``G`` switches (Arnold eq. 2 at level ``l + 1``: the pair ``(A,
B)``). :func:`~topoopt.placement.whole_side.realise` gives every row the same share of
``B`` in each switch; the placements that reach the counting floor often need rows that use
2 children in one switch and 3 in the other beside rows that use 3 and 2 (measured on the
benchmark's 256-node jobs: ``(5, 5)`` exists, no uniform share reaches it). This module finds
such placements with a small integer programme:

* a row's cells in switch ``k`` fall into *blocks*, one per child it touches there; the row's
  blocks form a set partition ``P`` of the switch's columns, and the row touches ``|P|``
  children of ``k``;
* every child is given a *touch set* ``S`` of one or two columns, the only columns with cells
  on it (so it holds blocks ``T`` with ``T ⊆ S``); children of equal free nodes are counted
  together (``z[k, f, S]`` children of ``f`` free nodes with touch set ``S``, ``y[k, f, S,
  T]`` blocks ``T`` on them), which removes their symmetry;
* ``x[k, P]`` rows of partition ``P`` in switch ``k``;
* ``w[t]`` rows of *type* ``t = (t_1, ..., t_G)``: ``t_k`` blocks in switch ``k``, ``sum_k
  t_k <= B``.

The rows::

    sum_S z[k, f, S] <= n[k, f]                                  (children of f free nodes)
    sum_T |T| y[k, f, S, T] <= f z[k, f, S],
    sum_{|T| = 2} y[k, f, S, T] <= floor(f / 2) z[k, f, S]       (each child holds at most f)
    sum_{T ∋ c} y[k, f, S, T] <= min(f, rows) z[k, f, S]          (c in S; one cell per row)
    sum_{f, S ∋ c} z[k, f, S] <= A                                (column c on at most A)
    sum_{f, S} y[k, f, S, T] = sum_{P ∋ T} x[k, P]                (every block placed)
    sum_P x[k, P] = rows
    sum_{t : t_k = p} w[t] = sum_{|P| = p} x[k, P]                (every switch k, count p)

The last rows count the rows with ``p`` blocks in switch ``k`` twice, by type and by
partition. Rows are interchangeable within each switch, so the ``x`` and ``w`` need no row
identity: give each row a type, and in switch ``k`` a partition of ``t_k`` blocks (there are
as many as rows of such types). With two switches this is Hall's condition for pairing the
rows of one switch with those of the other so that every pair has ``|P| + |Q| <= B``.

**Every solution is a placement** (:func:`place`): the ``z[k, f, S]`` children of ``f``
free nodes get the ``y`` blocks dealt, the pairs evenly (at most ``floor(f / 2)`` each, by
the third row) and the single cells into what is left (the second row), so no child holds
more than ``f``; every row gets a type and, per switch, a partition of that many blocks, and
each block of a row takes a child holding such a block (two blocks of a row on one child only
lower its count). A column touches only the children whose touch set holds it (at most
``A``), a row ``sum_k t_k <= B``. Touch sets of more than two columns are left out: then a
child's blocks no longer deal evenly by counts alone. The programme is a construction, not
a bound: a class it finds infeasible may still have placements (with larger touch sets).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from topoopt.placement.exact_mip._milp import ScipRun, SparseMilp, Status

Block = frozenset[int]
Partition = tuple[Block, ...]

MAX_SWITCHES = 4
"""The most switches a class may span here (its row types multiply with each)."""

MAX_ROW_TYPES = 4096
"""The most row types (block counts per switch) of one programme."""

MAX_COLUMNS = 8
"""The most columns a switch may hold here (its partitions into pairs and single columns
number 764 at 8 columns, 9,496 at 10)."""


def pair_partitions(columns: int, most: int) -> list[Partition]:
    """The partitions of ``range(columns)`` into blocks of one or two columns with at most
    ``most`` blocks (a row's blocks when every child touches at most two columns)."""
    out: list[Partition] = []

    def extend(rest: tuple[int, ...], blocks: tuple[Block, ...]) -> None:
        if len(blocks) > most:
            return
        if not rest:
            out.append(blocks)
            return
        first, tail = rest[0], rest[1:]
        extend(tail, (*blocks, frozenset((first,))))
        for i, other in enumerate(tail):
            extend(tail[:i] + tail[i + 1 :], (*blocks, frozenset((first, other))))

    extend(tuple(range(columns)), ())
    return out


@dataclass(frozen=True)
class _Switch:
    """One switch's part of the programme: its classes of children, touch sets and the
    column indices of ``z``, ``y`` and ``x``."""

    classes: list[tuple[int, int]]  # (free nodes, children)
    touch: list[Block]
    partitions: list[Partition]
    z: dict[tuple[int, int], int]  # (class, touch set) -> column
    y: dict[tuple[int, int, Block], int]  # (class, touch set, block) -> column
    x: list[int]  # partition -> column


def _switch(
    milp: SparseMilp, children: Sequence[int], columns: int, rows: int, a: int, most: int
) -> _Switch:
    """Add one switch's columns and rows (module docstring) to ``milp``."""
    classes = sorted(Counter(int(f) for f in children if f > 0).items(), reverse=True)
    touch = [frozenset(s) for size in (1, 2) for s in itertools.combinations(range(columns), size)]
    partitions = pair_partitions(columns, most)
    z: dict[tuple[int, int], int] = {}
    y: dict[tuple[int, int, Block], int] = {}
    for i, (free, count) in enumerate(classes):
        for s, touched in enumerate(touch):
            z[i, s] = milp.var(0, count, integer=True)
            blocks = [frozenset((c,)) for c in sorted(touched)]
            if len(touched) == 2:
                blocks.append(touched)
            for block in blocks:
                y[i, s, block] = milp.var(0, math.inf, integer=True)
            milp.row({y[i, s, t]: len(t) for t in blocks} | {z[i, s]: -free}, upper=0)
            if len(touched) == 2:
                milp.row({y[i, s, touched]: 1, z[i, s]: -(free // 2)}, upper=0)
            for c in touched:
                held = {y[i, s, t]: 1 for t in blocks if c in t}
                milp.row(held | {z[i, s]: -min(free, rows)}, upper=0)
        milp.row({z[i, s]: 1 for s in range(len(touch))}, upper=count)
    for c in range(columns):
        on = {z[i, s]: 1 for (i, s) in z if c in touch[s]}
        milp.row(on, upper=a)
    x = [milp.var(0, rows, integer=True) for _ in partitions]
    milp.row(dict.fromkeys(x, 1), rows, rows)
    for block in {t for part in partitions for t in part}:
        placed = {col: 1 for (i, s, t), col in y.items() if t == block}
        used = {x[p]: -1 for p, part in enumerate(partitions) if block in part}
        milp.row(placed | used, 0, 0)
    return _Switch(classes, touch, partitions, z, y, x)


class Paired:
    """The programme of one class (module docstring), solved by SCIP in runs that resume
    each other (:class:`~topoopt.placement.exact_mip._milp.ScipRun`).

    Parameters
    ----------
    children, columns, rows, a, b
        As :func:`place`.
    """

    def __init__(
        self,
        children: Sequence[Sequence[int]],
        columns: Sequence[int],
        rows: int,
        a: int,
        b: int,
    ) -> None:
        self.children = [list(kids) for kids in children]
        self.columns, self.rows = list(columns), rows
        self.status: Status = "unknown"  # out of reach until built
        self.grid: np.ndarray | None = None  # the placement, once found
        self._run: ScipRun | None = None
        switches = len(children)
        if not 2 <= switches == len(columns) <= MAX_SWITCHES:
            return
        if not 1 <= min(columns) <= max(columns) <= MAX_COLUMNS:
            return
        least = [(m + 1) // 2 for m in columns]  # a row's fewest blocks: pairs only
        if sum(least) > b:
            self.status = "infeasible"
            return
        most = [min(m, b - sum(least) + low) for m, low in zip(columns, least, strict=True)]
        ranges = [range(low, high + 1) for low, high in zip(least, most, strict=True)]
        types = [counts for counts in itertools.product(*ranges) if sum(counts) <= b]
        if len(types) > MAX_ROW_TYPES:
            return
        milp = SparseMilp()
        parts = [_switch(milp, children[k], columns[k], rows, a, most[k]) for k in range(switches)]
        w = [milp.var(0, rows, integer=True) for _ in types]
        for k, part in enumerate(parts):  # the rows' block counts in switch k, counted two ways
            for count in ranges[k]:
                typed = {w[i]: 1 for i, counts in enumerate(types) if counts[k] == count}
                sized = {
                    part.x[p]: -1
                    for p, blocks in enumerate(part.partitions)
                    if len(blocks) == count
                }
                milp.row(typed | sized, 0, 0)
        self.parts, self.types, self.w = parts, types, w
        self._run = ScipRun(milp)

    @property
    def open(self) -> bool:
        """Whether more time may still decide it."""
        return self._run is not None and self.status == "unknown"

    @property
    def spent(self) -> float:
        """SCIP's solving time so far, over every run."""
        return 0.0 if self._run is None else float(self._run.scip.getSolvingTime())

    def run(self, seconds: float = math.inf) -> tuple[Status, np.ndarray | None]:
        """Solve, or resume, for at most ``seconds`` more; the status and the placement
        (:func:`place`; a copy of the one found by an earlier run once decided)."""
        if not self.open:
            return self.status, None if self.grid is None else self.grid.copy()
        assert self._run is not None
        self.status, values = self._run.run(seconds)
        if self.status != "feasible":
            return self.status, None
        counts = [round(v) for v in values]
        row_types = [
            t for t, col in zip(self.types, self.w, strict=True) for _ in range(counts[col])
        ]
        self.grid = _deal(self.parts, counts, row_types, self.children, self.columns, self.rows)
        return self.status, self.grid.copy()


def place(
    children: Sequence[Sequence[int]],
    columns: Sequence[int],
    rows: int,
    a: int,
    b: int,
    time_limit: float = math.inf,
) -> tuple[Status, np.ndarray | None]:
    """A placement of ``rows x sum(columns)`` cells, ``columns[k]`` consecutive columns whole
    on the children of switch ``k`` (free nodes ``children[k]``), with every column on at
    most ``a`` children and every row on at most ``b`` over all switches (module
    docstring). Solved by SCIP: on the benchmark's 32 x 8 classes it decided each pair
    ``(5, 5)`` in 0.4-0.9 s, HiGHS in 0.2-4 s with two undecided after 10 s.

    Returns
    -------
    tuple
        ``("feasible", grid)`` with ``grid`` of shape ``(rows, sum(columns), 2)``: per cell
        its switch (an index of ``children``) and the index of its child in
        ``children[switch]``; ``("infeasible", None)`` when no placement of the class (touch
        sets of at most two columns) exists; ``("unknown", None)`` when undecided within
        ``time_limit`` seconds or out of reach (fewer than two switches or more than
        ``MAX_SWITCHES``, an empty one, more than ``MAX_COLUMNS`` columns in one, more than
        ``MAX_ROW_TYPES`` row types).

    Examples
    --------
    >>> status, grid = place([[4, 4], [4, 2, 2]], (2, 2), 4, 2, 3)
    >>> status, grid.shape, int(grid[..., 1].max())
    ('feasible', (4, 4, 2), 2)
    """
    return Paired(children, columns, rows, a, b).run(time_limit)


def _deal(
    parts: Sequence[_Switch],
    counts: Sequence[int],
    row_types: Sequence[tuple[int, ...]],
    children: Sequence[Sequence[int]],
    columns: Sequence[int],
    rows: int,
) -> np.ndarray:
    """The placement of a solution's counts (module docstring: every solution is one); row
    ``r`` has ``row_types[r][k]`` blocks in switch ``k``."""
    grid = np.zeros((rows, sum(columns), 2), dtype=np.int64)
    offsets = np.cumsum([0, *columns[:-1]])
    for k, part in enumerate(parts):
        by_free: dict[int, list[int]] = {}
        for j, free in enumerate(children[k]):
            by_free.setdefault(int(free), []).append(j)
        stock: dict[Block, list[list[int]]] = {}  # block -> [child, blocks left]
        for i, (free, _) in enumerate(part.classes):
            pool = by_free[free]
            for s, touched in enumerate(part.touch):
                n = counts[part.z[i, s]]
                kids, pool = pool[:n], pool[n:]
                blocks = {
                    t: counts[col] for (ii, ss, t), col in part.y.items() if (ii, ss) == (i, s)
                }
                pairs = blocks.get(touched, 0) if len(touched) == 2 else 0
                room = [free] * n
                for r, kid in enumerate(kids):
                    share = pairs // n + (r < pairs % n)
                    room[r] -= 2 * share
                    if share:
                        stock.setdefault(touched, []).append([kid, share])
                for single in sorted(t for t in blocks if len(t) == 1):
                    left = blocks[single]
                    for r, kid in enumerate(kids):
                        take = min(left, room[r])
                        if take:
                            room[r] -= take
                            left -= take
                            stock.setdefault(single, []).append([kid, take])
            by_free[free] = pool
        by_size: dict[int, list[Partition]] = {}
        for partition, col in zip(part.partitions, part.x, strict=True):
            by_size.setdefault(len(partition), []).extend([partition] * counts[col])
        for r, row_type in enumerate(row_types):
            partition = by_size[row_type[k]].pop()
            for block in partition:
                entry = stock[block][-1]
                entry[1] -= 1
                if entry[1] == 0:
                    stock[block].pop()
                for c in block:
                    grid[r, offsets[k] + c] = (k, entry[0])
    return grid
