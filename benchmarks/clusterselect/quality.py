"""How often SpinSearch (and the baselines) reach the optimum of cluster selection, and by how
much they miss it otherwise.

Random instances (``topoopt.clusterselect.generate.random_instance``: a random spanning tree
plus ``n`` extra links, bandwidths from six WAN classes, latencies 1–20 ms, 0–16 free GPUs per
cluster, a demand drawn between 1 and all free GPUs, a source half of the time), ``n`` from 4 to
``--max-clusters``; the optimum is the enumeration oracle's. Every heuristic result is checked
against it by its key: fewest clusters ``K`` first, then the bottleneck rank, then latency.
Usage::

    python benchmarks/clusterselect/quality.py --count 1000 --out benchmarks/clusterselect/results
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import topoopt
from topoopt.clusterselect.generate import random_instance
from topoopt.core.seeding import make_rng

SOLVERS = (
    ("clusterselect/spinsearch", {}),
    ("clusterselect/spinsearch", {"score": "incident"}),
    ("clusterselect/spinsearch", {"expand": "all"}),
    ("clusterselect/opportunistic", {}),
    ("clusterselect/single-cluster", {}),
)


def label(name: str, options: dict[str, str]) -> str:
    """``spinsearch`` or ``spinsearch(score=incident)``."""
    short = name.split("/", 1)[1]
    return short + "".join(f"({k}={v})" for k, v in options.items())


def key(result: topoopt.Result) -> tuple[float, float, float]:
    """``(K, bottleneck rank, latency)`` of a result."""
    m = result.metrics
    return m["clusters"], m["bottleneck_rank"], m["latency_ms"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--max-clusters", type=int, default=14)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rng = make_rng(args.seed)
    stats: dict[str, Counter[str]] = defaultdict(Counter)
    extra_k: dict[str, list[float]] = defaultdict(list)
    extra_rank: dict[str, list[float]] = defaultdict(list)
    latency_ratio: dict[str, list[float]] = defaultdict(list)
    multi = 0
    for i in range(args.count):
        n = int(rng.integers(4, args.max_clusters + 1))
        instance = random_instance(rng, n, f"q{i}")
        optimum = topoopt.solve(instance, "clusterselect/enumerate")
        best = key(optimum)
        multi += best[0] > 1
        for name, options in SOLVERS:
            tag = label(name, options)
            result = topoopt.solve(instance, name, **options)
            stats[tag]["runs"] += 1
            if result.solution is None:
                stats[tag]["unplaced"] += 1
                continue
            got = key(result)
            assert got >= best, (instance.name, tag, got, best)
            stats[tag]["optimal"] += got == best
            stats[tag]["fewest K"] += got[0] == best[0]
            if got[0] > best[0]:
                extra_k[tag].append(got[0] - best[0])
            elif got[1] > best[1]:
                extra_rank[tag].append(got[1] - best[1])
            elif got[2] > best[2] and best[2] > 0:
                latency_ratio[tag].append(got[2] / best[2])
    lines = [
        "# Cluster selection: heuristics against the oracle",
        "",
        f"{args.count} random instances of 4–{args.max_clusters} clusters (seed {args.seed}); "
        f"{multi} of them need two or more clusters. Command: `python "
        f"benchmarks/clusterselect/quality.py --count {args.count} --out "
        "benchmarks/clusterselect/results`.",
        "",
        "| solver | placed | optimal key (%) | fewest K (%) | misses on K: mean extra K | "
        "misses on bottleneck: mean extra rank | misses on latency: median ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, options in SOLVERS:
        tag = label(name, options)
        s = stats[tag]
        placed = s["runs"] - s["unplaced"]

        def pct(x: int, placed: int = placed) -> str:
            return f"{100 * x / placed:.1f}" if placed else "-"

        def mean(xs: list[float]) -> str:
            return f"{statistics.fmean(xs):.2f} ({len(xs)})" if xs else "- (0)"

        def median(xs: list[float]) -> str:
            return f"{statistics.median(xs):.2f} ({len(xs)})" if xs else "- (0)"

        lines.append(
            f"| {tag} | {placed}/{s['runs']} | {pct(s['optimal'])} | {pct(s['fewest K'])} | "
            f"{mean(extra_k[tag])} | {mean(extra_rank[tag])} | {median(latency_ratio[tag])} |"
        )
    lines += [
        "",
        "Percentages are of the placed runs; the miss columns give the mean (or median) and, in "
        "parentheses, how many runs missed that way (a run counts once, at the first key part "
        "it misses).",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "quality.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
