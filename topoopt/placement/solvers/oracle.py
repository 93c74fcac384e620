"""The enumeration oracle of the placement family: the exact optimum by exhaustive search.

:func:`enumerate_naive` tries every map of cells to minipods (``M ** (rows * cols)``) and is
the obviously correct reference for tests. :class:`EnumerateSolver` explores the same space
depth-first in row-major order, skipping only placements that are provably no better than
one it visits:

* **row symmetry** — rows are interchangeable, so rows are kept in lexicographic order;
* **column symmetry** — columns are interchangeable, so columns are kept in lexicographic
  order (top to bottom);
* **minipod symmetry** — minipods with equal free nodes are interchangeable, so within such a
  class a minipod is used for the first time only after the previous one of its class.

All three are lex-leader constraints of one variable order (row-major), so together they
keep the lexicographically smallest member of every symmetry class ("double-lex" plus value
symmetry). Finally a branch is cut when its partial spreads already score no better than the
incumbent (spreads only grow as cells are added, and ``D`` is non-decreasing).
"""

from __future__ import annotations

import itertools

import numpy as np

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement, check, evaluate

_CHECK_EVERY = 4096


def enumerate_naive(instance: PlacementInstance) -> tuple[float, Placement]:
    """Optimum by brute force over all ``M ** (rows * cols)`` maps (tiny instances only).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("t", (Minipod("a", 3), Minipod("b", 3)), dp=3, tp=8, pp=2,
    ...                          alpha=0.5)
    >>> enumerate_naive(inst)[0]
    1.0
    """
    rows, cols, n_pods = instance.rows, instance.cols, instance.n_minipods
    best: tuple[float, Placement] | None = None
    for flat in itertools.product(range(n_pods), repeat=rows * cols):
        placement = Placement.from_rows(np.reshape(flat, (rows, cols)))
        if check(instance, placement):
            continue
        score = evaluate(instance, placement)
        if best is None or score < best[0]:
            best = (score, placement)
    assert best is not None, "instances are validated to have enough free nodes"
    return best


def _d(k: int) -> int:
    return k if k >= 2 else 0


def _greedy(instance: PlacementInstance) -> Placement:
    """Fill cells in row-major order into the first minipod with room (an upper bound)."""
    free = list(instance.capacities)
    cells = []
    for _ in range(instance.n_nodes):
        j = next(j for j, f in enumerate(free) if f > 0)
        free[j] -= 1
        cells.append(j)
    return Placement.from_rows(np.reshape(cells, (instance.rows, instance.cols)))


class _Search:
    """Depth-first branch and bound over canonical placements (see the module docstring)."""

    def __init__(self, instance: PlacementInstance, ctx: SolveContext) -> None:
        self.inst = instance
        self.ctx = ctx
        rows, cols, n_pods = instance.rows, instance.cols, instance.n_minipods
        self.rows, self.cols, self.n_pods = rows, cols, n_pods
        self.alpha, self.beta = instance.alpha, instance.beta
        self.free = list(instance.capacities)
        # previous minipod with the same free nodes (value symmetry), or -1
        self.prev_in_class = [-1] * n_pods
        last: dict[int, int] = {}
        for j, f in enumerate(instance.capacities):
            self.prev_in_class[j] = last.get(f, -1)
            last[f] = j
        self.grid = [[-1] * cols for _ in range(rows)]
        self.count = [0] * n_pods
        self.row_cnt = [[0] * n_pods for _ in range(rows)]
        self.col_cnt = [[0] * n_pods for _ in range(cols)]
        self.row_use = [0] * rows
        self.col_use = [0] * cols
        self.col_tight = [True] * cols  # col_tight[c]: columns c-1 and c equal so far
        start = _greedy(instance)
        self.best_score = evaluate(instance, start)
        self.best = start
        self.nodes = 0
        self.timed_out = False

    def run(self) -> None:
        self._place(0, 0, True, 0, 0)

    def _place(self, r: int, c: int, row_tight: bool, max_col: int, max_row: int) -> None:
        if self.timed_out:
            return
        self.nodes += 1
        if self.nodes % _CHECK_EVERY == 0 and self.ctx.expired():
            self.timed_out = True
            return
        if r == self.rows:
            score = self.alpha * _d(max_col) + self.beta * _d(max_row)
            if score < self.best_score - 1e-12:
                self.best_score = score
                self.best = Placement.from_rows(self.grid)
            return
        grid, count = self.grid, self.count
        row_cnt, col_cnt = self.row_cnt[r], self.col_cnt[c]
        above = grid[r - 1][c] if r > 0 else -1
        left = grid[r][c - 1] if c > 0 else -1
        col_tight = self.col_tight[c] if c > 0 else False
        low = above if (r > 0 and row_tight) else 0
        high = self.n_pods - 1
        for j in range(low, high + 1):
            if count[j] >= self.free[j]:
                continue
            if count[j] == 0 and self.prev_in_class[j] >= 0 and count[self.prev_in_class[j]] == 0:
                continue
            if col_tight and j < left:
                continue
            new_row_use = self.row_use[r] + (row_cnt[j] == 0)
            new_col_use = self.col_use[c] + (col_cnt[j] == 0)
            new_max_row = max(max_row, new_row_use)
            new_max_col = max(max_col, new_col_use)
            if (
                self.alpha * _d(new_max_col) + self.beta * _d(new_max_row)
                >= self.best_score - 1e-12
            ):
                continue
            old_row_use, old_col_use = self.row_use[r], self.col_use[c]
            grid[r][c] = j
            count[j] += 1
            row_cnt[j] += 1
            col_cnt[j] += 1
            self.row_use[r] = new_row_use
            self.col_use[c] = new_col_use
            if c > 0:
                self.col_tight[c] = col_tight and j == left
            if c + 1 < self.cols:
                next_tight = r > 0 and row_tight and j == above
                self._place(r, c + 1, next_tight, new_max_col, new_max_row)
            else:
                self._place(r + 1, 0, True, new_max_col, new_max_row)
            if c > 0:
                self.col_tight[c] = col_tight
            self.row_use[r], self.col_use[c] = old_row_use, old_col_use
            row_cnt[j] -= 1
            col_cnt[j] -= 1
            count[j] -= 1
            grid[r][c] = -1


@register_solver
class EnumerateSolver(Solver):
    """Enumeration oracle: exact optimum by exhaustive search with symmetry breaking.

    Exponential in ``rows * cols``; meant for small instances (it certifies the MIPs and
    heuristics in the test suite). On a time limit it returns the best placement seen,
    unproven.
    """

    name = "placement/enumerate"
    family = "placement"
    exact = True
    gives_bound = True

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        search = _Search(instance, ctx)
        search.run()
        message = f"{search.nodes} search nodes"
        if search.timed_out:
            return Attempt(search.best, TerminationReason.TIME_LIMIT, message=message)
        return Attempt(search.best, TerminationReason.OPTIMAL, proven_optimal=True, message=message)
