"""The MIP backend driver: termination mapping, incumbents, bounds, warm starts, errors,
``backend_options`` and ``log``, on every installed backend."""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

import numpy as np
import pyomo.environ as pyo
import pytest

import topoopt
from topoopt.core.backends import (
    APPSI_TERMINATION,
    BACKENDS,
    CONTRIB_TERMINATION,
    available_backends,
    get_backend,
    resolve_backend,
)
from topoopt.core.errors import BackendUnavailableError, InvalidOptionError
from topoopt.core.mip import _Raw, _unproven, solve_model
from topoopt.core.registry import get_family
from topoopt.core.status import TerminationReason
from topoopt.placement.formulations import exact
from topoopt.placement.generate import arnold_paper
from topoopt.placement.solvers.baselines import best_fit_pods, fill_in_rank_order

BACKENDS_HERE = available_backends()

# Backend option names that provoke an observable behaviour, per backend (the option names
# are the backends' own; that is the point of ``backend_options``).
PRESOLVE_OFF = {
    "highs": {"presolve": "off"},
    "scip": {"presolving/maxrounds": 0},
    "gurobi": {"Presolve": 0},
}
NODE_LIMIT = {
    "highs": {"mip_max_nodes": 1},
    "scip": {"limits/nodes": 1},
    "gurobi": {"NodeLimit": 1},
}
OBJECTIVE_STOP = {  # stop at the first incumbent better than 1 (maximisation)
    "highs": {"objective_target": 1.0},
    "scip": {"limits/primal": 1.0},
    "gurobi": {"BestObjStop": 1.0},
}
TIME_LIMIT = {"highs": "time_limit", "scip": "limits/time", "gurobi": "TimeLimit"}
BANNER = {"highs": "HiGHS", "scip": "SCIP", "gurobi": "Gurobi"}


def knapsack(capacity: int = 10) -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(4), domain=pyo.Binary)
    weights, values = [5, 4, 6, 3], [10, 40, 30, 50]
    m.cap = pyo.Constraint(expr=sum(w * m.x[i] for i, w in enumerate(weights)) <= capacity)
    m.obj = pyo.Objective(expr=sum(v * m.x[i] for i, v in enumerate(values)), sense=pyo.maximize)
    return m


