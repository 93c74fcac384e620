"""Arnold's JCT predictor (Appendix G) trained on the Philly-derived trace: RMSE in intervals.

    python benchmarks/learn/jct.py [--out benchmarks/learn/jct]

Trains ``topoopt.learn.jct.train_jct`` (what ``topoopt learn jct`` runs) on all 111,549 jobs
of ``../shared/data/traces/philly_trace.csv`` (never copied into the project) with 10-minute
intervals, for the top interval at 12, 24 and 48 intervals (2, 4 and 8 h; 48 is the default)
and both held-out splits (10 % at random, as Arnold; the latest 10 %), one boosting thread
each. Writes ``evaluations.json`` (every figure and confusion matrix), ``confusion-random.png``
and ``confusion-time.png`` (the default top interval) and ``README.md`` to ``--out``.

The same as the command line, for the default row:

    topoopt learn jct ../shared/data/traces/philly_trace.csv --out model.json \\
        --plot confusion.png --threads 1
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from topoopt.learn.jct import plot_confusion, target_intervals, train_jct
from topoopt.sim import read_trace

HERE = Path(__file__).resolve().parent
TRACE = HERE.parents[2] / "shared" / "data" / "traces" / "philly_trace.csv"
ARNOLD_RMSE = 1.61


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "jct")
    parser.add_argument("--caps", default="12,24,48")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = read_trace(TRACE, "philly").jobs
    rows: list[dict[str, Any]] = []
    for cap in [int(x) for x in args.caps.split(",")]:
        for split in ("random", "time"):
            started = time.perf_counter()
            _, evaluation = train_jct(jobs, max_intervals=cap, split=split, threads=1)
            seconds = time.perf_counter() - started
            print(f"top {cap}, {split}: {evaluation.summary()} ({seconds:.0f} s)")
            rows.append({"train_s": seconds, **evaluation.to_dict()})
            if cap == 48:
                plot_confusion(
                    evaluation,
                    args.out / f"confusion-{split}.png",
                    title=f"Philly, {split} split: RMSE {evaluation.rmse_intervals:.2f} "
                    f"intervals of 10 min, accuracy {evaluation.accuracy:.2f}",
                )
    (args.out / "evaluations.json").write_text(json.dumps(rows, indent=1) + "\n")
    (args.out / "README.md").write_text(_markdown(rows, jobs))


def _markdown(rows: list[dict[str, Any]], jobs: list[Any]) -> str:
    intervals = target_intervals((j.duration_s for j in jobs), 600.0, 48)
    zero, top = float(np.mean(intervals == 0)), float(np.mean(intervals == 48))
    longest = max(j.duration_s for j in jobs) / 86_400
    lines = [
        "# JCT predictor on the Philly-derived trace (Arnold Appendix G)",
        "",
        f"`python benchmarks/learn/jct.py` ({time.strftime('%Y-%m-%d')}, Python "
        f"{platform.python_version()}, one boosting thread, this project's 2-core VM). "
        f"{len(jobs):,} jobs; 10-minute intervals; 90 % train (of which 10 % validation: early "
        "stopping and the decoder), 10 % test. Arnold reports an RMSE of "
        f"**{ARNOLD_RMSE} intervals** on four months of his cluster's jobs with their metadata "
        "(CPUs, GPUs, drives, the owner's department, ...).",
        "",
        "| top interval | split | RMSE (intervals) | constant baseline | MAE | accuracy | "
        "within one | decoder | RMSE expected / argmax | argmax accuracy | iterations | "
        "train (s) |",
        "|---:|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|",
    ]
    for r in rows:
        by = r["by_decoder"]
        lines.append(
            f"| {r['max_intervals']} | {r['split']} | {r['rmse_intervals']:.2f} | "
            f"{r['baseline_rmse_intervals']:.2f} | {r['mae_intervals']:.2f} | "
            f"{r['accuracy']:.3f} | {r['within_one']:.3f} | {r['decoder']} | "
            f"{by['expected']['rmse_intervals']:.2f} / {by['argmax']['rmse_intervals']:.2f} | "
            f"{by['argmax']['accuracy']:.3f} | {r['iterations']} | {r['train_s']:.0f} |"
        )
    lines += [
        "",
        "*Constant baseline*: the RMSE of predicting every test job the training jobs' mean "
        "interval. *Accuracy*: the chosen decoder's interval is the true one (the expected "
        "index, rounded, is rarely exactly right; the argmax's accuracy is beside it).",
        "",
        f"The trace gives a job's GPUs and submit time only (no user, queue, CPUs or memory), "
        f"so the model has the GPUs, the hour of day and the day of the week to go on. "
        f"Running times are heavy-tailed: {zero:.0%} of the jobs end within their first 10 "
        f"minutes and {top:.0%} run 8 h or more (up to {longest:.0f} days). The model is "
        "barely better "
        "than the constant, and on the time split (the latest jobs held out, what a scheduler "
        "learning from its past faces) no better; the RMSE grows with the top interval, since "
        "the long jobs it cannot tell apart dominate the squared error. Arnold's 1.61 needs the "
        "metadata this trace lacks; with such a trace (`--trace-format helios`, `alibaba` or "
        "topoopt's own with `user`, `queue`, `qos`, `cpus`, `memory_gib`) the same command "
        "uses them.",
        "",
        "![Confusion matrix, random split](confusion-random.png)",
        "",
        "![Confusion matrix, time split](confusion-time.png)",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
