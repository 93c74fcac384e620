"""BandPilot's evaluation protocol (§5.3) on topoopt: Table 2, GBE-vs-k (Fig. 6), loss (Fig. 7).

For every cluster of Table 1 and every k = 1..32, 50 seeded availability scenarios
(:func:`topoopt.gpuselect.generate.draw_availability`); every solver's B(S) against the
oracle's optimum B(S*): GBE = B(S)/B(S*) (eq. 4; 1 when k = 1 or B(S*) = 0) and loss
B(S*) - B(S). Intra-host bandwidth: the measured tables of ``../shared/data/hosts`` under
the paper's simulator (bottleneck model); inter-host: 50 GB/s for H100, 12.5 GB/s for the
simulated clusters. ``h100-nic4`` adds NIC sharing beyond 4 GPUs per host (Fig. 1's effect).

Usage (from the repository root)::

    python benchmarks/gpuselect/protocol.py --out benchmarks/gpuselect/results

Writes ``table2.md``, ``per_k.csv``, ``gbe_vs_k.png`` and ``loss_vs_k.png``.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import topoopt
from topoopt.gpuselect.generate import protocol

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "hosts"
SOLVERS = (
    "gpuselect/hybrid",
    "gpuselect/eha",
    "gpuselect/pts",
    "gpuselect/mip",
    "gpuselect/topo",
    "gpuselect/default",
    "gpuselect/random",
)
VARIANTS = {  # name: (cluster, gpus_per_nic)
    "h100": ("h100", None),
    "h100-nic4": ("h100", 4),
    "het-4mix": ("het-4mix", None),
    "het-ra": ("het-ra", None),
    "het-va": ("het-va", None),
}
PAPER = {
    "h100": {
        "hybrid": (96.99, 3.01),
        "topo": (84.53, 15.93),
        "default": (75.33, 29.74),
        "random": (66.75, 53.30),
    },
    "het-4mix": {
        "hybrid": (89.9, 2.1),
        "topo": (58.9, 7.9),
        "default": (51.0, 11.9),
        "random": (47.0, 14.7),
    },
}


def run_variant(args: tuple[str, str, int, int, int]) -> list[dict]:
    """All scenarios of one cluster variant: one record per (instance, solver)."""
    variant, data_dir, scenarios, kmax, seed = args
    cluster, nic = VARIANTS[variant]
    rows = []
    for inst in protocol(
        seed=seed,
        cluster=cluster,
        scenarios=scenarios,
        ks=range(1, kmax + 1),
        data_dir=data_dir,
        gpus_per_nic=nic,
    ):
        best = topoopt.solve(inst, "gpuselect/enumerate").objective
        for s, solver in enumerate(SOLVERS):
            t0 = time.perf_counter()
            result = topoopt.solve(inst, solver, seed=int(inst.name.rsplit("s", 1)[1]) + s)
            elapsed = time.perf_counter() - t0
            value = result.objective
            gbe = 1.0 if inst.k == 1 or best <= 0 else value / best
            rows.append(
                {
                    "variant": variant,
                    "k": inst.k,
                    "instance": inst.name,
                    "solver": solver.split("/")[1],
                    "bandwidth": value,
                    "optimum": best,
                    "gbe": gbe,
                    "loss": best - value,
                    "time_s": elapsed,
                    "status": result.status.label,
                }
            )
    return rows


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def write_reports(rows: list[dict], out: Path, command: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    by = defaultdict(list)
    for r in rows:
        by[r["variant"], r["solver"]].append(r)
    lines = [
        "# gpuselect — BandPilot evaluation protocol (Table 2 layout)",
        "",
        f"Command: `{command}`",
        "",
        "Mean over k = 1..32 and 50 seeded availability scenarios per k. GBE = B(S)/B(S*) "
        "(eq. 4), loss = B(S*) - B(S) in GB/s; time is the wall time of one "
        "`topoopt.solve` call (search, evaluation and check).",
        "",
    ]
    for variant in VARIANTS:
        solvers = [s for s in (x.split("/")[1] for x in SOLVERS) if (variant, s) in by]
        if not solvers:
            continue
        lines += [
            f"## {variant}",
            "",
            "| solver | mean GBE (%) | mean BW loss (GB/s) | "
            "GBE = 100 % (share) | mean time (ms) | max time (ms) | paper GBE / loss |",
            "|---|---|---|---|---|---|---|",
        ]
        paper = PAPER.get(variant.split("-nic")[0], {})
        for s in solvers:
            rs = by[variant, s]
            ref = paper.get(s)
            ref_text = f"{ref[0]} % / {ref[1]}" if ref else ""
            lines.append(
                f"| {s} | {100 * mean([r['gbe'] for r in rs]):.2f} | "
                f"{mean([r['loss'] for r in rs]):.2f} | "
                f"{100 * mean([float(r['gbe'] >= 1 - 1e-9) for r in rs]):.1f} % | "
                f"{1000 * mean([r['time_s'] for r in rs]):.1f} | "
                f"{1000 * max(r['time_s'] for r in rs):.1f} | {ref_text} |"
            )
        lines.append("")
    (out / "table2.md").write_text("\n".join(lines))
    per_k = defaultdict(list)
    for r in rows:
        per_k[r["variant"], r["solver"], r["k"]].append(r)
    with (out / "per_k.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["variant", "solver", "k", "mean_gbe", "mean_loss_gbps", "mean_time_ms"])
        for (variant, s, k), rs in sorted(per_k.items()):
            writer.writerow(
                [
                    variant,
                    s,
                    k,
                    f"{mean([r['gbe'] for r in rs]):.4f}",
                    f"{mean([r['loss'] for r in rs]):.3f}",
                    f"{1000 * mean([r['time_s'] for r in rs]):.2f}",
                ]
            )
    plot(per_k, out)


def plot(per_k: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = sorted({v for v, _, _ in per_k}, key=list(VARIANTS).index)
    for metric, fname, label in (
        ("gbe", "gbe_vs_k.png", "mean GBE"),
        ("loss", "loss_vs_k.png", "mean bandwidth loss (GB/s)"),
    ):
        cols = math.ceil(len(variants) / 2)
        fig, axes = plt.subplots(2, cols, figsize=(5 * cols, 7), squeeze=False)
        for ax, variant in zip(axes.flat, variants, strict=False):
            for solver in (x.split("/")[1] for x in SOLVERS):
                ks = sorted(k for v, s, k in per_k if v == variant and s == solver)
                if ks:
                    ys = [mean([r[metric] for r in per_k[variant, solver, k]]) for k in ks]
                    ax.plot(ks, ys, marker=".", label=solver)
            ax.set_title(variant)
            ax.set_xlabel("k (GPUs requested)")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[len(variants) :]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / fname, dpi=110)
        plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--scenarios", type=int, default=50)
    parser.add_argument("--kmax", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "gpuselect" / "results"))
    args = parser.parse_args()
    if not Path(args.data_dir).is_dir():
        sys.exit(f"skipped: measurement data not found at {args.data_dir} (needs ../shared/data)")
    jobs = [(v, args.data_dir, args.scenarios, args.kmax, args.seed) for v in args.variants]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = [r for part in pool.map(run_variant, jobs) for r in part]
    command = (
        f"python benchmarks/gpuselect/protocol.py --scenarios {args.scenarios} "
        f"--kmax {args.kmax} --seed {args.seed} --variants {' '.join(args.variants)}"
    )
    write_reports(rows, Path(args.out), command)
    print((Path(args.out) / "table2.md").read_text())


if __name__ == "__main__":
    main()
