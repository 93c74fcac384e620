"""How far the ocs solvers scale: ``ocs/tdm-ilp`` (HiGHS) against ``ocs/hill-climb`` and
``ocs/hill-climb-paper`` (Algorithm 1 as written) beyond the paper-like suite.

Random instances (``topoopt.ocs.generate.random_instance``, one generator seeded by
``--seed``, drawn in the order below) of ``(pods, jobs)`` = (16, 24), (24, 36), (32, 48),
(48, 72), (64, 96), (128, 192) wanted, each comm-heavy and compute-heavy, 8 or 16 OXC ports
per pod, jobs over up to 4 pods, every PS server and ring free (as the ``paper-like`` suite).
Each instance is solved by ``ocs/hill-climb`` (``--repeats`` times, the median time
reported; the same seed, so the same round), by ``ocs/hill-climb-paper`` and by
``ocs/tdm-ilp`` on HiGHS, all with ``--time-limit``, through ``topoopt.solve``, one solve at
a time.

The table (``--out``, Markdown) gives per instance: pods, jobs placed, the MILP's status,
round (objective), bound, relative gap, total and build time (the build includes the MILP's
hill-climb warm start, which gets at most a fifth of the time limit and 10 s), each hill
climb's round, time and excess round over the MILP's round (``hc / ilp - 1``; negative when
the hill climb is better), the local search's excess over the MILP's bound (``hc / bound -
1``, an upper bound on its true gap), and the TDM speed-up (no-TDM round over the round, the
result's ``tdm_speedup`` metric) of the MILP and the local search. Times are wall times of the
whole call (``total_s``: start, build, evaluation and check included).
Objectives are reproducible (deterministic solvers, fixed seed); times depend on the machine.
Usage::

    python benchmarks/ocs/scale.py --time-limit 120 --seed 0 --out benchmarks/ocs/scale.md
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import topoopt
from topoopt.core.result import Result
from topoopt.core.seeding import make_rng
from topoopt.ocs.generate import random_instance
from topoopt.ocs.instance import OcsInstance

SIZES = ((16, 24), (24, 36), (32, 48), (48, 72), (64, 96), (128, 192))
"""``(pods, jobs)`` wanted."""
MIXES = ("comm", "compute")
PORTS = (8, 16)
MAX_SPAN = 4
ILP = "ocs/tdm-ilp"
HILL_CLIMB = "ocs/hill-climb"
PAPER = "ocs/hill-climb-paper"
BACKEND = "highs"
COLUMNS = (
    "instance",
    "pods",
    "jobs",
    "ILP status",
    "ILP round (s)",
    "ILP bound (s)",
    "ILP gap",
    "ILP total (s)",
    "ILP build (s)",
    "HC round (s)",
    "HC time (s)",
    "HC vs ILP round",
    "HC vs ILP bound",
    "paper HC round (s)",
    "paper HC time (s)",
    "paper HC vs ILP round",
    "TDM speed-up ILP",
    "TDM speed-up HC",
)


def instances(seed: int) -> list[OcsInstance]:
    """The instances, in the order they are drawn from one generator."""
    rng = make_rng(seed)
    out = []
    for pods, jobs in SIZES:
        for mix in MIXES:
            out.append(
                random_instance(
                    rng,
                    f"scale-{pods}x{jobs}-{mix}-{seed}",
                    pods=pods,
                    jobs=jobs,
                    mix=mix,
                    ports=PORTS,
                    max_span=MAX_SPAN,
                )
            )
    return out


def fmt(x: float | None, digits: int = 5) -> str:
    """A number for the table (``-`` for none or nan)."""
    if x is None or math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def pct(x: float | None) -> str:
    """A ratio as a signed percentage (``-`` for none)."""
    return "-" if x is None or not math.isfinite(x) else f"{100 * x:+.2f}%"


def excess(value: float | None, reference: float | None) -> float | None:
    """``value / reference - 1``, or ``None`` when either is missing or not positive."""
    if value is None or reference is None or not math.isfinite(reference) or reference <= 0:
        return None
    return value / reference - 1


def solve(instance: OcsInstance, solver: str, time_limit: float) -> Result | str:
    """The result, or the error message when the solver raises."""
    backend = BACKEND if solver == ILP else None
    try:
        return topoopt.solve(instance, solver, backend=backend, time_limit=time_limit)
    except Exception as exc:  # reported in the table
        return f"{type(exc).__name__}: {exc}"


def speedup(result: Result) -> float | None:
    if result.solution is None:
        return None
    value = result.metric("tdm_speedup")
    return value if math.isfinite(value) else None


def timed(result: Result, seconds: float | None = None) -> str:
    """A run's time, marked when the time limit stopped it."""
    value = result.total_s if seconds is None else seconds
    stopped = result.termination.value == "time_limit"
    return f"{value:.2f}" + (" (time limit)" if stopped else "")


