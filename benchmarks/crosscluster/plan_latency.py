"""``topoopt plan`` latency against job size and cluster count, with each stage's share (#28).

**Setting.** SpiderFlow's Fig. 12 scale (``spiderflow_scale(n)``: ``n`` clusters of 7 nodes x 8
GPUs, 25 GB/s inside a node, 1 GB/s between nodes, 5 Gb/s between clusters, a full mesh), every
GPU free; ``n`` in ``--clusters``. The job: a 32-layer 6.7B-class model (per layer 10 ms of
forward + backward per micro-batch, 4.2e8 gradient bytes, 3.4e7 activation bytes per
micro-batch boundary, 64 micro-batches), ``g`` GPUs in ``--gpus``, the default units (blocks:
the largest divisor of ``g`` up to 32; one replica) and the default solvers
(``clusterselect/spinsearch``, ``partition/heuristic-ilp``, ``parallelconfig/mip`` on HiGHS,
the buddy allocator), every GPU running a rank. A job larger than the clusters' GPUs is
skipped.

**Timing.** The Python API, ``make_plan(job, multicluster)``, in one process: one warm-up plan
first (the first ILP imports Pyomo and HiGHS), then ``--repeat`` timed plans per cell; the
median of the total and of each stage (the stage's own clock, its ``check()`` included;
``other`` is the rest: input checks, the rank order, the step-time estimate). Writing the files
is not timed. Separately, ``--cold`` times the first plan of the largest cell in a fresh
interpreter (imports included) and the whole ``topoopt plan`` command.

Usage::

    python benchmarks/crosscluster/plan_latency.py --out benchmarks/crosscluster/results
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from topoopt.crosscluster.settings import spiderflow_scale
from topoopt.plan import Job, make_plan

GPUS = (8, 16, 32, 64, 128, 256)
CLUSTERS = (1, 2, 4, 8, 16, 32, 64)
STAGES = ("clusterselect", "partition", "parallelconfig", "gpus", "other")
GOAL_S = 1.0
LAYERS, COMPUTE_S, PARAM_BYTES, ACTIVATION_BYTES, MICRO_BATCHES = 32, 0.01, 4.2e8, 3.4e7, 64


def job(gpus: int, use_all_gpus: bool = True) -> Job:
    return Job(
        f"gpt-6.7b-{gpus}",
        gpus,
        [(COMPUTE_S, PARAM_BYTES)] * LAYERS,
        ACTIVATION_BYTES,
        MICRO_BATCHES,
        use_all_gpus=use_all_gpus,
    )


def measure(gpus: int, clusters: int, repeat: int, use_all_gpus: bool) -> dict[str, Any]:
    mc = spiderflow_scale(clusters)
    j = job(gpus, use_all_gpus)
    runs: list[tuple[float, dict[str, float]]] = []
    plan = None
    for _ in range(repeat):
        started = time.perf_counter()
        plan = make_plan(j, mc)
        total = time.perf_counter() - started
        per = plan.stage_seconds()
        stages = {s: per.get(s, 0.0) for s in STAGES[:-1]}
        stages["other"] = total - sum(per.values())
        runs.append((total, stages))
    assert plan is not None
    totals = sorted(t for t, _ in runs)
    median = statistics.median(totals)
    # the shares of the run whose total is the median (the lower middle one for an even count)
    middle = sorted(runs, key=lambda run: run[0])[(len(runs) - 1) // 2]
    return {
        "gpus": gpus,
        "clusters": clusters,
        "use_all_gpus": use_all_gpus,
        "blocks": j.blocks,
        "unit_gpus": j.unit_gpus,
        "repeat": repeat,
        "median_s": median,
        "min_s": min(totals),
        "max_s": max(totals),
        "stage_s": middle[1],
        "stage_share": {s: middle[1][s] / middle[0] for s in STAGES},
        "clusters_used": len(plan.selection),
        "ranks": len(plan.ranks),
        "statuses": sorted({r.status for r in plan.stages}),
        "step_s": plan.step.step_s,
        "limit": plan.step.limit,
    }


COLD = """
import time
t0 = time.perf_counter()
from topoopt.crosscluster.settings import spiderflow_scale
from topoopt.plan import Job, make_plan
t1 = time.perf_counter()
job = Job("cold", {gpus}, [({compute}, {params})] * {layers}, {activation}, {micro})
plan = make_plan(job, spiderflow_scale({clusters}))
t2 = time.perf_counter()
import sys
print(t1 - t0, t2 - t1, int("pyomo" in sys.modules))
"""


def cold(gpus: int, clusters: int, folder: Path) -> dict[str, Any]:
    """The first plan in a fresh interpreter, and the whole command line."""
    script = COLD.format(
        gpus=gpus,
        clusters=clusters,
        compute=COMPUTE_S,
        params=PARAM_BYTES,
        layers=LAYERS,
        activation=ACTIVATION_BYTES,
        micro=MICRO_BATCHES,
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    imports, first, pyomo = map(float, out.stdout.split())
    spiderflow_scale(clusters).save(folder / "mc.json")
    job(gpus).save(folder / "job.json")
    command = [sys.executable, "-m", "topoopt.cli", "plan", "job.json", "mc.json", "--out", "out"]
    started = time.perf_counter()
    subprocess.run(command, cwd=folder, capture_output=True, check=True)
    cli = time.perf_counter() - started
    return {
        "gpus": gpus,
        "clusters": clusters,
        "import_s": imports,
        "first_plan_s": first,
        "pyomo_imported": bool(pyomo),
        "cli_s": cli,
    }


def _ms(s: float) -> str:
    return f"{s * 1000:.0f}" if s >= 0.01 else f"{s * 1000:.1f}"


MODES = {True: "every GPU runs a rank (`use_all_gpus`, the default)", False: "idle GPUs allowed"}


def _latency_table(records: list[dict[str, Any]]) -> list[str]:
    gpus = sorted({r["gpus"] for r in records})
    clusters = sorted({r["clusters"] for r in records})
    cell = {(r["gpus"], r["clusters"]): r for r in records}
    lines = [
        "| GPUs \\ clusters | " + " | ".join(str(c) for c in clusters) + " |",
        "|---|" + "---:|" * len(clusters),
    ]
    for g in gpus:
        row = [_ms(cell[g, c]["median_s"]) if (g, c) in cell else "-" for c in clusters]
        lines.append(f"| {g} | " + " | ".join(row) + " |")
    return lines


def _share_table(records: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| GPUs | clusters | clusters used | units | ranks | median ms | "
        + " | ".join(STAGES)
        + " | step time s | limited by |",
        "|---:|---:|---:|---|---:|---:|" + "---:|" * len(STAGES) + "---:|---|",
    ]
    for r in records:
        shares = " | ".join(f"{100 * r['stage_share'][s]:.0f}" for s in STAGES)
        units = f"{r['blocks']} x {r['unit_gpus']} GPUs"
        lines.append(
            f"| {r['gpus']} | {r['clusters']} | {r['clusters_used']} | {units} | {r['ranks']} | "
            f"{_ms(r['median_s'])} | {shares} | {r['step_s']:.3g} | {r['limit']} |"
        )
    return lines


def report(
    records: list[dict[str, Any]], cold_run: dict[str, Any] | None, meta: dict[str, Any]
) -> str:
    lines = [
        "# `topoopt plan` latency (issue #28)",
        "",
        f"Produced by `{meta['command']}` ({meta['repeat']} timed plans per cell after a "
        f"warm-up, medians; Python {meta['python']} on {meta['machine']}, {meta['cpus']} CPUs "
        "shared with other jobs, so single cells vary by tens of percent between runs).",
        "",
        "Setting: `spiderflow_scale(n)` (n clusters of 7 nodes x 8 GPUs, all free; 25 GB/s "
        "inside a node, 1 GB/s between nodes, 5 Gb/s between clusters); a 32-layer "
        "6.7B-class job of g GPUs (10 ms and 4.2e8 gradient bytes per layer, 3.4e7 activation "
        "bytes, 64 micro-batches), default units (32 blocks, one replica) and solvers "
        "(`clusterselect/spinsearch`, `partition/heuristic-ilp`, `parallelconfig/mip` on "
        "HiGHS, the buddy allocator). Python API `make_plan`, files not written. `-`: the job "
        "does not fit the clusters.",
    ]
    for mode, title in MODES.items():
        part = [r for r in records if r["use_all_gpus"] is mode]
        if not part:
            continue
        lines += ["", f"## Median latency (ms): {title}", "", *_latency_table(part)]
    for mode, title in MODES.items():
        part = [r for r in records if r["use_all_gpus"] is mode]
        if not part:
            continue
        lines += [
            "",
            f"## Each stage's share (%, of the median run): {title}",
            "",
            *_share_table(part),
        ]
    lines += ["", "## Goal", ""]
    for r in records:
        big = max(x["gpus"] for x in records), max(x["clusters"] for x in records)
        if (r["gpus"], r["clusters"]) == big:
            verdict = "met" if r["median_s"] <= GOAL_S else "NOT met"
            lines.append(
                f"* {r['gpus']} GPUs over {r['clusters']} clusters, {MODES[r['use_all_gpus']]}: "
                f"median {r['median_s'] * 1000:.0f} ms (min {r['min_s'] * 1000:.0f}, max "
                f"{r['max_s'] * 1000:.0f}) against the goal of {GOAL_S:g} s: **{verdict}**."
            )
    slow = [r for r in records if r["median_s"] > GOAL_S]
    if slow:
        cells = ", ".join(
            f"{r['gpus']} GPUs / {r['clusters']} clusters ({r['median_s']:.2f} s"
            f"{'' if r['use_all_gpus'] else ', idle allowed'})"
            for r in slow
        )
        lines.append(f"* Cells over {GOAL_S:g} s: {cells}.")
    if cold_run is not None:
        lines += [
            "",
            f"In a fresh interpreter the goal's plan takes {cold_run['first_plan_s']:.2f} s after "
            f"{cold_run['import_s']:.2f} s of imports ("
            + (
                "its first ILP imported Pyomo and HiGHS"
                if cold_run["pyomo_imported"]
                else "no ILP was built: the option-A formula and bounds of parallelconfig/mip "
                "decided every cluster, so Pyomo was never imported"
            )
            + "); the whole command `topoopt plan job.json mc.json --out out` "
            f"{cold_run['cli_s']:.2f} s (interpreter start, imports, plan, files).",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gpus", type=int, nargs="+", default=list(GPUS))
    parser.add_argument("--clusters", type=int, nargs="+", default=list(CLUSTERS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-cold", dest="cold", action="store_false")
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=["all", "idle"],
        default=["all", "idle"],
        help="all: every GPU runs a rank (use_all_gpus); idle: idle GPUs allowed.",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    make_plan(job(8), spiderflow_scale(1))  # warm-up: imports Pyomo and HiGHS
    records = []
    for mode in args.modes:
        for g in args.gpus:
            for c in args.clusters:
                if g > 56 * c:
                    continue
                record = measure(g, c, args.repeat, mode == "all")
                records.append(record)
                print(
                    f"{mode:4s} {g:4d} GPUs {c:3d} clusters: {record['median_s'] * 1000:8.1f} ms",
                    flush=True,
                )
    cold_run = None
    if args.cold:
        with tempfile.TemporaryDirectory() as folder:
            cold_run = cold(max(args.gpus), max(args.clusters), Path(folder))
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "repeat": args.repeat,
        "command": "python benchmarks/crosscluster/plan_latency.py " + " ".join(sys.argv[1:]),
    }
    (args.out / "plan_latency.json").write_text(
        json.dumps({"meta": meta, "records": records, "cold": cold_run}, indent=1) + "\n"
    )
    (args.out / "plan_latency.md").write_text(report(records, cold_run, meta))
    print((args.out / "plan_latency.md").read_text())


if __name__ == "__main__":
    main()
