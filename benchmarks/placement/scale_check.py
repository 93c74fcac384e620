"""Issue #14's placement checks at production scale: rerun the issue's tables.

Usage::

    python benchmarks/placement/scale_check.py --seeds 3 --limit 60 --big-limit 30 \
        --class-limit 10

Instances come from the ``uneven`` generator (:func:`topoopt.placement.generate.uneven`,
``tp = 8``, alpha 0.37 unless said otherwise), regenerated from the seeds, not committed:

* ``32 minipods``: free nodes uniform on 0..128, job 128 x 8 (the issue's first row);
* ``64 minipods``: free nodes uniform on 0..128, job 256 x 8 (the issue's second row);
* ``class-40``: 40 instances of 2..16 minipods, free 0..128 with 40 % small minipods (0..16),
  jobs 2..64 rows x 2..16 stages, odd alphas (seed 14); ``placement/exact-mip`` under
  ``--class-limit``, counting the instances proven within 2 s;
* ``8k``: 64 minipods with free nodes uniform on 0..256 (about 8,192 free), jobs 512 x 8
  (4,096 nodes) and 256 x 8; every placement solver but the oracle under ``--big-limit``.

Every run is one flat JSON record in ``scale_check.ndjson`` (not a ``topoopt bench`` record,
hence not ``.jsonl``): wall time of ``topoopt.solve`` around the call, objective, bound,
termination; ``scale_check.md`` is computed from them (medians over the seeds).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import topoopt
from topoopt.core.registry import solver_names
from topoopt.placement import PlacementInstance
from topoopt.placement.generate import uneven

HERE = Path(__file__).parent
MAIN = ("placement/exact-mip", "placement/coarse-mip", "placement/topo-aware")


def run(group: str, inst: PlacementInstance, solver: str, limit: float) -> dict[str, Any]:
    """One solve as a flat record (a solver exception becomes an error record)."""
    t0 = time.perf_counter()
    try:
        res = topoopt.solve(inst, solver, time_limit=limit)
    except Exception as exc:  # a record, not a crash
        return {"group": group, "instance": inst.name, "solver": solver, "error": repr(exc)}
    wall = time.perf_counter() - t0
    record = {
        "group": group,
        "instance": inst.name,
        "solver": solver,
        "limit": limit,
        "minipods": inst.n_minipods,
        "free": sum(inst.capacities),
        "nodes": inst.n_nodes,
        "wall_s": round(wall, 4),
        "objective": res.objective,
        "bound": res.bound,
        "proven": res.status.label == "optimal",
        "termination": str(res.termination.value),
        "message": res.message,
    }
    print(json.dumps({k: v for k, v in record.items() if k != "message"}), flush=True)
    return record


def _fmt(x: float | None) -> str:
    if x is None or x != x or x in (float("inf"), float("-inf")):
        return "-"
    return f"{x:.2f}"


def table(records: list[dict[str, Any]], group: str, solvers: tuple[str, ...]) -> list[str]:
    """Median wall time and per-seed outcomes of each solver on one group."""
    lines = ["| solver | median wall s | max wall s | objective (bound) per instance | proven |"]
    lines.append("|---|---|---|---|---|")
    for solver in solvers:
        rs = [r for r in records if r["group"] == group and r["solver"] == solver]
        ok = [r for r in rs if "error" not in r]
        if not ok:
            continue
        walls = [r["wall_s"] for r in ok]
        outcomes = ", ".join(
            _fmt(r["objective"])
            + (f" ({_fmt(r['bound'])})" if solver.endswith("exact-mip") else "")
            for r in ok
        )
        proven = sum(r["proven"] for r in ok)
        lines.append(
            f"| {solver} | {statistics.median(walls):.2f} | {max(walls):.2f} | {outcomes} "
            f"| {proven}/{len(ok)} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--big-limit", type=float, default=30.0)
    parser.add_argument("--class-limit", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=HERE / "scale_check.md")
    args = parser.parse_args()
    seeds = range(args.seeds)
    records: list[dict[str, Any]] = []
    groups = {
        "32 minipods, job 128 x 8": [uneven(seed=s, minipods=32)[0] for s in seeds],
        "64 minipods, job 256 x 8": [uneven(seed=s, minipods=64, rows=256)[0] for s in seeds],
    }
    for group, insts in groups.items():
        for inst in insts:
            for solver in MAIN:
                records.append(run(group, inst, solver, args.limit))
    big = [uneven(seed=s, minipods=64, max_free=256, rows=512)[0] for s in seeds]
    big += [uneven(seed=s, minipods=64, max_free=256, rows=256)[0] for s in seeds]
    every = tuple(n for n in solver_names("placement") if n != "placement/enumerate")
    for inst in big:
        for solver in every:
            records.append(run("8k", inst, solver, args.big_limit))
    cls = uneven(
        seed=14, count=40, minipods=16, min_minipods=2, small_share=0.4,
        max_rows=64, max_cols=16, alpha=-1,
    )  # fmt: skip
    for inst in cls:
        records.append(run("class-40", inst, "placement/exact-mip", args.class_limit))
    (HERE / "scale_check.ndjson").write_text("".join(json.dumps(r) + "\n" for r in records))

    command = (
        f"python benchmarks/placement/scale_check.py --seeds {args.seeds} --limit "
        f"{args.limit:g} --big-limit {args.big_limit:g} --class-limit {args.class_limit:g}"
    )
    lines = [
        f"# Placement at scale (issue #14) — {platform.machine()}, Python "
        f"{platform.python_version()}, HiGHS",
        "",
        f"Command: `{command}` (records in `scale_check.ndjson`). Wall time of `topoopt.solve` "
        f"(model build, solve, check), time limit {args.limit:g} s; seeds 0..{args.seeds - 1} "
        "of the `uneven` generator, alpha 0.37, tp 8. Objectives listed per seed; exact-mip "
        "shows its bound in parentheses.",
        "",
    ]
    for group in groups:
        lines += [f"## {group}", "", *table(records, group, MAIN), ""]
    lines += [
        f"## 64 minipods, about 8,192 free nodes (free 0..256), jobs 512 x 8 and 256 x 8 "
        f"(time limit {args.big_limit:g} s)",
        "",
        *table(records, "8k", every),
        "",
    ]
    cl = [r for r in records if r["group"] == "class-40" and "error" not in r]
    n_proven = sum(r["proven"] for r in cl)
    fast = [r for r in cl if r["proven"] and r["wall_s"] <= 2.0]
    unproven = [r for r in cl if not r["proven"]]
    lines += [
        "## 40 instances of at most 16 minipods (class-40)",
        "",
        f"`placement/exact-mip`, time limit {args.class_limit:g} s: proven {n_proven}"
        f"/{len(cl)}, proven within 2 s {len(fast)}/{len(cl)}, median wall "
        f"{statistics.median(r['wall_s'] for r in cl):.2f} s, slowest "
        f"{max(r['wall_s'] for r in cl):.2f} s, slowest proven "
        f"{max((r['wall_s'] for r in cl if r['proven']), default=0):.2f} s.",
        "",
        "| unproven instance | objective | bound | wall s | stopped at |",
        "|---|---|---|---|---|",
    ]
    for r in unproven:
        where = r["message"].split(";")[0]
        lines.append(
            f"| {r['instance']} | {_fmt(r['objective'])} | {_fmt(r['bound'])} "
            f"| {r['wall_s']:.2f} | {where} |"
        )
    over = max(
        (r["wall_s"] - r["limit"] for r in records if "error" not in r), default=float("nan")
    )
    lines += ["", f"Largest overshoot of the time limit over all runs: {over:+.2f} s.", ""]
    args.out.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
