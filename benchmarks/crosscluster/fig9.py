"""SpiderFlow Fig. 9 (Philly): the breakdown opportunistic -> +SpinSearch -> +SpinSearch+TPA.

    python benchmarks/crosscluster/fig9.py [--seeds 0,1,2] [--runs DIR]

The first 1,000 jobs of the Philly-derived trace (``../shared/data/traces/philly_trace.csv``,
as read by ``topoopt simulate``), FIFO, on SpiderFlow's testbed (§5.1, Fig. 9's "8 isolated
clusters, each equipped with 1-4 A100 GPUs": ``topoopt.crosscluster.settings.
spiderflow_testbed(0)``, links drawn in 1-15 Gb/s), each job training a NewWorkload model
drawn with the run's seed. Policies ``opportunistic`` (the baseline), ``spinsearch``
(+SpinSearch), ``spiderflow`` (+SpinSearch+TPA) and, for reference, ``dtfm``; one run per
policy and seed. Mean queueing time (QT) and mean JCT normalised to ``opportunistic`` of the
same seed, beside the paper's (Philly: QT 1.00 -> 0.82 -> 0.73, JCT 1.00 -> 0.87 -> 0.79).

Writes ``results/fig9.md``, ``fig9.json``, ``fig9.csv`` and ``fig9.png`` (``fig9-load<L>.*``
with ``--load L``: arrivals ``1/L`` times sparser, to bring the trace to the testbed's
capacity); the run folders
(``topoopt report`` reads them) go to ``--runs`` (default ``benchmarks/crosscluster/runs/fig9``,
not committed).
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from common import HERE, PHILLY, RESULTS, dump, environment, markdown_table, philly, run

from topoopt.crosscluster.settings import spiderflow_testbed
from topoopt.sim.run import JOBS

POLICIES = ("opportunistic", "spinsearch", "spiderflow", "dtfm")
LABELS = {
    "opportunistic": "Opportunistic",
    "spinsearch": "+SpinSearch",
    "spiderflow": "+SpinSearch+TPA",
    "dtfm": "DT-FM (reference)",
}
PAPER = {  # SpiderFlow §5.6, Philly
    "opportunistic": (1.00, 1.00),
    "spinsearch": (0.82, 0.87),
    "spiderflow": (0.73, 0.79),
}
JOBS_N = 1000


def _records(folder: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in (folder / JOBS).read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument(
        "--load",
        type=float,
        default=1.0,
        help="Arrival-rate factor on the trace (0.033: arrivals 30x sparser, which brings the "
        "first 1,000 Philly jobs to about the testbed's capacity); results go to "
        "fig9-load<L>.* when not 1.",
    )
    parser.add_argument("--runs", type=Path, default=None)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    stem = "fig9" if args.load == 1.0 else f"fig9-load{args.load:g}"
    args.runs = args.runs or HERE / "runs" / stem
    mc = spiderflow_testbed(0)
    trace = philly(JOBS_N).with_load(args.load)
    extra = {"trace": str(PHILLY.name), "load": args.load, "jobs_limit": JOBS_N}
    summary: dict[str, dict[int, dict]] = defaultdict(dict)
    wall: dict[str, list[float]] = defaultdict(list)
    for seed in seeds:
        for policy in POLICIES:
            out = run(mc, trace, args.runs / f"{policy}+s{seed}", policy, seed, extra)
            summary[policy][seed] = out
            wall[policy].append(out["speed"]["wall_s"])
    total_wall = sum(sum(w) for w in wall.values())  # simulation time of the runs

    def mean_of(policy: str, key: str) -> list[float]:
        return [summary[policy][s]["summary"][key]["mean"] for s in seeds]

    norm: dict[str, dict[str, list[float]]] = {}
    for policy in POLICIES:
        norm[policy] = {
            key: [
                a / b
                for a, b in zip(mean_of(policy, key), mean_of("opportunistic", key), strict=True)
            ]
            for key in ("queue_s", "jct_s")
        }

    # per job size: slowdown and clusters spanned (seed 0), share of GPU-time
    sizes: dict[int, dict[str, dict[str, float]]] = defaultdict(dict)
    work: dict[int, float] = defaultdict(float)
    for job in trace.jobs:
        work[job.gpus] += job.gpus * job.duration_s
    total_work = sum(work.values())
    for policy in POLICIES:
        by: dict[int, list[dict]] = defaultdict(list)
        for r in _records(args.runs / f"{policy}+s{seeds[0]}"):
            if r["status"] == "finished":
                by[r["gpus"]].append(r)
        for gpus, rs in by.items():
            sizes[gpus][policy] = {
                "jobs": len(rs),
                "slowdown": float(np.mean([r["slowdown"] for r in rs])),
                "clusters": float(np.mean([r["k_clusters"] for r in rs])),
            }

    rows = []
    for policy in POLICIES:
        qt, jct = norm[policy]["queue_s"], norm[policy]["jct_s"]
        s = [summary[policy][seed]["summary"] for seed in seeds]
        paper = PAPER.get(policy)
        rows.append(
            [
                LABELS[policy],
                f"{np.mean(qt):.2f} ({min(qt):.2f}-{max(qt):.2f})",
                f"{paper[0]:.2f}" if paper else "-",
                f"{np.mean(jct):.2f} ({min(jct):.2f}-{max(jct):.2f})",
                f"{paper[1]:.2f}" if paper else "-",
                f"{np.mean([x['queue_s']['mean'] for x in s]):.4g}",
                f"{np.mean([x['jct_s']['mean'] for x in s]):.4g}",
                f"{np.mean([x['throughput']['jobs_per_hour'] for x in s]):.4g}",
                f"{np.mean([x['throughput']['samples_per_s'] for x in s]):.3g}",
                f"{1e3 * np.mean([x['decision_s']['mean'] for x in s]):.3g}",
                f"{1e3 * max(x['decision_s']['max'] for x in s):.3g}",
                f"{np.mean(wall[policy]):.1f}",
            ]
        )
    table = markdown_table(
        [
            "policy",
            "QT (norm.)",
            "paper QT",
            "JCT (norm.)",
            "paper JCT",
            "mean QT (s)",
            "mean JCT (s)",
            "jobs/h",
            "samples/s per job",
            "mean decision (ms)",
            "max decision (ms)",
            "run wall (s)",
        ],
        rows,
    )
    size_rows = []
    for gpus in sorted(sizes):
        cells = [
            str(gpus),
            str(sizes[gpus]["opportunistic"]["jobs"]),
            f"{work[gpus] / total_work:.1%}",
        ]
        cells += [f"{sizes[gpus][p]['slowdown']:.2f}" for p in POLICIES]
        cells += [f"{sizes[gpus][p]['clusters']:.2f}" for p in POLICIES]
        size_rows.append(cells)
    size_table = markdown_table(
        ["GPUs", "jobs", "GPU-time"]
        + [f"slowdown {p}" for p in POLICIES]
        + [f"clusters {p}" for p in POLICIES],
        size_rows,
    )

    # figure: normalised QT and JCT, ours beside the paper's
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    shown = ("opportunistic", "spinsearch", "spiderflow")
    x = np.arange(len(shown))
    for ax, key, k in zip(axes, ("queue_s", "jct_s"), (0, 1), strict=True):
        ours = [float(np.mean(norm[p][key])) for p in shown]
        theirs = [PAPER[p][k] for p in shown]
        ax.bar(x - 0.2, ours, 0.4, label="topoopt simulator")
        ax.bar(x + 0.2, theirs, 0.4, label="SpiderFlow Fig. 9")
        ax.set_xticks(x, [LABELS[p] for p in shown])
        ax.set_ylim(0, 1.15)
        ax.set_title("normalised " + ("QT" if key == "queue_s" else "JCT"))
        pairs: tuple[tuple[np.ndarray, list[float]], ...] = ((x - 0.2, ours), (x + 0.2, theirs))
        for xs, values in pairs:
            for xi, value in zip(xs, values, strict=True):
                ax.text(xi, value + 0.02, f"{value:.2f}", ha="center", fontsize=8)
    axes[0].legend(loc="lower left", fontsize=8)
    fig.suptitle(f"Fig. 9 breakdown: first {JOBS_N} Philly jobs on the 8-server testbed")
    fig.tight_layout()
    fig.savefig(RESULTS / f"{stem}.png", dpi=120, metadata={"Software": None})
    plt.close(fig)

    with open(RESULTS / f"{stem}.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["policy", "seed", "mean_queue_s", "mean_jct_s", "queue_norm", "jct_norm",
             "jobs_per_hour", "samples_per_s", "decision_mean_s", "decision_p99_s", "wall_s"]
        )  # fmt: skip
        for policy in POLICIES:
            for k, seed in enumerate(seeds):
                s = summary[policy][seed]["summary"]
                writer.writerow(
                    [policy, seed, s["queue_s"]["mean"], s["jct_s"]["mean"],
                     norm[policy]["queue_s"][k], norm[policy]["jct_s"][k],
                     s["throughput"]["jobs_per_hour"], s["throughput"]["samples_per_s"],
                     s["decision_s"]["mean"], s["decision_s"]["p99"], wall[policy][k]]
                )  # fmt: skip
    dump(
        f"{stem}.json",
        {
            "setting": "spiderflow_testbed(0), first 1000 Philly jobs, FIFO, model mix newworkload",
            "seeds": seeds,
            "paper": PAPER,
            "normalised": norm,
            "by_gpus_seed0": {str(k): v for k, v in sorted(sizes.items())},
            "summaries": {p: {str(s): summary[p][s] for s in seeds} for p in POLICIES},
            "total_wall_s": total_wall,
            "environment": environment(),
        },
    )
    load_text = (
        ""
        if args.load == 1.0
        else f" with arrivals {1 / args.load:.3g}x sparser (--load {args.load:g})"
    )
    text = f"""# SpiderFlow Fig. 9 (Philly) in the topoopt simulator

    python benchmarks/crosscluster/fig9.py --seeds {args.seeds} --load {args.load:g}

The first {JOBS_N} jobs of the Philly-derived trace{load_text}, FIFO, on SpiderFlow's testbed (8
single-server clusters of 2, 2, 2, 2, 2, 4, 1, 1 GPUs; links drawn in 1-15 Gb/s with seed 0),
NewWorkload models drawn per job with the run's seed ({len(seeds)} seeds: {args.seeds}).
Queueing time (QT) and JCT are the means over the 1,000 jobs, normalised to `opportunistic`
of the same seed; the mean over the seeds, (min-max) in brackets. Decision: wall time of one
scheduling decision (cluster selection, then the plan). {total_wall:.0f} s of simulation for all
{len(seeds) * len(POLICIES)} runs ({environment()["date"]}, 2-core VM shared with other work).

{table}

![Fig. 9]({stem}.png)

**Where it comes from** (seed {seeds[0]}): mean slowdown (running time over the trace's
duration) and mean clusters spanned per job size; GPU-time is the size's share of
`GPUs x duration` in the trace.

{size_table}
"""
    (RESULTS / f"{stem}.md").write_text(text, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
