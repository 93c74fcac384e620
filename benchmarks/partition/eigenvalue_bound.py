"""The projected eigenvalue bound (B5) against greedy-lowcut's cut (issue #29).

For each instance (files, or fresh Table 2 instances with ``--seeds`` and ``--sizes``): the
joint bound over the levels, the bound taken level by level, greedy-lowcut's cut, the gap
``(cut − bound) / cut`` of the joint bound and the seconds it took. One JSON line per
instance on standard output, then the median gap per size. Usage::

    OMP_NUM_THREADS=1 python benchmarks/partition/eigenvalue_bound.py \\
        instances/partition/table2-*/*.json --seeds 1 2 3 4 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from unittest import mock

import topoopt
from topoopt.partition import spectral
from topoopt.partition.generate import table2
from topoopt.partition.instance import PartitionInstance


def measure(instance: PartitionInstance) -> dict[str, object]:
    """One instance's record."""
    started = time.perf_counter()
    joint = spectral.eigenvalue_bound(instance)
    seconds = time.perf_counter() - started
    with mock.patch.object(spectral, "MAX_JOINT_CLUSTERS", 0):
        by_level = spectral.eigenvalue_bound(instance)
    cut = topoopt.solve(instance, "partition/greedy-lowcut").objective
    return {
        "instance": instance.name,
        "size": f"{instance.n_vertices}/{len(instance.edges)}",
        "clusters": instance.n_clusters,
        "bound": round(joint, 4),
        "by_level": round(by_level, 4),
        "cut": cut,
        "gap": None if not cut else round((cut - joint) / cut, 4),
        "seconds": round(seconds, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="partition instance files")
    parser.add_argument("--seeds", type=int, nargs="*", default=[], help="fresh table2 seeds")
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 512])
    args = parser.parse_args()
    instances = [topoopt.load(path) for path in args.files]
    for seed in args.seeds:
        for size in args.sizes:
            instances.extend(table2(seed, 1, vertices=size))
    gaps: dict[str, list[float]] = {}
    for instance in instances:
        assert isinstance(instance, PartitionInstance)
        record = measure(instance)
        print(json.dumps(record), flush=True)
        if isinstance(record["gap"], float):
            gaps.setdefault(str(record["size"]), []).append(record["gap"])
    for size, values in sorted(gaps.items()):
        low, high = min(values), max(values)
        print(
            f"{size}: median gap {statistics.median(values):.3f} "
            f"(min {low:.3f}, max {high:.3f}, {len(values)} instances)"
        )


if __name__ == "__main__":
    main()
