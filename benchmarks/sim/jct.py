"""Arnold's reservation on the Philly-derived trace with predictors of different quality.

    python benchmarks/sim/jct.py [--jobs 2] [--runs benchmarks/sim/runs/jct]

The JCT predictor is trained (``topoopt.learn.jct.train_jct``: 10-minute intervals, top
interval 48, ``split="time"``, one boosting thread) on the jobs submitted before day
``--train-days`` (default 100) of ``../shared/data/traces/philly_trace.csv`` (never copied
into the project); the simulation replays the jobs submitted in the ``--sim-days`` days after
it (default 10: a disjoint, later part of the trace, with its own submit times, so the model's
time-of-day features mean what they meant in training). A large pre-training job of 64 nodes
(512 GPUs, 24 h, priority 1) arrives at day 108.5 and is announced 8 h before (Arnold: 4 h; the
Philly jobs run longer). Queue ``arnold`` (priority, then arrival; every job that fits starts;
a pass every 60 s), placement ``exact-mip`` (1 s per decision). Two clusters
(:data:`SCENARIOS`): ``tight``, 192 nodes of 8 GPUs (``4x2x24:8``), where fewer than 64 nodes
are idle at the announcement, so the plan must count on running jobs ending; ``roomy``, 256
nodes (``4x2x32:8``), where enough are idle. Runs, in reservation mode ``predicted`` but
``strict``:

* ``exact`` — the trace's running times (an oracle);
* ``noisy`` — those times ``exp(0.5 z)`` (log-normal error, sigma 0.5);
* ``learned`` — the learned model, its decoder chosen by validation RMSE (the expected
  interval); the plan predicts the running jobs' ends anew from the time they have run;
* ``learned-static`` — the same, but the plan keeps the predictions made at submission;
* ``learned-argmax`` — the same trees, decoded by the most probable interval;
* ``learned-q90`` — the same trees, decoded by the 90 % quantile (a conservative prediction);
* ``none`` — no predictor: no job enters the zone, the plan knows no running job's end;
* ``strict`` — exact predictions for the plan, no job in the zone (Arnold without predictor).

The run folders go to ``--runs`` (not committed); ``benchmarks/sim/jct/<scenario>/`` gets the
report of its runs (``report.md``, figures, summaries), ``benchmarks/sim/jct/`` the trained
model's held-out evaluation (``model-evaluation.json``), ``results.json`` and ``README.md``,
the tables of this experiment: the large job's wait, allocation and retention rates, the other
jobs' JCT and queueing time, and each predictor's error on the simulated jobs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from publish import run_and_publish  # benchmarks/sim/publish.py, beside this script

from topoopt.learn.jct import train_jct
from topoopt.sim import Job, read_trace
from topoopt.sim.sweep import RunSpec
from topoopt.sim.traces.native import write_native

HERE = Path(__file__).resolve().parent
TRACE = HERE.parents[2] / "shared" / "data" / "traces" / "philly_trace.csv"
DAY, HOUR = 86_400.0, 3_600.0
INTERVAL = 600.0
CAP = 48


def _prediction_error(run: Path) -> dict[str, Any]:
    """How each finished job's prediction compares with its running time (other jobs than
    the large one): RMSE in intervals, and the share predicted to end earlier than they do."""
    predicted, actual = [], []
    with open(run / "jobs.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["status"] != "finished" or record["job"] == "llm":
                continue
            value = record.get("predicted_s")
            predicted.append(math.inf if value is None else value)
            actual.append(record["duration_s"])
    p, a = np.array(predicted), np.array(actual)
    known = np.isfinite(p)
    if not known.any():
        return {"jobs": len(a), "predicted": 0, "rmse_intervals": None, "under_share": None}
    p_int = np.minimum(np.floor(p[known] / INTERVAL), CAP)
    a_int = np.minimum(np.floor(a[known] / INTERVAL), CAP)
    return {
        "jobs": len(a),
        "predicted": int(known.sum()),
        "rmse_intervals": float(np.sqrt(np.mean((p_int - a_int) ** 2))),
        "under_share": float(np.mean(p[known] < a[known])),
    }


SCENARIOS = {"tight": "4x2x24:8", "roomy": "4x2x32:8"}
"""Cluster of each scenario (module docstring)."""
LPJ_NODES, LPJ_DAY, NOTICE_H = 64, 108.5, 8.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=Path, default=HERE / "runs" / "jct")
    parser.add_argument("--out", type=Path, default=HERE / "jct")
    parser.add_argument("--train-days", type=float, default=100.0)
    parser.add_argument("--sim-days", type=float, default=10.0)
    args = parser.parse_args()
    args.runs.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)

    jobs = read_trace(TRACE, "philly").jobs
    start, end = args.train_days * DAY, (args.train_days + args.sim_days) * DAY
    earlier = [job for job in jobs if job.submit_s < start]
    window = [job for job in jobs if start <= job.submit_s < end]
    started = time.perf_counter()
    model, evaluation = train_jct(earlier, split="time", threads=1)
    train_s = time.perf_counter() - started
    model = dataclasses.replace(
        model, training={"trace": TRACE.name, "before_day": args.train_days, **model.training}
    )
    models = {
        "learned": model.save(args.runs / "model.json"),
        "learned-argmax": model.with_decoder("argmax").save(args.runs / "model-argmax.json"),
        "learned-q90": model.with_decoder("q90").save(args.runs / "model-q90.json"),
    }
    print(f"trained on {len(earlier)} jobs in {train_s:.0f} s: {evaluation.summary()}")
    large = Job("llm", LPJ_DAY * DAY, LPJ_NODES * 8, 24 * HOUR, nodes=LPJ_NODES, priority=1)
    trace_file = write_native([*window, large], args.runs / "trace.jsonl")
    announce = LPJ_DAY * DAY - NOTICE_H * HOUR
    results: dict[str, list[dict[str, Any]]] = {}
    for scenario, cluster in SCENARIOS.items():
        base = RunSpec(
            out_dir="",
            policy="arnold",
            placement="placement/exact-mip",
            cluster_shape=cluster,
            trace_file=str(trace_file),
            reserve=f"llm@{announce:g}",
            reserve_mode="predicted",
            interval=60.0,
        )
        learned = {name: dataclasses.replace(base, jct_model=str(f)) for name, f in models.items()}
        specs = {
            "exact": base,
            "noisy": dataclasses.replace(base, predictor="noisy"),
            "learned": learned["learned"],
            "learned-static": dataclasses.replace(learned["learned"], predictor="learned-static"),
            "learned-argmax": learned["learned-argmax"],
            "learned-q90": learned["learned-q90"],
            "none": dataclasses.replace(base, predictor="none"),
            "strict": dataclasses.replace(base, reserve_mode="strict"),
        }
        specs = {
            name: dataclasses.replace(spec, out_dir=str(args.runs / scenario / name))
            for name, spec in specs.items()
        }
        run_and_publish(
            specs,
            args.out / scenario,
            title=f"Reserving for a large job on the Philly trace ({scenario}: {cluster}): "
            "predictors of different quality",
            jobs=args.jobs,
        )
        results[scenario] = [_row(name, Path(spec.out_dir)) for name, spec in specs.items()]
    (args.out / "model-evaluation.json").write_text(
        json.dumps({"train_s": train_s, **evaluation.to_dict()}, indent=1) + "\n"
    )
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "README.md").write_text(_markdown(results, evaluation, args, earlier, window))
    print((args.out / "README.md").read_text())


def _row(name: str, folder: Path) -> dict[str, Any]:
    """The figures of one run."""
    summary = json.loads((folder / "summary.json").read_text())
    s, r = summary["summary"], summary["summary"]["reservation"]
    return {
        "run": name,
        "predictor": summary["config"]["predictor"],
        "mode": summary["config"]["reservation"]["mode"],
        "wait_s": r["wait_s"],
        "allocation_rate": r["allocation_rate"],
        "retention_rate": r["retention_rate"],
        "retention_at_arrival": r["retention_at_arrival"],
        "mean_jct_s": s["jct_s"]["mean"],
        "mean_queue_s": s["queue_s"]["mean"],
        "utilisation": s["utilisation"],
        "prediction": _prediction_error(folder),
    }


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _markdown(
    results: dict[str, list[dict[str, Any]]],
    evaluation: Any,
    args: Any,
    earlier: list[Job],
    window: list[Job],
) -> str:
    lines = [
        "# Arnold's reservation on the Philly trace: exact, learned and no JCT predictor",
        "",
        f"`python benchmarks/sim/jct.py` ({time.strftime('%Y-%m-%d')}). The JCT model was "
        f"trained on the {len(earlier):,} jobs submitted before day {args.train_days:g} of the "
        "Philly-derived trace (time split: the latest 10 % held out, RMSE "
        f"{evaluation.rmse_intervals:.2f} intervals of 10 min against "
        f"{evaluation.baseline_rmse_intervals:.2f} for a constant; Arnold reports 1.61 on his "
        f"cluster's metadata). The simulation replays the {len(window):,} jobs submitted in the "
        f"next {args.sim_days:g} days with a {LPJ_NODES}-node, 24 h job arriving at day "
        f"{LPJ_DAY:g}, announced {NOTICE_H:g} h before; `--policy arnold`, `exact-mip`, a pass "
        "every 60 s (`benchmarks/sim/jct.py`'s docstring).",
        "",
    ]
    for scenario, rows in results.items():
        lines += [
            f"## {scenario}: `{SCENARIOS[scenario]}` ([report]({scenario}/report.md))",
            "",
            "| run | predictor | mode | large job waits (s) | allocation rate | retention rate "
            "| retention at arrival | mean JCT (s) | mean queue (s) | prediction RMSE "
            "(intervals) | predicted too short |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in rows:
            p = row["prediction"]
            lines.append(
                f"| {row['run']} | {row['predictor']} | {row['mode']} | "
                f"{_fmt(row['wait_s'], 4)} | {_fmt(row['allocation_rate'])} | "
                f"{_fmt(row['retention_rate'])} | {_fmt(row['retention_at_arrival'])} | "
                f"{_fmt(row['mean_jct_s'], 4)} | {_fmt(row['mean_queue_s'], 4)} | "
                f"{_fmt(p['rmse_intervals'])} | {_fmt(p['under_share'])} |"
            )
        lines.append("")
    lines += [
        "Allocation and retention rates are time averages from the announcement to the large "
        "job's arrival (Arnold Appendix H); JCT and queueing time are over every finished job. "
        "Prediction RMSE: the predicted running time's interval against the true one, both "
        f"capped at {CAP} (the model's top interval), over the simulated jobs; *predicted too "
        "short*: the share of them predicted to end before they do, the error that lets a job "
        "into the zone, or the plan count on its node, when it then holds the node past the "
        "large job's arrival.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
