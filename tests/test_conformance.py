"""Every registered solver passes every conformance check on its family's examples, and honours
its time limit on its family's slow instances."""

from __future__ import annotations

import pytest

from topoopt.core.registry import solver_names
from topoopt.testing import (
    KNOWN_FAILURES,
    Case,
    conformance_cases,
    run_check,
    slow_cases,
    solvers_without_slow_case,
)

CASES = list(conformance_cases())


def _param(case: Case, *marks: pytest.MarkDecorator) -> object:
    reason = KNOWN_FAILURES.get((case.solver, case.check))
    if reason:
        marks = (*marks, pytest.mark.xfail(reason=reason, strict=True))
    return pytest.param(case, id=str(case), marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_conformance(case: Case) -> None:
    run_check(case)


def test_every_mip_solver_runs_on_every_installed_backend() -> None:
    """The optional backends are covered as soon as they are installed (``.ci/run`` installs
    gurobipy when the machine can); a machine without gurobipy says so."""
    from topoopt.core.backends import available_backends
    from topoopt.core.registry import solver_class

    mip_solvers = {s for s in solver_names() if solver_class(s).uses_backend}
    for backend in available_backends():
        assert {c.solver for c in CASES if c.backend == backend} == mip_solvers, backend
    if "gurobi" not in available_backends():
        pytest.skip("gurobipy is not installed: the Gurobi backend is not tested here")


def test_every_registered_solver_is_covered() -> None:
    """No registered solver escapes the suite (its family must provide examples)."""
    covered = {case.solver for case in CASES}
    assert covered == set(solver_names())


SOLVERS = solver_names()
"""By solver: the slow instances are made when the tests run, not when they are collected."""


@pytest.mark.parametrize("solver", SOLVERS)
def test_time_limit_on_a_slow_instance(solver: str) -> None:
    """One case per solver: its first slow instance, the default backend, a 1 s limit."""
    for case in slow_cases([solver]):
        if KNOWN_FAILURES.get((case.solver, case.check)):
            pytest.xfail(KNOWN_FAILURES[(case.solver, case.check)])
        run_check(case)


@pytest.mark.slow
@pytest.mark.parametrize("solver", SOLVERS)
def test_time_limit_on_every_slow_instance(solver: str) -> None:
    """Every slow instance the solver accepts, with every installed backend."""
    for case in slow_cases([solver], exhaustive=True):
        run_check(case)


def test_every_solver_has_a_slow_instance() -> None:
    """Each solver accepts at least one slow instance of its family."""
    assert solvers_without_slow_case() == []
