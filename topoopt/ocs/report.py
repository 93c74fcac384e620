"""The ocs family's sections of ``topoopt report`` (OCS TDM paper §II-C, eq. 1; ``docs/ocs.md``).

Three sections, each from records alone (the result's metrics and the instance's tags):

* :func:`tdm_section` — TDM against no TDM per mix (the instance's ``mix`` label, else its
  ``suite`` label) and solver: median round times, the speed-up ``tdm_speedup =
  no_tdm_round_s / round_s`` (mean and geometric mean; the metric's no-TDM round, see
  :func:`topoopt.ocs.solution.metrics`), the speed-up over the ``ocs/no-tdm`` run of the same
  instance, and the mean throughput (iterations/s over the jobs) with and without TDM.
* :func:`solver_section` — per solver: how often it reaches the best run of each instance (the
  optimum wherever ``ocs/enumerate`` or an exact MILP proved it), its excess round time over
  that best run, on every instance and on the proven ones only, and its median and largest
  time: heuristics (hill climbing, greedy) against the exact solvers.
* :func:`sensitivity_section` — how the TDM gain of an instance (the best no-TDM round any run
  saw over the best round) varies with the communication/computation ratio (``ratio`` label,
  suite ``sweep``), the job mix (``mix`` label, random suites) and the reconfiguration delay
  (``reconfig_s`` label): a table per label and, for the ratio, a plot.

A record's ``no_tdm_round_s`` (and ``tdm_speedup``) is ``"inf"`` (``null`` in older records)
when the jobs' joint traffic cannot be served by the OXC ports in one group; such runs are
counted, not averaged.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from topoopt.bench.analysis import (
    BestKnown,
    InstanceId,
    has_solution,
    instance_id,
    same_objective,
    solver_label,
)
from topoopt.bench.document import Block, Plot, Series, Table, Text
from topoopt.bench.records import Record
from topoopt.bench.sections import SectionContext

NO_TDM_SOLVER = "ocs/no-tdm"
"""The baseline solver whose runs the TDM rounds are also compared with."""
ITERATIONS = "iterations_per_s."
"""Prefix of the per-job throughput metrics."""


def _fmt(x: float, digits: int = 4) -> str:
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.{digits}g}"


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def _geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive values (``nan`` for none).

    Examples
    --------
    >>> round(_geomean([1.0, 4.0]), 9), _geomean([])
    (2.0, nan)
    """
    if not values:
        return math.nan
    return math.exp(statistics.fmean(math.log(v) for v in values))


def _number(record: Mapping[str, Any], key: str) -> float | None:
    """A finite metric of the record, or ``None`` (missing, ``null`` for infinity, non-finite)."""
    value = record.get(key)
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _tag(record: Mapping[str, Any], key: str) -> str | None:
    value = (record.get("tags") or {}).get(key)
    return None if value is None else str(value)


def mix_of(record: Mapping[str, Any]) -> str:
    """The group of a run in the TDM table: its ``mix`` label, else its ``suite`` label.

    Examples
    --------
    >>> mix_of({"tags": {"mix": "comm", "pods": "4"}}), mix_of({"tags": {"suite": "sweep"}})
    ('comm', 'sweep')
    >>> mix_of({"tags": {}})
    '-'
    """
    return _tag(record, "mix") or _tag(record, "suite") or "-"


def throughput(record: Mapping[str, Any]) -> float | None:
    """Mean training iterations per second over the run's jobs (``None`` without them).

    Examples
    --------
    >>> throughput({"iterations_per_s.j0": 10.0, "iterations_per_s.j1": 5.0, "round_s": 0.2})
    7.5
    """
    rates = [float(v) for k, v in record.items() if k.startswith(ITERATIONS) and v is not None]
    return statistics.fmean(rates) if rates else None