def hard_knapsack(n: int = 40, seed: int = 0) -> pyo.ConcreteModel:
    """Weights and values nearly equal: presolve cannot solve it, branching takes seconds."""
    rng = np.random.default_rng(seed)
    weights = rng.integers(10**5, 10**6, n)
    values = weights + rng.integers(0, 1000, n)
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(n), domain=pyo.Binary)
    m.cap = pyo.Constraint(
        expr=sum(int(weights[i]) * m.x[i] for i in range(n)) <= int(weights.sum() // 2)
    )
    m.obj = pyo.Objective(expr=sum(int(values[i]) * m.x[i] for i in range(n)), sense=pyo.maximize)
    return m


def model_within_gurobi_limits(model: pyo.ConcreteModel) -> bool:
    """The pip licence of Gurobi takes at most 2000 variables and 2000 constraints."""
    n_vars = sum(1 for _ in model.component_data_objects(pyo.Var))
    n_cons = sum(1 for _ in model.component_data_objects(pyo.Constraint))
    return n_vars <= 2000 and n_cons <= 2000


# --------------------------------------------------------------------------- the records


def test_records_are_frozen_and_complete() -> None:
    for name, record in BACKENDS.items():
        assert record.name == name
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.name = "other"  # type: ignore[misc]
        assert record.interface in ("appsi", "contrib")
        assert record.seed_option and record.threads_option
        if record.interface == "appsi":
            assert record.options_attribute
    assert set(BACKENDS) == {"highs", "scip", "gurobi"}


def test_termination_maps_name_real_pyomo_conditions() -> None:
    """Every key of a status map is a member of its interface's TerminationCondition, and the
    objective limit maps to OBJECTIVE_LIMIT (it used to say ITERATION_LIMIT)."""
    from pyomo.contrib.appsi.base import TerminationCondition as AppsiTC
    from pyomo.contrib.solver.common.results import TerminationCondition as ContribTC

    enums = {"appsi": AppsiTC, "contrib": ContribTC}
    for record in BACKENDS.values():
        names = set(enums[record.interface].__members__)
        assert set(record.termination) <= names, record.name
        assert record.termination["objectiveLimit"] is TerminationReason.OBJECTIVE_LIMIT
    assert APPSI_TERMINATION["maxIterations"] is TerminationReason.ITERATION_LIMIT
    assert CONTRIB_TERMINATION["licensingProblems"] is TerminationReason.LICENSE
    assert "unknown" not in CONTRIB_TERMINATION  # -> ERROR


def test_unknown_and_missing_backends_are_named() -> None:
    with pytest.raises(BackendUnavailableError, match="unknown MIP backend 'glpk'"):
        resolve_backend("glpk")
    if importlib.util.find_spec("gurobipy") is None:
        with pytest.raises(BackendUnavailableError, match="gurobipy"):
            resolve_backend("gurobi")
    assert resolve_backend(None) == "highs"
    assert get_backend(None) is BACKENDS["highs"]


# --------------------------------------------------------------------------- solving


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_optimal_with_bound(backend: str) -> None:
    m = knapsack()
    out = solve_model(m, backend=backend, threads=1, seed=3)
    assert out.termination is TerminationReason.OPTIMAL and out.has_solution
    assert out.objective == pytest.approx(90) and out.bound == pytest.approx(90)
    assert [round(pyo.value(m.x[i])) for i in range(4)] == [0, 1, 0, 1]


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_infeasible_model(backend: str) -> None:
    m = knapsack()
    m.force = pyo.Constraint(expr=m.x[0] + m.x[2] == 2)
    out = solve_model(m, backend=backend)
    assert out.termination is TerminationReason.INFEASIBLE
    assert not out.has_solution and out.bound is None


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_time_limit_keeps_the_warm_start_incumbent(backend: str) -> None:
    """The monolithic exact model of setting (iii) cannot be proven in a second; the warm
    start is loaded back as the incumbent, and a bound, when the backend got as far as one (on
    a loaded machine SCIP can still be in its root LP at the limit), is at most its value. (Too
    large for Gurobi's size-limited licence, which must then say so.)"""
    inst = next(i for i in arnold_paper() if i.name == "iii-even-a0.5")
    model = exact.build(inst)
    exact.warm_start(model, fill_in_rank_order(inst, best_fit_pods(inst)))
    out = solve_model(model, backend=backend, time_limit=1.0, warmstart=True)
    if backend == "gurobi" and not model_within_gurobi_limits(model):
        # the licence refuses the model once it is translated, unless the second ran out while
        # it was translated (on a loaded machine)
        assert not out.has_solution
        assert out.termination in (TerminationReason.LICENSE, TerminationReason.TIME_LIMIT)
        expected = (
            "license too small"
            if out.termination is TerminationReason.LICENSE
            else ("the time limit passed while the model was translated")
        )
        assert expected in out.message, out
        return
    assert out.termination is TerminationReason.TIME_LIMIT
    assert out.has_solution
    assert out.bound is None or out.bound <= out.objective


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_partial_warm_start_is_skipped_not_fatal(backend: str) -> None:
    m = knapsack()
    m.x[0].set_value(1)  # the other variables have no value
    out = solve_model(m, backend=backend, warmstart=True)
    assert out.termination is TerminationReason.OPTIMAL
    skipped = "warm start skipped" in out.message
    assert skipped == (not BACKENDS[backend].partial_warm_start)


def test_threads_can_change_within_a_process() -> None:
    """HiGHS needs its global scheduler reset when the thread count changes."""
    for threads in (1, 2, 1):
        out = solve_model(knapsack(), backend="highs", threads=threads)
        assert out.termination is TerminationReason.OPTIMAL


@pytest.mark.skipif("gurobi" not in BACKENDS_HERE, reason="gurobipy is not installed")
def test_gurobi_size_limited_licence_is_a_license_termination() -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(2500), domain=pyo.Binary)
    m.obj = pyo.Objective(expr=pyo.quicksum(m.x.values()))
    out = solve_model(m, backend="gurobi")
    if model_within_gurobi_limits(m) or out.termination is TerminationReason.OPTIMAL:
        pytest.fail("expected the pip licence of Gurobi (size-limited)")
    assert out.termination is TerminationReason.LICENSE
    assert "license too small for this model" in out.message


