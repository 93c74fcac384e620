"""Placements, their exact score (Arnold eq. 2–3) and their feasibility check.

This module is the root of the trust chain for the family: :func:`evaluate` and
:func:`check` are written to be obviously right, and every solver's result is recomputed
and checked with them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from topoopt.core.display import ranges, shortened
from topoopt.core.errors import InvalidSolutionError
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.levels import has_leaves, leaf_spreads
from topoopt.placement.tree import combine, level_scores


@dataclass(frozen=True)
class Placement:
    """A minipod for every cell of the communication matrix.

    Attributes
    ----------
    matrix
        ``matrix[r][c]`` is the index (into ``instance.minipods``) of the minipod hosting the
        node of row (PP group) ``r`` and column (DP group, i.e. stage) ``c``.
    nodes
        Optional node assignment: ``nodes[r][c]`` is the name of the free node of minipod
        ``matrix[r][c]`` that hosts cell ``(r, c)`` (names as :meth:`Minipod.node_names
        <topoopt.placement.instance.Minipod.node_names>` gives them), distinct over the
        matrix. ``None`` (the single-level solvers): :func:`rank_order` fills each minipod's
        free nodes in rank order. ``placement/hierarchical`` sets it to put each minipod's
        cells on its leaves (see ``docs/placement.md``, "Hierarchical placement").
    """

    matrix: tuple[tuple[int, ...], ...]
    nodes: tuple[tuple[str, ...], ...] | None = None

    @classmethod
    def from_rows(
        cls, rows: Iterable[Iterable[int]], nodes: Iterable[Iterable[str]] | None = None
    ) -> Placement:
        """Build from any nested iterable (lists, a NumPy array, ...), with an optional node
        assignment of the same shape."""
        named = None if nodes is None else tuple(tuple(row) for row in nodes)
        if isinstance(rows, np.ndarray) and rows.dtype.kind in "iu":
            return cls(tuple(map(tuple, rows.tolist())), named)
        matrix = tuple(map(tuple, rows))
        if set(map(type, chain.from_iterable(matrix))) <= {int}:
            return cls(matrix, named)
        return cls(tuple(tuple(int(x) for x in row) for row in matrix), named)

    def with_nodes(self, nodes: Iterable[Iterable[str]] | None) -> Placement:
        """The same minipod matrix with the node assignment ``nodes`` (``None``: none)."""
        return Placement(self.matrix, None if nodes is None else tuple(map(tuple, nodes)))

    def as_array(self) -> np.ndarray:
        """The matrix as a ``rows x cols`` integer array."""
        return np.array(self.matrix, dtype=int).reshape(len(self.matrix), -1)

    def columns(self) -> list[tuple[int, ...]]:
        """The DP groups (columns) as tuples of minipod indices."""
        return [tuple(col) for col in zip(*self.matrix, strict=True)] if self.matrix else []


def spread(group: Sequence[int]) -> int:
    """``D`` of one communication group (Arnold eq. 3 on one-hot vectors).

    The number of distinct minipods the group uses when that is at least 2, else 0: a group
    inside a single minipod has no cross-spine traffic.

    Examples
    --------
    >>> spread([3, 3, 3]), spread([0, 1, 1]), spread([0, 1, 2])
    (0, 2, 3)
    """
    distinct = len(set(group))
    return distinct if distinct >= 2 else 0


def dp_spread(placement: Placement) -> int:
    """Largest spread over the DP groups (columns)."""
    return max(spread(col) for col in placement.columns())


def pp_spread(placement: Placement) -> int:
    """Largest spread over the PP groups (rows)."""
    return max(spread(row) for row in placement.matrix)


def evaluate(instance: PlacementInstance, placement: Placement) -> float:
    """The exact score to minimise (Arnold eq. 2, with alpha tied to DP; see docs).

    ``alpha * max_columns D(col) + (1 - alpha) * max_rows D(row)``.

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", (Minipod("a", 2), Minipod("b", 2)), dp=2, tp=8, pp=2,
    ...                          alpha=0.25)
    >>> evaluate(inst, Placement(((0, 0), (1, 1))))   # rows aligned: DP groups span 2 pods
    0.5
    >>> evaluate(inst, Placement(((0, 1), (0, 1))))   # columns aligned: PP groups span 2
    1.5

    With a multi-level objective (:class:`~topoopt.placement.instance.LevelObjective`) the
    score of every level counts: ``weighted`` gives ``sum_l w_l S_l``
    (:func:`topoopt.placement.tree.combine`), ``lex`` its leading term ``S_0`` (the eq. 2
    above).
    """
    top = instance.alpha * dp_spread(placement) + instance.beta * pp_spread(placement)
    if instance.objective.mode != "weighted":
        return top
    return combine(instance, level_scores(instance, placement))


def check(instance: PlacementInstance, placement: Placement) -> list[str]:
    """The feasibility rules ``placement`` breaks (empty when feasible).

    Rules: the matrix is ``rows x cols`` (so every cell is placed exactly once), every entry
    names an existing minipod, and no minipod hosts more nodes than it has free; the node
    assignment's rules when there is one; the instance's constraints
    (:func:`topoopt.placement.constraints.violations`, on the node assignment or else the
    rank-order fill).
    """
    problems: list[str] = []
    matrix = placement.matrix
    if len(matrix) != instance.rows or any(len(row) != instance.cols for row in matrix):
        shape = f"{len(matrix)} rows of lengths {sorted({len(row) for row in matrix})}"
        return [f"matrix must be {instance.rows} x {instance.cols}, got {shape}"]
    n_pods = instance.n_minipods
    counts: Counter[int] = Counter()
    cells = list(chain.from_iterable(matrix))
    if set(map(type, cells)) <= {int}:  # the usual case: count in bulk, check the range once
        counts.update(cells)
    del cells
    if not counts or min(counts) < 0 or max(counts) >= n_pods:
        counts.clear()  # something is off (or the matrix is empty): look at every cell
        for r, row in enumerate(matrix):
            for c, pod in enumerate(row):
                if not (isinstance(pod, int) and 0 <= pod < n_pods):
                    problems.append(
                        f"cell ({r}, {c}) names minipod {pod!r}, not in 0..{n_pods - 1}"
                    )
                else:
                    counts[pod] += 1
    for pod, used in sorted(counts.items()):
        free = instance.minipods[pod].free_nodes
        if used > free:
            problems.append(
                f"minipod {instance.minipods[pod].name!r} hosts {used} nodes but has {free} free"
            )
    if placement.nodes is not None and not problems:
        problems += _check_nodes(instance, placement)
    if instance.constraints and not problems:
        from topoopt.placement.constraints import violations
        from topoopt.placement.tree import build_tree, cell_leaf_array

        tree = build_tree(instance)
        problems += violations(instance, tree, cell_leaf_array(instance, placement, tree))
    return problems


def within_targets(
    instance: PlacementInstance, placement: Placement, max_dp_use: int, max_pp_use: int
) -> bool:
    """Whether ``placement`` is feasible (:func:`check`) with every column touching at most
    ``max_dp_use`` minipods and every row at most ``max_pp_use``: it realises the target pair
    ``(A, B)`` of the exact solver's decomposition (``docs/placement.md``).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", (Minipod("a", 2), Minipod("b", 2)), dp=2, tp=8, pp=2,
    ...                          alpha=0.5)
    >>> placement = Placement(((0, 0), (1, 1)))  # rows whole, columns on both minipods
    >>> within_targets(inst, placement, 2, 1), within_targets(inst, placement, 1, 2)
    (True, False)
    """
    return (
        not check(instance, placement)
        and max(len(set(col)) for col in placement.columns()) <= max_dp_use
        and max(len(set(row)) for row in placement.matrix) <= max_pp_use
    )


def _check_nodes(instance: PlacementInstance, placement: Placement) -> list[str]:
    """Rules of the node assignment: same shape as the matrix, each node a free node of its
    cell's minipod, no node twice (node names are distinct across the instance's leaves; the
    made-up names of a minipod without leaves only within it)."""
    nodes = placement.nodes
    assert nodes is not None
    if len(nodes) != instance.rows or any(len(row) != instance.cols for row in nodes):
        return [f"nodes must be {instance.rows} x {instance.cols} like the matrix"]
    problems: list[str] = []
    free: dict[int, set[str]] = {}
    first: dict[tuple[int, str], tuple[int, int]] = {}  # by minipod: made-up names may recur
    for r, (row, names) in enumerate(zip(placement.matrix, nodes, strict=True)):
        for c, (pod, node) in enumerate(zip(row, names, strict=True)):
            if pod not in free:
                free[pod] = set(instance.minipods[pod].node_names())
            if not isinstance(node, str) or node not in free[pod]:
                problems.append(
                    f"cell ({r}, {c}) is on node {node!r}, not a free node of minipod "
                    f"{instance.minipods[pod].name!r}"
                )
            elif (pod, node) in first:
                problems.append(f"cell ({r}, {c}) is on node {node!r} like cell {first[pod, node]}")
            else:
                first[pod, node] = (r, c)
            if len(problems) >= 10:
                return [*problems, "... (first 10 problems of the node assignment)"]
    return problems


def metrics(instance: PlacementInstance, placement: Placement) -> dict[str, float]:
    """``dp_spread``, ``pp_spread`` and ``minipods_used`` of a placement; when the instance
    has leaves, also ``minipod_score`` (eq. 2 at the minipods), ``leaf_dp_spread``,
    ``leaf_pp_spread`` and ``leaf_score`` (the spreads one level down, from the node
    assignment or else the rank-order fill; see :func:`topoopt.placement.levels.leaf_spreads`);
    when the leaves have paths, also ``level<i>_dp_spread``, ``level<i>_pp_spread`` and
    ``level<i>_score`` for each level ``i`` between (1 = just below the minipods;
    :func:`topoopt.placement.tree.level_scores`)."""
    used = len({pod for row in placement.matrix for pod in row})
    out = {
        "dp_spread": float(dp_spread(placement)),
        "pp_spread": float(pp_spread(placement)),
        "minipods_used": float(used),
    }
    if has_leaves(instance):
        scores = level_scores(instance, placement)
        leaf = scores[-1]
        out["minipod_score"] = float(scores[0].score)
        out["leaf_dp_spread"] = float(leaf.dp_spread)
        out["leaf_pp_spread"] = float(leaf.pp_spread)
        out["leaf_score"] = float(leaf.score)
        for i, level in enumerate(scores[1:-1], start=1):
            out[f"level{i}_dp_spread"] = float(level.dp_spread)
            out[f"level{i}_pp_spread"] = float(level.pp_spread)
            out[f"level{i}_score"] = float(level.score)
    return out


def node_rank(instance: PlacementInstance, row: int, col: int) -> int:
    """Node-level rank of cell ``(row, col)`` in Megatron's default order.

    Megatron numbers GPUs TP-fastest, then DP, then PP, so node ``k`` hosts global ranks
    ``k*g .. k*g+g-1`` and ``k = col * rows + row``: the DP ranks of one stage sit on
    consecutive nodes.
    """
    return col * instance.rows + row


def rank_order(instance: PlacementInstance, placement: Placement) -> list[str]:
    """Which concrete node hosts each node-level rank (index = rank, see :func:`node_rank`).

    Inside each minipod the cells it hosts take its free nodes in leaf order, by increasing
    rank, so the ranks of a DP group that share a minipod sit on consecutive nodes (the
    paper's "continuous rank indices" per minipod). Only the names of the nodes used are
    made, so the cost is the job's size, not the number of free nodes.

    With a node assignment (:attr:`Placement.nodes`) the order is that assignment read in
    rank order: rank ``k = c * rows + r`` runs on ``nodes[r][c]``.

    Raises
    ------
    InvalidSolutionError
        When a minipod hosts more cells than it has free nodes.
    """
    pods, matrix = instance.minipods, placement.matrix
    if placement.nodes is not None:
        return [row[c] for c in range(instance.cols) for row in placement.nodes]
    ranked = [row[c] for c in range(instance.cols) for row in matrix]  # minipod of each rank
    order = [""] * len(ranked)
    # by minipod, then by rank: each minipod's names are made one after the other
    by_pod = np.argsort(np.asarray(ranked, dtype=np.int64), kind="stable").tolist()
    current, used, prefix, cap = -1, 0, "", 0
    listed: list[str] | None = None
    for k in by_pod:
        j = ranked[k]
        if j != current:
            pod = pods[j]
            current, used, cap = j, 0, pod.free_nodes
            prefix = f"{pod.name}/n"  # the names of Minipod.node_names() without leaves
            listed = pod.node_names() if pod.leaves else None
        if used >= cap:
            raise InvalidSolutionError(
                f"minipod {pods[j].name!r} hosts more than its {cap} free nodes"
            )
        order[k] = prefix + str(used) if listed is None else listed[used]
        used += 1
    return order


def to_dict(instance: PlacementInstance, placement: Placement) -> dict[str, Any]:
    """JSON form: ``matrix`` (minipod indices), ``minipods`` (their names), ``rank_order``,
    and ``nodes`` (rows of node names like ``matrix``) when the placement has a node
    assignment."""
    out: dict[str, Any] = {
        "matrix": [list(row) for row in placement.matrix],
        "minipods": [pod.name for pod in instance.minipods],
        "rank_order": rank_order(instance, placement) if not check(instance, placement) else [],
    }
    if placement.nodes is not None:
        out["nodes"] = [list(row) for row in placement.nodes]
    return out


def from_dict(instance: PlacementInstance, data: Mapping[str, Any]) -> Placement:
    """Read a placement from its JSON form (``matrix`` is needed, ``nodes`` is read when
    present)."""
    matrix = data.get("matrix") if isinstance(data, Mapping) else None
    if not isinstance(matrix, list) or not all(isinstance(row, list) for row in matrix):
        raise InvalidSolutionError("solution.matrix: must be a list of rows of minipod indices")
    if any(isinstance(x, bool) or not isinstance(x, int) for row in matrix for x in row):
        raise InvalidSolutionError("solution.matrix: entries must be integer minipod indices")
    nodes = data.get("nodes")
    if nodes is not None and (
        not isinstance(nodes, list)
        or not all(isinstance(row, list) and all(isinstance(x, str) for x in row) for row in nodes)
    ):
        raise InvalidSolutionError("solution.nodes: must be a list of rows of node names")
    return Placement.from_rows(matrix, nodes)


def format_placement(instance: PlacementInstance, placement: Placement) -> str:
    """The matrix as a text table like Arnold Fig. 12: one line per PP group (row).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", (Minipod("a", 2), Minipod("b", 2)), dp=2, tp=8, pp=2,
    ...                          alpha=0.5)
    >>> print(format_placement(inst, Placement(((0, 0), (1, 1)))))
           stage0  stage1
    pp0    a       a
    pp1    b       b
    """
    names = [pod.name for pod in instance.minipods]
    width = max(6, *(len(n) for n in names)) + 2
    header = " " * 7 + "".join(f"stage{c}".ljust(width) for c in range(instance.cols))
    lines = [header.rstrip()]
    for r, row in enumerate(placement.matrix):
        lines.append((f"pp{r}".ljust(7) + "".join(names[p].ljust(width) for p in row)).rstrip())
    return "\n".join(lines)


def _describe_levels(instance: PlacementInstance, placement: Placement) -> list[str]:
    """The lines of :func:`describe` with the spreads at every level."""
    scores = level_scores(instance, placement)
    mode = instance.objective.mode
    how = {
        "top": "objective: the minipod level (Arnold eq. 2)",
        "lex": "objective: lexicographic from the top",
        "weighted": "objective: weights "
        + ", ".join(f"{w:g}" for w in instance.objective.weights)
        + f" -> {combine(instance, scores):.6g}",
    }[mode]
    width = max(len(name) for name in instance.levels)
    lines = [f"spreads at every level ({how}):"]
    for name, level in zip(instance.levels, scores, strict=True):
        lines.append(
            f"  {name.ljust(width)}  DP spread {level.dp_spread:>3}  PP spread "
            f"{level.pp_spread:>3}  score {level.score:.6g}"
        )
    return lines


DESCRIBE_ROWS = 16
"""PP groups :func:`describe` shows in its matrix before it summarises the rest."""
DESCRIBE_NODES = 8
"""Nodes of the rank order :func:`describe` lists (``--json`` has them all)."""


def describe(instance: PlacementInstance, placement: Placement) -> str:
    """What ``topoopt solve`` prints: the objective with its parts, each minipod's share of the
    job, the node order a launcher uses, and the matrix (the first :data:`DESCRIBE_ROWS` PP
    groups).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", (Minipod("a", 3), Minipod("b", 2), Minipod("c", 4)),
    ...                          dp=2, tp=8, pp=2, alpha=0.25)
    >>> print(describe(inst, Placement(((0, 0), (1, 1)))))
    objective 0.5 = 0.25 x DP spread 2 + 0.75 x PP spread 0 (Arnold eq. 2; lower is better)
      DP spread: the most minipods one DP group (the 2 nodes of one stage) spans, 0 inside one
      PP spread: the most minipods one pipeline (the 2 nodes of one PP group) spans, 0 inside one
    job: dp 2 x tp 8 x pp 2 = 2 PP groups x 2 stages = 4 nodes of 8 GPUs
    minipods used: 2 of 3
    minipod a: 2 of 3 free nodes: stages 0-1 of PP group 0
    minipod b: 2 of 2 free nodes: stages 0-1 of PP group 1
    not used: c (4 free nodes)
    node order (rank order; node k runs global ranks 8k .. 8k+7): a/n0 b/n0 a/n1 b/n1
    placement (rows: PP groups, columns: stages):
           stage0  stage1
    pp0    a       a
    pp1    b       b
    """
    names = [pod.name for pod in instance.minipods]
    dp_s, pp_s = dp_spread(placement), pp_spread(placement)
    value = f"objective {evaluate(instance, placement):.6g}"
    top = f"{instance.alpha:g} x DP spread {dp_s} + {instance.beta:g} x PP spread {pp_s}"
    lines = [f"{value} = {top} (Arnold eq. 2; lower is better)"]
    if instance.objective.mode == "weighted":
        parts = " + ".join(
            f"{w:g} x {name} {level.score:.6g}"
            for w, name, level in zip(
                instance.objective.weights,
                instance.levels,
                level_scores(instance, placement),
                strict=True,
            )
        )
        lines = [
            f"{value} = {parts} (the levels' scores, weighted; lower is better)",
            f"minipod level: {top} (Arnold eq. 2)",
        ]
    elif instance.objective.mode == "lex":
        lines = [
            f"{value} = {top} (Arnold eq. 2 at the minipods, the first of the levels' scores "
            "compared lexicographically; lower is better)"
        ]
    lines += [
        f"  DP spread: the most minipods one DP group (the {instance.rows} nodes of one stage) "
        "spans, 0 inside one",
        f"  PP spread: the most minipods one pipeline (the {instance.cols} nodes of one PP group) "
        "spans, 0 inside one",
    ]
    cells: dict[int, dict[tuple[int, ...], list[int]]] = {}
    for r, row in enumerate(placement.matrix):
        for pod in set(row):
            stages = tuple(c for c, p in enumerate(row) if p == pod)
            cells.setdefault(pod, {}).setdefault(stages, []).append(r)
    g = instance.gpus_per_node
    lines.append(
        f"job: dp {instance.dp} x tp {instance.tp} x pp {instance.pp} = {instance.rows} PP groups "
        f"x {instance.cols} stages = {instance.n_nodes} nodes of {g} GPUs"
    )
    lines.append(f"minipods used: {len(cells)} of {instance.n_minipods}")
    for pod in sorted(cells):
        taken = sum(len(stages) * len(rows) for stages, rows in cells[pod].items())
        shares = [
            f"{'stage' if len(stages) == 1 else 'stages'} {ranges(stages)} of "
            f"{'PP group' if len(rows) == 1 else 'PP groups'} {ranges(rows)}"
            for stages, rows in sorted(cells[pod].items())
        ]
        lines.append(
            f"minipod {names[pod]}: {taken} of {instance.minipods[pod].free_nodes} free nodes: "
            f"{shortened(shares, 4, '; ')}"
        )
    idle = [p for p in range(instance.n_minipods) if p not in cells]
    if idle:
        free = sum(instance.minipods[p].free_nodes for p in idle)
        lines.append(
            f"not used: {shortened([names[p] for p in idle], 8, ', ')} ({free} free nodes)"
        )
    if has_leaves(instance):
        leaf = leaf_spreads(instance, placement)
        how = "node assignment" if placement.nodes is not None else "rank-order fill"
        lines.append(
            f"leaf level ({how}): DP spread {leaf.dp_spread}, PP spread {leaf.pp_spread}, "
            f"score {leaf.score:.6g} (the same D over leaves)"
        )
        lines.extend(_describe_levels(instance, placement))
    order = rank_order(instance, placement)
    lines.append(
        f"node order (rank order; node k runs global ranks {g}k .. {g}k+{g - 1}): "
        f"{shortened(order, DESCRIBE_NODES)}"
        + (" (--json: solution.rank_order has all)" if len(order) > DESCRIBE_NODES else "")
    )
    shown = Placement(placement.matrix[:DESCRIBE_ROWS])  # the matrix only
    lines.append("placement (rows: PP groups, columns: stages):")
    lines.append(format_placement(instance, shown))
    if instance.rows > DESCRIBE_ROWS:
        lines.append(
            f"... and {instance.rows - DESCRIBE_ROWS} more PP groups (--json has them all)"
        )
    return "\n".join(lines)