def _natural(text: str) -> tuple[Any, ...]:
    """Numbers by value, other text after them."""
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def _no_tdm_runs(records: Iterable[Record]) -> dict[InstanceId, float]:
    """The round time of the ``ocs/no-tdm`` run of each instance (the best when several)."""
    out: dict[InstanceId, float] = {}
    for record in records:
        if record["solver"] == NO_TDM_SOLVER and has_solution(record):
            key = instance_id(record)
            out[key] = min(out.get(key, math.inf), float(record["objective"]))
    return out


def tdm_section(records: Sequence[Record], ctx: SectionContext) -> list[Block]:
    """TDM against no TDM per mix and solver: round times, speed-up and throughput.

    Examples
    --------
    >>> from topoopt.bench.analysis import best_known
    >>> def run(solver, rnd, no_tdm):
    ...     return {"family": "ocs", "suite": "tiny", "instance": "i", "instance_hash": "h",
    ...             "sense": "minimize", "solver": solver, "backend": None,
    ...             "status": "feasible", "objective": rnd, "round_s": rnd,
    ...             "no_tdm_round_s": no_tdm, "iterations_per_s.j0": 2 / rnd,
    ...             "iterations_per_s.j1": 1 / rnd, "tags": {"mix": "comm"}}
    >>> runs = [run("ocs/hill-climb", 0.2, 0.3), run("ocs/no-tdm", 0.25, 0.25)]
    >>> table = tdm_section(runs, SectionContext(best_known(runs), "x"))[0]
    >>> table.columns[:6]
    ('mix', 'solver', 'runs', 'median round (s)', 'median no-TDM round (s)', 'mean speed-up')
    >>> [row[:9] for row in table.rows]  # doctest: +NORMALIZE_WHITESPACE
    [('comm', 'hill-climb', '1', '0.2', '0.3', '1.5', '1.5', '1.25', '7.5'),
     ('comm', 'no-tdm', '1', '0.25', '0.25', '1', '1', '1', '6')]
    """
    several = len({r["suite"] for r in records}) > 1
    baseline = _no_tdm_runs(records)
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for record in records:
        groups[(record["suite"] if several else "", mix_of(record), solver_label(record))].append(
            record
        )
    rows = []
    unservable = 0
    for (suite, mix, label), runs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], _natural(kv[0][1]), kv[0][2])
    ):
        solved = [r for r in runs if has_solution(r)]
        rounds = [float(r["objective"]) for r in solved]
        no_tdm = [x for x in (_number(r, "no_tdm_round_s") for r in solved) if x is not None]
        unservable += len(solved) - len(no_tdm)
        speedups = [
            x / float(r["objective"])
            for r in solved
            if (x := _number(r, "no_tdm_round_s")) is not None and float(r["objective"]) > 0
        ]
        versus = [
            baseline[instance_id(r)] / float(r["objective"])
            for r in solved
            if instance_id(r) in baseline and float(r["objective"]) > 0
        ]
        rates = [x for x in (throughput(r) for r in solved) if x is not None]
        rates_no_tdm = [
            x / s
            for r in solved
            if (x := throughput(r)) is not None and (s := _speedup(r)) is not None and s > 0
        ]
        row = (
            mix,
            label,
            str(len(solved)),
            _fmt(_median(rounds)),
            _fmt(_median(no_tdm)),
            _fmt(_mean(speedups)),
            _fmt(_geomean(speedups)),
            _fmt(_geomean(versus)),
            _fmt(_mean(rates)),
            _fmt(_mean(rates_no_tdm)),
        )
        rows.append((suite, *row) if several else row)
    columns = (
        "mix",
        "solver",
        "runs",
        "median round (s)",
        "median no-TDM round (s)",
        "mean speed-up",
        "geo-mean speed-up",
        "geo-mean speed-up vs no-tdm run",
        "mean iterations/s",
        "mean iterations/s without TDM",
    )
    table = Table(
        ("suite", *columns) if several else columns,
        tuple(rows),
        "Runs with a solution, per mix (the instance's mix label, else its suite label) and "
        "solver. Round: the TDM round time (the objective, paper eq. 1). No-TDM round: the "
        "run's no_tdm_round_s, every job in one group with the best circuits (docs/ocs.md, "
        "Metrics); speed-up = no-TDM round / round. vs no-tdm run: the ocs/no-tdm run's round "
        "of the same instance over the run's round. Iterations/s: per job, 1 (PS) or 2 (RAR, "
        "A2A) iterations per round, averaged over the jobs and then the runs; without TDM the "
        "same iterations take the no-TDM round.",
    )
    blocks: list[Block] = [table]
    text = (
        "A TDM round overlaps one group's communication with the other group's training "
        "(four phases, docs/ocs.md); without TDM every job trains, then every job communicates. "
        "Putting every job in one group is itself a TDM schedule, so the optimum's speed-up is "
        "at least 1; the no-tdm solver's own speed-up is 1 by definition."
    )
    if unservable:
        text += (
            f" {unservable} run(s) use servers or rings whose joint traffic no circuit matrix "
            "can serve in one group (no-TDM round infinite): left out of the no-TDM columns."
        )
    blocks.append(Text(text))
    return blocks