# --------------------------------------------------------------------------- backend_options


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_backend_options_reach_the_solver(backend: str) -> None:
    """A node limit of one stops the branch and bound with an incumbent and a bound."""
    options = PRESOLVE_OFF[backend] | NODE_LIMIT[backend]
    out = solve_model(hard_knapsack(), backend=backend, backend_options=options)
    assert out.termination is TerminationReason.ITERATION_LIMIT, out.message
    assert out.has_solution and out.bound is not None
    assert out.objective <= out.bound


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_backend_options_win_over_topoopt_settings(backend: str) -> None:
    """The user's time limit replaces topoopt's (applied after it)."""
    out = solve_model(
        hard_knapsack(n=60),
        backend=backend,
        time_limit=600.0,
        backend_options=PRESOLVE_OFF[backend] | {TIME_LIMIT[backend]: 0.05},
    )
    assert out.termination is TerminationReason.TIME_LIMIT, out.message
    assert out.solve_s < 30


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_objective_limit_maps_to_objective_limit(backend: str) -> None:
    out = solve_model(hard_knapsack(), backend=backend, backend_options=OBJECTIVE_STOP[backend])
    assert out.termination is TerminationReason.OBJECTIVE_LIMIT, out.message
    assert out.has_solution


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_unknown_backend_option_is_a_topoopt_error(backend: str) -> None:
    with pytest.raises(InvalidOptionError, match=f"backend_options for {backend}: 'no_such_opt"):
        solve_model(knapsack(), backend=backend, backend_options={"no_such_opt": 1})
    name = next(iter(NODE_LIMIT[backend]))  # an integer option given a string
    with pytest.raises(InvalidOptionError, match=f"'{name}'.* rejects the value"):
        solve_model(knapsack(), backend=backend, backend_options={name: "many"})


def test_backend_options_must_be_a_mapping_of_names() -> None:
    with pytest.raises(InvalidOptionError, match="must be a mapping"):
        solve_model(knapsack(), backend_options=[("threads", 1)])  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="option names must be strings"):
        solve_model(knapsack(), backend_options={1: 2})  # type: ignore[dict-item]


# --------------------------------------------------------------------------- log


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_log_true_streams_to_stdout(backend: str, capfd: pytest.CaptureFixture[str]) -> None:
    solve_model(knapsack(), backend=backend)
    assert BANNER[backend] not in capfd.readouterr().out  # quiet by default
    out = solve_model(knapsack(), backend=backend, log=True)
    assert out.termination is TerminationReason.OPTIMAL
    assert BANNER[backend] in capfd.readouterr().out


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_log_callable_captures_lines(backend: str, capfd: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    out = solve_model(knapsack(), backend=backend, log=lines.append)
    assert out.termination is TerminationReason.OPTIMAL
    assert lines and all(isinstance(line, str) and "\n" not in line for line in lines)
    assert any(BANNER[backend] in line for line in lines)
    assert BANNER[backend] not in capfd.readouterr().out  # captured, not printed


def _market_split(n: int = 30, rows: int = 3, seed: int = 1) -> pyo.ConcreteModel:
    """Cornuéjols-Dawande market split (binary x, equality rows at half the row sums, slacks
    in the objective): thousands of branch-and-bound nodes on 30 variables."""
    a = np.random.default_rng(seed).integers(0, 100, size=(rows, n))
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(n), domain=pyo.Binary)
    m.s = pyo.Var(range(rows), range(2), domain=pyo.NonNegativeReals)
    m.split = pyo.Constraint(
        range(rows),
        rule=lambda m, i: (
            sum(int(a[i, j]) * m.x[j] for j in range(n)) + m.s[i, 0] - m.s[i, 1]
            == int(a[i].sum()) // 2
        ),
    )
    m.obj = pyo.Objective(expr=pyo.quicksum(m.s.values()))
    return m


