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

The search is iterative, so its depth (one level per cell) is not limited by Python's
recursion limit, and it uses ``O(rows * cols + M)`` memory. It starts from a greedy
placement and looks at the clock every few thousand steps: on a time limit it returns the best
placement seen, unproven.

**Every level.** On an instance whose objective looks below the minipods
(:class:`~topoopt.placement.instance.LevelObjective` ``lex`` or ``weighted``) the oracle
searches the maps of cells to *leaves* instead (:class:`_LevelSearch`; reference
:func:`enumerate_levels_naive`), with the same row and column symmetry and, as value
symmetry, leaves of the same parent with equal free nodes; a branch is cut when the scores of
its partial spreads at every level (which only grow) are no better than the incumbent's
(lexicographically, or weighted).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement.constraints import infeasible_reason, job_level, slice_rules, violations
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement, check, evaluate
from topoopt.placement.solvers._budget import deadline
from topoopt.placement.tree import (
    Tree,
    build_tree,
    objective_key,
    placement_from_leaves,
    scores_of_leaves,
)

_CHECK_EVERY = 4096
"""Search nodes of the one-level oracle between two looks at the clock."""
_CLOCK_MASK = 4095
"""Candidates tried in one cell between two looks at the clock (minus one)."""
_LEVEL_CHECK_EVERY = 16
"""Search nodes of the multi-level oracle between two looks at the clock: a node tries every
leaf on every level (0.2 ms with 64 leaves on three levels, where 4,096 nodes overran a 3 s
limit by 0.8 s); the clock costs well under a microsecond."""


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
    j = 0
    for _ in range(instance.n_nodes):
        while free[j] == 0:
            j += 1
        free[j] -= 1
        cells.append(j)
    cols = instance.cols
    return Placement.from_rows(cells[k : k + cols] for k in range(0, len(cells), cols))


