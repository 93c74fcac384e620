"""Time against size, growth exponents and heuristic gaps from the scale benchmark's records.

Reads the JSONL records ``topoopt bench`` wrote for the size ladder (``make_suites.py``) and
writes, per family:

* a log-log plot of each solver's median ``total_s`` against the size (placement: free nodes
  of the cluster; gpuselect: GPUs of the pool), ``figures/<family>-time.png``;
* the empirical growth exponent ``x`` of ``time ∝ size^x``: the least-squares slope of
  ``log(time)`` on ``log(size)`` over the medians of the rungs where the solver ran to its
  end (a rung where it hit the time limit would flatten the slope, so it is left out and
  counted);
* each solver's gap to the proven optimum (the objective of an exact solver that proved it),
  relative to ``max(|optimum|, 1)`` and oriented so that positive is worse, mean and max over
  the instances that have a proven optimum;
* the worst time-limit overshoot ``total_s - time_limit`` over the runs the limit stopped
  ("–" when the limit stopped none).

Usage::

    python benchmarks/scale/analyse.py benchmarks/scale/bench.jsonl --out benchmarks/scale
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

SIZE_KEY = {"placement": "free_nodes", "gpuselect": "gpus"}
"""The record's ``size`` entry each family's ladder grows."""
SIZE_LABEL = {"placement": "free nodes", "gpuselect": "GPUs in the pool"}


def read_records(path: Path) -> list[dict]:
    """The records of ``path`` (one JSON object per line)."""
    with path.open() as lines:
        return [json.loads(line) for line in lines if line.strip()]


def solver_label(record: dict) -> str:
    return record["solver"] + (f" ({record['backend']})" if record.get("backend") else "")


def ran_to_end(record: dict) -> bool:
    return record["termination"] in ("completed", "optimal", "infeasible")


def proven_optima(records: list[dict]) -> dict[str, float]:
    """Instance -> objective of a run that proved it optimal."""
    return {
        r["instance"]: r["objective"]
        for r in records
        if r["status"] == "optimal" and r["objective"] is not None
    }


def gap(record: dict, optimum: float) -> float:
    """Excess of the record's objective over the optimum (positive is worse), relative to
    ``max(|optimum|, 1)`` (a placement optimum may be 0)."""
    worse = record["objective"] - optimum
    if record["sense"] == "maximize":
        worse = -worse
    return (worse if worse > 0 else 0.0) / max(abs(optimum), 1.0)


def growth(points: dict[int, list[float]]) -> float | None:
    """Slope of ``log(median time)`` on ``log(size)``; ``None`` with fewer than 3 sizes."""
    sizes = sorted(points)
    if len(sizes) < 3:
        return None
    medians = [max(statistics.median(points[s]), 1e-6) for s in sizes]
    slope, _ = np.polyfit(np.log(sizes), np.log(medians), 1)
    return float(slope)


def analyse_family(family: str, records: list[dict], out: Path) -> list[str]:
    """The report section of one family (and its plot in ``out/figures``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = SIZE_KEY[family]
    optima = proven_optima(records)
    by_solver: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_solver[solver_label(r)].append(r)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lines = [
        f"## {family}",
        "",
        f"Size: {SIZE_LABEL[family]}; {len({r['instance'] for r in records})} instances, "
        f"{len(optima)} with a proven optimum.",
        "",
        "| solver | runs | to the end | median s (largest size) | growth x (time ∝ size^x) "
        "| gap to optimum, mean / max (n) | worst overshoot of the limit (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, runs in sorted(by_solver.items()):
        finished = [r for r in runs if ran_to_end(r) and r["total_s"] is not None]
        points: dict[int, list[float]] = defaultdict(list)
        for r in finished:
            points[r["size"][key]].append(r["total_s"])
        exponent = growth(points)
        if points:
            sizes = sorted(points)
            ax.loglog(sizes, [statistics.median(points[s]) for s in sizes], marker="o", label=label)
        largest = max((r["size"][key] for r in runs), default=None)
        at_largest = [r["total_s"] for r in runs if r["size"][key] == largest and r["total_s"]]
        gaps = [
            gap(r, optima[r["instance"]])
            for r in runs
            if r["instance"] in optima and r["objective"] is not None
        ]
        gap_text = (
            f"{100 * statistics.mean(gaps):.2f} % / {100 * max(gaps):.2f} % ({len(gaps)})"
            if gaps
            else "–"
        )
        limits = [r for r in runs if r["termination"] == "time_limit" and r["total_s"] is not None]
        overshoot = max((r["total_s"] - r["time_limit"] for r in limits), default=None)
        largest_text = f"{statistics.median(at_largest):.3g} ({largest})" if at_largest else "–"
        exponent_text = "–" if exponent is None else f"{exponent:.2f}"
        overshoot_text = "–" if overshoot is None else f"{overshoot:+.2f}"
        lines.append(
            f"| {label} | {len(runs)} | {len(finished)} | {largest_text} | {exponent_text} "
            f"| {gap_text} | {overshoot_text} |"
        )
    ax.set_xlabel(SIZE_LABEL[family])
    ax.set_ylabel("median time per solve (s)")
    ax.set_title(f"{family}: time against size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(figures / f"{family}-time.png", dpi=120)
    plt.close(fig)
    lines += ["", f"![{family} time against size](figures/{family}-time.png)", ""]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    args = parser.parse_args()
    records = read_records(args.records)
    families = sorted({r["family"] for r in records} & set(SIZE_KEY))
    lines = [
        "# Scale benchmark",
        "",
        f"Records: `{args.records}` ({len(records)} runs). Made by "
        f"`python benchmarks/scale/analyse.py {args.records} --out {args.out}`.",
        "",
        "Times are the solver's `total_s` (search, model build, evaluate and check) per "
        "solve, medians per size. The growth exponent is fitted over the sizes where the "
        "solver ran to its end (not stopped by the time limit).",
        "",
    ]
    for family in families:
        lines += analyse_family(family, [r for r in records if r["family"] == family], args.out)
    (args.out / "report.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'report.md'}")


if __name__ == "__main__":
    main()