@pytest.mark.skipif("scip" not in BACKENDS_HERE, reason="SCIP (pyscipopt) is not installed")
@pytest.mark.timeout(120)
@pytest.mark.parametrize("log", [False, "callable"])
def test_a_long_scip_log_does_not_block_the_solve(log: str | bool) -> None:
    """Pyomo drains SCIP's captured output with a Python thread; PySCIPOpt's ``optimize`` held
    the GIL, so a log beyond the pipe's 64 KiB (here one display line per node) blocked the
    solve for good, past its time limit. ``optimizeNogil`` lets the thread drain it."""
    lines: list[str] = []
    out = solve_model(
        _market_split(),
        backend="scip",
        time_limit=5,
        backend_options={"display/freq": 1},
        log=lines.append if log else False,
    )
    assert out.termination in (TerminationReason.OPTIMAL, TerminationReason.TIME_LIMIT)
    assert out.solve_s <= 5 * 1.05 + 1
    if log:
        assert sum(len(line) + 1 for line in lines) > 64 * 1024  # beyond the pipe's buffer


def test_log_callable_may_print(capfd: pytest.CaptureFixture[str]) -> None:
    """The callable runs after the backend returns, outside its output capture."""
    solve_model(knapsack(), log=print)
    assert "HiGHS" in capfd.readouterr().out


def test_bad_log_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="log: must be a bool or a callable"):
        solve_model(knapsack(), log="verbose")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- through solve()


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_solve_passes_backend_options_and_log(backend: str) -> None:
    inst = get_family("gpuselect").examples()[0]
    lines: list[str] = []
    result = topoopt.solve(inst, "gpuselect/mip", backend=backend, log=lines.append)
    assert result.status is topoopt.SolutionStatus.OPTIMAL
    assert any(BANNER[backend] in line for line in lines)
    limited = topoopt.solve(
        get_family("placement").examples()[1],
        "placement/exact-mip",
        backend=backend,
        method="monolithic",
        backend_options={TIME_LIMIT[backend]: 0.0},
    )
    assert limited.termination is TerminationReason.TIME_LIMIT, limited.message


def test_solve_checks_backend_options_before_building() -> None:
    inst = get_family("placement").examples()[0]
    with pytest.raises(InvalidOptionError, match="'no_such_opt': unknown HiGHS option"):
        topoopt.solve(inst, "placement/exact-mip", backend_options={"no_such_opt": 1})
    # solvers without a backend ignore backend settings, like ``backend`` itself
    result = topoopt.solve(inst, "placement/best-fit", backend_options={"no_such_opt": 1})
    assert result.is_ok and result.backend is None


def test_checking_highs_options_prints_nothing(tmp_path: Any) -> None:
    """``solve --json`` stays JSON when backend options are checked (HiGHS prints a banner on
    stdout when a ``Highs`` object is made; the checker makes its one with stdout closed)."""
    import json
    import subprocess
    import sys

    path = tmp_path / "inst.json"
    topoopt.save(get_family("gpuselect").examples()[0], path)
    command = [sys.executable, "-m", "topoopt.cli", "solve", str(path), "--json"]
    out = subprocess.run(
        [*command, "--solver", "gpuselect/mip"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["status"] == "optimal"


@pytest.mark.parametrize("sense", [pyo.minimize, pyo.maximize])
def test_an_optimal_claim_beyond_the_gap_is_caught(sense: Any) -> None:
    """The check behind dropping a warm start the backend called optimal with a bound that
    does not meet it (HiGHS 1.16, see ``tests/clusterselect/test_solvers.py``)."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.Integers, bounds=(0, 10))
    m.obj = pyo.Objective(expr=m.x, sense=sense)
    m.x.set_value(9)

    def raw(bound: float | None) -> _Raw:
        return _Raw(condition="optimal", has_solution=True, objective=0.0, bound=bound)

    wrong, near = (0.0, 8.6) if sense == pyo.minimize else (18.0, 9.4)
    assert _unproven(m, raw(wrong), rel_gap=0.0) == 9.0
    assert _unproven(m, raw(near), rel_gap=0.01) == 9.0  # 0.4 apart, 0.09 allowed
    assert _unproven(m, raw(near), rel_gap=0.05) is None  # 0.45 allowed
    assert _unproven(m, raw(9.0), rel_gap=0.0) is None
    assert _unproven(m, raw(9.0 + 1e-9), rel_gap=0.0) is None
    assert _unproven(m, raw(None), rel_gap=0.0) is None
