"""Fuzzed instance files of every family: a clean topoopt error or a checked solution, never
anything else (:mod:`topoopt.testing.fuzz`). The long run is ``-m slow``."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.testing.fuzz import check_file, check_results_file, instance_files, results_files

FAMILIES = topoopt.families()
LONG_RUN = 10_000
LONG_RUN_TIMEOUT_S = 3 * 3600  # the long runs take minutes each; the default 300 s is for the rest


def _count(strategy: st.SearchStrategy[Any], examples: int, check: Any) -> Counter[str]:
    """Run ``check(drawn, folder)`` on ``examples`` draws of ``strategy``; count outcomes."""
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as folder:

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(drawn=strategy)
        def run(drawn: Any) -> None:
            counts[check(drawn, Path(folder))] += 1

        run()
    return counts


def _fuzz(family_name: str, examples: int, time_limit: float = 2.0) -> Counter[str]:
    family = topoopt.get_family(family_name)
    strategy = st.tuples(instance_files(family), st.integers(0, 50))
    return _count(
        strategy,
        examples,
        lambda drawn, folder: check_file(family, drawn[0], folder, drawn[1], time_limit),
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_short_fuzz(family: str) -> None:
    counts = _fuzz(family, 40, time_limit=0.5)
    assert counts["error"] > 0 and sum(counts.values()) >= 40


@pytest.mark.slow
@pytest.mark.timeout(LONG_RUN_TIMEOUT_S)
@pytest.mark.parametrize("family", FAMILIES)
def test_long_fuzz(family: str) -> None:
    counts = _fuzz(family, LONG_RUN)
    print(f"\n{family}: {sum(counts.values())} inputs: {dict(sorted(counts.items()))}")
    assert sum(counts.values()) >= LONG_RUN


def _fuzz_results(examples: int) -> Counter[str]:
    return _count(results_files(), examples, check_results_file)


def test_short_fuzz_of_results_files() -> None:
    counts = _fuzz_results(50)
    assert counts["read"] > 0 and counts["error"] > 0


@pytest.mark.slow
@pytest.mark.timeout(LONG_RUN_TIMEOUT_S)
def test_long_fuzz_of_results_files() -> None:
    counts = _fuzz_results(LONG_RUN)
    print(f"\nresults files: {sum(counts.values())} inputs: {dict(sorted(counts.items()))}")
    assert sum(counts.values()) >= LONG_RUN
