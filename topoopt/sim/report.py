"""The report of simulation runs: ``topoopt report RUN_FOLDERS...``.

Reads the run folders of ``topoopt simulate`` (a folder with ``summary.json``, or a sweep's
folder of them) and writes ``report.md``, ``report.html`` and ``figures/*.png`` with the
document model and plots of :mod:`topoopt.bench` (``docs/sim.md``, "Report"):

* a comparison table: one row per run (JCT, queueing time, utilisation, fragmentation,
  slowdown, decision times);
* paired statistics against a baseline setting (policy+placement: the first run's, or the
  one named) on the same jobs (the run of that setting with the same trace, load and seed),
  over the jobs both finished: the mean JCT difference with a 95 % bootstrap
  confidence interval and the Wilcoxon signed-rank test's p-value (``scipy.stats``);
* JCT CDFs, utilisation, fragmentation and queue length over time, and for reservation runs
  the allocation and retention rates of Arnold's Appendix H.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from topoopt.bench.document import Plot, Section, Series, Table, Text
from topoopt.core.errors import TopooptError
from topoopt.sim.run import JOBS, SUMMARY, TIMELINE

MAX_POINTS = 1500
"""Most points of one series in a plot (longer ones are sampled evenly)."""
BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the bootstrap confidence interval."""


@dataclass(frozen=True)
class Run:
    """A finished run read from its folder."""

    label: str
    folder: Path
    summary: dict[str, Any]
    jct: dict[str, float]  # finished job -> JCT
    timeline: dict[str, np.ndarray]

    @property
    def config(self) -> dict[str, Any]:
        """The run's configuration."""
        return dict(self.summary["config"])


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """The run folders among ``paths``: each path that has ``summary.json``, else its
    sub-folders that have one (sorted).

    Raises
    ------
    TopooptError
        For a path that is neither.
    """
    found: list[Path] = []
    for path in map(Path, paths):
        if (path / SUMMARY).is_file():
            found.append(path)
            continue
        inside = sorted(p.parent for p in path.glob(f"*/{SUMMARY}"))
        if not inside:
            raise TopooptError(f"{path}: no simulation run here (no {SUMMARY}, nor below)")
        found += inside
    return found


