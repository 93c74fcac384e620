"""Time the exact and coarse MIPs of the placement family on the arnold-paper suite.

Usage::

    python benchmarks/placement_timing.py --monolithic-limit 60 --repeat 5 \
        --out benchmarks/placement_timing.md

For every instance: ``placement/exact-mip`` with the default decomposition (median wall time
over ``--repeat`` runs, proven or not), the monolithic exact model under a time limit (one run),
and ``placement/coarse-mip`` end to end (build + solve + rank assignment, median). Writes a
Markdown table; times are medians in seconds.
"""

from __future__ import annotations

import argparse
import platform
import statistics
from pathlib import Path

import topoopt
from topoopt.placement.generate import arnold_paper


def _median_run(instance, solver, repeat, **options):
    results = [topoopt.solve(instance, solver, **options) for _ in range(repeat)]
    return results[0], statistics.median(r.total_s for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monolithic-limit", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/placement_timing.md"))
    args = parser.parse_args()
    lines = [
        f"# Placement MIP timings on arnold-paper ({platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, HiGHS)",
        "",
        f"Command: `python benchmarks/placement_timing.py --monolithic-limit "
        f"{args.monolithic_limit:g} --repeat {args.repeat}`. Decomposition and coarse times are "
        f"medians of {args.repeat} runs; the monolithic model is run once with a "
        f"{args.monolithic_limit:g} s limit.",
        "",
        "| instance | optimum | decompose ms | monolithic s | monolithic status (bound) "
        "| coarse pp ms | coarse pp score | coarse auto score |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for inst in arnold_paper():
        exact, t_exact = _median_run(inst, "placement/exact-mip", args.repeat)
        mono = topoopt.solve(
            inst, "placement/exact-mip", method="monolithic", time_limit=args.monolithic_limit
        )
        coarse, t_coarse = _median_run(inst, "placement/coarse-mip", args.repeat)
        auto = topoopt.solve(inst, "placement/coarse-mip", unit="auto")
        lines.append(
            f"| {inst.name} | {exact.objective:.2f} ({exact.status.label}) | {1e3 * t_exact:.1f} "
            f"| {mono.total_s:.2f} | {mono.status.label} ({mono.bound:.2f}) "
            f"| {1e3 * t_coarse:.0f} | {coarse.objective:.2f} | {auto.objective:.2f} |"
        )
        print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
