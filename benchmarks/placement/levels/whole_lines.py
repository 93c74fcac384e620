"""Issue #30: the least spreads of lines whole in a split's switches on the 4,096-node job.

Usage::

    python benchmarks/placement/levels/whole_lines.py --seeds 0 1 2 --alphas 0.6 0.5

The benchmark's 16,384-node trees (:func:`topoopt.placement.generate.levels_tree`, as in
``levels.py``) and its 512 x 8 job, ``placement/levels`` with one thread: per seed and alpha
the scores and bounds of every level, the spreads at the leaves and the wall time around
:func:`topoopt.solve`. With alpha 0.6 the pod optimum has the columns whole in two pods, where
:func:`topoopt.placement.whole_side.least_spreads` applies (``docs/levels.md``).
"""

from __future__ import annotations

import argparse
import time

import topoopt
from topoopt.placement.generate import levels_tree

LEVELS = ("minipod", "level1", "leaf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.6, 0.5])
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--cols", type=int, default=8)
    parser.add_argument("--limit", type=float, default=10.0)
    args = parser.parse_args()
    print("| seed | alpha | status | scores | bounds | leaf spreads | time |")
    print("|---|---|---|---|---|---|---|")
    for alpha in args.alphas:
        for seed in args.seeds:
            inst = levels_tree(seed=seed, rows=args.rows, cols=args.cols, alpha=alpha)[0]
            began = time.perf_counter()
            result = topoopt.solve(inst, "placement/levels", time_limit=args.limit, threads=1)
            wall = time.perf_counter() - began
            m = result.metrics
            scores = " / ".join(f"{m[f'{lv}_score']:.1f}" for lv in LEVELS)
            bounds = " / ".join(f"{m[f'{lv}_bound']:.1f}" for lv in LEVELS)
            spreads = f"({m['leaf_dp_spread']:.0f}, {m['leaf_pp_spread']:.0f})"
            print(f"| {seed} | {alpha} | {result.status.name.lower()} | {scores} | {bounds} | "
                  f"{spreads} | {wall:.2f} s |")  # fmt: skip


if __name__ == "__main__":
    main()
