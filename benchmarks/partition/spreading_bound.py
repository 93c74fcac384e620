"""A lower bound on eq. 9 from the spreading-metric LP, level by level (measurement only).

``partition/mip``'s LP relaxation is 0 at the Table 2 sizes (fractional assignments cut
nothing), so it proves nothing there. This script measures how far the classical
spreading-metric relaxation of capacitated partitioning gets instead. With the cost written
over the levels of the widest-path ultrametric (``docs/partition.md``: ``w(a, b) = Σ_j δ_j
[a, b separated by P_j]``), the cut is ``Σ_j δ_j cut_j`` and

    cut_j >= LP_j = min Σ_e t_e ℓ_e
        s.t. d_{s,b} <= d_{s,a} + ℓ_e       for every source s and edge e = (a, b), both ways
             z_{s,v} >= 1 - d_{s,v}, z >= 0, d_{s,s} = 0, 0 <= ℓ, d <= 1
             Σ_v g_v z_{s,v} <= K_j          for every source s

with ``K_j`` the largest group capacity of level ``j``: in an integral solution, ``ℓ_e`` is 1
on the edges ``P_j`` separates, ``z_{s,v}`` is at most 1 for the vertices in ``s``'s group and
0 for the others, so the group holds at most ``K_j`` GPUs. Levels whose largest group holds
the whole job are skipped (``LP_j = 0``). The printed bound is ``Σ_j δ_j LP_j``, valid for every
solver's cut. The LP has ``|V| · (2|E| + |V| + 1)`` rows: about 147,000 at 128 / 512, seconds
to minutes with the HiGHS interior point method; 512 / 2048 is out of reach this way. Usage::

    python benchmarks/partition/spreading_bound.py instances/partition/table2-128/t2-128-0-0.json
"""

from __future__ import annotations

import argparse
import time

import highspy
import numpy as np

import topoopt
from topoopt.partition.formulations.cut_mip import level_steps
from topoopt.partition.instance import PartitionInstance


def level_lp(instance: PartitionInstance, capacity: float) -> float:
    """``LP_j`` of the module docstring for the largest group capacity ``capacity``."""
    n = instance.n_vertices
    u, w, traffic = instance.edge_arrays
    g = np.array([x.gpus for x in instance.vertices], dtype=float)
    m = len(traffic)
    d0, z0 = m, m + n * n  # columns: ℓ_e, then d_{s,v}, then z_{s,v}
    cols = m + 2 * n * n
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("solver", "ipm")
    upper = np.ones(cols)
    upper[z0:] = highspy.kHighsInf
    upper[d0 + np.arange(n) * (n + 1)] = 0.0  # d_{s,s} = 0
    cost = np.zeros(cols)
    cost[:m] = traffic
    highs.addVars(cols, np.zeros(cols), upper)
    highs.changeColsCost(cols, np.arange(cols, dtype=np.int32), cost)
    rows: list[tuple[list[int], list[float], float, float]] = []
    for s in range(n):
        for e in range(m):
            for a, b in ((u[e], w[e]), (w[e], u[e])):
                if b != s:  # d_{s,b} - d_{s,a} - ℓ_e <= 0
                    rows.append(([d0 + s * n + b, d0 + s * n + a, e], [1, -1, -1], -np.inf, 0))
        for v in range(n):  # z_{s,v} + d_{s,v} >= 1
            rows.append(([z0 + s * n + v, d0 + s * n + v], [1, 1], 1, np.inf))
        rows.append(([z0 + s * n + v for v in range(n)], g.tolist(), -np.inf, capacity))
    starts = np.cumsum([0] + [len(r[0]) for r in rows[:-1]])
    highs.addRows(
        len(rows),
        np.array([r[2] for r in rows], dtype=float),
        np.array([r[3] for r in rows], dtype=float),
        int(sum(len(r[0]) for r in rows)),
        starts.astype(np.int32),
        np.concatenate([r[0] for r in rows]).astype(np.int32),
        np.concatenate([r[1] for r in rows]).astype(float),
    )
    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"LP not solved: {highs.getModelStatus()}")
    return float(highs.getInfo().objective_function_value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="partition instance files")
    parser.add_argument("--time-limit", type=float, default=10.0, help="greedy-lowcut's limit")
    args = parser.parse_args()
    for path in args.files:
        instance = topoopt.load(path)
        assert isinstance(instance, PartitionInstance)
        started = time.perf_counter()
        bound, need = 0.0, instance.total_gpus
        steps = level_steps(instance.graph.levels)
        for j, part in enumerate(instance.graph.hierarchy[: len(steps)]):
            largest = max(sum(instance.clusters[c].capacity_gpus for c in group) for group in part)
            if largest < need:
                bound += steps[j] * level_lp(instance, largest)
        elapsed = time.perf_counter() - started
        cut = topoopt.solve(instance, "partition/greedy-lowcut", time_limit=args.time_limit)
        print(
            f"{instance.name}: spreading bound {bound:.4f} ({elapsed:.0f} s), "
            f"greedy-lowcut cut {cut.objective:.4f}, bound / cut {bound / cut.objective:.2f}"
        )


if __name__ == "__main__":
    main()