def row(
    instance: OcsInstance,
    ilp: Result | str,
    hc: list[Result] | str,
    paper: Result | str,
) -> tuple[list[str], str]:
    """The table row and a note (error messages, or the MILP's message when it did not prove
    optimality)."""
    notes = []
    cells = [instance.name, str(instance.n_pods), str(instance.n_jobs)]
    ilp_obj = bound = None
    if isinstance(ilp, str):
        cells += ["error", "-", "-", "-", "-", "-"]
        notes.append(f"{ILP}: {ilp}")
    else:
        ilp_obj = ilp.objective
        bound = ilp.bound if math.isfinite(ilp.bound) else None
        cells += [
            ilp.status.label
            if ilp.termination.value in ("optimal", "completed")
            else f"{ilp.status.label} ({ilp.termination.value})",
            fmt(ilp_obj),
            fmt(bound),
            f"{100 * ilp.gap:.2f}%" if math.isfinite(ilp.gap) else "-",
            f"{ilp.total_s:.2f}",
            f"{ilp.build_s:.2f}",
        ]
        if ilp.termination.value != "optimal" and ilp.message:
            notes.append(f"{ILP}: {ilp.message}")
    if isinstance(hc, str):
        cells += ["error", "-", "-", "-"]
        notes.append(f"{HILL_CLIMB}: {hc}")
    else:
        first = hc[0]
        cells += [
            fmt(first.objective),
            timed(first, statistics.median(r.total_s for r in hc)),
            pct(excess(first.objective, ilp_obj)),
            pct(excess(first.objective, bound)),
        ]
    if isinstance(paper, str):
        cells += ["error", "-", "-"]
        notes.append(f"{PAPER}: {paper}")
    else:
        cells += [fmt(paper.objective), timed(paper), pct(excess(paper.objective, ilp_obj))]
    cells += [
        fmt(None if isinstance(ilp, str) else speedup(ilp), 4),
        fmt(None if isinstance(hc, str) else speedup(hc[0]), 4),
    ]
    return cells, "; ".join(notes)


def markdown(rows: list[list[str]], notes: list[str], args: argparse.Namespace, wall: float) -> str:
    lines = [
        "# ocs: MILP against hill climbing at scale",
        "",
        f"`python benchmarks/ocs/scale.py --time-limit {args.time_limit:g} --seed {args.seed}"
        + (f" --repeats {args.repeats}" if args.repeats != 3 else "")
        + (f" --only {args.only}" if args.only else "")
        + "`"
        f" on {datetime.now(timezone.utc):%Y-%m-%d}: topoopt {version('topoopt')}, "
        f"Python {platform.python_version()}, {platform.machine()}, one solve at a time, "
        f"{wall / 60:.1f} min in all, on a shared machine (timings are noisy). `{ILP}` on "
        f"{BACKEND} (its build time includes its hill-climb warm start), `{HILL_CLIMB}` (HC: "
        f"median time of {args.repeats} runs, same seed) and `{PAPER}` (paper HC, Algorithm 1 "
        f"as written) alone; all with a {args.time_limit:g} s limit. "
        "HC vs ILP round: `hc / ilp - 1` (negative: the hill climb is better); HC vs ILP bound: "
        "`hc / bound - 1`, an upper bound on the hill climb's true gap. Time (time limit): the "
        "solver stopped at the limit with its best schedule so far. "
        "TDM speed-up: the no-TDM round over the round (`tdm_speedup`).",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    if notes:
        lines += ["", "Notes:", ""] + [f"* {note}" for note in notes]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per solve")
    parser.add_argument("--seed", type=int, default=0, help="seed of the instance generator")
    parser.add_argument("--repeats", type=int, default=3, help="runs of ocs/hill-climb")
    parser.add_argument("--only", default="", help="only the instances whose name has this")
    parser.add_argument("--out", type=Path, required=True, help="Markdown file to write")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rows, notes = [], []
    for instance in instances(args.seed):
        if args.only not in instance.name:
            continue
        runs = [solve(instance, HILL_CLIMB, args.time_limit) for _ in range(args.repeats)]
        errors = [r for r in runs if isinstance(r, str)]
        hc: list[Result] | str = (
            errors[0] if errors else [r for r in runs if not isinstance(r, str)]
        )
        paper = solve(instance, PAPER, args.time_limit)
        ilp = solve(instance, ILP, args.time_limit)
        cells, note = row(instance, ilp, hc, paper)
        rows.append(cells)
        if note:
            notes.append(f"{instance.name}: {note}")
        print(" | ".join(cells), file=sys.stderr, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(rows, notes, args, time.perf_counter() - t0), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
