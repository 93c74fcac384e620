r"""Jobs of one row or one column: every level at once, exactly, by a dynamic programme over
the tree (``placement/levels``, issue #30; ``docs/levels.md``, "One row or one column").

A job of one column (``rows = m``, ``cols = 1``: data parallelism only, Arnold's matrix has
one pipeline stage) has rows of one cell, whose spread is 1 at every level; so level ``l``
scores ``S_l = alpha · D(A_l)`` (Arnold eq. 2 per level), ``A_l`` the level-``l`` switches
the column touches. A job of one row scores ``beta · D(B_l)`` the same way. With ``D(1) = 0``
and ``D(A) = A`` for ``A >= 2``, let ``S`` be the lowest switch holding the whole line (a
leaf, a switch, or the root when it spans minipods). The levels down to ``S``'s have
``A = 1`` and score 0; inside ``S`` the line touches at least two children, so every level
below has ``A >= 2`` and scores ``A`` itself. Hence, with a cost ``c_l`` per touched
switch of level ``l``,

.. math::

    f_v(0) = 0, \quad f_v(n) = c_{l(v)} + \min_{\sum_u n_u = n} \sum_{u ∈ ch(v)} f_u(n_u),
    \qquad f_k(n) = c_{L-1} \text{ for a leaf } k, 1 ≤ n ≤ \text{free}_k,

and the optimum is the least over ``S`` of ``\min \sum_{u ∈ ch(S)} f_u(n_u)`` over the
splits of the line's ``m`` cells that use at least two children (0 when a leaf holds it):
min-plus convolutions of the children's tables (:func:`~topoopt.core.convolution.min_plus`),
with the number of children used counted up to two. The weighted objective takes
``c_l = w_l``; the lexicographic one (``lex``, and ``top``, which the solver ranks the same
way) the mixed-radix weights ``c_l = prod_{l' > l} (switches_{l'} + 1)``, under which sums
compare as the vectors ``(A_0, ..., A_{L-1})`` do lexicographically (each ``A_l`` is below
its radix). Every switch's table is kept, so the splits are read back from the top.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from topoopt.core.convolution import min_plus
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.tree import Tree

EXACT_INTEGERS = 2.0**53
"""The lexicographic costs are exact while their sums stay below this (float64 integers)."""


@dataclass
class _Switch:
    """One switch's dynamic programme: ``steps[i]`` are the least costs of its first ``i``
    children with none, one, or at least two of them used, by cells placed."""

    children: list[int]
    steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    table: np.ndarray
    """``f_v``: its own cost plus the children's least, by cells (``table[0] = 0``)."""


def level_costs(instance: PlacementInstance, tree: Tree) -> np.ndarray | None:
    """``c_l`` for the instance's objective (module docstring); ``None`` when the
    lexicographic weights would not stay exact integers."""
    if instance.objective.mode == "weighted":
        return np.asarray(instance.objective.weights, dtype=float)
    radix = [n + 1 for n in tree.n_switches]
    costs = [math.prod(radix[level + 1 :]) for level in range(tree.n_levels)]
    if math.prod(radix) >= EXACT_INTEGERS:
        return None
    return np.asarray(costs, dtype=float)


def line_leaves(instance: PlacementInstance, tree: Tree, costs: np.ndarray) -> np.ndarray:
    """The leaf of every cell (shape ``rows x cols``) of a line that minimises
    ``sum_l c_l D(A_l)`` (module docstring). The instance has one row or one column and
    enough free nodes.

    Examples
    --------
    >>> from topoopt.placement.generate import tree_instance
    >>> from topoopt.placement.tree import build_tree
    >>> inst = tree_instance("t", [[[2, 1], [3]], [[2, 2]]], rows=4, cols=1, alpha=0.5)
    >>> tree = build_tree(inst)
    >>> line_leaves(inst, tree, level_costs(inst, tree)).ravel().tolist()  # pod 1, racks 3, 4
    [3, 3, 4, 4]
    """
    return _grid(instance, line_parts(tree, instance.rows * instance.cols, costs))


def lines_one_by_one(
    instance: PlacementInstance, tree: Tree, costs: np.ndarray, columns: bool
) -> np.ndarray | None:
    """The leaf of every cell when the job's columns (``columns``) or rows are placed one
    after the other, each by :func:`line_parts` on the free nodes the others left: for
    ``alpha = 1`` only the columns' spreads count (``alpha = 0``: the rows'), each line is
    then its own one-line problem, and the lines only share the free nodes. A construction
    (the first lines take the best room); ``None`` when a line finds no room left.

    Examples
    --------
    >>> from topoopt.placement.generate import tree_instance
    >>> from topoopt.placement.tree import build_tree
    >>> inst = tree_instance("t", [[[3, 1], [3]], [[2, 3]]], rows=3, cols=2, alpha=1.0)
    >>> tree = build_tree(inst)
    >>> lines_one_by_one(inst, tree, level_costs(inst, tree), columns=True).tolist()
    [[0, 2], [0, 2], [0, 2]]
    """
    count, size = (instance.cols, instance.rows) if columns else (instance.rows, instance.cols)
    free = tree.leaf_free.astype(np.int64).copy()
    grid = np.empty((instance.rows, instance.cols), dtype=np.int64)
    for line in range(count):
        if free.sum() < size:
            return None
        parts = line_parts(dataclasses.replace(tree, leaf_free=free), size, costs)
        cells = [leaf for leaf, n in sorted(parts) for _ in range(n)]
        for leaf, n in parts:
            free[leaf] -= n
        if columns:
            grid[:, line] = cells
        else:
            grid[line, :] = cells
    return grid


