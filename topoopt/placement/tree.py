"""Every level of a placement instance as one tree, and the spreads and scores at each level.

An instance's levels, top first (:attr:`PlacementInstance.levels
<topoopt.placement.instance.PlacementInstance.levels>`): level 0 is the minipods, levels
``1 .. d`` the switches of the leaves' paths (``d = path_depth``), level ``d + 1`` the leaves
(``L = d + 2`` levels; ``L = 1`` when no minipod lists leaves). A minipod without leaves is
one leaf holding all its free nodes, and stands for itself at every level below it. A switch
is told apart by its minipod and its name (switches of different minipods differ), a leaf by
its minipod and position.

For a placement whose cells are on leaves (:attr:`Placement.nodes
<topoopt.placement.solution.Placement.nodes>`, else the rank-order fill), a group's spread at
level ``l`` is Arnold's ``D`` (eq. 3) over the level-``l`` switches of its cells, and the
level's score is eq. 2 over them:

    S_l = alpha * max_c D_l(column c) + beta * max_r D_l(row r)

:func:`level_scores` computes them; :func:`combine` makes the objective of the instance's
:class:`~topoopt.placement.instance.LevelObjective` (``top``: ``S_0``; ``lex``: ``S_0``, the
leading term of the vector; ``weighted``: ``sum_l w_l S_l``); :func:`lex_key` orders
vectors of scores. See ``docs/levels.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from topoopt.placement.instance import PlacementInstance

if TYPE_CHECKING:
    from topoopt.placement.solution import Placement

DIGITS = 9
"""Scores are compared rounded to this many decimals (they are ``alpha * a + beta * b`` for
integers ``a, b``: two different ones differ by far more unless alpha is pathological)."""


def d(k: int) -> int:
    """Arnold's ``D`` of a group touching ``k`` switches: ``k`` when at least 2, else 0."""
    return k if k >= 2 else 0


def fewest_holding(caps: Sequence[int], size: int) -> int:
    """The fewest of the switches with free nodes ``caps`` (largest first) that hold
    ``size`` cells (``len(caps) + 1`` if all of them cannot): no group of ``size`` cells
    touches fewer.

    Examples
    --------
    >>> fewest_holding([3, 5, 2], 7), fewest_holding([3, 5, 2], 11)
    (2, 4)
    """
    total = 0
    for i, c in enumerate(sorted(caps, reverse=True), start=1):
        total += c
        if total >= size:
            return i
    return len(caps) + 1


@dataclass(frozen=True)
class Tree:
    """The levels of an instance as arrays over its leaves.

    Attributes
    ----------
    names
        Level names, top first (``L`` of them).
    leaf_free
        Free nodes of every leaf, shape ``(K,)``; leaves numbered minipod by minipod, in
        leaf order (a minipod without leaves is one leaf).
    leaf_key
        ``(minipod index, leaf index in the minipod)`` of every leaf (0 for a minipod
        without leaves).
    switch
        ``switch[l, k]``: the level-``l`` switch above leaf ``k`` (``switch[0]`` the minipod,
        ``switch[L - 1, k] == k``); switches are numbered ``0 .. n_switches[l] - 1`` per
        level in leaf order.
    parent
        ``parent[l][s]``: the level-``l - 1`` switch above level-``l`` switch ``s`` (an
        empty array for ``l = 0``).
    capacity
        ``capacity[l][s]``: free nodes below level-``l`` switch ``s``.
    switch_names
        ``switch_names[l][s]``: a display name (``pod/group`` for the levels below the
        minipods, the leaf's name for a leaf).
    first_leaf
        Index of each minipod's first leaf.
    """

    names: tuple[str, ...]
    leaf_free: np.ndarray
    leaf_key: tuple[tuple[int, int], ...]
    switch: np.ndarray
    parent: tuple[np.ndarray, ...]
    capacity: tuple[np.ndarray, ...]
    switch_names: tuple[tuple[str, ...], ...]
    first_leaf: np.ndarray

    @property
    def n_levels(self) -> int:
        """Number of levels ``L``."""
        return len(self.names)

    @property
    def n_leaves(self) -> int:
        """Number of leaves ``K``."""
        return len(self.leaf_free)

    @property
    def free_leaves(self) -> int:
        """Number of leaves with a free node (those the whole-tree model gives variables)."""
        return int((self.leaf_free > 0).sum())

    @property
    def n_switches(self) -> tuple[int, ...]:
        """Switches per level, top first."""
        return tuple(len(c) for c in self.capacity)

    def children(self, level: int) -> list[list[int]]:
        """``children(l)[s]``: the level-``l + 1`` switches below level-``l`` switch ``s``."""
        out: list[list[int]] = [[] for _ in range(len(self.capacity[level]))]
        for child, up in enumerate(self.parent[level + 1].tolist()):
            out[up].append(child)
        return out

    def leaves_under(self, level: int) -> list[list[int]]:
        """``leaves_under(l)[s]``: the leaves below level-``l`` switch ``s``, in order."""
        out: list[list[int]] = [[] for _ in range(len(self.capacity[level]))]
        for k, s in enumerate(self.switch[level].tolist()):
            out[s].append(k)
        return out


