"""What the simulator benchmarks share: run named runs, then commit their summaries and report.

The run folders (with their large ``jobs.jsonl``) stay where the specs put them (under
``benchmarks/sim/runs/``, not committed); ``out/summaries/<name>.json`` gets each run's
``summary.json`` (or ``error.json``) and ``out/`` the report of the finished runs.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from topoopt.sim.report import write_sim_report
from topoopt.sim.run import SUMMARY
from topoopt.sim.sweep import ERROR, RunSpec, run_sweep


def run_and_publish(
    specs: dict[str, RunSpec], out: Path, *, title: str, jobs: int, baseline: str | None = None
) -> None:
    """Run ``specs`` ``jobs`` at a time, copy their summaries to ``out/summaries`` by name and
    write the report of the finished ones to ``out``."""
    started = time.perf_counter()
    run_sweep(list(specs.values()), jobs=jobs, on_done=lambda s, _: print("done", s.out_dir))
    print(f"{len(specs)} runs in {time.perf_counter() - started:.0f} s")
    summaries = out / "summaries"
    summaries.mkdir(parents=True, exist_ok=True)
    for name, spec in specs.items():
        for kind in (SUMMARY, ERROR):
            source = Path(spec.out_dir) / kind
            if source.is_file():
                shutil.copy(source, summaries / f"{name}.json")
    finished = [  # relative to the working directory: the report names them
        os.path.relpath(spec.out_dir)
        for spec in specs.values()
        if (Path(spec.out_dir) / SUMMARY).is_file()
    ]
    write_sim_report(finished, out, title=title, baseline=baseline)
