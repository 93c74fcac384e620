"""Exact MIP of the placement score (Arnold eq. 2–3), monolithic and per target spreads.

Notation (every symbol is also defined in ``docs/placement.md``): rows ``r`` (PP groups),
columns ``c`` (DP groups), minipods ``j`` with free nodes ``f_j``.

* ``x[r,c,j]`` binary: cell ``(r, c)`` is placed in minipod ``j``;
* ``u[r,j]`` / ``v[c,j]``: row ``r`` / column ``c`` touches minipod ``j``;
* ``K_pp >= sum_j u[r,j]`` and ``K_dp >= sum_j v[c,j]``: largest number of minipods a row /
  column touches;
* ``D(K) = K if K >= 2 else 0`` (eq. 3) is linearised with one binary ``w`` per dimension:
  ``P >= K - 1 + w`` and ``K <= 1 + (M - 1) w``, so ``P = 0`` for ``K = 1`` and ``P >= K``
  otherwise. Because ``D`` is non-decreasing, ``max_r D(row_r) = D(max_r K_r)``.

:func:`build` is the monolithic model ``min alpha * P_dp + beta * P_pp`` (eq. 2).
:func:`build_feasibility` (also ``build(instance, A, B)``) fixes the target spreads:
``sum_j v[c,j] <= A`` and ``sum_j u[r,j] <= B`` with a constant objective; the solver
``placement/exact-mip`` (:mod:`topoopt.placement.solvers.mip`) uses it inside a decomposition
over ``(A, B)``.

Both models have ``rows * cols * M`` assignment variables, each with two touch constraints
(about 8–9 KB and 0.2 ms each to build and hand to HiGHS); :func:`model_size` counts them and
``placement/exact-mip`` builds no model with more than :data:`MAX_ASSIGNMENTS`.

The module follows the formulation protocol of :mod:`topoopt.core.formulation`
(:func:`build`, :func:`extract`, :func:`warm_start`; data as ``Param`` s, module-level rules).
"""

from __future__ import annotations

import pyomo.environ as pyo

from topoopt.core.errors import InvalidOptionError
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement

MAX_ASSIGNMENTS = 50_000
"""Largest model ``placement/exact-mip`` builds, in assignment variables ``x[r, c, j]``
(:func:`model_size`); about 0.45 GB and 10 s to build and translate at the limit. Raise it by
assigning ``topoopt.placement.formulations.exact.MAX_ASSIGNMENTS``."""


def model_size(instance: PlacementInstance) -> int:
    """Assignment variables ``x[r, c, j]`` of either model (see :data:`MAX_ASSIGNMENTS`).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", (Minipod("a", 8), Minipod("b", 8)), dp=4, tp=8, pp=2,
    ...                          alpha=0.5)
    >>> model_size(inst)
    16
    """
    return instance.rows * instance.cols * instance.n_minipods


def _assignment_core(instance: PlacementInstance, *, binary_usage: bool) -> pyo.ConcreteModel:
    """Variables ``x``, ``u``, ``v`` with assignment, capacity and usage-linking constraints."""
    m = pyo.ConcreteModel(name=f"placement-exact-{instance.name}")
    m.R = pyo.RangeSet(0, instance.rows - 1)
    m.C = pyo.RangeSet(0, instance.cols - 1)
    m.J = pyo.RangeSet(0, instance.n_minipods - 1)
    m.free = pyo.Param(m.J, initialize=dict(enumerate(instance.capacities)))
    usage_domain = pyo.Binary if binary_usage else pyo.UnitInterval
    m.x = pyo.Var(m.R, m.C, m.J, domain=pyo.Binary)
    m.u = pyo.Var(m.R, m.J, domain=usage_domain)
    m.v = pyo.Var(m.C, m.J, domain=usage_domain)
    m.assign = pyo.Constraint(m.R, m.C, rule=_assign_rule)
    m.capacity = pyo.Constraint(m.J, rule=_capacity_rule)
    m.row_touch = pyo.Constraint(m.R, m.C, m.J, rule=_row_touch_rule)
    m.col_touch = pyo.Constraint(m.R, m.C, m.J, rule=_col_touch_rule)
    return m


