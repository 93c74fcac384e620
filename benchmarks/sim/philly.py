"""The Philly-derived trace under FIFO and EASY backfilling with four placement solvers.

    python benchmarks/sim/philly.py [--loads 1,4] [--jobs 2] [--runs benchmarks/sim/runs]

Replays ``../shared/data/traces/philly_trace.csv`` (111,549 jobs; never copied into the
project) on a generated 1,024-node cluster (16 minipods x 2 leaf switches x 32 nodes of 8
GPUs) under ``fifo`` and ``fifo-backfill`` with ``placement/best-fit``, ``slurm-tree``,
``coarse-mip`` and ``exact-mip`` (1 s per decision) at each load factor. The run folders (with
their large ``jobs.jsonl``) go to ``--runs`` (not committed); the report and every run's
``summary.json`` go to ``benchmarks/sim/philly/``.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from topoopt.sim.report import write_sim_report
from topoopt.sim.sweep import RunSpec, plan_sweep, run_sweep

HERE = Path(__file__).resolve().parent
TRACE = HERE.parents[2] / "shared" / "data" / "traces" / "philly_trace.csv"
PLACEMENTS = ("best-fit", "slurm-tree", "coarse-mip", "exact-mip")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", default="1,4")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=Path, default=HERE / "runs" / "philly")
    parser.add_argument("--out", type=Path, default=HERE / "philly")
    args = parser.parse_args()
    base = RunSpec(
        out_dir=str(args.runs),
        cluster_shape="16x2x32:8",
        trace_file=str(TRACE),
        time_limit=1.0,
    )
    specs = plan_sweep(
        base,
        policies=("fifo", "fifo-backfill"),
        placements=PLACEMENTS,
        seeds=(0,),
        loads=[float(x) for x in args.loads.split(",")],
    )
    started = time.perf_counter()
    run_sweep(specs, jobs=args.jobs, on_done=lambda spec, _: print("done", spec.label, flush=True))
    print(f"{len(specs)} runs in {time.perf_counter() - started:.0f} s")
    summaries = args.out / "summaries"
    summaries.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        for name in ("summary.json", "error.json"):
            source = Path(spec.out_dir) / name
            if source.is_file():
                shutil.copy(source, summaries / f"{spec.label}.json")
    write_sim_report(
        [spec.out_dir for spec in specs if (Path(spec.out_dir) / "summary.json").is_file()],
        args.out,
        title="Philly-derived trace on 1,024 nodes: queue policies x placement solvers",
        baseline="fifo+best-fit",
    )


if __name__ == "__main__":
    main()
