"""Times and cuts of the partition heuristics at SpiderFlow's Table 2 sizes (§5.4.2).

Runs ``partition/greedy-lowcut``, ``partition/genetic`` (with a time limit, ``--time-limit``,
60 s by default) and ``partition/metis`` on the suites ``table2-128`` (128 units / 512 edges)
and ``table2-512`` (512 / 2048), ``--count`` instances each from ``--seed``, one run at a time,
and prints per instance and per size the median wall time and the median cut (eq. 9), and the
median quality, each cut over the best cut any listed solver found on that instance (Table 2
normalises to the ILP instead; add ``partition/mip`` with ``--solvers`` to compare with it).
A warm-up solve on a small instance runs first, so imports are not timed. Usage::

    python benchmarks/partition/heuristics.py
    python benchmarks/partition/heuristics.py --sizes 128 --time-limit 10 \
        --solvers partition/greedy-lowcut partition/mip
"""

from __future__ import annotations

import argparse
import statistics
import time

import topoopt
from topoopt.partition.generate import examples, table2

SOLVERS = ("partition/greedy-lowcut", "partition/genetic", "partition/metis")
LIMITED = ("partition/genetic", "partition/mip")
"""Solvers given ``--time-limit`` (the others run to their end)."""


def run(name: str, instance: topoopt.Instance, time_limit: float, seed: int) -> tuple[float, float]:
    """``(wall seconds, cut)`` of one solve (``inf`` cut without a solution)."""
    limit = time_limit if name in LIMITED else None
    started = time.perf_counter()
    result = topoopt.solve(instance, name, time_limit=limit, seed=seed)
    elapsed = time.perf_counter() - started
    cut = result.objective if result.objective is not None else float("inf")
    return elapsed, cut


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 512], choices=[128, 512])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS))
    args = parser.parse_args()
    for name in args.solvers:  # warm-up: imports, registry, caches
        topoopt.solve(examples()[0], name)
    print(f"seed {args.seed}, {args.count} instance(s) per size, time limit {args.time_limit:g} s")
    for size in args.sizes:
        instances = table2(args.seed, args.count, vertices=size)
        times: dict[str, list[float]] = {name: [] for name in args.solvers}
        cuts: dict[str, list[float]] = {name: [] for name in args.solvers}
        for instance in instances:
            for name in args.solvers:
                elapsed, cut = run(name, instance, args.time_limit, args.seed)
                times[name].append(elapsed)
                cuts[name].append(cut)
                print(f"  {instance.name:<14} {name:<24} {elapsed:9.3f} s  cut {cut:.4f}")
        best = [min(cuts[name][i] for name in args.solvers) for i in range(len(instances))]
        print(f"\n{size} vertices / {4 * size} edges: medians over {len(instances)} instance(s)")
        print(f"  {'solver':<24} {'time (s)':>10} {'cut':>10} {'cut / best':>11}")
        for name in args.solvers:
            quality = [c / b if b > 0 else 1.0 for c, b in zip(cuts[name], best, strict=True)]
            print(
                f"  {name:<24} {statistics.median(times[name]):10.3f} "
                f"{statistics.median(cuts[name]):10.4f} {statistics.median(quality):11.3f}"
            )
        print()


if __name__ == "__main__":
    main()