def _assign_rule(m: pyo.ConcreteModel, r: int, c: int) -> pyo.Expression:
    return pyo.quicksum(m.x[r, c, j] for j in m.J) == 1


def _capacity_rule(m: pyo.ConcreteModel, j: int) -> pyo.Expression:
    return pyo.quicksum(m.x[r, c, j] for r in m.R for c in m.C) <= m.free[j]


def _row_touch_rule(m: pyo.ConcreteModel, r: int, c: int, j: int) -> pyo.Expression:
    return m.u[r, j] >= m.x[r, c, j]


def _col_touch_rule(m: pyo.ConcreteModel, r: int, c: int, j: int) -> pyo.Expression:
    return m.v[c, j] >= m.x[r, c, j]


def _row_count_rule(m: pyo.ConcreteModel, r: int) -> pyo.Expression:
    return m.K_pp >= pyo.quicksum(m.u[r, j] for j in m.J)


def _col_count_rule(m: pyo.ConcreteModel, c: int) -> pyo.Expression:
    return m.K_dp >= pyo.quicksum(m.v[c, j] for j in m.J)


def _row_limit_rule(m: pyo.ConcreteModel, r: int) -> pyo.Expression:
    return pyo.quicksum(m.u[r, j] for j in m.J) <= m.max_pp_use


def _col_limit_rule(m: pyo.ConcreteModel, c: int) -> pyo.Expression:
    return pyo.quicksum(m.v[c, j] for j in m.J) <= m.max_dp_use


def _row_order_rule(m: pyo.ConcreteModel, r: int) -> pyo.Expression:
    if r == 0:
        return pyo.Constraint.Skip
    first = pyo.quicksum(j * m.x[r - 1, 0, j] for j in m.J)
    return first <= pyo.quicksum(j * m.x[r, 0, j] for j in m.J)


def _spread_dp_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """``P_dp >= K_dp - 1 + w_dp`` (eq. 3 linearised: ``D(K) >= K`` when ``K >= 2``)."""
    return m.P_dp >= m.K_dp - 1 + m.w_dp


def _single_dp_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """``K_dp <= 1 + (M - 1) w_dp`` (``w_dp = 0`` forces ``K_dp = 1``, where ``D = 0``)."""
    return m.K_dp <= 1 + (pyo.value(m.n_pods) - 1) * m.w_dp


def _spread_pp_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """``P_pp >= K_pp - 1 + w_pp``."""
    return m.P_pp >= m.K_pp - 1 + m.w_pp


def _single_pp_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """``K_pp <= 1 + (M - 1) w_pp``."""
    return m.K_pp <= 1 + (pyo.value(m.n_pods) - 1) * m.w_pp


def _score_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """Eq. 2: ``alpha * D(max column spread) + beta * D(max row spread)``."""
    return pyo.value(m.alpha) * m.P_dp + pyo.value(m.beta) * m.P_pp


def _constant_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    return 0.0


