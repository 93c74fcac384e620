"""Issue #14's speed goals for placement: coarse-mip <= 1 s, every heuristic <= 100 ms.

Usage::

    python benchmarks/placement/heuristics_timing.py --repeat 5 --out heuristics_timing.md

Instances come from the ``uneven`` generator (:func:`topoopt.placement.generate.uneven`,
``tp = 8``, alpha 0.37), regenerated from seeds 0..``--seeds``-1, not committed:

* ``8k``: 64 minipods with free nodes uniform on 0..256 (about 8,192 free), jobs 512 x 8
  (4,096 nodes) and 256 x 8 (the issue's goal setting);
* ``4k``: 64 minipods with free nodes uniform on 0..128, job 256 x 8 (the issue's table).

Each solver runs ``--repeat`` times on each instance (wall time of ``topoopt.solve``,
including the check of the answer, after a garbage collection, and the process's CPU time,
which other jobs on a shared machine disturb less); the table gives, per group and solver,
the median of the per-instance medians, the largest one, and the objectives (one per
instance). Run it on the code before and after a change (for instance
with ``PYTHONPATH`` pointing at an exported older tree) with different ``--label`` s.

``--quality N`` adds the quality check of topo-aware's FM move limit: on ``N`` mixed
``uneven`` instances (4..64 minipods, free 0..256 with 30 % small minipods, jobs 2..256 rows
x 2..16 stages, odd alphas, seed 14) the exact score with the default ``moves`` against
``moves=0`` (every pass moves every vertex: the placement of the implementation before the
limit), counted as better / equal / worse, with the mean scores.
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import time
from pathlib import Path

import topoopt
from topoopt.placement import PlacementInstance
from topoopt.placement.generate import uneven

SOLVERS = (
    "placement/coarse-mip",
    "placement/topo-aware",
    "placement/best-fit",
    "placement/gpu-packing",
    "placement/slurm-tree",
    "placement/koordinator",
    "placement/random-fit",
)


def groups(seeds: int) -> dict[str, list[PlacementInstance]]:
    """The instance groups (see the module docstring)."""
    big = [uneven(seed=s, minipods=64, max_free=256, rows=512)[0] for s in range(seeds)]
    big += [uneven(seed=s, minipods=64, max_free=256, rows=256)[0] for s in range(seeds)]
    return {
        "8k: 64 minipods, ~8,192 free, jobs 512 x 8 and 256 x 8": big,
        "4k: 64 minipods, ~4,096 free, job 256 x 8": [
            uneven(seed=s, minipods=64, rows=256)[0] for s in range(seeds)
        ],
    }


def time_solver(inst: PlacementInstance, solver: str, repeat: int, limit: float) -> tuple:
    """``(median wall seconds, median CPU seconds, objective)`` of ``repeat`` solves."""
    walls, cpus, objective = [], [], None
    for _ in range(repeat):
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        res = topoopt.solve(inst, solver, time_limit=limit)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        objective = res.objective
    return statistics.median(walls), statistics.median(cpus), objective


def quality(count: int) -> list[str]:
    """topo-aware with its default FM move limit against ``moves=0`` (see the docstring)."""
    instances = uneven(
        seed=14,
        count=count,
        minipods=64,
        min_minipods=4,
        max_free=256,
        small_share=0.3,
        max_rows=256,
        max_cols=16,
        alpha=-1,
    )
    better = equal = worse = 0
    limited, unlimited, t_limited, t_unlimited = [], [], [], []
    for inst in instances:
        t0 = time.perf_counter()
        a = topoopt.solve(inst, "placement/topo-aware").objective
        t1 = time.perf_counter()
        b = topoopt.solve(inst, "placement/topo-aware", moves=0).objective
        t2 = time.perf_counter()
        t_limited.append(t1 - t0)
        t_unlimited.append(t2 - t1)
        limited.append(a)
        unlimited.append(b)
        better += a < b - 1e-9
        worse += a > b + 1e-9
        equal += abs(a - b) <= 1e-9
    return [
        "",
        f"### topo-aware: default moves against moves=0 on {count} mixed instances",
        "",
        "| moves | mean score | better | equal | worse | median ms | max ms |",
        "|---|---|---|---|---|---|---|",
        f"| default | {statistics.mean(limited):.3f} | {better} | {equal} | {worse} "
        f"| {1e3 * statistics.median(t_limited):.1f} | {1e3 * max(t_limited):.1f} |",
        f"| 0 (every vertex) | {statistics.mean(unlimited):.3f} | | | "
        f"| {1e3 * statistics.median(t_unlimited):.1f} | {1e3 * max(t_unlimited):.1f} |",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--solvers", nargs="*", default=list(SOLVERS))
    parser.add_argument("--label", default="this code")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--quality", type=int, default=0, metavar="N")
    args = parser.parse_args(argv)
    lines = [
        f"## {args.label} — {platform.machine()}, Python {platform.python_version()}",
        "",
        f"Medians of {args.repeat} runs per instance, seeds 0..{args.seeds - 1}, "
        f"time limit {args.limit:g} s.",
    ]
    for group, instances in groups(args.seeds).items():
        lines += ["", f"### {group}", ""]
        lines += [
            "| solver | median ms | max ms | median CPU ms | max CPU ms | objective per instance |",
            "|---|---|---|---|---|---|",
        ]
        for solver in args.solvers:
            runs = [time_solver(inst, solver, args.repeat, args.limit) for inst in instances]
            walls = [w for w, _, _ in runs]
            cpus = [c for _, c, _ in runs]
            objs = ", ".join(f"{o:.2f}" for _, _, o in runs)
            line = (
                f"| {solver} | {1e3 * statistics.median(walls):.1f} | {1e3 * max(walls):.1f} "
                f"| {1e3 * statistics.median(cpus):.1f} | {1e3 * max(cpus):.1f} | {objs} |"
            )
            print(line, flush=True)
            lines.append(line)
    if args.quality:
        lines += quality(args.quality)
        print("\n".join(lines[-4:]), flush=True)
    text = "\n".join(lines) + "\n"
    if args.out is None:
        print(text)
    else:
        with args.out.open("a", encoding="utf-8") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
