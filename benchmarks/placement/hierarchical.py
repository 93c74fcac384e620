"""Issue #15: leaf-level spreads of ``placement/hierarchical`` against ``placement/exact-mip``
followed by the rank-order fill, on generated 3-level trees.

Usage::

    python benchmarks/placement/hierarchical.py --seeds 10 --limit 20

Each instance is a tree built with :mod:`topoopt.topology` (a core switch, ``pods`` minipod
switches, ``leaves`` leaf switches per pod, ``size`` nodes per leaf), a random share of free
nodes (uniform on 35-75 %, every node free with that probability), a job of ``rows x cols``
nodes (random, at most 70 % of the free nodes) and alpha in {0.2, 0.5, 0.8};
:func:`topoopt.placement.cluster.from_topology` makes the placement instance with the pods as
minipods. Both solvers get the same time limit; they return the same minipod matrix (the
hierarchical solver runs exact-mip for it), so the objective (eq. 2) is equal and only the
leaf level differs: exact-mip's nodes are the rank-order fill of each minipod, the
hierarchical solver's come from its leaf step.

Every run is one flat JSON record in ``hierarchical.ndjson``; ``hierarchical.md`` is computed
from the records (means per tree class).
"""

from __future__ import annotations

import argparse
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
from topoopt.topology import Switch, Topology

HERE = Path(__file__).parent
CLASSES = {
    "small": (3, 3, 4),  # pods, leaves per pod, nodes per leaf: 36 nodes
    "medium": (4, 4, 8),  # 128 nodes
    "large": (8, 8, 16),  # 1,024 nodes
}
SOLVERS = ("placement/exact-mip", "placement/hierarchical")


def tree(pods: int, leaves: int, size: int) -> Topology:
    """A core switch over ``pods`` pods of ``leaves`` leaves of ``size`` nodes."""
    return Topology(
        (
            Switch(
                "core",
                children=tuple(
                    Switch(
                        f"pod{p}",
                        children=tuple(
                            Switch(
                                f"leaf{p}-{k}",
                                nodes=tuple(f"n{p}-{k}-{i}" for i in range(size)),
                            )
                            for k in range(leaves)
                        ),
                    )
                    for p in range(pods)
                ),
            ),
        ),
        level_names=("core", "pod", "leaf"),
        default_gpus=8,
        name="gen",
    )