def build(
    instance: PlacementInstance, max_dp_use: int | None = None, max_pp_use: int | None = None
) -> pyo.ConcreteModel:
    """The monolithic exact model ``min alpha * P_dp + beta * P_pp`` (eq. 2 linearised), or
    with target spreads the feasibility model of :func:`build_feasibility`.

    Parameters
    ----------
    instance
        The placement instance.
    max_dp_use, max_pp_use
        Target spreads ``A`` and ``B``; give both for the feasibility model.

    Returns
    -------
    pyomo.environ.ConcreteModel
        The monolithic model has variables ``x, u, v, K_dp, K_pp, w_dp, w_pp, P_dp, P_pp``.
    """
    if max_dp_use is not None or max_pp_use is not None:
        if max_dp_use is None or max_pp_use is None:
            raise InvalidOptionError("max_dp_use, max_pp_use: give both target spreads or none")
        return build_feasibility(instance, max_dp_use, max_pp_use)
    m = _assignment_core(instance, binary_usage=False)
    n_pods = instance.n_minipods
    m.n_pods = pyo.Param(initialize=n_pods, within=pyo.PositiveIntegers)
    m.alpha = pyo.Param(initialize=instance.alpha, within=pyo.NonNegativeReals)
    m.beta = pyo.Param(initialize=instance.beta, within=pyo.NonNegativeReals)
    for dim in ("dp", "pp"):
        setattr(m, f"K_{dim}", pyo.Var(bounds=(1, n_pods)))
        setattr(m, f"w_{dim}", pyo.Var(domain=pyo.Binary))
        setattr(m, f"P_{dim}", pyo.Var(bounds=(0, n_pods)))
    m.row_count = pyo.Constraint(m.R, rule=_row_count_rule)
    m.col_count = pyo.Constraint(m.C, rule=_col_count_rule)
    m.spread_dp = pyo.Constraint(rule=_spread_dp_rule)
    m.single_dp = pyo.Constraint(rule=_single_dp_rule)
    m.spread_pp = pyo.Constraint(rule=_spread_pp_rule)
    m.single_pp = pyo.Constraint(rule=_single_pp_rule)
    m.score = pyo.Objective(rule=_score_rule)
    return m


def build_feasibility(
    instance: PlacementInstance, max_dp_use: int, max_pp_use: int
) -> pyo.ConcreteModel:
    """Feasibility model for target spreads: every column touches at most ``max_dp_use``
    minipods and every row at most ``max_pp_use``.

    Rows are ordered by the index of their first cell's minipod (``sum_j j x[r,0,j]``
    non-decreasing), a valid symmetry cut because rows are interchangeable.
    """
    m = _assignment_core(instance, binary_usage=True)
    m.max_dp_use = pyo.Param(initialize=max_dp_use, within=pyo.PositiveIntegers)
    m.max_pp_use = pyo.Param(initialize=max_pp_use, within=pyo.PositiveIntegers)
    m.row_limit = pyo.Constraint(m.R, rule=_row_limit_rule)
    m.col_limit = pyo.Constraint(m.C, rule=_col_limit_rule)
    m.row_order = pyo.Constraint(m.R, rule=_row_order_rule)
    m.score = pyo.Objective(rule=_constant_rule)
    return m


def warm_start(model: pyo.ConcreteModel, placement: Placement) -> None:
    """Set every variable of ``model`` to the values of ``placement`` (a complete MIP start)."""
    matrix = placement.matrix
    for (r, c, j), var in model.x.items():
        var.set_value(1 if matrix[r][c] == j else 0)
    for (r, j), var in model.u.items():
        var.set_value(1 if j in matrix[r] else 0)
    for (c, j), var in model.v.items():
        var.set_value(1 if any(row[c] == j for row in matrix) else 0)
    if model.find_component("K_dp") is not None:  # the monolithic model
        k_dp = max(len({row[c] for row in matrix}) for c in model.C)
        k_pp = max(len(set(row)) for row in matrix)
        for dim, k in (("dp", k_dp), ("pp", k_pp)):
            model.component(f"K_{dim}").set_value(k)
            model.component(f"w_{dim}").set_value(1 if k >= 2 else 0)
            model.component(f"P_{dim}").set_value(k if k >= 2 else 0)


def extract(model: pyo.ConcreteModel, instance: PlacementInstance) -> Placement:
    """The placement encoded by the loaded values of ``x`` (largest value per cell)."""
    matrix = [[0] * instance.cols for _ in range(instance.rows)]
    best = [[-1.0] * instance.cols for _ in range(instance.rows)]
    for (r, c, j), var in model.x.items():
        value = pyo.value(var)
        if value > best[r][c]:
            best[r][c], matrix[r][c] = value, j
    return Placement.from_rows(matrix)
