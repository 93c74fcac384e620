"""Arnold's Figure 14 in shape: allocation and retention rates while a large job is reserved.

    python benchmarks/sim/fig14.py [--jobs 2] [--runs benchmarks/sim/runs/fig14]

A 1,024-node cluster (16 minipods x 2 x 32 nodes of 8 GPUs) runs a synthetic stream with
Philly's job sizes and log-normal durations of median 30 min and sigma 1 (60,000 jobs at
offered load 0.95 over about 11 h, seed 0; 2 % run longer than the 4 h reservation window).
A large pre-training job of 600 nodes (4,800 GPUs, 24 h) arrives at t = 8 h; the scheduler
learns of it at t = 4 h (Arnold: told at 18:00 of a job at 22:00). The queue is Arnold's
(``--policy arnold``: priority, then arrival; every job that fits starts; a scheduling pass
every 60 s, as Algorithm 1 sleeps between passes), placement ``exact-mip`` (1 s per decision).
Five runs:

* ``predicted`` — Arnold with its JCT predictor, exact predictions;
* ``predicted``, ``noisy`` predictor — predictions off by a log-normal factor (sigma 0.5);
* ``strict`` — Arnold without the predictor;
* ``best-effort`` — reserve-and-pack [43];
* no reservation — the large job is a job like the others.

Run folders go to ``--runs`` (not committed); the report (with the allocation and retention
figures) and the summaries to ``benchmarks/sim/fig14/``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from publish import run_and_publish  # benchmarks/sim/publish.py, beside this script

from topoopt.sim import Job, Trace
from topoopt.sim.sweep import RunSpec
from topoopt.sim.traces import synthetic
from topoopt.sim.traces.native import write_native

HERE = Path(__file__).resolve().parent
HOUR = 3600.0
LARGE = Job("llm", 8 * HOUR, 4800, 24 * HOUR, nodes=600, priority=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=Path, default=HERE / "runs" / "fig14")
    parser.add_argument("--out", type=Path, default=HERE / "fig14")
    args = parser.parse_args()
    args.runs.mkdir(parents=True, exist_ok=True)
    background = synthetic(
        jobs=60_000, cluster_gpus=8192, load=0.95, seed=0, median_duration_s=1800.0, sigma=1.0
    )
    trace_file = write_native(Trace([*background.jobs, LARGE]).jobs, args.runs / "trace.jsonl")
    base = RunSpec(
        out_dir="",
        policy="arnold",
        placement="placement/exact-mip",
        cluster_shape="16x2x32:8",
        trace_file=str(trace_file),
        reserve=f"llm@{4 * HOUR:g}",
        interval=60.0,
    )
    specs = {
        "predicted": replace(base, reserve_mode="predicted"),
        "predicted-noisy": replace(base, reserve_mode="predicted", predictor="noisy"),
        "strict": replace(base, reserve_mode="strict"),
        "best-effort": replace(base, reserve_mode="best-effort"),
        "no-reservation": replace(base, reserve=None),
    }
    specs = {name: replace(spec, out_dir=str(args.runs / name)) for name, spec in specs.items()}
    run_and_publish(
        specs, args.out, title="Reserving for a large job (Arnold Fig. 14 in shape)", jobs=args.jobs
    )


if __name__ == "__main__":
    main()