def _speedup(record: Mapping[str, Any]) -> float | None:
    """``no_tdm_round_s / round_s`` of a run (``None`` when the no-TDM round is infinite)."""
    no_tdm = _number(record, "no_tdm_round_s")
    if no_tdm is None or not has_solution(record) or float(record["objective"]) <= 0:
        return None
    return no_tdm / float(record["objective"])


def solver_section(records: Sequence[Record], ctx: SectionContext) -> list[Block]:
    """Per solver: runs at the best round of their instance, excess round time, time.

    Examples
    --------
    >>> from topoopt.bench.analysis import best_known
    >>> runs = [
    ...     {"family": "ocs", "instance": i, "instance_hash": "h", "sense": "minimize",
    ...      "solver": s, "backend": None, "status": st, "objective": obj, "total_s": t}
    ...     for i, s, st, obj, t in [
    ...         ("a", "ocs/enumerate", "optimal", 0.18, 0.002),
    ...         ("a", "ocs/hill-climb", "feasible", 0.18, 0.001),
    ...         ("b", "ocs/enumerate", "optimal", 0.20, 0.004),
    ...         ("b", "ocs/hill-climb", "feasible", 0.25, 0.001)]]
    >>> table = solver_section(runs, SectionContext(best_known(runs), "x"))[0]
    >>> [row[:8] for row in table.rows]  # doctest: +NORMALIZE_WHITESPACE
    [('enumerate', '2', '2', '2', '100', '0', '0', '0'),
     ('hill-climb', '2', '2', '2', '50', '12.5', '25', '12.5')]
    """
    by_solver: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_solver[solver_label(record)].append(record)
    rows = []
    for label, runs in sorted(by_solver.items()):
        solved = [r for r in runs if has_solution(r)]
        excess, proven_excess, at_best = [], [], 0
        for r in solved:
            best = ctx.best[instance_id(r)]
            value = float(r["objective"])
            at_best += same_objective(value, best.value)
            over = 0.0 if same_objective(value, best.value) else 100 * (value / best.value - 1)
            excess.append(over)
            if best.proven:
                proven_excess.append(over)
        times = [float(r["total_s"]) for r in runs]
        rows.append(
            (
                label,
                str(len(runs)),
                str(len(solved)),
                str(len(proven_excess)),
                _fmt(100 * at_best / len(solved) if solved else math.nan, 3),
                _fmt(_mean(excess), 3),
                _fmt(max(excess, default=math.nan), 3),
                _fmt(_mean(proven_excess), 3),
                _fmt(1000 * _median(times), 3),
                _fmt(1000 * max(times, default=math.nan), 3),
            )
        )
    table = Table(
        (
            "solver",
            "runs",
            "solved",
            "runs on proven optima",
            "at best (%)",
            "mean excess (%)",
            "max excess (%)",
            "mean excess on proven optima (%)",
            "median time (ms)",
            "max time (ms)",
        ),
        tuple(rows),
        "Against the best run of each instance: excess = round / best round - 1. On proven "
        "optima: runs whose instance's best round an exact solver (ocs/enumerate, an exact MILP) "
        "proved optimal. Time: total_s of every run, with or without a solution.",
    )
    proven = sum(
        1 for key in {instance_id(r) for r in records} if key in ctx.best and ctx.best[key].proven
    )
    note = Text(
        f"The best round is proven optimal on {proven} of "
        f"{len({instance_id(r) for r in records})} instance(s). ocs/hill-climb-paper is the "
        "paper's Algorithm 1 as written, ocs/hill-climb our local search after it, "
        "ocs/oxc-greedy its Algorithms 2 and 3 with a greedy grouping, ocs/no-tdm the baseline "
        "without TDM (docs/ocs.md, Solvers)."
    )
    return [table, note]