def build_tree(instance: PlacementInstance) -> Tree:
    """The :class:`Tree` of ``instance``.

    Examples
    --------
    >>> from topoopt.placement.instance import Leaf, Minipod
    >>> pod = Minipod.from_leaves("a", [Leaf("l0", ["h0"], ["g0"]), Leaf("l1", ["h1", "h2"],
    ...                                 ["g0"]), Leaf("l2", ["h3"], ["g1"])])
    >>> tree = build_tree(PlacementInstance("x", [pod, ("b", 2)], dp=1, tp=8, pp=2, alpha=0.5))
    >>> tree.names, tree.leaf_free.tolist(), tree.switch.tolist()
    (('minipod', 'level1', 'leaf'), [1, 2, 1, 2], [[0, 0, 0, 1], [0, 0, 1, 2], [0, 1, 2, 3]])
    >>> [c.tolist() for c in tree.capacity], tree.switch_names[1]
    ([[4, 2], [3, 1, 2], [1, 2, 1, 2]], ('a/g0', 'a/g1', 'b'))
    """
    levels = instance.n_levels
    depth = levels - 2
    free: list[int] = []
    keys: list[tuple[int, int]] = []
    leaf_names: list[str] = []
    paths: list[tuple[str, ...]] = []
    first: list[int] = []
    for j, pod in enumerate(instance.minipods):
        first.append(len(free))
        if pod.leaves:
            for k, leaf in enumerate(pod.leaves):
                free.append(len(leaf.nodes))
                keys.append((j, k))
                leaf_names.append(f"{pod.name}/{leaf.name}")
                paths.append(leaf.path)
        else:
            free.append(pod.free_nodes)
            keys.append((j, 0))
            leaf_names.append(pod.name)
            paths.append(("",) * max(depth, 0))
    n = len(free)
    switch = np.zeros((levels, n), dtype=np.int64)
    names_by_level: list[tuple[str, ...]] = []
    switch[0] = [j for j, _ in keys]
    names_by_level.append(tuple(pod.name for pod in instance.minipods))
    for i in range(1, levels - 1):
        ids: dict[tuple[int, str], int] = {}
        shown: list[str] = []
        for k, (j, _) in enumerate(keys):
            name = paths[k][i - 1]
            key = (j, name)
            if key not in ids:
                ids[key] = len(ids)
                pod_name = instance.minipods[j].name
                shown.append(f"{pod_name}/{name}" if name else pod_name)
            switch[i, k] = ids[key]
        names_by_level.append(tuple(shown))
    if levels > 1:
        switch[levels - 1] = np.arange(n)
        names_by_level.append(tuple(leaf_names))
    leaf_free = np.asarray(free, dtype=np.int64)
    capacity = tuple(
        np.bincount(switch[lv], weights=leaf_free, minlength=len(names_by_level[lv])).astype(
            np.int64
        )
        for lv in range(levels)
    )
    parent: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    for lv in range(1, levels):
        up = np.zeros(len(names_by_level[lv]), dtype=np.int64)
        up[switch[lv]] = switch[lv - 1]
        parent.append(up)
    return Tree(
        names=instance.levels,
        leaf_free=leaf_free,
        leaf_key=tuple(keys),
        switch=switch,
        parent=tuple(parent),
        capacity=capacity,
        switch_names=tuple(names_by_level),
        first_leaf=np.asarray(first, dtype=np.int64),
    )


def cell_leaf_array(
    instance: PlacementInstance, placement: Placement, tree: Tree | None = None
) -> np.ndarray:
    """The leaf (index into the :class:`Tree`'s leaves) of every cell, ``rows x cols``: from
    the placement's node assignment when it has one, else from the rank-order fill."""
    from topoopt.placement.levels import fill_leaves, node_leaves

    tree = build_tree(instance) if tree is None else tree
    matrix = np.asarray(placement.matrix, dtype=np.int64).reshape(instance.rows, instance.cols)
    local = (
        node_leaves(instance, placement)
        if placement.nodes is not None
        else fill_leaves(instance, placement)
    )
    return tree.first_leaf[matrix] + np.asarray(local, dtype=np.int64).reshape(matrix.shape)


def _most_distinct(grid: np.ndarray, axis: int) -> int:
    """The most distinct values along ``axis`` of ``grid`` (over the lines across it)."""
    if grid.size == 0:
        return 0
    ordered = np.sort(grid, axis=axis)
    changes = (np.diff(ordered, axis=axis) != 0).sum(axis=axis)
    return int(changes.max()) + 1


