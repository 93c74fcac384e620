"""SpinSearch's running time from 10 to 10,000 clusters against eq. 8, ``O(m + n log n)``.

For every size ``n``, ``--graphs`` random connected cluster graphs (a random spanning tree plus
``n`` extra links, so ``m = 2n - 1``; up to 64 free GPUs per cluster; a demand of a quarter of
the free GPUs, so the task needs several clusters and SpinSearch runs its hop expansion), no
source. Timed separately, best of ``--repeat`` per graph, median over the graphs:

* ``tree``: the maximum spanning tree of the graph (networkx, built once per instance and
  shared by every widest-path query);
* ``spin``: SpinSearch itself with the tree built (scores eq. 2, ordering, hop layers, widest
  paths from the anchor, eq. 7 ordering and the fill of eq. 4);
* ``total``: both, what the first solve of an instance costs.

The fit is ``log t = a + b log n`` (least squares over the sizes) and the ratio
``t / (m + n log2 n)``, which stays flat when the time grows like eq. 8. Usage::

    python benchmarks/clusterselect/scaling.py --out benchmarks/clusterselect/results
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.clusterselect.solvers.spinsearch import spinsearch
from topoopt.core.seeding import make_rng
from topoopt.crosscluster.graph import ClusterGraph

SIZES = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000)


def graph_instance(rng: np.random.Generator, n: int) -> ClusterSelectInstance:
    """A random connected graph of ``n`` clusters and ``2n - 1`` links, demand a quarter of
    the free GPUs."""
    from topoopt.clusterselect.generate import random_graph

    clusters, links = random_graph(rng, n, max_free=64)
    demand = max(1, sum(g for _, g in clusters) // 4)
    return ClusterSelectInstance(f"scale-{n}", clusters, links, demand)


def time_one(instance: ClusterSelectInstance, repeat: int) -> tuple[float, float]:
    """Best-of-``repeat`` seconds of the spanning tree (cold) and of SpinSearch (tree built)."""
    tree, spin = math.inf, math.inf
    for _ in range(repeat):
        graph = ClusterGraph(instance.graph.clusters, instance.graph.links)  # cold caches
        t0 = time.perf_counter()
        graph.spanning_tree  # noqa: B018 (built and cached)
        tree = min(tree, time.perf_counter() - t0)
        object.__setattr__(instance, "graph", graph)
        t0 = time.perf_counter()
        spinsearch(instance)
        spin = min(spin, time.perf_counter() - t0)
    return tree, spin


def fit(ns: list[int], ts: list[float]) -> float:
    """Slope ``b`` of ``log t = a + b log n``."""
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for scaling.md/json/png")
    parser.add_argument("--graphs", type=int, default=5, help="random graphs per size")
    parser.add_argument("--repeat", type=int, default=3, help="timings per graph (best kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--figure",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "docs" / "figures" / "spinsearch_scaling.png",
        help="where the plot goes (default: docs/figures/spinsearch_scaling.png)",
    )
    args = parser.parse_args()
    rng = make_rng(args.seed)
    rows = []
    for n in SIZES:
        trees, spins, totals = [], [], []
        m = 0
        for _ in range(args.graphs):
            instance = graph_instance(rng, n)
            m = instance.n_links
            tree, spin = time_one(instance, args.repeat)
            trees.append(tree)
            spins.append(spin)
            totals.append(tree + spin)
        work = m + n * math.log2(n)
        rows.append(
            {
                "n": n,
                "m": m,
                "tree_s": statistics.median(trees),
                "spin_s": statistics.median(spins),
                "total_s": statistics.median(totals),
                "work": work,
            }
        )
        print(
            f"n={n:>6} m={m:>6} tree {rows[-1]['tree_s'] * 1e3:8.2f} ms  "
            f"spin {rows[-1]['spin_s'] * 1e3:8.2f} ms",
            flush=True,
        )
    ns = [r["n"] for r in rows]
    slopes = {part: fit(ns, [r[f"{part}_s"] for r in rows]) for part in ("tree", "spin", "total")}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling.json").write_text(
        json.dumps({"rows": rows, "slopes": slopes, "graphs": args.graphs}, indent=1) + "\n"
    )
    lines = [
        "# SpinSearch running time vs eq. 8",
        "",
        f"Median over {args.graphs} random graphs per size (best of {args.repeat} timings each), "
        "m = 2n - 1 links, one process. Command: `python benchmarks/clusterselect/scaling.py "
        "--out benchmarks/clusterselect/results`.",
        "",
        "| n | m | tree (ms) | SpinSearch (ms) | total (ms) | total / (m + n log2 n) (µs) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['m']} | {r['tree_s'] * 1e3:.3f} | {r['spin_s'] * 1e3:.3f} | "
            f"{r['total_s'] * 1e3:.3f} | {r['total_s'] / r['work'] * 1e6:.3f} |"
        )
    lines += [
        "",
        "Fitted growth `t ~ n^b` over all sizes: "
        + ", ".join(f"{part} b = {slope:.2f}" for part, slope in slopes.items())
        + " (eq. 8 with m = O(n) predicts b slightly above 1).",
        "",
    ]
    (args.out / "scaling.md").write_text("\n".join(lines))
    args.figure.parent.mkdir(parents=True, exist_ok=True)
    plot(rows, args.figure)


def plot(rows: list[dict[str, float]], path: Path) -> None:
    """Times against ``n`` (log-log) with ``c (m + n log n)`` fitted at the largest size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for part, label in (("total", "tree + SpinSearch"), ("spin", "SpinSearch"), ("tree", "tree")):
        ax.plot(ns, [r[f"{part}_s"] * 1e3 for r in rows], marker="o", label=label)
    scale = rows[-1]["total_s"] / rows[-1]["work"]
    ax.plot(ns, [scale * r["work"] * 1e3 for r in rows], "k--", label="c (m + n log n), eq. 8")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("clusters n (m = 2n - 1 links)")
    ax.set_ylabel("time (ms)")
    ax.set_title("SpinSearch time vs graph size")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
