"""The spreading-metric bound (B3), level by level, against greedy-lowcut's cut (measurement).

``partition/mip``'s LP relaxation is 0 at the Table 2 sizes (fractional assignments cut
nothing), so it proves nothing there. This script measures the spreading-metric relaxation
of ``docs/partition.md`` (B3) as :mod:`topoopt.partition.bounds` solves it: per level ``j``
whose largest group cannot hold the job, ``LP_j`` (edge lengths whose balls of radius 1 hold at
most the level's largest group capacity, and together at most ``squared_sizes``) by HiGHS'
PDLP, certified by the Lagrangian value at its duals, and the bound ``Σ_j δ_j LP_j``. The LP
has ``|V| · (2|E| + |V| + 1)`` rows: about 147,000 at 128 units / 512 edges, 2.4 million at
512 / 2,048. Usage::

    python benchmarks/partition/spreading_bound.py instances/partition/table2-512/*.json
"""

from __future__ import annotations

import argparse
import time

import topoopt
from topoopt.partition.bounds import spreading_level, spreading_levels
from topoopt.partition.formulations.cut_mip import level_steps
from topoopt.partition.instance import PartitionInstance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="partition instance files")
    parser.add_argument("--time-limit", type=float, default=10.0, help="greedy-lowcut's limit")
    args = parser.parse_args()
    for path in args.files:
        instance = topoopt.load(path)
        assert isinstance(instance, PartitionInstance)
        bound = 0.0
        steps = level_steps(instance.graph.levels)
        for j, largest, squares in spreading_levels(instance):
            started = time.perf_counter()
            value = spreading_level(instance, largest, squares)
            bound += steps[j] * value
            print(
                f"{instance.name} level {j}: step {steps[j]:g}, largest group {largest} "
                f"GPUs, LP {value:.4f} ({time.perf_counter() - started:.1f} s)",
                flush=True,
            )
        cut = topoopt.solve(instance, "partition/greedy-lowcut", time_limit=args.time_limit)
        print(
            f"{instance.name}: spreading bound {bound:.4f}, greedy-lowcut cut "
            f"{cut.objective:.4f}, gap {1 - bound / cut.objective:.1%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