def instance_speedups(
    records: Iterable[Record], best: Mapping[InstanceId, BestKnown]
) -> dict[InstanceId, float]:
    """The TDM gain of each instance: the best no-TDM round any run saw (every run's
    ``no_tdm_round_s`` is the round of a valid no-TDM schedule, the ``ocs/no-tdm`` run's is its
    objective) over the best round.

    Examples
    --------
    >>> from topoopt.bench.analysis import best_known
    >>> runs = [{"family": "ocs", "instance": "a", "instance_hash": "h", "sense": "minimize",
    ...          "solver": s, "status": "feasible", "objective": obj, "no_tdm_round_s": nt}
    ...         for s, obj, nt in [("ocs/enumerate", 0.25, 0.55), ("ocs/no-tdm", 0.5, 0.5)]]
    >>> instance_speedups(runs, best_known(runs))
    {('ocs', 'a', 'h'): 2.0}
    """
    no_tdm: dict[InstanceId, float] = {}
    for record in records:
        value = _number(record, "no_tdm_round_s") if has_solution(record) else None
        if value is not None:
            key = instance_id(record)
            no_tdm[key] = min(no_tdm.get(key, math.inf), value)
    return {
        key: value / best[key].value
        for key, value in no_tdm.items()
        if key in best and best[key].value > 0
    }