def instances(cls: str, seed: int) -> list[PlacementInstance]:
    """Three instances (alpha 0.2, 0.5, 0.8) of class ``cls`` from ``seed``."""
    rng = random.Random(f"{cls}-{seed}")
    topo = tree(*CLASSES[cls])
    share = rng.uniform(0.35, 0.75)
    free = {n for n in topo.nodes if rng.random() < share}
    room = int(0.7 * len(free))
    cols = rng.choice([c for c in (1, 2, 4, 8) if c <= room])
    rows = rng.randint(1, max(1, room // cols))
    return [
        from_topology(
            topo,
            level="pod",
            free=free,
            dp=rows,
            tp=8,
            pp=cols,
            alpha=alpha,
            name=f"{cls}-s{seed}-{rows}x{cols}-a{alpha}",
        )
        for alpha in (0.2, 0.5, 0.8)
    ]


def run(cls: str, inst: PlacementInstance, solver: str, limit: float) -> dict[str, Any]:
    """One solve as a flat record (a solver exception becomes an error record)."""
    t0 = time.perf_counter()
    try:
        res = topoopt.solve(inst, solver, time_limit=limit)
    except Exception as exc:  # a record, not a crash
        return {"class": cls, "instance": inst.name, "solver": solver, "error": repr(exc)}
    return {
        "class": cls,
        "instance": inst.name,
        "solver": solver,
        "limit": limit,
        "nodes": inst.n_nodes,
        "free": inst.total_free,
        "alpha": inst.alpha,
        "wall_s": round(time.perf_counter() - t0, 4),
        "status": res.status.label,
        "objective": res.objective,
        "dp_spread": res.dp_spread,
        "pp_spread": res.pp_spread,
        "leaf_dp_spread": res.leaf_dp_spread,
        "leaf_pp_spread": res.leaf_pp_spread,
        "leaf_score": res.leaf_score,
        "leaf_proven": "not proven" not in res.message if solver.endswith("hierarchical") else None,
        "matrix": [list(row) for row in res.solution.matrix] if res.solution else None,
    }


def _mean(values: list[float]) -> str:
    return f"{statistics.fmean(values):.2f}" if values else "–"


def table(records: list[dict[str, Any]], by_alpha: bool = False) -> list[str]:
    """Means per class (and alpha): leaf spreads and score of both solvers, and how often the
    leaf step lowered the leaf score."""
    alphas = sorted({r["alpha"] for r in records if "alpha" in r}) if by_alpha else [None]
    lines = [
        f"| class{' | alpha' if by_alpha else ''} | runs | leaf DP spread (fill -> hier.) "
        "| leaf PP spread (fill -> hier.) "
        "| leaf score (fill -> hier.) | lower | proven least | same objective "
        "| time (flat / hier.) |",
        "|---|---|---|---|---|---|---|---|---|" + ("---|" if by_alpha else ""),
    ]
    for cls, alpha in ((c, a) for c in CLASSES for a in alphas):
        by = {
            (r["instance"], r["solver"]): r
            for r in records
            if r.get("class") == cls and (alpha is None or r.get("alpha") == alpha)
        }
        pairs = [
            (by[name, SOLVERS[0]], by[name, SOLVERS[1]])
            for name, solver in by
            if solver == SOLVERS[0] and (name, SOLVERS[1]) in by
        ]
        pairs = [(a, b) for a, b in pairs if "error" not in a and "error" not in b]
        if not pairs:
            continue
        flat, deep = [a for a, _ in pairs], [b for _, b in pairs]

        def arrow(key: str, flat: list = flat, deep: list = deep) -> str:
            return f"{_mean([r[key] for r in flat])} -> {_mean([r[key] for r in deep])}"

        lower = sum(b["leaf_score"] < a["leaf_score"] - 1e-9 for a, b in pairs)
        same = sum(a["objective"] == b["objective"] for a, b in pairs)
        proven = sum(bool(b["leaf_proven"]) for b in deep)
        t_flat = statistics.median(r["wall_s"] for r in flat)
        t_deep = statistics.median(r["wall_s"] for r in deep)
        lines.append(
            f"| {cls} {CLASSES[cls]}{f' | {alpha:g}' if by_alpha else ''} | {len(pairs)} "
            f"| {arrow('leaf_dp_spread')} "
            f"| {arrow('leaf_pp_spread')} | {arrow('leaf_score')} | {lower} | {proven} "
            f"| {same} | {t_flat:.3f} / {t_deep:.3f} s |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--limit", type=float, default=20.0)
    parser.add_argument("--classes", nargs="*", default=list(CLASSES))
    parser.add_argument("--out", type=Path, default=HERE / "hierarchical.md")
    args = parser.parse_args()
    records = []
    for cls in args.classes:
        for seed in range(args.seeds):
            for inst in instances(cls, seed):
                for solver in SOLVERS:
                    records.append(run(cls, inst, solver, args.limit))
    args.out.with_suffix(".ndjson").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    command = (
        f"python benchmarks/placement/hierarchical.py --seeds {args.seeds} --limit {args.limit:g}"
    )
    text = [
        "# Hierarchical placement: leaf-level spreads (issue #15)",
        "",
        f"`{command}` ({platform.python_version()}, {time.strftime('%Y-%m-%d')}; records in "
        "`hierarchical.ndjson`). Means over the runs of each tree class (pods, leaves per pod, "
        "nodes per leaf); *fill* is `placement/exact-mip` with its rank-order fill of each "
        "minipod, *hier.* is `placement/hierarchical` (same minipod matrix, then its leaf step). "
        "*lower*: runs where the leaf score went down; *proven least*: runs where the leaf step "
        "proved its leaf score least for that minipod matrix; time: median wall time of "
        "`topoopt.solve`.",
        "",
        *table(records),
        "",
        "By alpha (the weight of the DP spread; the leaf step trades the two spreads the same "
        "way as the minipod level):",
        "",
        *table(records, by_alpha=True),
        "",
    ]
    args.out.write_text("\n".join(text), encoding="utf-8")
    print("\n".join(text))


if __name__ == "__main__":
    main()
