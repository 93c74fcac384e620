"""README's "slow suites: ``-m slow``" works: pyproject's ``addopts`` holds ``-m 'not slow'``,
and a ``-m`` on the command line must replace it (pytest keeps the last ``-m``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def collected(*args: str) -> list[str]:
    """The test ids ``pytest --co -q ARGS`` collects (run from the repository root)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_minus_m_slow_collects_the_slow_tests_and_only_them() -> None:
    slow = collected("-m", "slow", "tests/test_fuzz.py")
    assert len(slow) >= 1
    assert all("test_long_fuzz" in test for test in slow)
    default = collected("tests/test_fuzz.py")
    assert not any("test_long_fuzz" in test for test in default)
    assert any("test_short_fuzz" in test for test in default)
