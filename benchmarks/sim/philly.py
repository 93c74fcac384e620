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
from pathlib import Path

from publish import run_and_publish  # benchmarks/sim/publish.py, beside this script

from topoopt.sim.sweep import RunSpec, plan_sweep

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
    run_and_publish(
        {spec.label: spec for spec in specs},
        args.out,
        title="Philly-derived trace on 1,024 nodes: queue policies x placement solvers",
        jobs=args.jobs,
        baseline="fifo+best-fit",
    )


if __name__ == "__main__":
    main()