class _Search:
    """Depth-first branch and bound over canonical placements (see the module docstring).

    The search is iterative: depth ``d = r * cols + c`` is cell ``(r, c)``, and the per-depth
    arrays hold what a recursive call would keep on the interpreter's stack (the next minipod
    to try, the row tightness, the spreads so far), so its depth is bounded by memory, not by
    the recursion limit. Counts of minipods per row and per column are dictionaries, so memory
    is ``O(rows * cols + M)``.
    """

    def __init__(self, instance: PlacementInstance, ctx: SolveContext) -> None:
        self.inst = instance
        self.expired = deadline(ctx, instance)
        self.free = list(instance.capacities)
        # previous minipod with the same free nodes (value symmetry), or -1
        self.prev_in_class = [-1] * instance.n_minipods
        last: dict[int, int] = {}
        for j, f in enumerate(instance.capacities):
            self.prev_in_class[j] = last.get(f, -1)
            last[f] = j
        start = _greedy(instance)
        self.best_score = evaluate(instance, start)
        self.best = start
        self.nodes = 0
        self.timed_out = False

    def run(self) -> None:
        """Explore the canonical placements until done or out of time."""
        rows, cols, n_pods = self.inst.rows, self.inst.cols, self.inst.n_minipods
        alpha, beta = self.inst.alpha, self.inst.beta
        free, prev_in_class, expired = self.free, self.prev_in_class, self.expired
        n = rows * cols
        grid = [[-1] * cols for _ in range(rows)]
        count = [0] * n_pods
        row_cnt: list[dict[int, int]] = [{} for _ in range(rows)]
        col_cnt: list[dict[int, int]] = [{} for _ in range(cols)]
        row_use = [0] * rows
        col_use = [0] * cols
        col_tight = [True] * cols  # col_tight[c]: columns c-1 and c equal so far
        # per depth: inputs of the cell (row tightness, spreads so far), the next minipod to
        # try and col_tight[c] on entry (restored when the cell is cleared)
        tight_in = [False] * (n + 1)
        max_col_in = [0] * (n + 1)
        max_row_in = [0] * (n + 1)
        next_j = [0] * n
        col_tight_in = [False] * n
        best_score = self.best_score
        work, next_check = 0, _CHECK_EVERY  # candidates tried (clock every _CHECK_EVERY)
        d = r = c = 0
        tight_in[0] = True
        entering = True
        while True:
            chosen = -1
            if entering:
                entering = False
                self.nodes += 1
                if work >= next_check:
                    next_check = work + _CHECK_EVERY
                    if expired():
                        self.timed_out = True
                        break
                if d == n:  # every cell placed: a leaf, then back to the last cell
                    score = alpha * _d(max_col_in[n]) + beta * _d(max_row_in[n])
                    if score < best_score - 1e-12:
                        best_score = self.best_score = score
                        self.best = Placement.from_rows(grid)
                else:
                    next_j[d] = grid[r - 1][c] if (r > 0 and tight_in[d]) else 0
                    col_tight_in[d] = col_tight[c] if c > 0 else False
            if d < n:
                max_col, max_row = max_col_in[d], max_row_in[d]
                left = grid[r][c - 1] if c > 0 else -1
                ctight = col_tight_in[d]
                rcnt, ccnt = row_cnt[r], col_cnt[c]
                ruse, cuse = row_use[r], col_use[c]
                cutoff = best_score - 1e-12
                j = next_j[d]
                while j < n_pods:
                    if not j & _CLOCK_MASK and j and expired():  # long candidate lists
                        self.timed_out = True
                        return
                    cj = count[j]
                    if (
                        cj >= free[j]
                        or (cj == 0 and prev_in_class[j] >= 0 and count[prev_in_class[j]] == 0)
                        or (ctight and j < left)
                    ):
                        j += 1
                        continue
                    new_row_use = ruse if j in rcnt else ruse + 1
                    new_col_use = cuse if j in ccnt else cuse + 1
                    new_max_row = max_row if max_row >= new_row_use else new_row_use
                    new_max_col = max_col if max_col >= new_col_use else new_col_use
                    if (
                        alpha * (new_max_col if new_max_col >= 2 else 0)
                        + beta * (new_max_row if new_max_row >= 2 else 0)
                        >= cutoff
                    ):
                        j += 1
                        continue
                    chosen = j
                    break
                work += j - next_j[d] + 1
            if chosen < 0:  # a leaf, or every minipod tried: clear the previous cell
                d -= 1
                if d < 0:
                    break
                if c > 0:
                    c -= 1
                else:
                    r, c = r - 1, cols - 1
                j = grid[r][c]
                grid[r][c] = -1
                count[j] -= 1
                for counts, uses, k in ((row_cnt[r], row_use, r), (col_cnt[c], col_use, c)):
                    if counts[j] == 1:
                        del counts[j]
                        uses[k] -= 1
                    else:
                        counts[j] -= 1
                if c > 0:
                    col_tight[c] = col_tight_in[d]
                continue
            j = chosen
            next_j[d] = j + 1
            grid[r][c] = j
            count[j] += 1
            rcnt[j] = rcnt.get(j, 0) + 1
            ccnt[j] = ccnt.get(j, 0) + 1
            row_use[r] = new_row_use
            col_use[c] = new_col_use
            if c > 0:
                col_tight[c] = ctight and j == left
            max_col_in[d + 1] = new_max_col
            max_row_in[d + 1] = new_max_row
            d += 1
            if c + 1 < cols:
                tight_in[d] = r > 0 and tight_in[d - 1] and j == grid[r - 1][c]
                c += 1
            else:
                tight_in[d] = True
                r, c = r + 1, 0
            entering = True


def enumerate_levels_naive(
    instance: PlacementInstance,
) -> tuple[tuple[float, ...], Placement | None]:
    """The least objective key (:func:`~topoopt.placement.tree.objective_key`) over every map
    of cells to leaves that respects the constraints (``K ** (rows * cols)``, tiny instances
    only) and a placement with it (``((), None)`` when no map respects them).

    Examples
    --------
    >>> from topoopt.placement.instance import Leaf, Minipod
    >>> pod = Minipod.from_leaves("a", [Leaf("l0", ["h0", "h1"]), Leaf("l1", ["h2", "h3"])])
    >>> inst = PlacementInstance("t", [pod], dp=2, tp=8, pp=2, alpha=0.2, objective="lex")
    >>> enumerate_levels_naive(inst)[0]    # one pipeline per leaf: leaf DP spread 2
    (0.0, 0.4)
    """
    tree = build_tree(instance)
    rows, cols = instance.rows, instance.cols
    free = tree.leaf_free
    level = job_level(instance, tree)
    best: tuple[tuple[float, ...], np.ndarray] | None = None
    for flat in itertools.product(range(tree.n_leaves), repeat=rows * cols):
        leaves = np.reshape(np.asarray(flat, dtype=np.int64), (rows, cols))
        if (np.bincount(leaves.ravel(), minlength=tree.n_leaves) > free).any():
            continue
        if instance.constraints and (
            violations(instance, tree, leaves)
            or (level is not None and len(np.unique(tree.switch[level][leaves])) > 1)
        ):
            continue
        key = objective_key(instance, scores_of_leaves(instance, tree, leaves))
        if best is None or key < best[0]:
            best = (key, leaves)
    if best is None:
        return (), None
    return best[0], placement_from_leaves(instance, tree, best[1])


