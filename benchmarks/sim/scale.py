"""How the simulator's time and memory grow with the number of jobs and the cluster's size.

    python benchmarks/sim/scale.py [--out benchmarks/sim/scale.md]

Each point replays a prefix of the Philly-derived trace (``../shared/data/traces/``) under
``fifo`` + ``placement/best-fit`` on a generated cluster, in a fresh process (so its peak
resident memory is its own), and reads the run's ``summary.json``: the simulation's wall time
(reading the trace excluded), events per second, and the process's peak memory. The growth
exponent ``b`` of ``time ~ size^b`` is fitted on each series.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACE = HERE.parents[2] / "shared" / "data" / "traces" / "philly_trace.csv"
CHILD = """
import json, resource, sys
from topoopt.sim import parse_shape, read_trace, run_simulation
shape, jobs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
trace = read_trace({trace!r}).head(jobs)
summary = run_simulation(parse_shape(shape), trace, out, policy="fifo", placement="best-fit")
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"speed": summary["speed"], "peak_mb": peak_mb}}))
"""


def point(shape: str, jobs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        code = CHILD.format(trace=str(TRACE))
        done = subprocess.run(
            [sys.executable, "-c", code, shape, str(jobs), folder],
            capture_output=True,
            text=True,
            check=True,
        )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "wall_s": out["speed"]["wall_s"],
        "events_per_s": out["speed"]["events_per_s"],
        "peak_mb": out["peak_mb"],
    }


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y on log x."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum(
        (a - mx) ** 2 for a in lx
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "scale.md")
    args = parser.parse_args()
    lines = [
        "# Simulator scale: time and memory against jobs and cluster size",
        "",
        f"`python benchmarks/sim/scale.py` on {date.today()}: Python {platform.python_version()}, "
        f"{platform.machine()}, one process at a time (the machine may have been shared; "
        "see the note in docs/sim.md). Policy `fifo`, placement `placement/best-fit`, the "
        "Philly-derived trace's first N jobs at load 1.",
        "",
    ]
    by_jobs = [(n, point("16x2x32:8", n)) for n in (10_000, 30_000, 111_549)]
    lines += [
        "## Jobs (1,024 nodes, 8,192 GPUs)",
        "",
        "| jobs | wall (s) | events / s | peak memory (MiB) |",
        "|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {n:,} | {p['wall_s']:.2f} | {p['events_per_s']:,.0f} | {p['peak_mb']:.0f} |"
        for n, p in by_jobs
    ]
    b = slope([n for n, _ in by_jobs], [p["wall_s"] for _, p in by_jobs])
    lines += ["", f"Growth: time ~ jobs^{b:.2f}.", ""]
    shapes = (("4x2x32:8", 256), ("16x2x32:8", 1024), ("64x2x32:8", 4096))
    by_size = [(nodes, point(shape, 111_549)) for shape, nodes in shapes]
    lines += [
        "## Cluster size (all 111,549 jobs)",
        "",
        "| nodes | wall (s) | events / s | peak memory (MiB) |",
        "|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {n:,} | {p['wall_s']:.2f} | {p['events_per_s']:,.0f} | {p['peak_mb']:.0f} |"
        for n, p in by_size
    ]
    b = slope([n for n, _ in by_size], [p["wall_s"] for _, p in by_size])
    lines += ["", f"Growth: time ~ nodes^{b:.2f}.", ""]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
