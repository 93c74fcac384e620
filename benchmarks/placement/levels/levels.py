"""Issue #30: placement at every level on a 16,384-node tree, beside the production placers.

Usage::

    python benchmarks/placement/levels/levels.py --seeds 3 --limit 10

Three parts, every run one flat JSON record in ``levels.ndjson`` (``levels.md`` is computed
from the records by :func:`report`, a pure function):

* ``goal`` — :func:`topoopt.placement.generate.levels_tree`: 4 pods x 16 groups x 16 racks x
  16 nodes = 16,384 nodes, every node of a rack free with a probability drawn per rack
  uniform on [0.2, 0.8] (a fragmented cluster), Slurm block sizes 16, 256, 4,096 (racks,
  groups, pods as blocks), jobs of 64 to 4,096 nodes, alpha 0.5, the ``lex`` objective;
  ``placement/levels`` and every production placer on the same free-node state.
* ``growth`` — the same trees with 1, 2, 4 and 8 pods (4,096 to 32,768 nodes), jobs of 64
  nodes (8 x 8, proven at every level) and 1,024 nodes (128 x 8): how ``placement/levels``
  scales with the cluster.
* ``real`` — the topograph test models and Slurm's example files, 60 % of the nodes free
  (seeded), a job of about half the free nodes.
* ``slices`` — the ``goal`` trees with Kueue's multi-layer slices
  (``podset-slice-required-topology-constraints``, :data:`SLICED`): ``placement/levels``
  beside the Kueue placers (the others do not take slices).

Each solve is timed around :func:`topoopt.solve` (instance checks, evaluation and metrics
included); ``placement/levels`` gets ``--limit`` seconds and one solver thread, the placers
run to their end.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import platform
import random
import statistics
import time
from pathlib import Path
from typing import Any

import topoopt
from topoopt.placement import PlacementInstance
from topoopt.placement.cluster import from_topology
from topoopt.placement.generate import levels_tree
from topoopt.placement.instance import Constraints
from topoopt.topology import load_topology

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
SHAPES = [
    (8, 8),
    (16, 8),
    (32, 8),
    (16, 16),
    (64, 4),
    (40, 8),
    (48, 8),
    (24, 16),
    (128, 8),
    (64, 16),
    (512, 8),
    (1024, 1),
    (4096, 1),
]
"""Jobs (rows x cols, tp = 8: one node per cell): 64, 128, 256, 256, 256, 320, 384, 384,
1,024, 1,024, 4,096 nodes, and two data-parallel jobs of one column (1,024 and 4,096
nodes, no pipeline)."""
GROWTH = [(8, 8), (128, 8)]
"""Jobs of the ``growth`` part: 64 and 1,024 nodes."""
PLACERS = [
    "placement/kueue-best-fit",
    "placement/kueue-least-free",
    "placement/kueue-balanced",
    "placement/slurm-tree-eval",
    "placement/slurm-block",
    "placement/volcano",
    "placement/kai",
]
OURS = "placement/levels"
SLICED = [((64, 8), [(64, "group"), (8, "rack")]), ((128, 8), [(256, "pod"), (8, "rack")])]
"""Jobs of the ``slices`` part and their layers (``size``, level), coarsest first: 512 nodes
in slices of 64 per group (a column) and 8 per rack, 1,024 in slices of 256 per pod (two
columns) and 8 per rack."""
KUEUE = [p for p in PLACERS if p.startswith("placement/kueue")]
REAL = [
    "tests/topology/data/topograph/dual-level.yaml",
    "tests/topology/data/topograph/large.yaml",
    "tests/topology/data/topograph/nvl72.yaml",
    "tests/topology/data/slurm/man-tree.conf",
    "tests/topology/data/slurm/man-block.conf",
    "tests/topology/data/slurm/topology-guide-ex1.conf",
]
SCORES = ("minipod_score", "level1_score", "level2_score", "leaf_score")
BOUNDS = ("minipod_bound", "level1_bound", "level2_bound", "leaf_bound")


def goal_instance(seed: int, rows: int, cols: int, pods: int = 4) -> PlacementInstance:
    inst = levels_tree(seed=seed, pods=pods, rows=rows, cols=cols, objective="lex")[0]
    return dataclasses.replace(inst, block_sizes=(16, 256, 4096 * pods // 4 * 4 // pods))


def real_instance(path: str, seed: int) -> PlacementInstance:
    topo = load_topology(ROOT / path)
    rng = random.Random(seed)
    free = {n for n in topo.nodes if rng.random() < 0.6}
    n = max(2, len(free) // 2)
    cols = 2 if n >= 4 else 1
    rows = n // cols
    return from_topology(topo, level=0, leaf_level=-1, free=free, dp=rows, tp=8, pp=cols,
                         alpha=0.5, objective="lex", name=f"{Path(path).stem}-s{seed}")  # fmt: skip


def run(part: str, inst: PlacementInstance, solver: str, limit: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        if solver == OURS:  # one solver thread (the VM is shared)
            result = topoopt.solve(inst, solver, time_limit=limit, threads=1)
        else:
            result = topoopt.solve(inst, solver)
    except topoopt.core.errors.UnsupportedInstanceError as exc:  # type: ignore[attr-defined]
        return {"part": part, "instance": inst.name, "solver": solver, "status": "unsupported",
                "message": str(exc)}  # fmt: skip
    wall = time.perf_counter() - t0
    record: dict[str, Any] = {
        "part": part,
        "instance": inst.name,
        "nodes_free": inst.total_free,
        "job_nodes": inst.n_nodes,
        "job": f"{inst.rows}x{inst.cols}",
        "levels": inst.n_levels,
        "solver": solver,
        "status": result.status.label,
        "termination": result.termination.value,
        "wall_s": round(wall, 4),
        "message": result.message[:300],
    }
    for key in (*SCORES, *BOUNDS, "dp_spread", "pp_spread", "leaf_dp_spread", "leaf_pp_spread"):
        if key in result.metrics:
            record[key] = result.metrics[key]
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--parts", default="goal,growth,real,slices")
    parser.add_argument("--out", type=Path, default=HERE / "levels.ndjson")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    env = {"python": platform.python_version(), "machine": platform.machine(),
           "date": time.strftime("%Y-%m-%d")}  # fmt: skip
    with args.out.open("w") as out:

        def emit(record: dict[str, Any]) -> None:
            out.write(json.dumps({**record, **env}) + "\n")
            out.flush()
            print(record["part"], record["instance"], record["solver"], record["status"],
                  record.get("wall_s"), [record.get(k) for k in SCORES], flush=True)  # fmt: skip

        for seed in range(args.seeds):
            if "goal" in parts:
                for rows, cols in SHAPES:
                    inst = goal_instance(seed, rows, cols)
                    for solver in (OURS, *PLACERS):
                        emit(run("goal", inst, solver, args.limit))
            if "growth" in parts:
                for (rows, cols), pods in itertools.product(GROWTH, (1, 2, 4, 8)):
                    inst = levels_tree(seed=seed, pods=pods, rows=rows, cols=cols, objective="lex")
                    emit(run("growth", inst[0], OURS, args.limit))
            if "slices" in parts:
                for (rows, cols), layers in SLICED:
                    inst = dataclasses.replace(
                        goal_instance(seed, rows, cols),
                        block_sizes=(),
                        constraints=Constraints(slice_layers=layers),
                    )
                    for solver in (OURS, *KUEUE):
                        emit(run("slices", inst, solver, args.limit))
            if "real" in parts:
                for path in REAL:
                    inst = real_instance(path, seed)
                    for solver in (OURS, *PLACERS):
                        emit(run("real", inst, solver, args.limit))
    (HERE / "levels.md").write_text(report([json.loads(x) for x in args.out.open()]))


# --- the report: a pure function of the records ----------------------------------------------


def _mean(values: list[float]) -> str:
    return "-" if not values else f"{statistics.fmean(values):.2f}"


def _scores(records: list[dict[str, Any]]) -> str:
    cells = []
    for key in SCORES:
        values = [r[key] for r in records if key in r]
        if values:
            cells.append(_mean(values))
    return " / ".join(cells) if cells else "-"


def _versus(records: list[dict[str, Any]]) -> list[str]:
    """placement/levels against each placer, run by run, lexicographically over the levels."""
    runs: dict[tuple[str, str], dict[str, tuple[float, ...] | None]] = {}
    for r in records:
        if r.get("status") in ("optimal", "feasible"):
            key = tuple(round(r[k], 9) for k in SCORES if k in r)
            runs.setdefault((r["part"], r["instance"]), {})[r["solver"]] = key
        elif r.get("status") == "no_solution":
            runs.setdefault((r["part"], r["instance"]), {})[r["solver"]] = None
    counts = {"better": 0, "equal": 0, "worse": 0, "placer pending": 0}
    for by in runs.values():
        ours = by.get(OURS)
        if ours is None:
            continue
        for solver in PLACERS:
            if solver not in by:
                continue  # not run, or unsupported
            theirs = by[solver]
            if theirs is None:
                counts["placer pending"] += 1
            elif ours < theirs:
                counts["better"] += 1
            elif ours == theirs:
                counts["equal"] += 1
            else:
                counts["worse"] += 1
    return [
        "placement/levels against the placers on the same free-node states, run by run "
        "(lexicographically over the levels): "
        + ", ".join(f"{k} {v}" for k, v in counts.items())
        + " (placer pending: the placer left the job waiting; unsupported runs not counted)."
    ]


def _by_job(records: list[dict[str, Any]]) -> list[str]:
    """One row per job and solver: placed, proven, median time, mean scores."""
    lines = ["| job | solver | placed | proven | time (median) | scores pod / group / rack |"]
    lines.append("|---|---|---|---|---|---|")
    for job in dict.fromkeys(r["job"] for r in records):
        for solver in dict.fromkeys(r["solver"] for r in records):
            rows = [r for r in records if r["job"] == job and r["solver"] == solver]
            placed = [r for r in rows if r["status"] in ("optimal", "feasible")]
            proven = sum(r["status"] == "optimal" for r in rows)
            times = [r["wall_s"] for r in rows if "wall_s" in r]
            nodes = rows[0].get("job_nodes", "")
            lines.append(
                f"| {job} ({nodes}) | {solver} | {len(placed)}/{len(rows)} | "
                f"{proven if solver == OURS else '-'} | "
                f"{statistics.median(times):.3f} s | {_scores(placed)} |"
            )
    return lines


def report(records: list[dict[str, Any]]) -> str:
    """``levels.md`` from the records."""
    lines = ["# Placement at every level (issue #30)", ""]
    env = records[0] if records else {}
    lines.append(
        f"`python benchmarks/placement/levels/levels.py` (Python {env.get('python')}, "
        f"{env.get('date')}; records in `levels.ndjson`). Scores are Arnold's eq. 2 at each "
        "level (pod / group / rack, or the levels of the real file), means over the runs where "
        "the solver placed the job; *placed* counts those runs; *proven* the runs of "
        "placement/levels proven optimal at every level (lexicographically); times are "
        "medians of the wall time around `topoopt.solve`."
    )
    lines += ["", *_versus(records)]
    goal = [r for r in records if r["part"] == "goal"]
    if goal:
        lines += ["", "## 16,384 nodes, fragmented (4 x 16 x 16 x 16), lex, alpha 0.5", ""]
        lines += _by_job(goal)
    sliced = [r for r in records if r["part"] == "slices"]
    if sliced:
        lines += ["", "## The same trees, Kueue multi-layer slices", ""]
        lines.append(
            "Slices (size per level, coarsest first): "
            + "; ".join(
                f"{rows}x{cols}: " + ", ".join(f"{n} per {at}" for n, at in layers)
                for (rows, cols), layers in SLICED
            )
            + "."
        )
        lines += ["", *_by_job(sliced)]
    growth = [r for r in records if r["part"] == "growth"]
    if growth:
        lines += ["", "## Growth with the cluster (1, 2, 4, 8 pods of 16 x 16 x 16)", ""]
        lines.append(
            "| job | free nodes (mean) | runs | proven | time (median) | "
            "scores pod / group / rack |"
        )
        lines.append("|---|---|---|---|---|---|")
        by: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
        for r in growth:
            by.setdefault((r["job_nodes"], r["job"], round(r["nodes_free"], -3)), []).append(r)
        for (nodes, job, _), rows in sorted(by.items()):
            lines.append(
                f"| {job} ({nodes}) | "
                f"{_mean([r['nodes_free'] for r in rows])} | {len(rows)} | "
                f"{sum(r['status'] == 'optimal' for r in rows)} | "
                f"{statistics.median(r['wall_s'] for r in rows):.3f} s | {_scores(rows)} |"
            )
    real = [r for r in records if r["part"] == "real"]
    if real:
        lines += ["", "## Real topologies (60 % free, half of them as the job)", ""]
        lines.append("| file | solver | placed | proven | time (median) | scores by level |")
        lines.append("|---|---|---|---|---|---|")
        for name in dict.fromkeys(r["instance"].rsplit("-s", 1)[0] for r in real):
            for solver in dict.fromkeys(r["solver"] for r in real):
                rows = [r for r in real if r["instance"].rsplit("-s", 1)[0] == name
                        and r["solver"] == solver]  # fmt: skip
                placed = [r for r in rows if r["status"] in ("optimal", "feasible")]
                times = [r["wall_s"] for r in rows if "wall_s" in r]
                lines.append(
                    f"| {name} | {solver} | {len(placed)}/{len(rows)} | "
                    f"{sum(r['status'] == 'optimal' for r in rows) if solver == OURS else '-'} | "
                    f"{statistics.median(times):.3f} s | {_scores(placed)} |"
                    if times
                    else f"| {name} | {solver} | unsupported | - | - | - |"
                )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