def line_parts(tree: Tree, m: int, costs: np.ndarray) -> list[tuple[int, int]]:
    """``(leaf, cells)`` of a line of ``m`` cells minimising ``sum_l c_l D(A_l)`` over the
    leaves' free nodes (module docstring); the leaves hold at least ``m``."""
    levels = tree.n_levels
    free = tree.leaf_free.astype(np.int64)
    tables: list[list[np.ndarray]] = [[] for _ in range(levels)]
    switches: list[list[_Switch]] = [[] for _ in range(levels)]
    top = costs[levels - 1]
    tables[levels - 1] = [_leaf_table(int(f), m, top) for f in free.tolist()]
    for lv in range(levels - 2, -1, -1):
        for kids in tree.children(lv):
            node = _combine(kids, tables[lv + 1], m, costs[lv])
            switches[lv].append(node)
            tables[lv].append(node.table)
    root = _combine(list(range(len(tables[0]))), tables[0], m, 0.0)

    # the lowest switch S holding the line: a leaf (cost 0, the one with least room), a
    # switch with two children or more, or the root with two minipods or more
    fits = [k for k in range(len(free)) if free[k] >= m]
    if fits:
        return [(min(fits, key=lambda k: (int(free[k]), k)), m)]
    best: tuple[float, int, int] | None = None  # (cost, level, switch); level -1: the root
    for lv in range(levels - 1):
        for s, node in enumerate(switches[lv]):
            cost = _at(node.steps[-1][2], m)
            if cost < math.inf and (best is None or cost < best[0]):
                best = (cost, lv, s)
    root_cost = _at(root.steps[-1][2], m)
    if root_cost < math.inf and (best is None or root_cost < best[0]):
        best = (root_cost, -1, 0)
    assert best is not None, "the instance holds the job"
    _, lv, s = best
    node = root if lv == -1 else switches[lv][s]
    parts: list[tuple[int, int]] = []
    _read_back(node, 2, m, lv + 1, tables, switches, parts)
    return parts


def _leaf_table(free: int, m: int, cost: float) -> np.ndarray:
    table = np.full(min(free, m) + 1, cost)
    table[0] = 0.0
    return table


def _at(table: np.ndarray, n: int) -> float:
    return float(table[n]) if n < len(table) else math.inf


def _combine(kids: list[int], child_tables: list[np.ndarray], m: int, cost: float) -> _Switch:
    """The convolutions over ``kids`` (children used: none, one, two or more)."""
    size = min(m, sum(len(child_tables[u]) - 1 for u in kids)) + 1
    none = np.full(size, np.inf)
    none[0] = 0.0
    one = np.full(size, np.inf)
    many = np.full(size, np.inf)
    steps = [(none, one, many)]
    for u in kids:
        used = child_tables[u].copy()
        used[0] = math.inf
        one_next = np.minimum(one, _fit(used, size))
        many_next = np.minimum(many, np.minimum(min_plus(one, used), min_plus(many, used)))
        one, many = one_next, many_next
        steps.append((none, one, many))
    table = np.minimum(one, many) + cost
    table[0] = 0.0
    return _Switch(kids, steps, table)


def _fit(table: np.ndarray, size: int) -> np.ndarray:
    out = np.full(size, np.inf)
    n = min(size, len(table))
    out[:n] = table[:n]
    return out


def _read_back(
    node: _Switch,
    state: int,
    n: int,
    child_level: int,
    tables: list[list[np.ndarray]],
    switches: list[list[_Switch]],
    parts: list[tuple[int, int]],
) -> None:
    """Append ``(leaf, cells)`` of ``n`` cells below ``node`` in ``state`` (1: one child
    used, 2: two or more), children read from the last one back."""
    leaves = child_level == len(tables) - 1
    for i in range(len(node.children) - 1, -1, -1):
        u = node.children[i]
        before = node.steps[i]
        now = float(node.steps[i + 1][state][n])
        if float(before[state][n]) == now:  # child u empty
            continue
        used = tables[child_level][u]
        choices = (0,) if state == 1 else (1, 2)
        found = None
        for j in range(1, min(n, len(used) - 1) + 1):
            for prev in choices:
                if float(before[prev][n - j]) + float(used[j]) == now:
                    found = (prev, j)
                    break
            if found is not None:
                break
        assert found is not None, "the tables read back"
        state, j = found
        if leaves:
            parts.append((u, j))
        else:
            child = switches[child_level][u]
            inner = 1 if child.steps[-1][1][j] <= child.steps[-1][2][j] else 2
            _read_back(child, inner, j, child_level + 1, tables, switches, parts)
        n -= j
        if n == 0:
            return


def _grid(instance: PlacementInstance, parts: list[tuple[int, int]]) -> np.ndarray:
    """The cells in rank order on the leaves in leaf order, ``cells`` each."""
    cells = [leaf for leaf, count in sorted(parts) for _ in range(count)]
    return np.asarray(cells, dtype=np.int64).reshape(instance.rows, instance.cols)
