"""Re-solve the runs of benchmark records and compare the objectives (a regression check).

Every record that finished on its own with a solution (status optimal or feasible, not at a
time limit) is solved again in this process with the same instance file, solver, backend,
seed and time limit; the new objective must equal the recorded one (relative tolerance
1e-6) and an optimal record must be optimal again. Records of solvers in ``--skip`` are left
out (e.g. slow oracles). Prints one line per mismatch and a summary; exit status 1 on any.

    python benchmarks/reproduce.py benchmarks/placement/arnold-paper.jsonl \
        --skip placement/enumerate
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import topoopt

FINISHED = ("optimal", "completed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--skip", action="append", default=[], help="solver to leave out")
    args = parser.parse_args(argv)
    checked = mismatches = 0
    started = time.perf_counter()
    for path in args.results:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["status"] not in ("optimal", "feasible") or record["solver"] in args.skip:
                continue
            if record["termination"] not in FINISHED:
                continue
            result = topoopt.solve(
                record["instance_file"],
                record["solver"],
                backend=record["backend"],
                seed=record["seed"],
                time_limit=record["time_limit"],
            )
            checked += 1
            same = result.objective is not None and math.isclose(
                result.objective, record["objective"], rel_tol=1e-6, abs_tol=1e-9
            )
            if not same or (record["status"] == "optimal" and result.status.label != "optimal"):
                mismatches += 1
                print(
                    f"MISMATCH {record['instance']} {record['solver']}[{record['backend']}]: "
                    f"recorded {record['status']} {record['objective']}, "
                    f"now {result.status.label} {result.objective}"
                )
    elapsed = time.perf_counter() - started
    print(f"{checked} run(s) re-solved in {elapsed:.0f} s, {mismatches} mismatch(es)")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
