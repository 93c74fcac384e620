"""The conformance suite every registered solver must pass (shipped with the package).

Use it from a test module::

    from topoopt.testing import conformance_cases, run_check
    @pytest.mark.parametrize("case", conformance_cases(), ids=str)
    def test_conformance(case):
        run_check(case)

and :func:`slow_cases` for the time-limit check on each family's slow instances
(:mod:`topoopt.testing.slow`).
"""

from topoopt.testing.conformance import (
    CHECKS,
    KNOWN_FAILURES,
    SLOW_CHECKS,
    Case,
    conformance_cases,
    run_check,
    slow_cases,
    solvers_without_slow_case,
)

__all__ = [
    "CHECKS",
    "KNOWN_FAILURES",
    "SLOW_CHECKS",
    "Case",
    "conformance_cases",
    "run_check",
    "slow_cases",
    "solvers_without_slow_case",
]
