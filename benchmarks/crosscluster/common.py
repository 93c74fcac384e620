"""What the cross-cluster benchmarks share: the trace, running named runs, small tables."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from topoopt.crosscluster.multicluster import MultiCluster
from topoopt.sim.crosscluster.run import run_cross_simulation
from topoopt.sim.traces import Trace, read_trace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PHILLY = ROOT.parent / "shared" / "data" / "traces" / "philly_trace.csv"
RESULTS = HERE / "results"


def philly(jobs: int, path: Path = PHILLY) -> Trace:
    """The first ``jobs`` jobs of the Philly-derived trace (by submit time)."""
    return read_trace(path, "philly").head(jobs)


def run(
    mc: MultiCluster, trace: Trace, folder: Path, policy: str, seed: int, extra: dict[str, Any]
) -> dict[str, Any]:
    """One run into ``folder`` (kept when finished with the same configuration), with its
    wall time."""
    started = time.perf_counter()
    out = run_cross_simulation(mc, trace, folder, policy=policy, seed=seed, config=extra)
    print(f"{folder.name}: {time.perf_counter() - started:.1f} s", flush=True)
    return out


def environment() -> dict[str, Any]:
    """Where the numbers were measured."""
    return {
        "host": platform.node(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
    }


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def dump(name: str, data: Any) -> Path:
    """``results/<name>`` as indented JSON."""
    path = RESULTS / name
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path
