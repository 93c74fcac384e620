"""The load test of ``benchmarks/service/load.py`` in short (``-m slow``): malformed,
oversized and hanging-solver requests mixed into heuristic solves, then a graceful shutdown
under load. Correctness only; the numbers are in ``benchmarks/service/README.md``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT


@pytest.mark.slow
def test_mixed_faults_under_load_are_each_answered_right(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks/service/load.py"),
            "--scenario",
            "mixed",
            "--mixed-duration",
            "10",
            "--mixed-rate",
            "30",
            "--clients",
            "16",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    run = json.loads((tmp_path / "mixed.json").read_text())
    assert run["requests"] == 300
    assert run["wrong_status_count"] == 0, run["wrong_status"]
    assert run["lost"] == 0
    assert run["server_counts_equal_client_counts"]
    assert run["health_checks"] > 0 and run["health_not_200"] == 0
    assert set(run["by_kind"]) == {"solve", "malformed", "invalid", "oversized", "hang"}
    assert run["by_kind"]["hang"].get("504", 0) > 0
    assert run["workers_after"] == run["workers_before"]
    assert run["restarts"]["timeout"] == run["by_kind"]["hang"].get("504", 0)
    shutdown = run["shutdown"]
    assert shutdown["lost"] == 0 and shutdown["workers_left"] == 0
    assert sum(shutdown["answers"].values()) == shutdown["in_flight"]
