"""Time and quality of the parallelconfig solvers: the exact ILPs (the segment ILP
``parallelconfig/mip``, split and joint, HiGHS and SCIP; the paper's ILP
``parallelconfig/paper-mip``), the enumeration oracle and the greedy baseline.

Three suites (``topoopt.parallelconfig.generate``):

* ``random-small`` — jobs of up to 8 GPUs on up to 4 nodes (the oracle solves them): every
  solver, its time and whether it reached the oracle's optimum;
* ``random-medium`` — jobs of up to 32 GPUs on up to 8 nodes of up to 8 GPUs, beyond the
  oracle: the ILP (split, both backends, with a time limit) against the greedy baseline;
* ``scaling`` — GPT-style models on 1 to 8 nodes of 8 GPUs: the same.

Every result is checked (feasible, objective = ``evaluate``) and every exact result compared
with the oracle where there is one. One JSON line per run goes to ``runs.jsonl``; medians go
to ``summary.md``. Usage::

    python benchmarks/parallelconfig/measure.py --count 100 --out benchmarks/parallelconfig/results
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import topoopt
from topoopt.core.result import clean
from topoopt.parallelconfig import ParallelConfigInstance, check, evaluate
from topoopt.parallelconfig.generate import random_medium, random_small, scaling

EXACT = (
    ("mip[highs]", "parallelconfig/mip", {"backend": "highs"}),
    ("mip[scip]", "parallelconfig/mip", {"backend": "scip"}),
    ("paper-mip[highs]", "parallelconfig/paper-mip", {"backend": "highs"}),
    ("mip-joint[highs]", "parallelconfig/mip", {"backend": "highs", "method": "joint"}),
)
GREEDY = (
    ("greedy", "parallelconfig/greedy", {}),
    ("greedy(best)", "parallelconfig/greedy", {"packing": "best"}),
)


def run(
    suite: str, inst: ParallelConfigInstance, label: str, solver: str, kwargs: dict[str, Any]
) -> dict[str, Any]:
    """One checked run as a flat record."""
    result = topoopt.solve(inst, solver, **kwargs)
    assert result.solution is not None and check(inst, result.solution) == [], (label, result)
    assert result.objective == clean(evaluate(inst, result.solution))
    return {
        "suite": suite,
        "instance": inst.name,
        "gpus": inst.n_gpus,
        "nodes": inst.n_nodes,
        "configurations": inst.n_configurations(),
        "solver": label,
        "status": result.status.label,
        "objective": result.objective,
        "bound": result.bound if math.isfinite(result.bound) else None,
        "d": result.d,
        "p": result.p,
        "total_s": result.total_s,
        "message": result.message,
        "ilps": ilps(result.message) if "mip" in solver else 0,
    }


def ilps(message: str) -> int:
    """ILPs a ``parallelconfig/mip`` run solved, from its message."""
    if message.startswith("one model over"):
        return 1
    head = message.split(": ", 1)[1] if ": " in message else ""
    return int(head.split(" solved")[0]) if " solved by the ILP" in head else 0


def median_ms(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):.1f}" if values else "-"


def summarise(records: list[dict[str, Any]]) -> str:
    """Per suite and solver: runs, proven optimal, reached the best, mean cost / best, median
    and max time, and for the MIP the runs that solved an ILP (the others were decided by the
    bounds and the greedy packings) with their median time."""
    best: dict[tuple[str, str], float] = {}
    for r in records:
        key = (r["suite"], r["instance"])
        best[key] = min(best.get(key, math.inf), r["objective"])
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[r["suite"], r["solver"]].append(r)
    lines = [
        "| suite | solver | runs | proven optimal | reached best | mean cost / best | "
        "worst cost / best | median ms | max ms | runs with an ILP | their median ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (suite, solver), runs in groups.items():
        ratios = [r["objective"] / best[suite, r["instance"]] for r in runs]
        times = [r["total_s"] for r in runs]
        reached = sum(ratio <= 1 + 1e-9 for ratio in ratios)
        with_ilp = [r["total_s"] for r in runs if r["ilps"] > 0]
        mip = "mip" in solver
        lines.append(
            f"| {suite} | {solver} | {len(runs)} | "
            f"{sum(r['status'] == 'optimal' for r in runs)} | {reached} | "
            f"{statistics.fmean(ratios):.4f} | {max(ratios):.4f} | {median_ms(times)} | "
            f"{1000 * max(times):.1f} | {len(with_ilp) if mip else '-'} | "
            f"{median_ms(with_ilp) if mip else '-'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100, help="instances per random suite")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=60.0, help="per MIP run (s)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    limit = {"time_limit": args.time_limit}
    for inst in random_small(seed=args.seed, count=args.count):
        oracle = run("random-small", inst, "enumerate", "parallelconfig/enumerate", {})
        records.append(oracle)
        for label, solver, kwargs in EXACT + GREEDY:
            record = run("random-small", inst, label, solver, kwargs)
            if "mip" in label:
                assert record["status"] == "optimal", record
                assert math.isclose(record["objective"], oracle["objective"], rel_tol=1e-9)
            else:
                assert record["objective"] >= oracle["objective"] * (1 - 1e-9)
            records.append(record)
    large = [
        ("random-medium", random_medium(seed=args.seed, count=args.count)),
        ("scaling", scaling(nodes=(1, 2, 4, 6, 8))),
    ]
    for suite, instances in large:
        for inst in instances:
            for label, solver, kwargs in EXACT[:3] + GREEDY:
                options = {**kwargs, **limit} if "mip" in label else kwargs
                records.append(run(suite, inst, label, solver, options))
    with (args.out / "runs.jsonl").open("w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    environment = (
        f"Python {platform.python_version()}, {platform.machine()}, topoopt "
        f"{topoopt.__version__}; seed {args.seed}, {args.count} instances per random suite, "
        f"MIP time limit {args.time_limit:g} s"
    )
    summary = f"# parallelconfig solvers\n\n{environment}\n\n{summarise(records)}\n"
    (args.out / "summary.md").write_text(summary)
    print(summary)


if __name__ == "__main__":
    main()
