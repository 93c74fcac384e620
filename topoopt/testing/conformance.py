"""Conformance checks, each a plain function ``check_*(solver_name, instance)``.

Like scikit-learn's ``check_estimator``, the checks are parametrised over the registry (never
a hand-written list) and over each family's ``examples``. A solver that cannot pass a check
declares it in :data:`KNOWN_FAILURES` with a reason; nothing is skipped silently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import topoopt
from topoopt.core.backends import available_backends
from topoopt.core.family import Instance, Sense
from topoopt.core.registry import get_family, get_solver, solver_class, solver_names
from topoopt.core.result import RESULT_JSON_KEYS
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.testing import slow

TOL = 1e-6


def _solve(
    solver: str, instance: Instance, backend: str | None = None, **kwargs: Any
) -> topoopt.Result:
    return topoopt.solve(instance, solver, backend=backend, **kwargs)


def _declined(solver: str, result: topoopt.Result) -> bool:
    """Whether an incomplete solver (``complete = False``) found nothing, as it may: it then
    ran to its end and said why."""
    if solver_class(solver).complete or result.status is not SolutionStatus.NO_SOLUTION:
        return False
    assert result.termination is TerminationReason.COMPLETED, result
    assert result.message, result
    return True


def check_feasible(solver: str, instance: Instance, backend: str | None = None) -> None:
    """The result is feasible and ``check()`` finds no violation (or an incomplete solver
    found nothing and said why)."""
    result = _solve(solver, instance, backend)
    if _declined(solver, result):
        return
    assert result.status >= SolutionStatus.FEASIBLE, result
    family = get_family(result.family)
    assert family.check(instance, result.solution) == [], result.message


def check_objective_recomputed(solver: str, instance: Instance, backend: str | None = None) -> None:
    """The reported objective equals the family's ``evaluate()`` of the solution."""
    result = _solve(solver, instance, backend)
    if _declined(solver, result):
        return
    family = get_family(result.family)
    assert result.objective is not None
    assert math.isclose(result.objective, family.evaluate(instance, result.solution), abs_tol=TOL)


def check_deterministic(solver: str, instance: Instance, backend: str | None = None) -> None:
    """Same instance, options and seed give the same solution."""
    first = _solve(solver, instance, backend, seed=3)
    second = _solve(solver, instance, backend, seed=3)
    assert first.solution == second.solution


def check_instance_not_mutated(solver: str, instance: Instance, backend: str | None = None) -> None:
    """Solving leaves the instance unchanged."""
    before = json.dumps(instance.to_dict(), sort_keys=True)
    _solve(solver, instance, backend)
    assert json.dumps(instance.to_dict(), sort_keys=True) == before


def check_result_json(solver: str, instance: Instance, backend: str | None = None) -> None:
    """``Result.to_dict()`` is strict JSON with the documented keys."""
    data = _solve(solver, instance, backend).to_dict()
    text = json.dumps(data, allow_nan=False)
    assert set(json.loads(text)) >= RESULT_JSON_KEYS


def check_time_limit_accepted(solver: str, instance: Instance, backend: str | None = None) -> None:
    """A time limit the example does not need changes nothing: the result is as feasible as
    without one and says it completed (no clock is read: see
    :func:`check_time_limit_respected` for the limit itself)."""
    result = _solve(solver, instance, backend, time_limit=GENEROUS_LIMIT_S)
    if _declined(solver, result):
        return
    assert result.status >= SolutionStatus.FEASIBLE, result
    assert result.termination is not TerminationReason.TIME_LIMIT, result


GENEROUS_LIMIT_S = 3600.0
"""Limit of :func:`check_time_limit_accepted`, far above what any example needs."""


def check_time_limit_respected(solver: str, instance: Instance, backend: str | None = None) -> None:
    """On a slow instance (:mod:`topoopt.testing.slow`), a solve with a 1 s limit returns within
    ``limit + 5 % + 1 s`` wall time, measured around :func:`topoopt.solve` (model build,
    checking and evaluation included), and a complete solver returns its incumbent."""
    m = slow.measure(solver, instance, backend)
    assert m.within, (
        f"{solver} took {m.wall_s:.2f} s with a {m.time_limit:g} s limit on {m.instance} "
        f"(at most {slow.allowed_s(m.time_limit):.2f} s): {m.result}"
    )
    if solver_class(solver).complete:
        assert m.result.status >= SolutionStatus.FEASIBLE, m.result


