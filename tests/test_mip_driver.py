"""The MIP backend driver: termination mapping, incumbents, bounds, warm starts, errors."""

from __future__ import annotations

import importlib.util

import pyomo.environ as pyo
import pytest

from topoopt.core.errors import BackendUnavailableError
from topoopt.core.backends import available_backends, resolve_backend
from topoopt.core.mip import solve_model
from topoopt.core.status import TerminationReason
from topoopt.placement.formulations import exact
from topoopt.placement.generate import arnold_paper
from topoopt.placement.solvers.baselines import best_fit_pods, fill_in_rank_order

BACKENDS = [b for b in ("highs", "scip") if b in available_backends()]


def knapsack(capacity: int = 10) -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(4), domain=pyo.Binary)
    weights, values = [5, 4, 6, 3], [10, 40, 30, 50]
    m.cap = pyo.Constraint(expr=sum(w * m.x[i] for i, w in enumerate(weights)) <= capacity)
    m.obj = pyo.Objective(expr=sum(v * m.x[i] for i, v in enumerate(values)), sense=pyo.maximize)
    return m


@pytest.mark.parametrize("backend", BACKENDS)
def test_optimal_with_bound(backend):
    m = knapsack()
    out = solve_model(m, backend=backend, threads=1, seed=3)
    assert out.termination is TerminationReason.OPTIMAL and out.has_solution
    assert out.objective == pytest.approx(90) and out.bound == pytest.approx(90)
    assert [round(pyo.value(m.x[i])) for i in range(4)] == [0, 1, 0, 1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_infeasible_model(backend):
    m = knapsack()
    m.force = pyo.Constraint(expr=m.x[0] + m.x[2] == 2)
    out = solve_model(m, backend=backend)
    assert out.termination is TerminationReason.INFEASIBLE
    assert not out.has_solution and out.bound is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_time_limit_keeps_the_warm_start_incumbent(backend):
    """The monolithic exact model of setting (iii) cannot be proven in a second; the warm
    start is loaded back as the incumbent and a bound is reported."""
    inst = next(i for i in arnold_paper() if i.name == "iii-even-a0.5")
    model = exact.build(inst)
    start = fill_in_rank_order(inst, best_fit_pods(inst))
    exact.warm_start(model, start)
    out = solve_model(model, backend=backend, time_limit=1.0, warmstart=True)
    assert out.termination is TerminationReason.TIME_LIMIT
    assert out.has_solution
    assert out.bound is not None and out.bound <= out.objective


@pytest.mark.parametrize("backend", BACKENDS)
def test_partial_warm_start_is_skipped_not_fatal(backend):
    m = knapsack()
    m.x[0].set_value(1)  # the other variables have no value
    out = solve_model(m, backend=backend, warmstart=True)
    assert out.termination is TerminationReason.OPTIMAL


def test_unknown_and_missing_backends_are_named():
    with pytest.raises(BackendUnavailableError, match="unknown MIP backend 'glpk'"):
        resolve_backend("glpk")
    if importlib.util.find_spec("gurobipy") is None:
        with pytest.raises(BackendUnavailableError, match="gurobipy"):
            resolve_backend("gurobi")
    assert resolve_backend(None) == "highs"
