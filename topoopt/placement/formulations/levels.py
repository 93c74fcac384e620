"""Exact MIP of the placement over every level of the tree (Arnold eq. 2–3 at each level).

Notation (``docs/levels.md``): rows ``r`` (PP groups), columns ``c`` (DP groups), leaves
``k`` with free nodes ``f_k`` (only leaves with a free node get variables), levels
``l = 0 .. L-1`` (0 = the minipods, ``L-1`` = the leaves), ``sw_l(k)`` the level-``l``
switch above leaf ``k`` and ``S_l`` the switches of level ``l`` with a free node below.

* ``x[r,c,k]`` binary: cell ``(r, c)`` is on leaf ``k``;
  ``sum_k x[r,c,k] = 1``, ``sum_{r,c} x[r,c,k] <= f_k``;
* ``u[l,s,r] >= sum_{k: sw_l(k) = s} x[r,c,k]`` for every ``c`` (row ``r`` touches switch
  ``s``; the sum is 0 or 1, so one inequality per cell aggregates the leaves below ``s``),
  ``v[l,s,c]`` likewise for columns; both in ``[0, 1]`` (minimisation makes them tight);
* ``Kpp[l] >= sum_s u[l,s,r]``, ``Kdp[l] >= sum_s v[l,s,c]``: the most level-``l``
  switches a row / a column touches;
* ``D`` (eq. 3) linearised per level and dimension with one binary ``w``:
  ``P >= K - 1 + w``, ``K <= 1 + (M - 1) w`` (``P = 0`` when ``K = 1``, else ``P >= K``);
* ``S[l] = alpha * Pdp[l] + beta * Ppp[l]``, the level's score (eq. 2).

The objective is ``sum_l weight[l] * S[l]`` and ``S[l] <= cap[l]`` holds for every level;
``weight`` and ``cap`` are mutable parameters, so one model serves both objectives of
:class:`~topoopt.placement.instance.LevelObjective`: ``weighted`` (the instance's weights,
no caps) and ``lex`` (stage ``t`` minimises ``S[t]`` with ``cap[l]`` the proven optimum of
every level ``l < t``; :class:`~topoopt.placement.solvers.levels.LevelsSolver` sets them).
Rows are interchangeable, so they are ordered by the leaf of their first cell
(``sum_k k x[r-1,0,k] <= sum_k k x[r,0,k]``) unless ``symmetric=False``.

The model has ``rows * cols * K`` assignment variables and ``2 * rows * cols * sum_l |S_l|``
touch rows: it is the certificate of the multi-level solver on small instances, not its
method at scale. The module follows the formulation protocol of
:mod:`topoopt.core.formulation`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyomo.environ as pyo

from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement
from topoopt.placement.tree import Tree, build_tree, placement_from_leaves

NO_CAP_MARGIN = 1.0
"""``cap[l]`` starts at the level's switch count plus this margin, a value that binds no
placement: ``S[l] <= (alpha + beta) M_l = M_l`` (``P = K <= M_l`` is feasible). A constant
``1e9`` spread the right-hand sides over 15 orders of magnitude next to a capped
``0 + 1e-6`` (HiGHS warned that the model was badly scaled)."""


def model_size(instance: PlacementInstance) -> int:
    """Assignment variables ``x[r, c, k]`` (leaves with a free node only).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", (Minipod("a", 8), Minipod("b", 0)), dp=4, tp=8, pp=2,
    ...                          alpha=0.5)
    >>> model_size(inst)
    8
    """
    return instance.rows * instance.cols * build_tree(instance).free_leaves


def build(
    instance: PlacementInstance,
    *,
    weights: tuple[float, ...] | None = None,
    symmetric: bool = True,
) -> pyo.ConcreteModel:
    """The model of ``instance``; ``weights`` (one per level) default to the instance's
    objective: its weights for ``weighted``, ``(1, 0, ...)`` otherwise."""
    tree = build_tree(instance)
    levels = tree.n_levels
    if weights is None:
        weights = (
            instance.objective.weights
            if instance.objective.mode == "weighted"
            else (1.0,) + (0.0,) * (levels - 1)
        )
    leaves = [k for k in range(tree.n_leaves) if tree.leaf_free[k] > 0]
    switches = [
        (lv, s)
        for lv in range(levels)
        for s in range(len(tree.capacity[lv]))
        if tree.capacity[lv][s] > 0
    ]
    m = pyo.ConcreteModel(name=f"placement-levels-{instance.name}")
    m.R = pyo.RangeSet(0, instance.rows - 1)
    m.C = pyo.RangeSet(0, instance.cols - 1)
    m.K = pyo.Set(initialize=leaves, ordered=True)
    m.L = pyo.RangeSet(0, levels - 1)
    m.LS = pyo.Set(initialize=switches, dimen=2, ordered=True)
    m.free = pyo.Param(m.K, initialize={k: int(tree.leaf_free[k]) for k in leaves})
    m.up = pyo.Param(
        m.L,
        m.K,
        initialize={(lv, k): int(tree.switch[lv, k]) for lv in range(levels) for k in leaves},
    )
    m.n_sw = pyo.Param(
        m.L, initialize={lv: sum(1 for x, _ in switches if x == lv) for lv in range(levels)}
    )
    named = {
        (j, name): k
        for k in leaves
        for j, local in [tree.leaf_key[k]]
        for name in (
            instance.minipods[j].leaves[local].nodes
            if instance.minipods[j].leaves
            else instance.minipods[j].node_names()
        )
    }
    m.pod_of = pyo.Param(m.K, initialize={k: tree.leaf_key[k][0] for k in leaves})
    m.NODES = pyo.Set(initialize=list(named), dimen=2, ordered=True)
    m.node_leaf = pyo.Param(m.NODES, initialize=named, within=pyo.Any)
    m.alpha = pyo.Param(initialize=instance.alpha)
    m.beta = pyo.Param(initialize=instance.beta)
    m.weight = pyo.Param(m.L, initialize=dict(enumerate(weights)), mutable=True)
    m.cap = pyo.Param(
        m.L, initialize={lv: m.n_sw[lv] + NO_CAP_MARGIN for lv in range(levels)}, mutable=True
    )
    m.x = pyo.Var(m.R, m.C, m.K, domain=pyo.Binary)
    m.u = pyo.Var(m.LS, m.R, domain=pyo.UnitInterval)
    m.v = pyo.Var(m.LS, m.C, domain=pyo.UnitInterval)
    m.Kpp = pyo.Var(m.L, bounds=(1, None))
    m.Kdp = pyo.Var(m.L, bounds=(1, None))
    m.Ppp = pyo.Var(m.L, domain=pyo.NonNegativeReals)
    m.Pdp = pyo.Var(m.L, domain=pyo.NonNegativeReals)
    m.wpp = pyo.Var(m.L, domain=pyo.Binary)
    m.wdp = pyo.Var(m.L, domain=pyo.Binary)
    m.assign = pyo.Constraint(m.R, m.C, rule=_assign_rule)
    m.capacity = pyo.Constraint(m.K, rule=_capacity_rule)
    m.row_touch = pyo.Constraint(m.LS, m.R, m.C, rule=_row_touch_rule)
    m.col_touch = pyo.Constraint(m.LS, m.R, m.C, rule=_col_touch_rule)
    m.row_count = pyo.Constraint(m.L, m.R, rule=_row_count_rule)
    m.col_count = pyo.Constraint(m.L, m.C, rule=_col_count_rule)
    m.pp_spread = pyo.Constraint(m.L, rule=_pp_spread_rule)
    m.pp_one = pyo.Constraint(m.L, rule=_pp_one_rule)
    m.dp_spread = pyo.Constraint(m.L, rule=_dp_spread_rule)
    m.dp_one = pyo.Constraint(m.L, rule=_dp_one_rule)
    m.S = pyo.Expression(m.L, rule=_score_rule)
    m.capped = pyo.Constraint(m.L, rule=_cap_rule)
    if symmetric and instance.rows > 1 and not instance.constraints.rank_bound:
        m.R1 = pyo.RangeSet(1, instance.rows - 1)
        m.row_order = pyo.Constraint(m.R1, rule=_row_order_rule)
    if instance.constraints:
        _constrain(m, instance, tree, switches)
    m.obj = pyo.Objective(rule=_objective_rule, sense=pyo.minimize)
    return m


def _constrain(
    m: pyo.ConcreteModel,
    instance: PlacementInstance,
    tree: Tree,
    switches: list[tuple[int, int]],
) -> None:
    """The instance's constraints (``docs/levels.md``): the job in one switch of its level
    (``z``), each slice in one switch of its level (``y``), at most ``max_switches`` leaves
    used (``used``)."""
    from topoopt.placement.constraints import job_level, slice_rules

    rows = instance.rows
    level = job_level(instance, tree)
    if level is not None:
        m.JOB = pyo.Set(initialize=[s for lv, s in switches if lv == level], ordered=True)
        m.job_level = pyo.Param(initialize=level)
        m.z = pyo.Var(m.JOB, domain=pyo.Binary)
        m.job_one = pyo.Constraint(rule=_job_one_rule)
        m.job_in = pyo.Constraint(m.JOB, m.R, m.C, rule=_job_in_rule)
    rules = slice_rules(instance)
    if rules:
        slices = [
            (i, t) for i, (size, _, _) in enumerate(rules) for t in range(instance.n_nodes // size)
        ]
        m.SLICES = pyo.Set(initialize=slices, dimen=2, ordered=True)
        m.slice_level = pyo.Param(
            range(len(rules)), initialize={i: lv for i, (_, lv, _) in enumerate(rules)}
        )
        m.SLICE_SW = pyo.Set(
            initialize=[(i, t, s) for i, t in slices for lv, s in switches if lv == rules[i][1]],
            dimen=3,
            ordered=True,
        )
        m.SLICE_CELL = pyo.Set(
            initialize=[
                (i, t, s, k % rows, k // rows)
                for i, t, s in m.SLICE_SW
                for k in range(t * rules[i][0], (t + 1) * rules[i][0])
            ],
            dimen=5,
            ordered=True,
        )
        m.y = pyo.Var(m.SLICE_SW, domain=pyo.Binary)
        m.slice_one = pyo.Constraint(m.SLICES, rule=_slice_one_rule)
        m.slice_in = pyo.Constraint(m.SLICE_CELL, rule=_slice_in_rule)
    if instance.constraints.max_switches is not None:
        m.max_leaves = pyo.Param(initialize=instance.constraints.max_switches)
        m.used = pyo.Var(m.K, domain=pyo.Binary)
        m.leaf_used = pyo.Constraint(m.K, rule=_leaf_used_rule)
        m.leaves_cap = pyo.Constraint(rule=_leaves_cap_rule)


def _job_one_rule(m: pyo.ConcreteModel) -> Any:
    return pyo.quicksum(m.z[s] for s in m.JOB) == 1


def _job_in_rule(m: pyo.ConcreteModel, s: int, r: int, c: int) -> Any:
    return pyo.quicksum(m.x[r, c, k] for k in _below(m, m.job_level, s)) <= m.z[s]


def _slice_one_rule(m: pyo.ConcreteModel, i: int, t: int) -> Any:
    return pyo.quicksum(m.y[i, t, s] for (a, b, s) in m.SLICE_SW if (a, b) == (i, t)) == 1


def _slice_in_rule(m: pyo.ConcreteModel, i: int, t: int, s: int, r: int, c: int) -> Any:
    below = _below(m, m.slice_level[i], s)
    return pyo.quicksum(m.x[r, c, k] for k in below) <= m.y[i, t, s]


def _leaf_used_rule(m: pyo.ConcreteModel, k: int) -> Any:
    return pyo.quicksum(m.x[r, c, k] for r in m.R for c in m.C) <= m.free[k] * m.used[k]


def _leaves_cap_rule(m: pyo.ConcreteModel) -> Any:
    return pyo.quicksum(m.used[k] for k in m.K) <= m.max_leaves


def _below(m: pyo.ConcreteModel, lv: int, s: int) -> list[int]:
    return [k for k in m.K if m.up[lv, k] == s]


def _assign_rule(m: pyo.ConcreteModel, r: int, c: int) -> Any:
    return pyo.quicksum(m.x[r, c, k] for k in m.K) == 1


def _capacity_rule(m: pyo.ConcreteModel, k: int) -> Any:
    return pyo.quicksum(m.x[r, c, k] for r in m.R for c in m.C) <= m.free[k]


def _row_touch_rule(m: pyo.ConcreteModel, lv: int, s: int, r: int, c: int) -> Any:
    return m.u[lv, s, r] >= pyo.quicksum(m.x[r, c, k] for k in _below(m, lv, s))


def _col_touch_rule(m: pyo.ConcreteModel, lv: int, s: int, r: int, c: int) -> Any:
    return m.v[lv, s, c] >= pyo.quicksum(m.x[r, c, k] for k in _below(m, lv, s))


def _row_count_rule(m: pyo.ConcreteModel, lv: int, r: int) -> Any:
    return m.Kpp[lv] >= pyo.quicksum(m.u[x, s, r] for x, s in m.LS if x == lv)


def _col_count_rule(m: pyo.ConcreteModel, lv: int, c: int) -> Any:
    return m.Kdp[lv] >= pyo.quicksum(m.v[x, s, c] for x, s in m.LS if x == lv)


def _pp_spread_rule(m: pyo.ConcreteModel, lv: int) -> Any:
    return m.Ppp[lv] >= m.Kpp[lv] - 1 + m.wpp[lv]


def _pp_one_rule(m: pyo.ConcreteModel, lv: int) -> Any:
    return m.Kpp[lv] <= 1 + (m.n_sw[lv] - 1) * m.wpp[lv]


def _dp_spread_rule(m: pyo.ConcreteModel, lv: int) -> Any:
    return m.Pdp[lv] >= m.Kdp[lv] - 1 + m.wdp[lv]


def _dp_one_rule(m: pyo.ConcreteModel, lv: int) -> Any:
    return m.Kdp[lv] <= 1 + (m.n_sw[lv] - 1) * m.wdp[lv]


def _score_rule(m: pyo.ConcreteModel, lv: int) -> Any:
    return m.alpha * m.Pdp[lv] + m.beta * m.Ppp[lv]


def _cap_rule(m: pyo.ConcreteModel, lv: int) -> Any:
    return m.S[lv] <= m.cap[lv]


def _row_order_rule(m: pyo.ConcreteModel, r: int) -> Any:
    return pyo.quicksum(k * m.x[r - 1, 0, k] for k in m.K) <= pyo.quicksum(
        k * m.x[r, 0, k] for k in m.K
    )


def _objective_rule(m: pyo.ConcreteModel) -> Any:
    return pyo.quicksum(m.weight[lv] * m.S[lv] for lv in m.L)


def extract(model: pyo.ConcreteModel, instance: PlacementInstance) -> Placement:
    """The placement of the loaded ``x`` values (each cell on its largest ``x``)."""
    tree = build_tree(instance)
    leaves = list(model.K)
    grid = [
        [leaves[int(np.argmax([pyo.value(model.x[r, c, k]) for k in leaves]))] for c in model.C]
        for r in model.R
    ]
    return placement_from_leaves(instance, tree, grid)


def _fill(model: pyo.ConcreteModel, solution: Placement) -> np.ndarray:
    """The leaf of every cell under the rank-order fill of each minipod (its cells, by
    increasing rank ``c * rows + r``, take its leaves' free nodes in order)."""
    rows, cols = len(solution.matrix), len(solution.matrix[0])
    room: dict[int, list[list[int]]] = {}
    for k in model.K:
        room.setdefault(model.pod_of[k], []).append([k, model.free[k]])
    out = np.zeros((rows, cols), dtype=np.int64)
    for c in range(cols):
        for r in range(rows):
            slots = room[solution.matrix[r][c]]
            while slots[0][1] == 0:
                slots.pop(0)
            out[r, c] = slots[0][0]
            slots[0][1] -= 1
    return out


def warm_start(model: pyo.ConcreteModel, solution: Placement) -> None:
    """Set ``x`` and the touch, count and spread variables from a placement (its leaves from
    the node assignment, else from the rank-order fill)."""
    if solution.nodes is None:
        leaves = _fill(model, solution)
    else:
        leaves = np.asarray(
            [
                [model.node_leaf[j, name] for j, name in zip(row, names, strict=True)]
                for row, names in zip(solution.matrix, solution.nodes, strict=True)
            ],
            dtype=np.int64,
        )
    for (r, c, k), var in model.x.items():
        var.set_value(1 if leaves[r, c] == k else 0)
    up = {(lv, k): model.up[lv, k] for lv in model.L for k in model.K}
    rows = leaves.shape[0]
    if model.find_component("z") is not None:
        job = int(pyo.value(model.job_level))
        at = {up[job, k] for k in leaves.ravel().tolist()}
        for s in model.JOB:
            model.z[s].set_value(1 if s in at else 0)
    if model.find_component("y") is not None:
        for i, t, s in model.SLICE_SW:
            size = len([1 for key in model.SLICE_CELL if key[:3] == (i, t, s)])
            cells = [(k % rows, k // rows) for k in range(t * size, (t + 1) * size)]
            level = model.slice_level[i]
            model.y[i, t, s].set_value(
                1 if any(up[level, int(leaves[r, c])] == s for r, c in cells) else 0
            )
    if model.find_component("used") is not None:
        taken = set(leaves.ravel().tolist())
        for k in model.K:
            model.used[k].set_value(1 if k in taken else 0)
    for lv in model.L:
        grid = np.vectorize(lambda k, lv=lv: up[lv, k])(leaves)
        for x, s in model.LS:
            if x != lv:
                continue
            for r in model.R:
                model.u[lv, s, r].set_value(1 if (grid[r] == s).any() else 0)
            for c in model.C:
                model.v[lv, s, c].set_value(1 if (grid[:, c] == s).any() else 0)
        kpp = max(len(set(row.tolist())) for row in grid)
        kdp = max(len(set(col.tolist())) for col in grid.T)
        model.Kpp[lv].set_value(kpp)
        model.Kdp[lv].set_value(kdp)
        model.wpp[lv].set_value(int(kpp >= 2))
        model.wdp[lv].set_value(int(kdp >= 2))
        model.Ppp[lv].set_value(kpp if kpp >= 2 else 0)
        model.Pdp[lv].set_value(kdp if kdp >= 2 else 0)
