"""SpinSearch's whole solve from 1,000 to 20,000 clusters, and every clusterselect solver's wall
time against its time limit on the largest instances (issue #25).

**Growth.** For every size ``n``, the family's ``scaling`` generator (``m ≈ 2n`` links, up to 64
free GPUs per cluster, a demand of a quarter of the free GPUs, so the task spans about 15 % of
the clusters). Each timing solves a fresh copy of the instance (made from its JSON object, so no
cache of an earlier solve helps) with ``topoopt.solve(instance, "clusterselect/spinsearch")``:
the search, the recomputation of the objective by ``evaluate()``, ``check()`` and the metrics,
instance load aside. Two variants of the same graphs:

* *without latencies* (``latency=false``): the key is ``K`` and the bottleneck;
* *with latencies*: the key adds the total pairwise shortest-path latency of the ``K`` chosen
  clusters, one Dijkstra per chosen cluster (``O(K m log n)``); the ``latency`` column times
  that part alone on a fresh graph.

Medians over ``--graphs`` graphs × ``--repeat`` timings (with latencies ``--latency-repeat``
timings of one graph: a solve takes seconds there). The fit is ``log t = a + b log n`` over the
sizes.

**Time limits.** Every solver with ``--limit`` seconds on ``scale-2000``, ``scale-3000`` (seed
0), ``scale-5000`` (seed 7, the issue's measurement), ``scale-10000`` (seed 0) and
``scale-100000-no-latency`` (the family's large slow instance), wall time around
``topoopt.solve`` on a fresh copy; allowed ``limit · 1.05 + 1 s``.

Usage::

    python benchmarks/clusterselect/scaling.py --out benchmarks/clusterselect/results
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

import topoopt
from topoopt.clusterselect import ClusterSelectInstance
from topoopt.clusterselect.generate import scaling as scaling_suite
from topoopt.clusterselect.generate import slow_examples
from topoopt.core.errors import UnsupportedInstanceError
from topoopt.testing.slow import allowed_s

SIZES = (1000, 2000, 5000, 10_000, 20_000)
LATENCY_SIZES = (1000, 2000, 5000, 10_000)
SOLVERS = (
    "clusterselect/spinsearch",
    "clusterselect/opportunistic",
    "clusterselect/single-cluster",
    "clusterselect/mip",
    "clusterselect/enumerate",
)


def fresh(data: dict[str, Any]) -> ClusterSelectInstance:
    """A new instance from its JSON object (cold caches)."""
    return ClusterSelectInstance.from_dict(data)


def time_solve(data: dict[str, Any], repeat: int) -> tuple[list[float], topoopt.Result]:
    """Wall seconds of ``repeat`` SpinSearch solves, each on a fresh copy."""
    times = []
    result = None
    for _ in range(repeat):
        instance = fresh(data)
        gc.collect()
        t0 = time.perf_counter()
        result = topoopt.solve(instance, "clusterselect/spinsearch")
        times.append(time.perf_counter() - t0)
    assert result is not None
    return times, result


def time_latency(data: dict[str, Any], chosen: list[str]) -> float:
    """Seconds of the total pairwise latency of ``chosen`` on a fresh graph."""
    instance = fresh(data)
    t0 = time.perf_counter()
    instance.graph.total_latency(chosen)
    return time.perf_counter() - t0


def fit(ns: list[int], ts: list[float]) -> float:
    """Slope ``b`` of ``log t = a + b log n``."""
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def growth(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """The growth rows, without and with latencies."""
    out: dict[str, list[dict[str, Any]]] = {"no-latency": [], "latency": []}
    for variant, sizes in (("no-latency", args.sizes), ("latency", args.latency_sizes)):
        for n in sizes:
            graphs = args.graphs if variant == "no-latency" else 1
            repeat = args.repeat if variant == "no-latency" else args.latency_repeat
            times, latency_s, clusters = [], [], []
            for g in range(graphs):
                (instance,) = scaling_suite(g, sizes=(n,), latency=variant == "latency")
                data = instance.to_dict()
                ts, result = time_solve(data, repeat)
                times += ts
                clusters.append(result.metrics["clusters"])
                if variant == "latency":
                    latency_s.append(time_latency(data, result.solution.chosen()))
            row = {
                "n": n,
                "m": instance.n_links,
                "clusters_chosen": statistics.median(clusters),
                "solve_s": statistics.median(times),
                "runs": len(times),
                "latency_s": statistics.median(latency_s) if latency_s else None,
            }
            out[variant].append(row)
            print(variant, row, flush=True)
    return out


def limits(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every solver on the largest instances with ``args.limit``."""
    instances = [
        scaling_suite(0, sizes=(2000,))[0],
        scaling_suite(0, sizes=(3000,))[0],
        scaling_suite(7, sizes=(5000,))[0],
        scaling_suite(0, sizes=(10_000,))[0],
        slow_examples()[0],
    ]
    rows = []
    for instance in instances:
        data = instance.to_dict()
        for solver in SOLVERS:
            copy = fresh(data)
            gc.collect()
            t0 = time.perf_counter()
            try:
                result = topoopt.solve(copy, solver, time_limit=args.limit)
            except UnsupportedInstanceError as exc:
                row = {"instance": instance.name, "solver": solver, "refused": str(exc)}
            else:
                wall = time.perf_counter() - t0
                row = {
                    "instance": instance.name,
                    "solver": solver,
                    "wall_s": wall,
                    "within": wall <= allowed_s(args.limit),
                    "status": result.status.label,
                    "termination": result.termination.value,
                    "clusters": result.metrics.get("clusters"),
                }
            rows.append(row)
            print(row, flush=True)
    return rows