def load_run(folder: Path) -> Run:
    """Read a run folder (its summary, the JCT of every finished job, its timeline)."""
    try:
        summary = json.loads((folder / SUMMARY).read_text(encoding="utf-8"))
        jct: dict[str, float] = {}
        with open(folder / JOBS, encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                if record.get("status") == "finished":
                    jct[record["job"]] = float(record["jct_s"])
        with open(folder / TIMELINE, encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
    except (OSError, ValueError, KeyError) as exc:
        raise TopooptError(f"{folder}: not a readable simulation run: {exc}") from None
    header, values = rows[0], np.asarray(rows[1:], dtype=float).reshape(-1, len(rows[0]))
    timeline = {name: values[:, i] for i, name in enumerate(header)}
    return Run(folder.name, folder, summary, jct, timeline)


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def comparison_table(runs: Sequence[Run]) -> Table:
    """One row per run: the headline figures of its summary."""
    rows = []
    for run in runs:
        s = run.summary["summary"]
        rows.append(
            (
                run.label,
                str(s["finished"]),
                str(s["rejected"]),
                _num(s["jct_s"]["mean"]),
                _num(s["jct_s"]["median"]),
                _num(s["jct_s"]["p99"]),
                _num(s["queue_s"]["mean"]),
                _num(s["utilisation"], 3),
                _num(s["fragmentation"], 3),
                _num(s["slowdown"]["multi_node"], 5),
                _num(s["decision_s"]["p99"], 3),
                _num(s.get("bandwidth_ratio", {}).get("mean"), 4),
            )
        )
    columns = (
        "run",
        "finished",
        "rejected",
        "mean JCT (s)",
        "median JCT (s)",
        "p99 JCT (s)",
        "mean queue (s)",
        "utilisation",
        "fragmentation",
        "slowdown (whole-node jobs)",
        "p99 decision (s)",
        "bandwidth kept (dispatched jobs)",
    )
    return Table(columns, tuple(rows), "Runs: JCT and queueing time of the finished jobs.")


def paired_statistics(baseline: Run, other: Run, seed: int = 0) -> dict[str, Any] | None:
    """JCT of ``other`` minus ``baseline`` on the jobs both finished: mean and median
    difference, a 95 % bootstrap confidence interval of the mean difference
    (:func:`scipy.stats.bootstrap`, percentile method) and the Wilcoxon signed-rank test's
    p-value (:func:`scipy.stats.wilcoxon`; ``None`` when every difference is 0). ``None`` when
    the runs did not replay the same trace or share fewer than 2 finished jobs."""
    from scipy import stats

    if _jobs_key(baseline) != _jobs_key(other):
        return None
    common = sorted(baseline.jct.keys() & other.jct.keys())
    if len(common) < 2:
        return None
    diff = np.asarray([other.jct[j] - baseline.jct[j] for j in common])
    if np.all(diff == diff[0]):
        low = high = float(diff[0])
    else:
        ci = stats.bootstrap(
            (diff,),
            np.mean,
            confidence_level=0.95,
            n_resamples=BOOTSTRAP_RESAMPLES,
            method="percentile",
            random_state=np.random.default_rng(seed),
        ).confidence_interval
        low, high = float(ci.low), float(ci.high)
    p_value = None if not np.any(diff) else float(stats.wilcoxon(diff).pvalue)
    return {
        "jobs": len(common),
        "mean_diff_s": float(diff.mean()),
        "median_diff_s": float(np.median(diff)),
        "ci_low_s": low,
        "ci_high_s": high,
        "wilcoxon_p": p_value,
    }


def _setting(run: Run) -> str:
    """The run's policy and placement (its label without seed and load)."""
    return run.label.split("+s")[0]


def _jobs_key(run: Run) -> tuple[Any, ...]:
    keys = ("trace", "load", "jobs_limit", "jobs", "multicluster")  # the last: cross-cluster runs
    return tuple(run.config.get(k) for k in keys)


def paired_table(runs: Sequence[Run], baseline: str) -> Table:
    """:func:`paired_statistics` of every run against the run of setting ``baseline``
    (policy+placement) that replayed the same jobs."""
    rows = []
    for run in runs:
        if _setting(run) == baseline:
            continue
        base = next(
            (r for r in runs if _setting(r) == baseline and _jobs_key(r) == _jobs_key(run)), None
        )
        stat = None if base is None else paired_statistics(base, run)
        if base is None or stat is None:
            rows.append((run.label, "-", "-", "-", "-", "-", "no baseline run on the same jobs"))
            continue
        rows.append(
            (
                run.label,
                base.label,
                str(stat["jobs"]),
                _num(stat["mean_diff_s"]),
                f"[{_num(stat['ci_low_s'])}, {_num(stat['ci_high_s'])}]",
                _num(stat["median_diff_s"]),
                _num(stat["wilcoxon_p"], 3),
            )
        )
    return Table(
        ("run", "baseline", "paired jobs", "mean JCT diff (s)", "95 % CI", "median diff (s)",
         "Wilcoxon p"),
        tuple(rows),
        f"JCT of each run minus that of the {baseline} run on the same jobs, over the jobs "
        "both finished (negative: faster). CI: bootstrap of the mean difference; p: Wilcoxon "
        "signed-rank test.",
    )  # fmt: skip


def _sample(x: np.ndarray, y: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    if len(x) > MAX_POINTS:
        keep = np.unique(np.linspace(0, len(x) - 1, MAX_POINTS).astype(int))
        x, y = x[keep], y[keep]
    return tuple(map(float, x)), tuple(map(float, y))


def plots(runs: Sequence[Run]) -> list[Plot]:
    """JCT CDFs, utilisation and queue length over time (and reservation rates)."""
    cdf, util, frag, queue, alloc, retain = [], [], [], [], [], []
    for run in runs:
        values = np.sort(np.asarray(list(run.jct.values()), dtype=float))
        if values.size:
            share = np.arange(1, values.size + 1) / values.size
            cdf.append(Series(run.label, *_sample(values, share)))
        line = run.timeline
        gpus = run.config.get("cluster_gpus") or 1
        nodes = run.config.get("cluster_nodes") or 1
        util.append(Series(run.label, *_sample(line["time_s"], line["busy_gpus"] / gpus)))
        free = gpus - line["busy_gpus"]
        on_partial = free - line["idle_nodes"] * (gpus / nodes)
        share = np.divide(on_partial, free, out=np.zeros_like(free), where=free > 0)
        frag.append(Series(run.label, *_sample(line["time_s"], share)))
        queue.append(Series(run.label, *_sample(line["time_s"], line["queued"])))
        reservation = run.summary["summary"].get("reservation")
        if reservation:
            held = np.maximum(line["zone_held"], 0) / reservation["zone_nodes"]
            window = (line["time_s"] >= reservation["announce_s"]) & (
                line["time_s"] <= reservation["arrival_s"]
            )
            t = line["time_s"][window]
            alloc.append(Series(run.label, *_sample(t, line["busy_nodes"][window] / nodes)))
            retain.append(Series(run.label, *_sample(t, held[window])))
    out = [
        Plot("jct-cdf", "JCT distribution", "JCT (s)", "share of jobs", tuple(cdf), "step", "log"),
        Plot("utilisation", "GPU utilisation", "time (s)", "busy GPUs / all", tuple(util), "step"),
        Plot(
            "fragmentation",
            "Fragmentation: free GPUs on partly used nodes",
            "time (s)",
            "share of the free GPUs",
            tuple(frag),
            "step",
        ),
        Plot("queue", "Queue length", "time (s)", "waiting jobs", tuple(queue), "step"),
    ]
    if alloc:
        out += [
            Plot(
                "allocation",
                "Allocation rate from the announcement to the arrival (Arnold Fig. 14)",
                "time (s)",
                "nodes running a job / all",
                tuple(alloc),
                "step",
            ),
            Plot(
                "retention",
                "Retention rate (zone nodes held by other jobs)",
                "time (s)",
                "held zone nodes / zone",
                tuple(retain),
                "step",
            ),
        ]
    return [p for p in out if any(s.x for s in p.series)]


def build(runs: Sequence[Run], baseline: str | None = None) -> list[Section]:
    """The report's sections."""
    if not runs:
        raise TopooptError("no simulation run to report")
    settings = list(dict.fromkeys(_setting(run) for run in runs))
    if baseline is None:
        baseline = settings[0]
    elif baseline not in settings:
        raise TopooptError(f"--baseline: no run of {baseline!r}; settings: {', '.join(settings)}")
    sections = [
        Section(
            "Runs",
            (
                Text(f"{len(runs)} run(s): " + ", ".join(f"`{run.folder}`" for run in runs)),
                comparison_table(runs),
            ),
        )
    ]
    if len(settings) > 1:
        sections.append(Section("Paired comparison", (paired_table(runs, baseline),)))
    reserved = [run for run in runs if run.summary["summary"].get("reservation")]
    if reserved:
        rows = tuple(
            (
                run.label,
                str(r["zone_nodes"]),
                _num(r["allocation_rate"], 3),
                _num(r["retention_rate"], 3),
                _num(r["retention_at_arrival"], 3),
                _num(r["wait_s"]),
            )
            for run in reserved
            for r in [run.summary["summary"]["reservation"]]
        )
        table = Table(
            ("run", "zone nodes", "allocation rate", "retention rate", "retention at arrival",
             "large job's wait (s)"),
            rows,
            "Arnold Appendix H: time averages from the announcement to the large job's arrival.",
        )  # fmt: skip
        sections.append(Section("Reservation", (table,)))
    sections.append(Section("Figures", tuple(plots(runs))))
    return sections


def write_sim_report(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    *,
    title: str = "topoopt simulation report",
    baseline: str | None = None,
) -> list[Path]:
    """Write ``report.md``, ``report.html`` and ``figures/*.png`` of the runs in ``paths``."""
    from topoopt.bench.document import plots as all_plots
    from topoopt.bench.document import render_html, render_markdown
    from topoopt.bench.plots import draw

    runs = [load_run(folder) for folder in find_runs(paths)]
    doc = build(runs, baseline)
    out = Path(out_dir)
    figures = out / "figures"
    for stale in figures.glob("*.png") if figures.is_dir() else ():
        stale.unlink()
    for plot in all_plots(doc):
        draw(plot, figures / f"{plot.name}.png")
    md, html = out / "report.md", out / "report.html"
    md.write_text(render_markdown(doc, "figures"), encoding="utf-8")
    html.write_text(render_html(doc, title, "figures"), encoding="utf-8")
    return [md, html]
