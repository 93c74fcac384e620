"""The column-generation bound (B4) against time, from greedy-lowcut's assignment (issue #29).

For each instance file: the bound reached at the checkpoints (``--at``, seconds), the exact
pricing rounds done, whether the column generation converged, the median time of an exact
pricing problem of a group that must hold part of the job (``lo_N > 0``), and the gap to
greedy-lowcut's cut. One JSON line per instance on standard output. Usage (one thread)::

    OMP_NUM_THREADS=1 python benchmarks/partition/colgen_bound.py \\
        instances/partition/table2-128/*.json --time-limit 300 --at 60 150 300 \\
        [--workers 2] [--pricing mip]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import topoopt
from topoopt.core.io import load
from topoopt.partition import colgen


def measure(
    path: Path, limit: float, at: list[float], workers: int = 1, pricing: str = colgen.PRICING
) -> dict[str, object]:
    """One instance's record."""
    instance = load(path)
    greedy = topoopt.solve(instance, "partition/greedy-lowcut")
    where = greedy.solution.indices(instance)
    times: list[float] = []
    rounds = [0]
    price, exact = colgen.PRICERS[pricing], colgen.exact_round

    def timed_price(problem, group, prize, start, lim, frontier):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        out = price(problem, group, prize, start, lim, frontier)
        if problem.low[group] > 0:
            times.append(time.perf_counter() - began)
        return out

    def counted_round(*args):  # type: ignore[no-untyped-def]
        rounds[0] += 1
        return exact(*args)

    colgen.PRICERS[pricing], colgen.exact_round = timed_price, counted_round
    started = time.perf_counter()
    trace = []
    try:
        for found in colgen.colgen_bounds(instance, where, started + limit, workers, pricing):
            trace.append((time.perf_counter() - started, found.value))
    finally:
        colgen.PRICERS[pricing], colgen.exact_round = price, exact
    wall = time.perf_counter() - started
    cut = float(greedy.objective)
    reached = {str(t): max((v for s, v in trace if s <= t), default=0.0) for t in at}
    final = trace[-1][1] if trace else 0.0
    return {
        "instance": instance.name,
        "workers": workers,
        "pricing": pricing,
        "cut": cut,
        "bound_at": reached,
        "bound": final,
        "gap": (cut - final) / cut,
        "exact_rounds": rounds[0],
        "converged": wall < limit * 0.99,
        "median_pricing_s": statistics.median(times) if times else None,
        "wall_s": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--at", type=float, nargs="*", default=[60.0, 150.0, 300.0])
    parser.add_argument("--workers", type=int, default=1, help="pricing problems at once")
    parser.add_argument("--pricing", choices=sorted(colgen.PRICERS), default=colgen.PRICING)
    args = parser.parse_args()
    for path in args.files:
        record = measure(path, args.time_limit, args.at, args.workers, args.pricing)
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
