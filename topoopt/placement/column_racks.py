"""The racks of a placement's groups chosen for every group at once (``placement/levels``).

The walk of ``placement/levels`` puts each switch's cells on its children one switch at a
time (:func:`~topoopt.placement.levels.assign_leaves`), but a column's leaf-level spread is
the sum over the *groups* (the switches one level above the leaves) it lies in of the racks
(leaves) it takes there: no group sees what the others give the same column. This module
takes a placement's groups as they are and chooses their racks again, for all of them at
once (``docs/levels.md``, "Racks for the columns"):

* a group is *whole* when it holds every cell of its columns ``C_g`` in each of its rows
  (``|rows| x |C_g|`` cells);
* whole groups with the same parent switch and the same columns form a *class*: its rows can
  move between its groups (each row keeps all its ``C`` cells in one group of the class), and
  two classes under one parent can exchange groups, without raising any spread above the
  leaves (the cells of a class in a row stay in one group, its columns in as many groups,
  under the same switches);
* a whole group of one or two columns has options ``o`` (racks per column), each with the
  largest number of rows ``m_o`` it serves (:func:`rack_options`); the other groups (more
  columns, or not whole: their cells stay in them) are modelled rack by rack, with ``q[k,
  c]`` cells and a binary ``u[k, c]`` per rack and column, up to :data:`MAX_RACK_COLUMNS`
  pairs and :data:`MAX_MODELLED_COLUMNS` columns a group (beyond, they keep their racks:
  ``fixed_c``). The choice of every group's rows and
  racks is then a small integer programme (:func:`choose`)::

      minimise A
      sum_o z[g, o] = 1,   r_g <= sum_o m_o z[g, o]            (groups with options)
      sum_k q[k, c] = r_g (whole) or n_gc (not),  q[k, c] <= f_k u[k, c],
      sum_c q[k, c] <= f_k                                      (groups rack by rack)
      sum_{g in K} r_g = R_K                                    (every class K)
      fixed_c + sum_{g, o} x_c(o) z[g, o] + sum_{g, k} u[k, c] <= A     (every column c)
      A <= (the most racks a column of the placement takes) - 1

* the groups' exchanges between classes of one or two columns are searched first
  (:func:`regroup`) on the programme's relaxation to the least total number of racks per
  class.

It is a construction (the bounds of ``placement/levels`` are unchanged), and only rack counts
are chosen: the rows' leaf-level spreads follow; :func:`rechoose` returns the leaves only when
every level's score is at least as good and the objective better.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from topoopt.core.convolution import min_plus
from topoopt.placement.exact_mip._milp import SparseMilp
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.tree import Tree, scores_of_leaves

MAX_RACKS = 64
"""The most racks (leaves with free nodes) a modelled group may have (the options of one or
two columns are built from subset sums over them)."""

MAX_RACK_COLUMNS = 512
"""The most (rack, column) pairs of the groups modelled rack by rack, over all of them (each
is a binary of the programme); the groups beyond keep their racks."""

MAX_MODELLED_COLUMNS = 3
"""The most columns of a group modelled rack by rack: the model of a group is symmetric in
its racks of equal free nodes, and with more columns HiGHS could not show within 14 s that
no choice lowers the most racks of a column (a 16 x 16 job's groups of 8 columns: measured
on the 256-node benchmark job, seed 1); the groups beyond keep their racks."""

Option = tuple[int, ...]
"""Racks per column of a group (its columns in increasing order)."""


@functools.lru_cache(maxsize=4096)
def _options(free: tuple[int, ...], columns: int) -> dict[Option, int]:
    """:func:`rack_options`, kept per process (groups of equal racks recur, in the trimmed
    walks' placements above all); callers must not change the dictionary."""
    return rack_options(free, columns)


def rack_options(free: Sequence[int], columns: int) -> dict[Option, int]:
    """For a group whose racks have ``free`` nodes, the options of ``columns`` (1 or 2)
    columns with equal cell counts: racks per column, each with the most rows it serves.

    One column of ``r`` cells takes the fewest racks that hold ``r``, the largest first. Two
    columns of ``r`` cells each take the racks of ``A``, those of ``B``, and at most one rack
    shared by both (two shared racks can always become one shared and one not); their
    racks counts are ``(|A|, |B|)``, or ``(|A| + 1, |B| + 1)`` with a shared rack. A set of
    racks that serves ``r`` still does when a rack is replaced by a larger one, so the
    ``k`` racks of an option are the ``k`` largest, split by subset sums: ``(j, k - j)``
    serves ``r`` when ``j`` of them sum to ``s`` with ``r <= s`` and ``r <= t_k - s``
    (``t_k`` their total), or, with a shared rack ``t``, ``r <= s + t``, ``r <= t_k - s``
    and ``2 r <= t_k``. Options another beats in every column and in rows are dropped.

    Examples
    --------
    >>> rack_options([4, 3, 1], 1)
    {(0,): 0, (1,): 4, (2,): 7, (3,): 8}
    >>> sorted(rack_options([4, 4, 2], 2).items())
    [((0, 0), 0), ((1, 1), 4), ((2, 2), 5)]
    """
    sizes = sorted((int(f) for f in free if f > 0), reverse=True)
    most: dict[Option, int] = {(0,) * columns: 0}
    if columns == 1:
        for k, total in enumerate(itertools.accumulate(sizes), start=1):
            most[(k,)] = total
        return most
    for k in range(1, len(sizes) + 1):
        top = sizes[:k]
        total = sum(top)
        for j, best in enumerate(_balanced(top)):
            if best >= 0:
                most[(j, k - j)] = max(most.get((j, k - j), 0), best)
        for shared in sorted(set(top)):
            rest = list(top)
            rest.remove(shared)
            for j, best in enumerate(_balanced(rest)):
                if best >= 0:
                    served = min(best + shared, total // 2)
                    key = (j + 1, k - j)
                    most[key] = max(most.get(key, 0), served)
    return _pareto(most)


def _pareto(most: dict[Option, int]) -> dict[Option, int]:
    """The options of ``most`` (two columns) that no other beats: none with at most as many
    racks in both columns serves as many rows (a running maximum over the grid of rack
    counts)."""
    size = 1 + max(max(option) for option in most)
    grid = np.full((size + 1, size + 1), -1)
    for (a, b), rows in most.items():
        grid[a + 1, b + 1] = rows
    below = np.maximum.accumulate(np.maximum.accumulate(grid, axis=0), axis=1)
    return {
        (a, b): rows
        for (a, b), rows in most.items()
        if max(below[a, b + 1], below[a + 1, b]) < rows
    }


def _balanced(sizes: Sequence[int]) -> list[int]:
    """``out[j]``: the largest ``min(s, total - s)`` over the sums ``s`` of ``j`` of
    ``sizes`` (``-1`` for none), by subset sums per count."""
    total = sum(sizes)
    reach = np.zeros((len(sizes) + 1, total + 1), dtype=bool)
    reach[0, 0] = True
    for size in sizes:
        reach[1:, size:] |= reach[:-1, : total + 1 - size].copy()
    balance = np.minimum(np.arange(total + 1), total - np.arange(total + 1))
    return [int(balance[row].max()) if row.any() else -1 for row in reach]


Key = tuple[int, tuple[int, ...]]
"""A class: the parent switch of its groups (``-1`` at the top level) and their columns."""


@dataclass
class Groups:
    """A placement's groups (the switches one level above the leaves), as this module
    sees them.

    Attributes
    ----------
    classes
        ``(parent, columns) -> [group, ...]``: the whole groups by class (options for one
        or two columns, rack by rack for more).
    rows
        ``group -> rows`` (sorted) of every whole group.
    partial
        ``group -> {column: rows}`` of the groups that are not whole but are modelled rack
        by rack with their cells as they are.
    racks
        ``group -> leaves`` of every group above (its leaves with free nodes).
    fixed
        ``column -> racks`` it takes in the groups left as they are (too large to model).
    now
        ``column -> racks`` it takes now in the groups modelled rack by rack (for the
        relaxation of :func:`regroup`).
    """

    classes: dict[Key, list[int]] = field(default_factory=dict)
    rows: dict[int, list[int]] = field(default_factory=dict)
    partial: dict[int, dict[int, list[int]]] = field(default_factory=dict)
    racks: dict[int, list[int]] = field(default_factory=dict)
    fixed: dict[int, int] = field(default_factory=dict)
    now: dict[int, int] = field(default_factory=dict)

    @classmethod
    def of(cls, tree: Tree, leaves: np.ndarray) -> Groups:
        """The groups of the placement with cells on ``leaves`` (``rows x cols`` leaf
        indices)."""
        level = tree.n_levels - 2
        group_of = tree.switch[level][leaves]
        out = cls()
        classes: dict[Key, list[int]] = defaultdict(list)
        fixed: dict[int, int] = defaultdict(int)
        now: dict[int, int] = defaultdict(int)
        under = tree.leaves_under(level)
        cells = 0
        for g in np.unique(group_of).tolist():
            rows, cols = np.nonzero(group_of == g)
            row_set, col_set = sorted(set(rows.tolist())), sorted(set(cols.tolist()))
            racks = [k for k in under[g] if tree.leaf_free[k] > 0]
            whole = len(rows) == len(row_set) * len(col_set)
            small = len(racks) <= MAX_RACKS and len(col_set) <= MAX_MODELLED_COLUMNS
            modelled = len(col_set) > 2 or not whole
            taken = {c: len(set(leaves[rows[cols == c], c].tolist())) for c in col_set}
            if small and modelled and cells + len(racks) * len(col_set) <= MAX_RACK_COLUMNS:
                cells += len(racks) * len(col_set)
                for c in col_set:
                    now[c] += taken[c]
            elif not small or modelled:
                for c in col_set:
                    fixed[c] += taken[c]
                continue
            out.racks[g] = racks
            if whole:
                parent = int(tree.parent[level][g]) if level > 0 else -1
                classes[(parent, tuple(col_set))].append(g)
                out.rows[g] = row_set
            else:
                out.partial[g] = {c: sorted(rows[cols == c].tolist()) for c in col_set}
        out.classes, out.fixed, out.now = dict(classes), dict(fixed), dict(now)
        return out

    def class_rows(self, key: Key) -> int:
        """``R_K``: the rows of class ``key``."""
        return sum(len(self.rows[g]) for g in self.classes[key])


Choice = tuple[int, Option | dict[int, dict[int, int]]]
"""A group's rows and its option (one or two columns) or its cells per column and rack
(positions in its racks; the groups modelled rack by rack)."""


def choose(
    groups: Groups,
    classes: dict[Key, list[int]],
    options: dict[int, dict[Option, int]],
    free: np.ndarray,
    below: int,
    seconds: float,
) -> tuple[int, dict[int, Choice]] | None:
    """The rows and racks of every modelled group that minimise the most racks of a column,
    among those where it is below ``below`` (the programme of the module docstring, with the
    groups of more columns or not whole rack by rack; HiGHS, at most ``seconds``): that
    number and ``group -> choice``, or ``None`` when there is none or none was found in
    time. (Without ``below`` the search runs its whole time where the placement's columns
    already take the fewest racks: measured 2 s of 2 s on the 1,024-node jobs of the
    benchmark.)"""
    milp = SparseMilp()
    most = milp.var(0, below - 1, integer=True, cost=1.0)
    on_column: dict[int, dict[int, float]] = defaultdict(dict)
    picks: dict[int, tuple[int, list[tuple[int, Option]]]] = {}
    cells: dict[int, tuple[int, dict[int, dict[int, int]]]] = {}

    def rack_by_rack(g: int, need: dict[int, int | None], rows: int) -> None:
        """``q[k, c]`` cells of column ``c`` on rack ``k``, ``u[k, c]`` whether it is used;
        a column takes ``need[c]`` cells (``None``: the group's rows ``rows``)."""
        sizes = [int(free[k]) for k in groups.racks[g]]
        q: dict[int, dict[int, int]] = {c: {} for c in need}
        for k, size in enumerate(sizes):
            for c in need:
                q[c][k] = milp.var(0, size, integer=True)
                used = milp.var(0, 1, integer=True)
                milp.row({q[c][k]: 1, used: -size}, upper=0)
                on_column[c][used] = 1
            milp.row({q[c][k]: 1 for c in need}, upper=size)
        for c, n in need.items():
            if n is None:
                milp.row({**{v: 1 for v in q[c].values()}, rows: -1}, 0, 0)
            else:
                milp.row({v: 1 for v in q[c].values()}, n, n)
        cells[g] = (rows, q)

    for key, members in classes.items():
        columns, total = key[1], groups.class_rows(key)
        rows_of: dict[int, float] = {}
        for g in members:
            rows = milp.var(0, total, integer=True)
            rows_of[rows] = 1
            if len(columns) > 2:
                rack_by_rack(g, dict.fromkeys(columns), rows)
                continue
            chosen = []
            served: dict[int, float] = {rows: 1}
            for option, m in options[g].items():
                z = milp.var(0, 1, integer=True)
                chosen.append((z, option))
                served[z] = -m
                for c, racks in zip(columns, option, strict=True):
                    if racks:
                        on_column[c][z] = racks
            milp.row(dict.fromkeys((z for z, _ in chosen), 1), 1, 1)
            milp.row(served, upper=0)
            picks[g] = (rows, chosen)
        milp.row(rows_of, total, total)
    for g, by_column in groups.partial.items():
        rows = milp.var(0, 0, integer=True)
        rack_by_rack(g, {c: len(r) for c, r in by_column.items()}, rows)
    for c, terms in on_column.items():
        milp.row(terms | {most: -1}, upper=-groups.fixed.get(c, 0))
    status, x = milp.solve(seconds)
    if status != "feasible":
        return None
    out: dict[int, Choice] = {}
    for g, (rows, chosen) in picks.items():
        option = next(o for z, o in chosen if x[z] > 0.5)
        out[g] = (round(x[rows]), option)
    for g, (rows, q) in cells.items():
        placed = {c: {k: round(x[v]) for k, v in on.items() if round(x[v])} for c, on in q.items()}
        out[g] = (round(x[rows]), placed)
    return round(x[most]), out


def regroup(
    groups: Groups,
    options: dict[int, dict[Option, int]],
    out_of_time: Callable[[], bool],
) -> dict[Key, list[int]]:
    """The classes after exchanges of groups between classes of one parent and as many
    columns (whose groups' options are the same) that lower the relaxation, first
    improvement, until none does or the time is out. The relaxation: per class the least
    total racks of its rows (a min-plus convolution of its groups' least totals), a
    column's share ``fixed_c + sum_{K ∋ c} total_K / |C_K|``; the shares sorted from the
    largest are compared lexicographically (the most first, then the next: an exchange that
    helps a column below the most is kept too)."""
    rows_of = {key: groups.class_rows(key) for key in groups.classes}
    least = {g: _least_totals(opts) for g, opts in options.items()}

    def total(key: Key, members: list[int]) -> float:
        best = np.full(rows_of[key] + 1, math.inf)
        best[0] = 0.0
        for g in members:
            best = min_plus(best, least[g])
        return float(best[-1])

    def value(totals: dict[Key, float]) -> tuple[float, ...]:
        share: dict[int, float] = defaultdict(float, groups.fixed)
        for c, racks in groups.now.items():
            share[c] += racks
        for (_, columns), t in totals.items():
            for c in columns:
                share[c] += t / len(columns)
        return tuple(round(v, 9) for v in sorted(share.values(), reverse=True))

    classes = {key: list(members) for key, members in groups.classes.items()}
    totals = {key: total(key, members) for key, members in classes.items() if len(key[1]) <= 2}
    current = value(totals)
    improved = True
    while improved and not out_of_time():
        improved = False
        for k1, k2 in itertools.combinations(classes, 2):
            if k1[0] != k2[0] or len(k1[1]) != len(k2[1]) or len(k1[1]) > 2:
                continue
            for i, j in itertools.product(range(len(classes[k1])), range(len(classes[k2]))):
                if out_of_time():
                    return classes
                one, two = list(classes[k1]), list(classes[k2])
                one[i], two[j] = two[j], one[i]
                trial = dict(totals)
                trial[k1], trial[k2] = total(k1, one), total(k2, two)
                if value(trial) < current:
                    classes[k1], classes[k2] = one, two
                    totals, current, improved = trial, value(trial), True
    return classes


def _least_totals(options: dict[Option, int]) -> np.ndarray:
    """``out[r]``: the fewest racks in all of a group's options that serve ``r`` rows."""
    most = max(options.values())
    out = np.full(most + 1, math.inf)
    for option, m in options.items():
        out[: m + 1] = np.minimum(out[: m + 1], sum(option))
    return out


def _split(free: Sequence[int], rows: int, option: Option) -> list[list[int]]:
    """The racks (positions in ``free``) of each column for ``option`` serving ``rows``
    rows: ``[A]`` for one column, ``[A, B, shared]`` for two (``shared`` holds at most one
    rack), from the largest racks as in :func:`rack_options`."""
    order = sorted(range(len(free)), key=lambda i: (-free[i], i))
    if len(option) == 1:
        return [order[: option[0]]]
    xa, xb = option
    for shared in (False, True):
        top = order[: xa + xb - shared]
        if len(top) < xa + xb - shared:
            continue
        candidates: list[int | None] = list(top) if shared else [None]
        for t in candidates:
            pool = [i for i in top if i != t]
            chosen = _subset(pool, free, xa - shared, rows, t)
            if chosen is not None:
                rest = [i for i in pool if i not in chosen]
                return [chosen, rest, [] if t is None else [t]]
    raise AssertionError(f"option {option} does not serve {rows} rows")


def _subset(
    pool: list[int], free: Sequence[int], count: int, rows: int, shared: int | None
) -> list[int] | None:
    """``count`` racks of ``pool`` (positions in ``free``) whose sum ``s`` serves ``rows``
    rows of two columns: ``rows <= s + t`` and ``rows <= rest + t`` (``rest`` the other
    racks of the pool, ``t`` the ``shared`` rack's free nodes, 0 without one) and ``2 rows
    <= s + rest + t``; ``None`` if none."""
    total = sum(free[i] for i in pool)
    extra = 0 if shared is None else int(free[shared])
    if count < 0 or count > len(pool) or 2 * rows > total + extra:
        return None
    # reach[i, j, s]: j of the first i racks of the pool sum to s
    reach = np.zeros((len(pool) + 1, count + 1, total + 1), dtype=bool)
    reach[0, 0, 0] = True
    for i, rack in enumerate(pool, start=1):
        size = int(free[rack])
        reach[i] = reach[i - 1]
        reach[i, 1:, size:] |= reach[i - 1, :-1, : total + 1 - size]
    sums = np.arange(total + 1)
    fits = reach[len(pool), count] & (sums + extra >= rows) & (total - sums + extra >= rows)
    if not fits.any():
        return None
    s, j, chosen = int(np.flatnonzero(fits)[0]), count, []
    for i in range(len(pool), 0, -1):  # back through the table
        if not reach[i - 1, j, s]:
            chosen.append(pool[i - 1])
            j, s = j - 1, s - int(free[pool[i - 1]])
    return chosen


def deal(
    leaves: np.ndarray,
    groups: Groups,
    classes: dict[Key, list[int]],
    plan: dict[int, Choice],
    free: np.ndarray,
) -> np.ndarray:
    """The leaves with every modelled group's rows and racks as ``plan`` says
    (``classes``: the groups of each class, exchanged or not). Per class, a row stays in its
    group while the group is still in the class and short of its rows; the others fill the
    groups still short, in turn. Per group of one or two columns, the first column fills its
    racks ``A`` in turn and then the shared rack, the second its racks ``B`` and what the
    shared rack has left; in a group modelled rack by rack each column takes its racks'
    cells as planned, its rows in order."""
    out = leaves.copy()
    for key, members in classes.items():
        quota = {g: plan[g][0] for g in members}
        placed: dict[int, list[int]] = {g: [] for g in members}
        moving: list[int] = []
        for g in groups.classes[key]:  # the class's rows, from its groups before exchanges
            for r in groups.rows[g]:
                if g in quota and len(placed[g]) < quota[g]:
                    placed[g].append(r)
                else:
                    moving.append(r)
        for g in members:
            while len(placed[g]) < quota[g]:
                placed[g].append(moving.pop())
        assert not moving, "the plan's rows must add up to the class's"
        for g in members:
            _place(out, groups.racks[g], free, plan[g], dict.fromkeys(key[1], sorted(placed[g])))
    for g, by_column in groups.partial.items():
        _place(out, groups.racks[g], free, plan[g], by_column)
    return out


def _place(
    out: np.ndarray,
    racks: list[int],
    free: np.ndarray,
    choice: Choice,
    rows_of: dict[int, list[int]],
) -> None:
    """Column ``c``'s cells in rows ``rows_of[c]`` on ``racks`` as ``choice`` says, into
    ``out``."""
    room = [int(free[k]) for k in racks]
    rows, how = choice
    if isinstance(how, dict):  # cells per column and rack
        slots = {c: [k for k, n in sorted(on.items()) for _ in range(n)] for c, on in how.items()}
    else:
        parts = _split(room, rows, how)
        shared = parts[2] if len(parts) == 3 else []
        slots = {}
        for c, own in zip(rows_of, parts, strict=False):
            slots[c] = []
            for i in [*own, *shared]:
                take = min(room[i], rows - len(slots[c]))
                slots[c].extend([i] * take)
                room[i] -= take
    for c, column_rows in rows_of.items():
        for r, i in zip(column_rows, slots[c], strict=False):
            out[r, c] = racks[i]


def rechoose(
    instance: PlacementInstance,
    tree: Tree,
    leaves: np.ndarray,
    key: Callable[[Sequence[float]], tuple[float, ...]],
    seconds: float = math.inf,
) -> np.ndarray | None:
    """``leaves`` (``rows x cols`` leaf indices) with the racks of their groups chosen
    again (module docstring), or ``None`` unless that lowers ``key`` (the objective's order
    of level scores) with every level above the leaves at most as before. Both the groups as
    they are and as :func:`regroup` exchanges them are solved, within ``seconds`` in all; the
    better placement is kept."""
    if tree.n_levels < 2:
        return None
    started = time.perf_counter()

    def out_of_time() -> bool:
        return time.perf_counter() - started >= seconds

    groups = Groups.of(tree, leaves)
    if not groups.classes and not groups.partial:
        return None
    options = {
        g: _options(tuple(sorted(int(tree.leaf_free[k]) for k in groups.racks[g])), len(c[1]))
        for c, members in groups.classes.items()
        if len(c[1]) <= 2
        for g in members
    }
    free = tree.leaf_free
    before = scores_of_leaves(instance, tree, leaves)
    widest = max(len(set(leaves[:, c].tolist())) for c in range(leaves.shape[1]))

    def solved(classes: dict[Key, list[int]]) -> tuple[tuple[float, ...], np.ndarray] | None:
        """The placement of the programme over ``classes`` and its key, when it keeps every
        level above the leaves at most as before; ``None`` otherwise or out of time."""
        left = seconds - (time.perf_counter() - started)
        found = None if left <= 0 else choose(groups, classes, options, free, widest, left)
        if found is None:
            return None
        grid = deal(leaves, groups, classes, found[1], free)
        scores = scores_of_leaves(instance, tree, grid)
        if any(
            round(a.score, 9) > round(b.score, 9)
            for a, b in zip(scores[:-1], before[:-1], strict=True)
        ):
            return None
        return key([s.score for s in scores]), grid

    found = [solved(groups.classes)]
    if not out_of_time():
        exchanged = regroup(groups, options, out_of_time)
        if exchanged != groups.classes:
            found.append(solved(exchanged))
    kept = [entry for entry in found if entry is not None]
    best = min(kept, key=lambda entry: entry[0], default=None)
    if best is None or best[0] >= key([s.score for s in before]):
        return None
    return best[1]
