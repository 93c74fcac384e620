"""Every registered solver passes every conformance check on its family's examples."""

from __future__ import annotations

import pytest

from topoopt.core.registry import solver_names
from topoopt.testing import KNOWN_FAILURES, Case, conformance_cases, run_check

CASES = list(conformance_cases())


def _param(case: Case) -> object:
    reason = KNOWN_FAILURES.get((case.solver, case.check))
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, id=str(case), marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_conformance(case: Case) -> None:
    run_check(case)


def test_every_registered_solver_is_covered() -> None:
    """No registered solver escapes the suite (its family must provide examples)."""
    covered = {case.solver for case in CASES}
    assert covered == set(solver_names())
