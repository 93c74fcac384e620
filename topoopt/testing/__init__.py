"""The conformance suite every registered solver must pass (shipped with the package).

Use it from a test module::

    from topoopt.testing import conformance_cases, run_check
    @pytest.mark.parametrize("case", conformance_cases(), ids=str)
    def test_conformance(case):
        run_check(case)
"""

from topoopt.testing.conformance import (
    CHECKS,
    KNOWN_FAILURES,
    Case,
    conformance_cases,
    run_check,
)

__all__ = ["CHECKS", "KNOWN_FAILURES", "Case", "conformance_cases", "run_check"]
