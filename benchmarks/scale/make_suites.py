"""The size ladder of the scale benchmark: placement clusters and gpuselect pools.

* **placement** (``instances/placement``): ``(minipods, free nodes)`` from (4, 100) to
  (128, 16,384), the free nodes split unevenly (weights ``Uniform(0, 2)``, so some minipods are
  nearly empty and others twice the mean; largest-remainder rounding keeps the total exact);
  per rung a job of half the cluster (8 stages, ``alpha = 0.37``) and one of a quarter
  (4 stages, ``alpha = 0.7``), TP 8 (one DP rank per node), at most 4,096 nodes;
* **gpuselect** (``instances/gpuselect``): pools of 32 to 8,192 GPUs
  (:func:`topoopt.gpuselect.generate.large_pool`: 8-GPU hosts of four types, 30 % busy,
  topology model), requests ``k`` = 8, a sixteenth and a quarter of the pool.

Deterministic given ``--seed``; the files are written as ``topoopt instances generate`` writes
them, so ``topoopt bench`` reads them (see ``benchmarks/scale/README.md``). Usage::

    python benchmarks/scale/make_suites.py --out benchmarks/scale/instances
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import topoopt
from topoopt.core.seeding import make_rng
from topoopt.gpuselect.generate import large_pool
from topoopt.placement.instance import Minipod, PlacementInstance

PLACEMENT_RUNGS = (
    (4, 100),
    (8, 256),
    (16, 1024),
    (16, 4096),
    (32, 2048),
    (64, 4096),
    (64, 8192),
    (128, 16384),
)
"""``(minipods, free nodes)`` of the placement ladder."""
PLACEMENT_JOBS = ((2, 8, 0.37), (4, 4, 0.7))
"""``(fraction 1/n of the cluster, stages, alpha)`` of the jobs of each rung."""
MAX_JOB_NODES = 4096
GPU_POOLS = (32, 128, 512, 1024, 2048, 4096, 8192)
"""Pool sizes of the gpuselect ladder."""


def uneven_split(rng: np.random.Generator, total: int, parts: int) -> list[int]:
    """``total`` over ``parts`` with weights ``Uniform(0, 2)``, largest-remainder rounding."""
    weights = rng.uniform(0.0, 2.0, size=parts)
    shares = total * weights / weights.sum()
    counts = np.floor(shares).astype(int)
    for j in np.argsort(-(shares - counts), kind="stable")[: total - counts.sum()]:
        counts[j] += 1
    return [int(c) for c in counts]


def placement_ladder(seed: int) -> list[PlacementInstance]:
    """Two jobs on each rung of :data:`PLACEMENT_RUNGS` (see the module docstring)."""
    rng = make_rng(seed)
    out = []
    for n_pods, free in PLACEMENT_RUNGS:
        split = uneven_split(rng, free, n_pods)
        pods = tuple(Minipod(f"mp{j}", f) for j, f in enumerate(split))
        for fraction, cols, alpha in PLACEMENT_JOBS:
            rows = min(free // fraction, MAX_JOB_NODES) // cols
            name = f"m{n_pods}-f{free}-{rows}x{cols}"
            labels = {"rung": f"{n_pods}x{free}"}
            out.append(
                PlacementInstance(name, pods, dp=rows, tp=8, pp=cols, alpha=alpha, labels=labels)
            )
    return out


def gpuselect_ladder(seed: int) -> list:
    """Requests of 8, a sixteenth and a quarter of each pool of :data:`GPU_POOLS`."""
    out = []
    for gpus in GPU_POOLS:
        ks = sorted({8, gpus // 16, gpus // 4} - {0, 1})
        out += large_pool(seed=seed, gpus=gpus, ks=ks)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "instances")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for family, instances in (
        ("placement", placement_ladder(args.seed)),
        ("gpuselect", gpuselect_ladder(args.seed)),
    ):
        folder = args.out / family
        folder.mkdir(parents=True, exist_ok=True)
        for inst in instances:
            topoopt.save(inst, folder / f"{inst.name}.json")
        print(f"{len(instances)} {family} instances in {folder}")


if __name__ == "__main__":
    main()