def report(data: dict[str, Any], args: argparse.Namespace) -> str:
    """The markdown page."""
    lines = [
        "# clusterselect at scale: SpinSearch's whole solve, time limits",
        "",
        "Command: `python benchmarks/clusterselect/scaling.py --out "
        "benchmarks/clusterselect/results`. "
        f"Machine: {data['machine']}, shared with other jobs (timings are noisy; medians).",
        "",
        "## SpinSearch: `topoopt.solve` wall time (search + evaluate + check + metrics)",
        "",
        f"Without latencies: median of {args.graphs} graphs × {args.repeat} solves per size. With "
        f"latencies: one graph, {args.latency_repeat} solve(s) per size; `latency` is the total "
        "pairwise latency alone (one Dijkstra per chosen cluster).",
        "",
        "| n | m | K chosen | no latency (ms) | with latency (s) | latency alone (s) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    with_latency = {r["n"]: r for r in data["growth"]["latency"]}
    for r in data["growth"]["no-latency"]:
        w = with_latency.get(r["n"])
        lat = f"{w['solve_s']:.2f} | {w['latency_s']:.2f}" if w else "– | –"
        solve_ms = r["solve_s"] * 1e3
        lines.append(
            f"| {r['n']} | {r['m']} | {r['clusters_chosen']:.0f} | {solve_ms:.1f} | {lat} |"
        )
    slopes = data["slopes"]
    lines += [
        "",
        f"Fitted growth `t ~ n^b`: without latencies b = {slopes['no-latency']:.2f}; with "
        f"latencies b = {slopes['latency']:.2f} (the latency sum is `K` Dijkstra searches with "
        "`K ≈ 0.15 n`: quadratic).",
        "",
        f"## Time limits ({args.limit:g} s; allowed {allowed_s(args.limit):.2f} s wall)",
        "",
        "| instance | solver | wall (s) | within | status | K |",
        "|---|---|---:|---|---|---:|",
    ]
    for r in data["limits"]:
        if "refused" in r:
            lines.append(f"| {r['instance']} | {r['solver']} | – | refuses | – | – |")
            continue
        k = "–" if r["clusters"] is None else f"{r['clusters']:.0f}"
        lines.append(
            f"| {r['instance']} | {r['solver']} | {r['wall_s']:.2f} | "
            f"{'yes' if r['within'] else '**no**'} | {r['status']}, {r['termination']} | {k} |"
        )
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for scaling.md/json")
    parser.add_argument("--graphs", type=int, default=3, help="graphs per size, no latency")
    parser.add_argument("--repeat", type=int, default=3, help="solves per graph, no latency")
    parser.add_argument("--latency-repeat", type=int, default=1, help="solves, with latency")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--latency-sizes", type=int, nargs="+", default=list(LATENCY_SIZES))
    parser.add_argument("--limit", type=float, default=2.0, help="time limit of the table")
    parser.add_argument("--skip-limits", action="store_true", help="growth only")
    args = parser.parse_args()
    (warm,) = scaling_suite(0, sizes=(200,))  # imports and first-call costs before any timing
    time_solve(warm.to_dict(), 2)
    rows = growth(args)
    data: dict[str, Any] = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "growth": rows,
        "slopes": {
            variant: fit([r["n"] for r in rs], [r["solve_s"] for r in rs])
            for variant, rs in rows.items()
        },
        "limits": [] if args.skip_limits else limits(args),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling.json").write_text(json.dumps(data, indent=1) + "\n")
    (args.out / "scaling.md").write_text(report(data, args))


if __name__ == "__main__":
    main()