def sensitivity_section(records: Sequence[Record], ctx: SectionContext) -> list[Block]:
    """TDM gain per communication/computation ratio (and per mix) and reconfiguration delay.

    Examples
    --------
    >>> from topoopt.bench.analysis import best_known
    >>> runs = [{"family": "ocs", "instance": f"r{ratio}-d{delay}", "instance_hash": "h",
    ...          "sense": "minimize", "solver": "ocs/enumerate", "status": "optimal",
    ...          "objective": rnd, "no_tdm_round_s": nt,
    ...          "tags": {"ratio": ratio, "reconfig_s": delay}}
    ...         for ratio, delay, rnd, nt in [
    ...             ("0.5", "0.0001", 0.5, 0.6), ("1", "0.0001", 0.3, 0.45),
    ...             ("0.5", "0.01", 0.52, 0.62), ("1", "0.01", 0.35, 0.47)]]
    >>> blocks = sensitivity_section(runs, SectionContext(best_known(runs), "x"))
    >>> blocks[0].columns, blocks[0].rows  # doctest: +NORMALIZE_WHITESPACE
    (('ratio', 'instances', 'reconfig_s = 0.0001', 'reconfig_s = 0.01', 'all delays'),
     (('0.5', '2', '1.2', '1.192', '1.196'), ('1', '2', '1.5', '1.343', '1.419')))
    >>> for s in blocks[1].series:
    ...     print(s.label, s.x, [round(y, 3) for y in s.y])
    reconfig_s = 0.0001 s (-1.0, 0.0) [1.2, 1.5]
    reconfig_s = 0.01 s (-1.0, 0.0) [1.192, 1.343]
    """
    gains = instance_speedups(records, ctx.best)
    tags: dict[InstanceId, Mapping[str, Any]] = {}
    for record in records:
        tags.setdefault(instance_id(record), record.get("tags") or {})
    blocks: list[Block] = []
    for axis in ("ratio", "mix"):
        cells: dict[tuple[str, str], list[float]] = defaultdict(list)
        for key, gain in gains.items():
            label = tags[key].get(axis)
            if label is not None:
                cells[(str(label), str(tags[key].get("reconfig_s", "-")))].append(gain)
        if cells:
            blocks += _gain_table(axis, cells, ctx.prefix)
    if not blocks:
        return [
            Text(
                "No instance here carries a ratio or mix label together with a finite no-TDM "
                "round (the sweep, tiny and paper-like suites do)."
            )
        ]
    blocks.append(
        Text(
            "What the model predicts: the gain is largest when communication and training are "
            "of similar size, as one group's communication then hides behind the other group's "
            "training; at small ratios both rounds are dominated by training, at large ratios "
            "by communication, which TDM cannot hide. The no-TDM round pays the reconfiguration "
            "delay twice, the TDM round in up to four phases (each phase whose communication "
            "outlasts the other group's compute), so a longer delay lowers the gain where "
            "communication is the bottleneck and can raise it where training hides the "
            "communication and the delay with it."
        )
    )
    return blocks


def _gain_table(
    axis: str, cells: Mapping[tuple[str, str], list[float]], prefix: str
) -> list[Block]:
    """The gain table of one axis (``ratio`` or ``mix``) and, for the ratio, its plot."""
    row_keys = sorted({r for r, _ in cells}, key=_natural)
    delays = sorted({d for _, d in cells}, key=_natural)
    rows = []
    for row in row_keys:
        everything = [g for d in delays for g in cells.get((row, d), [])]
        rows.append(
            (
                row,
                str(len(everything)),
                *(_fmt(_geomean(cells.get((row, d), []))) for d in delays),
                _fmt(_geomean(everything)),
            )
        )
    what = (
        "the communication/computation ratio (mean communication time of a job alone on the "
        "network over mean training time, sweep suite)"
        if axis == "ratio"
        else "the job mix (each job's ratio drawn in comm [1, 4], balanced [0.5, 1.5], compute "
        "[0.1, 0.5])"
    )
    blocks: list[Block] = [
        Table(
            (axis, "instances", *(f"reconfig_s = {d}" for d in delays), "all delays"),
            tuple(rows),
            f"TDM gain of an instance = best no-TDM round seen in any run / best round (the "
            f"optimum where proven); geometric mean over the instances of each {axis} and "
            f"reconfiguration delay (s). Rows: {what}.",
        )
    ]
    if axis == "ratio" and all(_natural(r)[0] == 0 and float(r) > 0 for r in row_keys):
        series = []
        for d in delays:
            points = [
                (math.log2(float(r)), _geomean(cells[(r, d)])) for r in row_keys if (r, d) in cells
            ]
            if points:
                xs, ys = zip(*points, strict=True)
                series.append(Series(f"reconfig_s = {d} s", tuple(xs), tuple(ys)))
        blocks.append(
            Plot(
                name=f"{prefix}-tdm-gain-vs-ratio",
                title="TDM gain vs communication/computation ratio",
                xlabel="log2 of the communication/computation ratio (-2: 0.25, 0: 1, 2: 4)",
                ylabel="no-TDM round / TDM round",
                series=tuple(series),
                caption="Geometric mean TDM gain (best no-TDM round / best round) of the "
                "instances of each ratio, one line per reconfiguration delay.",
            )
        )
    return blocks