@dataclass(frozen=True)
class LevelScore:
    """The spreads and score of one level.

    Attributes
    ----------
    dp_spread, pp_spread
        ``max_c D_l(column c)`` and ``max_r D_l(row r)``.
    score
        ``alpha * dp_spread + beta * pp_spread`` (Arnold eq. 2 at this level).
    """

    dp_spread: int
    pp_spread: int
    score: float


def scores_of_leaves(
    instance: PlacementInstance, tree: Tree, leaves: np.ndarray
) -> tuple[LevelScore, ...]:
    """:class:`LevelScore` of every level, top first, for cells on ``leaves`` (``rows x
    cols`` leaf indices)."""
    out = []
    for lv in range(tree.n_levels):
        grid = tree.switch[lv][leaves]
        dp = d(_most_distinct(grid, 0))
        pp = d(_most_distinct(grid, 1))
        out.append(LevelScore(dp, pp, instance.alpha * dp + instance.beta * pp))
    return tuple(out)


def level_scores(instance: PlacementInstance, placement: Placement) -> tuple[LevelScore, ...]:
    """Spreads and score of ``placement`` at every level of ``instance``, top first.

    Examples
    --------
    >>> from topoopt.placement.instance import Leaf, Minipod
    >>> from topoopt.placement.solution import Placement
    >>> pod = Minipod.from_leaves("a", [Leaf("l0", ["h0"], ["g0"]), Leaf("l1", ["h1"], ["g0"]),
    ...                                 Leaf("l2", ["h2"], ["g1"]), Leaf("l3", ["h3"], ["g1"])])
    >>> inst = PlacementInstance("x", [pod], dp=2, tp=8, pp=2, alpha=0.25)
    >>> [s.score for s in level_scores(inst, Placement(((0, 0), (0, 0))))]   # the fill
    [0.0, 1.5, 2.0]
    >>> rows = Placement(((0, 0), (0, 0)), (("h0", "h1"), ("h2", "h3")))   # rows on g0, g1
    >>> [(s.dp_spread, s.pp_spread) for s in level_scores(inst, rows)]
    [(0, 0), (2, 0), (2, 2)]
    """
    tree = build_tree(instance)
    return scores_of_leaves(instance, tree, cell_leaf_array(instance, placement, tree))


def combine(instance: PlacementInstance, scores: Sequence[LevelScore | float]) -> float:
    """The objective of the instance's :class:`~topoopt.placement.instance.LevelObjective`
    from the scores of the levels: ``S_0`` for ``top`` and ``lex`` (its leading term),
    ``sum_l w_l S_l`` for ``weighted``."""
    values = [s.score if isinstance(s, LevelScore) else float(s) for s in scores]
    objective = instance.objective
    if objective.mode == "weighted":
        return float(sum(w * s for w, s in zip(objective.weights, values, strict=True)))
    return values[0]


def lex_key(scores: Sequence[LevelScore | float]) -> tuple[float, ...]:
    """The scores rounded to :data:`DIGITS`, to compare vectors lexicographically."""
    return tuple(round(s.score if isinstance(s, LevelScore) else float(s), DIGITS) for s in scores)


def objective_key(
    instance: PlacementInstance, scores: Sequence[LevelScore | float]
) -> tuple[float, ...]:
    """What the instance's objective minimises, as a tuple to compare: the rounded
    :func:`lex_key` for ``lex``, ``(combine,)`` rounded otherwise."""
    if instance.objective.mode == "lex":
        return lex_key(scores)
    return (round(combine(instance, scores), DIGITS),)


def placement_from_leaves(
    instance: PlacementInstance, tree: Tree, leaves: Sequence[Sequence[int]] | np.ndarray
) -> Placement:
    """The placement with every cell on the leaf ``leaves[r][c]`` (a :class:`Tree` leaf
    index): its minipod matrix and its node assignment, each leaf's free nodes taken by its
    cells in order of increasing node rank (``c * rows + r``).

    Raises
    ------
    ValueError
        When a leaf receives more cells than it has free nodes.
    """
    from topoopt.placement.solution import Placement

    grid = np.asarray(leaves, dtype=np.int64).reshape(instance.rows, instance.cols)
    pods = [pod for pod in instance.minipods]
    names: dict[int, list[str]] = {}
    taken = np.zeros(tree.n_leaves, dtype=np.int64)
    nodes = [[""] * instance.cols for _ in range(instance.rows)]
    for c in range(instance.cols):
        for r in range(instance.rows):
            k = int(grid[r, c])
            if k not in names:
                j, local = tree.leaf_key[k]
                pod = pods[j]
                names[k] = list(pod.leaves[local].nodes) if pod.leaves else pod.node_names()
            if taken[k] >= len(names[k]):
                raise ValueError(f"leaf {tree.switch_names[-1][k]!r} gets more cells than nodes")
            nodes[r][c] = names[k][taken[k]]
            taken[k] += 1
    matrix = tree.switch[0][grid]
    return Placement(tuple(map(tuple, matrix.tolist())), tuple(map(tuple, nodes)))