def check_against_oracle(solver: str, instance: Instance, backend: str | None = None) -> None:
    """Exact solvers match the oracle's optimum; no solver beats it; bounds are valid."""
    family_name = get_solver(solver).family
    family = get_family(family_name)
    assert family.oracle is not None, f"{family_name} has no oracle"
    oracle = _solve(family.oracle, instance)
    assert oracle.status is SolutionStatus.OPTIMAL, oracle
    result = _solve(solver, instance, backend)
    if _declined(solver, result):
        return
    assert result.objective is not None and oracle.objective is not None
    assert not family.is_better(result.objective, oracle.objective, TOL), (result, oracle)
    if get_solver(solver).exact and result.status is SolutionStatus.OPTIMAL:
        assert math.isclose(result.objective, oracle.objective, abs_tol=TOL), (result, oracle)
    if math.isfinite(result.bound):
        if family.sense is Sense.MINIMIZE:
            assert result.bound <= oracle.objective + TOL, (result, oracle)
        else:
            assert result.bound >= oracle.objective - TOL, (result, oracle)


def check_exact_is_optimal(solver: str, instance: Instance, backend: str | None = None) -> None:
    """An exact solver without a time limit proves optimality."""
    result = _solve(solver, instance, backend)
    if get_solver(solver).exact:
        assert result.status is SolutionStatus.OPTIMAL, result
        assert result.gap <= TOL, result


CHECKS: dict[str, Callable[[str, Instance[Any], str | None], None]] = {
    f.__name__: f
    for f in (
        check_feasible,
        check_objective_recomputed,
        check_deterministic,
        check_instance_not_mutated,
        check_result_json,
        check_time_limit_accepted,
        check_against_oracle,
        check_exact_is_optimal,
    )
}

SLOW_CHECKS: dict[str, Callable[[str, Instance[Any], str | None], None]] = {
    check_time_limit_respected.__name__: check_time_limit_respected
}
"""Checks run on the slow instances (:func:`slow_cases`), not on the examples."""

KNOWN_FAILURES: dict[tuple[str, str], str] = {}
"""``(solver, check) -> reason`` for checks a solver is known to fail (run as strict xfail)."""


@dataclass(frozen=True)
class Case:
    """One (solver, backend, check, example instance) combination."""

    solver: str
    check: str
    instance: Instance
    index: int
    backend: str | None = None
    slow: bool = False

    def __str__(self) -> str:
        on = f"[{self.backend}]" if self.backend else ""
        which = f"slow{self.index}" if self.slow else f"ex{self.index}"
        return f"{self.solver}{on}-{self.check.removeprefix('check_')}-{which}"


def conformance_cases(solvers: Iterable[str] | None = None) -> Iterator[Case]:
    """Every registered solver (or those named) x every installed MIP backend it can use x
    every check x its family's example instances that it supports (an example its
    :meth:`~topoopt.core.solver.Solver.unsupported_reason` declines is left out, as by
    :func:`slow_cases`).

    A family without an oracle skips :func:`check_against_oracle`.
    """
    for solver in solver_names() if solvers is None else solvers:
        cls = solver_class(solver)
        family = get_family(cls.family)
        checks = [c for c in CHECKS if family.oracle is not None or c != "check_against_oracle"]
        backends: list[str | None] = list(available_backends()) if cls.uses_backend else [None]
        for backend in backends:
            for index, instance in enumerate(family.examples()):
                if cls.unsupported_reason(instance) is not None:
                    continue  # declared by the solver (e.g. an objective it does not optimise)
                for check in checks:
                    yield Case(solver, check, instance, index, backend)


def slow_cases(solvers: Iterable[str] | None = None, *, exhaustive: bool = False) -> Iterator[Case]:
    """:data:`SLOW_CHECKS` of every registered solver (or those named) on its family's slow
    instances (:func:`topoopt.testing.slow.slow_examples`) that it accepts.

    By default one case per solver: the first slow instance it accepts, with the default
    backend. ``exhaustive`` gives every accepted slow instance with every installed backend.
    A solver that accepts none of them gets no case (see :func:`solvers_without_slow_case`).
    """
    from topoopt.core.backends import DEFAULT_BACKEND

    for solver in solver_names() if solvers is None else solvers:
        cls = solver_class(solver)
        indexed = [
            (i, x)
            for i, x in enumerate(slow.slow_examples(cls.family))
            if cls.unsupported_reason(x) is None
        ]
        backends: list[str | None] = [None]
        if cls.uses_backend:
            backends = list(available_backends()) if exhaustive else [DEFAULT_BACKEND]
        for backend in backends:
            for index, instance in indexed if exhaustive else indexed[:1]:
                for check in SLOW_CHECKS:
                    yield Case(solver, check, instance, index, backend, slow=True)


def solvers_without_slow_case() -> list[str]:
    """Registered solvers that accept none of their family's slow instances."""
    return [s for s in solver_names() if not slow.supported(s, solver_class(s).family)]


def run_check(case: Case) -> None:
    """Run one case."""
    checks = SLOW_CHECKS if case.slow else CHECKS
    checks[case.check](case.solver, case.instance, case.backend)