class _LevelSearch:
    """Depth-first branch and bound over the maps of cells to leaves (every level counts).

    Cells in row-major order; a cell tries the leaves with room, skipping a leaf not used
    yet whose previous sibling of equal free nodes is unused too (value symmetry) and, with
    ``symmetric``, keeping rows and columns in lexicographic order as the minipod search
    does. The partial spreads of every level only grow as cells are added, so a branch whose
    partial objective key is not below the incumbent's is cut.
    """

    def __init__(self, instance: PlacementInstance, tree: Tree, ctx: SolveContext) -> None:
        self.inst, self.tree = instance, tree
        self.expired = deadline(ctx, instance)
        # slices name ranks: rows and columns are then not interchangeable
        self.symmetric = not instance.constraints.rank_bound
        self.job_level = job_level(instance, tree)
        self.rules = [(size, level) for size, level, _ in slice_rules(instance)]
        self.max_leaves = instance.constraints.max_switches
        self.levels = tree.n_levels
        self.up = tree.switch.tolist()
        self.free = tree.leaf_free.tolist()
        parent = tree.switch[-2].tolist() if self.levels > 1 else [0] * tree.n_leaves
        self.prev_in_class = [-1] * tree.n_leaves
        last: dict[tuple[int, int], int] = {}
        for k, f in enumerate(self.free):
            self.prev_in_class[k] = last.get((parent[k], f), -1)
            last[parent[k], f] = k
        start = self._greedy()
        self.best: np.ndarray | None = start
        self.best_key = objective_key(instance, scores_of_leaves(instance, tree, start))
        if instance.constraints and (
            violations(instance, tree, start)
            or (
                self.job_level is not None
                and len(set(tree.switch[self.job_level][start].ravel().tolist())) > 1
            )
        ):
            self.best, self.best_key = None, (math.inf,) * len(self.best_key)
        self.nodes = 0
        self.timed_out = False

    def _greedy(self) -> np.ndarray:
        """Cells in row-major order into the first leaf with room."""
        out, k, left = [], 0, self.free[0]
        for _ in range(self.inst.n_nodes):
            while left == 0:
                k += 1
                left = self.free[k]
            out.append(k)
            left -= 1
        return np.reshape(np.asarray(out, dtype=np.int64), (self.inst.rows, self.inst.cols))

    def _key(self, max_col: list[int], max_row: list[int]) -> tuple[float, ...]:
        alpha, beta = self.inst.alpha, self.inst.beta
        scores = [
            alpha * (a if a >= 2 else 0) + beta * (b if b >= 2 else 0)
            for a, b in zip(max_col, max_row, strict=True)
        ]
        return objective_key(self.inst, scores)

    def run(self) -> None:
        """Explore until done or out of time."""
        rows, cols, levels = self.inst.rows, self.inst.cols, self.levels
        up, free, prev = self.up, self.free, self.prev_in_class
        n_leaves = len(free)
        grid = [[-1] * cols for _ in range(rows)]
        count = [0] * n_leaves
        row_cnt = [[dict[int, int]() for _ in range(rows)] for _ in range(levels)]
        col_cnt = [[dict[int, int]() for _ in range(cols)] for _ in range(levels)]
        row_use = [[0] * rows for _ in range(levels)]
        col_use = [[0] * cols for _ in range(levels)]
        col_tight = [True] * cols
        # constraints: the job's switch at job_level, each slice's switch at its level
        job_level, job_count = self.job_level, [0]
        job_switch = [-1]
        rules = self.rules
        slice_switch = [[-1] * (rows * cols // size) for size, _ in rules]
        slice_count = [[0] * (rows * cols // size) for size, _ in rules]
        leaves_used = [0]
        max_leaves = self.max_leaves

        def allowed(r: int, c: int, k: int) -> bool:
            if job_level is not None and job_count[0] and up[job_level][k] != job_switch[0]:
                return False
            rank = c * rows + r
            for i, (size, level) in enumerate(rules):
                t = rank // size
                if slice_count[i][t] and up[level][k] != slice_switch[i][t]:
                    return False
            return not (max_leaves is not None and count[k] == 0 and leaves_used[0] >= max_leaves)

        def bind(r: int, c: int, k: int, sign: int) -> None:
            if job_level is not None:
                job_count[0] += sign
                job_switch[0] = up[job_level][k] if job_count[0] else -1
            rank = c * rows + r
            for i, (size, level) in enumerate(rules):
                t = rank // size
                slice_count[i][t] += sign
                slice_switch[i][t] = up[level][k] if slice_count[i][t] else -1
            if (sign > 0 and count[k] == 1) or (sign < 0 and count[k] == 0):
                leaves_used[0] += sign

        def place(r: int, c: int, k: int, sign: int) -> None:
            count[k] += sign
            for lv in range(levels):
                s = up[lv][k]
                for counts, uses, i in ((row_cnt[lv][r], row_use[lv], r),
                                        (col_cnt[lv][c], col_use[lv], c)):  # fmt: skip
                    had = counts.get(s, 0)
                    if sign > 0:
                        counts[s] = had + 1
                        if had == 0:
                            uses[i] += 1
                    elif had == 1:
                        del counts[s]
                        uses[i] -= 1
                    else:
                        counts[s] = had - 1

        def search(d: int, tight: bool, max_col: list[int], max_row: list[int]) -> None:
            if self.timed_out:
                return
            self.nodes += 1
            if self.nodes % _LEVEL_CHECK_EVERY == 0 and self.expired():
                self.timed_out = True
                return
            if d == rows * cols:
                key = self._key(max_col, max_row)
                if key < self.best_key:
                    self.best_key = key
                    self.best = np.asarray(grid, dtype=np.int64)
                return
            r, c = divmod(d, cols)
            symmetric = self.symmetric
            start = grid[r - 1][c] if symmetric and r > 0 and tight else 0
            ctight = symmetric and c > 0 and col_tight[c]
            left = grid[r][c - 1] if c > 0 else -1
            saved = col_tight[c]
            for k in range(start, n_leaves):
                if count[k] >= free[k]:
                    continue
                if count[k] == 0 and prev[k] >= 0 and count[prev[k]] == 0:
                    continue
                if ctight and k < left:
                    continue
                if not allowed(r, c, k):
                    continue
                place(r, c, k, 1)
                bind(r, c, k, 1)
                new_col = [max(m, col_use[lv][c]) for lv, m in enumerate(max_col)]
                new_row = [max(m, row_use[lv][r]) for lv, m in enumerate(max_row)]
                if self._key(new_col, new_row) < self.best_key:
                    grid[r][c] = k
                    if c > 0:
                        col_tight[c] = ctight and k == left
                    if c + 1 < cols:
                        search(d + 1, r > 0 and tight and k == grid[r - 1][c], new_col, new_row)
                    else:
                        search(d + 1, True, new_col, new_row)
                    grid[r][c] = -1
                    col_tight[c] = saved
                place(r, c, k, -1)
                bind(r, c, k, -1)
                if self.timed_out:
                    return

        search(0, True, [0] * levels, [0] * levels)


@register_solver
class EnumerateSolver(Solver):
    """Enumeration oracle: exact optimum by exhaustive search with symmetry breaking.

    Exponential in ``rows * cols``; meant for small instances (it certifies the MIPs and
    heuristics in the test suite). On a time limit it returns the best placement seen,
    unproven (termination ``time_limit``); it always has one, starting from a greedy
    placement.
    """

    name = "placement/enumerate"
    family = "placement"
    exact = True
    gives_bound = True

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        if instance.objective.multilevel or instance.constraints:
            return self._levels(instance, ctx)
        search = _Search(instance, ctx)
        search.run()
        message = f"{search.nodes} search nodes"
        if search.timed_out:
            return Attempt(search.best, TerminationReason.TIME_LIMIT, message=message)
        return Attempt(search.best, TerminationReason.OPTIMAL, proven_optimal=True, message=message)

    @staticmethod
    def _levels(instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        """Every level, or constraints: the search over cells to leaves
        (:class:`_LevelSearch`)."""
        tree = build_tree(instance)
        reason = infeasible_reason(instance, tree)
        if reason is not None:
            return Attempt(None, TerminationReason.INFEASIBLE, message=reason)
        search = _LevelSearch(instance, tree, ctx)
        search.run()
        message = f"{search.nodes} search nodes over the leaves"
        if search.best is None:
            if search.timed_out:
                return Attempt(None, TerminationReason.TIME_LIMIT, message=message)
            return Attempt(
                None,
                TerminationReason.INFEASIBLE,
                message=f"constraints: no placement respects {_fields(instance)} ({message})",
            )
        best = placement_from_leaves(instance, tree, search.best)
        if search.timed_out:
            return Attempt(best, TerminationReason.TIME_LIMIT, message=message)
        return Attempt(best, TerminationReason.OPTIMAL, proven_optimal=True, message=message)


def _fields(instance: PlacementInstance) -> str:
    """The constraints of ``instance`` as ``constraints.<field>`` names."""
    return ", ".join(f"constraints.{name}" for name in instance.constraints.to_dict())
