"""Table 2 report of issue #29: per instance and solver, the cut, the proven bound, the gap and
the time (``benchmarks/partition/bounds/report.md``).

Runs, one at a time with one solver thread, ``partition/mip`` (HiGHS) and ``partition/bound``
with ``--time-limit``, ``partition/genetic`` and ``partition/ils`` (restarts until the limit)
with ``--genetic-limit``, and
``partition/greedy-lowcut``, ``partition/metis`` and ``partition/heuristic-ilp`` (on the
instance with random intra-cluster data added, :func:`topoopt.partition.generate.with_intra`:
the eq. 9 problem is the same) on the given instance files, or on freshly generated Table 2
instances (``--seeds``). Each record (one JSON line in ``--out``) has the cut, the bound (the
heuristics prove none: ``null``), the relative gap and the wall time. Usage::

    python benchmarks/partition/bounds.py instances/partition/table2-128/*.json \\
        instances/partition/table2-512/*.json --time-limit 60
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import topoopt
from topoopt.core.seeding import make_rng
from topoopt.partition.generate import examples, table2, with_intra
from topoopt.partition.instance import PartitionInstance

HEURISTICS = ("partition/greedy-lowcut", "partition/metis", "partition/heuristic-ilp")


def run(instance: PartitionInstance, solver: str, limit: float | None) -> dict[str, object]:
    """One solve as a flat record."""
    given = with_intra(instance, make_rng(0)) if solver == "partition/heuristic-ilp" else instance
    options: dict[str, object] = {}
    if solver in ("partition/mip", "partition/bound"):
        options = {"threads": 1}
    elif solver == "partition/ils":
        options = {"restarts": 10**9}
    started = time.perf_counter()
    result = topoopt.solve(given, solver, time_limit=limit, **options)
    wall = time.perf_counter() - started
    bound = result.bound if math.isfinite(result.bound) else None
    gap = None
    if bound is not None and result.objective:
        gap = (result.objective - bound) / result.objective
    return {
        "instance": instance.name,
        "size": f"{instance.n_vertices}/{len(instance.edges)}",
        "solver": solver,
        "time_limit": limit,
        "status": result.status.name.lower(),
        "termination": result.termination.value,
        "cut": result.objective,
        "bound": bound,
        "gap": gap,
        "wall_s": round(wall, 2),
        "message": result.message,
    }


REPORT_HEAD = """# partition: Table 2 with proven bounds (issue #29)

Made by `python benchmarks/partition/bounds.py --render` from `table2.jsonl` (records written by
`python benchmarks/partition/bounds.py FILES --time-limit T [--solvers ...]`): one run per
instance and solver, one after the other with one solver thread (`partition/mip` on HiGHS), on
a 2-core machine shared with other work. Cut: eq. 9 of the returned assignment; proven bound:
the lower bound the run proved (heuristics prove none); gap: (cut − bound) / cut; limit: the
time limit (s; "—": none); time: wall seconds of the call. `partition/heuristic-ilp` runs on the
instance with random intra-cluster data added (`with_intra`, the same eq. 9 problem; its cut is
greedy-lowcut's). `partition/mip` ran with the issue's 300 s (`--time-limit 300 --solvers
partition/mip partition/ils`, default options: the eigenvalue bound (B5) first, then the
spreading metric (B3, HiGHS' PDLP, up to 640 vertices) with its aggregate row when one level's
LP has the time, followed by the column generation (B4) on jobs of 64-256 vertices, its exact
pricing by branch and bound on min cuts (OR-Tools' max flow) and its dual box a trust region
(the 128-unit rows of `partition/mip`, re-run after those changes with branch and price
after (B4) converges, each exact pricing from the leaves of the group's last search and the
assignments of integral nodes kept — two such runs at once, `--solvers partition/mip`
over the files with `--seeds 1` and over `--seeds 5 6 3 2 4`; those that reached the branch
and price, `t2-128-0-2` and seeds 2, 3, 5 and 6, re-run again after its nodes' exact pricing
searched from their fixings, two at once; the 512-unit rows, where
(B4) does not run, are earlier records); otherwise
the coarsenings (B1) and the profile (B2); from 128 vertices, as here, the time the bounds
leave goes to the iterated search from greedy-lowcut's assignment, and no MIP runs);
`partition/ils` with 30 s (`--genetic-limit 30`, restarts until the limit, seed 0);
`partition/bound` with 300 s at 512 units (it ends after B3, 83-104 s) and 60 s at 128 (all
of its time is the bounds', so B3 goes first at 60 s; earlier records); `partition/genetic`
(30 s) and the heuristics are earlier records (those solvers are unchanged). Instances
`t2-S-0-i` are the committed files (seed 0): `instances/partition/table2-128` and
`instances/partition/table2-512`;
`t2-S-k-0` with `k` = 1 to 6 are fresh ones (`--seeds k --sizes S`, records of the
solvers that ran on them; `t2-128-5-0` and `t2-128-6-0` were first run with the cut pricer,
`partition/mip` and `partition/ils` as above).

"""


def table(records: list[dict[str, object]]) -> str:
    """The Markdown table of the records."""
    head = (
        "| instance | size | solver | cut | proven bound | gap | limit (s) | time (s) | status |\n"
    )
    head += "|---|---|---|---:|---:|---:|---:|---:|---|\n"
    order = [
        "partition/mip",
        "partition/bound",
        "partition/ils",
        "partition/genetic",
        *HEURISTICS,
    ]
    rows = []
    for r in sorted(records, key=lambda r: (r["size"], r["instance"], order.index(r["solver"]))):
        cut = "—" if r["cut"] is None else f"{r['cut']:.4f}"
        bound = "—" if r["bound"] is None else f"{r['bound']:.4f}"
        gap = "—" if r["gap"] is None else f"{100 * r['gap']:.1f} %"
        limit = "—" if r["time_limit"] is None else f"{r['time_limit']:.0f}"
        rows.append(
            f"| {r['instance']} | {r['size']} | {r['solver']} | {cut} | {bound} | {gap} | "
            f"{limit} | {r['wall_s']:.1f} | {r['status']} |"
        )
    return head + "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="partition instance files")
    parser.add_argument("--seeds", type=int, nargs="*", default=[], help="fresh table2 seeds")
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--genetic-limit", type=float, default=30.0)
    parser.add_argument("--solvers", nargs="+", default=None)
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/partition/bounds/table2.jsonl")
    )
    parser.add_argument(
        "--render", action="store_true", help="only write report.md beside --out from its records"
    )
    args = parser.parse_args()
    if args.render:
        records = [json.loads(line) for line in args.out.read_text().splitlines() if line]
        (args.out.parent / "report.md").write_text(REPORT_HEAD + table(records))
        return
    instances = [topoopt.load(path) for path in args.files]
    for seed in args.seeds:
        for size in args.sizes:
            instances.extend(table2(seed, 1, vertices=size))
    solvers = args.solvers or [
        "partition/mip",
        "partition/bound",
        "partition/genetic",
        "partition/ils",
        *HEURISTICS,
    ]
    for name in solvers:  # warm-up: imports
        topoopt.solve(with_intra(examples()[0], make_rng(0)), name)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as out:
        for instance in instances:
            assert isinstance(instance, PartitionInstance)
            for name in solvers:
                searches = {
                    "partition/genetic": args.genetic_limit,
                    "partition/ils": args.genetic_limit,
                }
                limit = searches.get(name, args.time_limit)
                if name in HEURISTICS:
                    limit = None
                record = run(instance, name, limit)
                out.write(json.dumps(record) + "\n")
                out.flush()
                print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
