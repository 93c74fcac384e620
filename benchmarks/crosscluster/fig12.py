"""SpiderFlow Fig. 12: mean JCT against the number of clusters (1, 2, 4, ... 64).

    python benchmarks/crosscluster/fig12.py [--jobs 2000] [--runs DIR]

Clusters of 7 nodes x 8 GPUs (``topoopt.crosscluster.settings.spiderflow_scale(n)``: 25 GB/s
inside a node, 1 GB/s between nodes, 5 Gb/s between clusters, a full mesh), the first
``--jobs`` jobs of the Philly-derived trace (the paper: the top 10,000 Helios jobs; 2,000
here keeps the 28 runs within a few minutes on 2 cores, DT-FM's genetic partitioner being
the slow one), FIFO, NewWorkload models drawn with seed 0; policies ``opportunistic``,
``spinsearch``, ``spiderflow`` and ``dtfm``. Writes ``results/fig12.md``, ``fig12.json``,
``fig12.csv`` and ``fig12.png``; run folders to ``--runs`` (not committed).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from common import HERE, PHILLY, RESULTS, dump, environment, markdown_table, philly, run

from topoopt.crosscluster.settings import spiderflow_scale

POLICIES = ("opportunistic", "spinsearch", "spiderflow", "dtfm")
LABELS = {
    "opportunistic": "Opportunistic",
    "spinsearch": "SpinSearch (naive split)",
    "spiderflow": "SpiderFlow",
    "dtfm": "DT-FM",
}
SCALES = (1, 2, 4, 8, 16, 32, 64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--runs", type=Path, default=HERE / "runs" / "fig12")
    args = parser.parse_args()
    trace = philly(args.jobs)
    extra = {"trace": str(PHILLY.name), "load": 1.0, "jobs_limit": args.jobs}
    out: dict[str, dict[int, dict]] = {p: {} for p in POLICIES}
    for n in SCALES:
        mc = spiderflow_scale(n)
        for policy in POLICIES:
            out[policy][n] = run(mc, trace, args.runs / f"c{n}" / f"{policy}+s0", policy, 0, extra)
    total_wall = sum(out[p][n]["speed"]["wall_s"] for p in POLICIES for n in SCALES)

    def s(policy: str, n: int) -> dict:
        return out[policy][n]["summary"]

    rows, csv_rows = [], []
    for n in SCALES:
        base = s("opportunistic", n)["jct_s"]["mean"]
        row = [str(n), str(56 * n)]
        row += [
            f"{s(p, n)['jct_s']['mean']:.4g} ({s(p, n)['jct_s']['mean'] / base:.2f})"
            for p in POLICIES
        ]
        row += [
            f"{s(p, n)['clusters']['cross_share']:.1%}" for p in ("opportunistic", "spiderflow")
        ]
        row += [f"{1e3 * s(p, n)['decision_s']['mean']:.2g}" for p in POLICIES]
        row += [f"{sum(out[p][n]['speed']['wall_s'] for p in POLICIES):.0f}"]
        rows.append(row)
        for p in POLICIES:
            x = s(p, n)
            csv_rows.append(
                [n, p, x["jct_s"]["mean"], x["queue_s"]["mean"], x["jct_s"]["mean"] / base,
                 x["throughput"]["jobs_per_hour"], x["clusters"]["cross_share"],
                 x["slowdown"]["mean"], x["decision_s"]["mean"], x["decision_s"]["p99"],
                 out[p][n]["speed"]["wall_s"]]
            )  # fmt: skip
    table = markdown_table(
        ["clusters", "GPUs"]
        + [f"mean JCT (s) {p} (norm.)" for p in POLICIES]
        + ["cross-cluster jobs opportunistic", "cross-cluster jobs spiderflow"]
        + [f"decision (ms) {p}" for p in POLICIES]
        + ["wall (s), 4 runs"],
        rows,
    )
    fig, ax = plt.subplots(figsize=(6, 4))
    for marker, p in zip("osD^", POLICIES, strict=True):
        ax.plot(SCALES, [s(p, n)["jct_s"]["mean"] for n in SCALES], marker=marker, label=LABELS[p])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(SCALES, [str(n) for n in SCALES])
    ax.set_xlabel("clusters (7 nodes x 8 GPUs each)")
    ax.set_ylabel("mean JCT (s)")
    ax.set_title(f"Fig. 12: first {args.jobs} Philly jobs")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "fig12.png", dpi=120, metadata={"Software": None})
    plt.close(fig)
    with open(RESULTS / "fig12.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["clusters", "policy", "mean_jct_s", "mean_queue_s", "jct_norm", "jobs_per_hour",
             "cross_cluster_share", "mean_slowdown", "decision_mean_s", "decision_p99_s",
             "wall_s"]
        )  # fmt: skip
        writer.writerows(csv_rows)
    dump(
        "fig12.json",
        {
            "setting": f"spiderflow_scale(n), first {args.jobs} Philly jobs, FIFO, seed 0",
            "summaries": {p: {str(n): out[p][n] for n in SCALES} for p in POLICIES},
            "total_wall_s": total_wall,
            "environment": environment(),
        },
    )
    text = f"""# SpiderFlow Fig. 12 in the topoopt simulator: JCT against the number of clusters

    python benchmarks/crosscluster/fig12.py --jobs {args.jobs}

`n` clusters of 7 nodes x 8 GPUs (25 GB/s in a node, 1 GB/s between nodes, 5 Gb/s between
clusters, full mesh), the first {args.jobs} jobs of the Philly-derived trace, FIFO,
NewWorkload models drawn with seed 0. Mean JCT per policy, in brackets normalised to
`opportunistic` at the same scale; the share of multi-GPU jobs that spanned clusters; the
mean wall time of one decision. {total_wall:.0f} s of simulation for the
{len(SCALES) * len(POLICIES)} runs ({environment()["date"]}, 2-core VM shared with other work).

{table}

![Fig. 12](fig12.png)
"""
    (RESULTS / "fig12.md").write_text(text, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
