"""Pure functions from benchmark records to the numbers of a report.

Nothing here reads files, draws or formats; every function takes records (plain dicts, see
:mod:`topoopt.bench.records`) and returns data, so each table of a report can be tested on
hand-made records.

Definitions used throughout (and stated in the report):

* a run **has a solution** when its status is ``optimal`` or ``feasible``; it **failed**
  otherwise (no solution, an infeasible answer, or an error record);
* a run **finished** when it has a solution and stopped on its own (termination ``optimal``
  or ``completed``), i.e. not at a time limit;
* the **best known** objective of an instance is the best objective over all its runs (in the
  family's sense); it is **proven** when an ``optimal`` run (an exact solver or the oracle)
  attains it;
* the **gap** of a run to the best known objective ``b`` is the primal gap
  ``|f - b| / max(|f|, |b|)`` (0 when equal, 1 when the signs differ), in [0, 1] whatever the
  sense (Berthold, 2006);
* the **time** of a run in shifted geometric means is its ``total_s`` when it finished and its
  time limit otherwise (unfinished runs are charged the time limit, as in Mittelmann's
  benchmarks).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topoopt.bench.records import Record
from topoopt.core.text import natural_key

InstanceId = tuple[str, str, str]
"""``(family, instance, instance_hash)``."""

SOLUTION_STATUSES = ("optimal", "feasible")
FINISHED_TERMINATIONS = ("optimal", "completed")
TIME_LIMIT_TERMINATIONS = ("time_limit", "timeout")
TOLERANCE = 1e-6
"""Relative tolerance under which two objectives are equal."""
DEFAULT_SHIFT = 1.0
"""Default shift (seconds) of the shifted geometric mean of time."""
MIN_PROFILE_TIME = 1e-3
"""Times below this (seconds) count as this in performance profiles (timer noise)."""


def instance_id(record: Mapping[str, Any]) -> InstanceId:
    """The instance a record is about."""
    return (record["family"], record["instance"], record["instance_hash"])


def solver_label(record: Mapping[str, Any]) -> str:
    """Solver name without the family prefix, with the backend in brackets.

    Examples
    --------
    >>> solver_label({"solver": "placement/exact-mip", "backend": "highs"})
    'exact-mip[highs]'
    >>> solver_label({"solver": "placement/best-fit", "backend": None})
    'best-fit'
    """
    name = record["solver"].split("/", 1)[-1]
    return f"{name}[{record['backend']}]" if record.get("backend") else name


def has_solution(record: Mapping[str, Any]) -> bool:
    """Whether the run returned a feasible (or optimal) solution."""
    return record["status"] in SOLUTION_STATUSES and record.get("objective") is not None


def finished(record: Mapping[str, Any]) -> bool:
    """Whether the run has a solution and stopped on its own (not at a time limit)."""
    return has_solution(record) and record["termination"] in FINISHED_TERMINATIONS


def hit_time_limit(record: Mapping[str, Any]) -> bool:
    """Whether the run stopped at the solver's time limit or was killed at the hard timeout."""
    return record["termination"] in TIME_LIMIT_TERMINATIONS


def group_by_suite(records: Iterable[Record]) -> dict[tuple[str, str], list[Record]]:
    """Records by ``(family, suite)``, sorted by key."""
    groups: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for record in records:
        groups[(record["family"], record["suite"])].append(record)
    return dict(sorted(groups.items(), key=lambda kv: _names_key(kv[0])))


def _names_key(names: Iterable[str]) -> tuple[Any, ...]:
    """Natural sort key of a tuple of names (:func:`~topoopt.core.text.natural_key` each)."""
    return tuple(natural_key(name) for name in names)


def _better(a: float, b: float, sense: str) -> bool:
    return a < b if sense == "minimize" else a > b


def same_objective(a: float, b: float) -> bool:
    """Whether two objectives are equal within :data:`TOLERANCE` (relative).

    Examples
    --------
    >>> same_objective(0.4, 0.4 + 1e-12), same_objective(0.4, 0.5)
    (True, False)
    """
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


@dataclass(frozen=True)
class BestKnown:
    """Best known objective of an instance.

    Attributes
    ----------
    value
        The best objective any run found.
    proven
        Whether an ``optimal`` run attains it (a certified optimum).
    """

    value: float
    proven: bool


def best_known(records: Iterable[Record]) -> dict[InstanceId, BestKnown]:
    """The best known objective of every instance that some run solved.

    Examples
    --------
    >>> recs = [
    ...     {"family": "f", "instance": "a", "instance_hash": "h", "sense": "minimize",
    ...      "status": "feasible", "objective": 2.0},
    ...     {"family": "f", "instance": "a", "instance_hash": "h", "sense": "minimize",
    ...      "status": "optimal", "objective": 1.0},
    ... ]
    >>> best_known(recs)
    {('f', 'a', 'h'): BestKnown(value=1.0, proven=True)}
    """
    solved: dict[InstanceId, list[Record]] = defaultdict(list)
    for record in records:
        if has_solution(record):
            solved[instance_id(record)].append(record)
    out: dict[InstanceId, BestKnown] = {}
    for key, runs in solved.items():
        best = runs[0]["objective"]
        for run in runs[1:]:
            if _better(run["objective"], best, run["sense"]):
                best = run["objective"]
        proven = any(
            r["status"] == "optimal" and same_objective(r["objective"], best) for r in runs
        )
        out[key] = BestKnown(float(best), proven)
    return out


def beaten_optima(records: Iterable[Record], best: Mapping[InstanceId, BestKnown]) -> list[Record]:
    """``optimal`` runs whose objective another run beat: a wrong optimality claim (a bug)."""
    return [
        r
        for r in records
        if has_solution(r)
        and r["status"] == "optimal"
        and not same_objective(r["objective"], best[instance_id(r)].value)
    ]


def primal_gap(objective: float, best: float) -> float:
    """Primal gap ``|objective - best| / max(|objective|, |best|)`` in [0, 1].

    Examples
    --------
    >>> primal_gap(2.0, 0.5)
    0.75
    >>> primal_gap(90.0, 100.0)
    0.1
    >>> primal_gap(0.0, 0.0), primal_gap(-1.0, 2.0)
    (0.0, 1.0)
    """
    if same_objective(objective, best):
        return 0.0
    if objective * best < 0:
        return 1.0
    return abs(objective - best) / max(abs(objective), abs(best))


def gap_to_best(record: Mapping[str, Any], best: Mapping[InstanceId, BestKnown]) -> float | None:
    """The record's primal gap to its instance's best known objective (``None`` without a
    solution)."""
    if not has_solution(record):
        return None
    return primal_gap(record["objective"], best[instance_id(record)].value)


def charged_time(record: Mapping[str, Any]) -> float:
    """Time of a run in shifted geometric means: ``total_s`` if it finished, else its time
    limit (or ``total_s`` when it had none)."""
    if finished(record) or record.get("time_limit") is None:
        return float(record["total_s"])
    return float(record["time_limit"])


def shifted_geometric_mean(values: Sequence[float], shift: float) -> float:
    """``exp(mean(log(v + shift))) - shift`` (``nan`` for no values).

    Examples
    --------
    >>> round(shifted_geometric_mean([1.0, 100.0], shift=10.0), 4)
    24.7851
    >>> shifted_geometric_mean([0.5, 0.5], shift=1.0)
    0.5
    """
    if not values:
        return math.nan
    logs = [math.log(v + shift) for v in values]
    return math.exp(sum(logs) / len(logs)) - shift


@dataclass(frozen=True)
class SolverRow:
    """One row of a suite's solver table.

    Attributes
    ----------
    solver
        :func:`solver_label`.
    runs, optimal, feasible, failed
        Runs; of those proven optimal, with a solution not proven optimal, without a solution.
    time_limit
        Runs stopped by the solver's time limit or killed at the hard timeout.
    at_best
        Runs whose objective equals the best known.
    sgm_time
        Shifted geometric mean of :func:`charged_time` (s).
    mean_gap, max_gap
        Over runs with a solution (``nan`` when none).
    peak_memory_mb
        Largest peak resident memory of a run's worker process.
    """

    solver: str
    runs: int
    optimal: int
    feasible: int
    failed: int
    time_limit: int
    at_best: int
    sgm_time: float
    mean_gap: float
    max_gap: float
    peak_memory_mb: float


def solver_table(
    records: Sequence[Record], best: Mapping[InstanceId, BestKnown], shift: float
) -> list[SolverRow]:
    """One :class:`SolverRow` per solver label, best first: fewest failures, then smallest
    mean gap, then shortest time.
    """
    by_solver: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_solver[solver_label(record)].append(record)
    rows = []
    for label, runs in by_solver.items():
        gaps = [g for g in (gap_to_best(r, best) for r in runs) if g is not None]
        rows.append(
            SolverRow(
                solver=label,
                runs=len(runs),
                optimal=sum(r["status"] == "optimal" for r in runs),
                feasible=sum(r["status"] == "feasible" for r in runs),
                failed=sum(not has_solution(r) for r in runs),
                time_limit=sum(hit_time_limit(r) for r in runs),
                at_best=sum(g == 0.0 for g in gaps),
                sgm_time=shifted_geometric_mean([charged_time(r) for r in runs], shift),
                mean_gap=sum(gaps) / len(gaps) if gaps else math.nan,
                max_gap=max(gaps) if gaps else math.nan,
                peak_memory_mb=max(float(r.get("peak_memory_mb") or 0.0) for r in runs),
            )
        )

    def rank(row: SolverRow) -> tuple[float, float, float, Any]:
        gap = row.mean_gap if not math.isnan(row.mean_gap) else math.inf
        return (row.failed / row.runs, gap, row.sgm_time, natural_key(row.solver))

    return sorted(rows, key=rank)


def solver_labels(records: Iterable[Record]) -> list[str]:
    """Distinct solver labels, in natural order (:func:`~topoopt.core.text.natural_key`)."""
    return sorted({solver_label(r) for r in records}, key=natural_key)


@dataclass(frozen=True)
class Cell:
    """The runs of one solver on one instance, summarised.

    Attributes
    ----------
    objective
        Mean objective over runs with a solution (``None`` when none has one).
    time
        Median ``total_s`` over all runs.
    runs, failed
        Number of runs, and of runs without a solution.
    optimal
        Whether every run was proven optimal.
    time_limit
        Runs stopped by a time limit (with or without a solution).
    outcome
        Termination of the first failed run (``""`` when none failed).
    """

    objective: float | None
    time: float
    runs: int
    failed: int
    optimal: bool
    time_limit: int
    outcome: str


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def instance_cells(records: Iterable[Record]) -> dict[InstanceId, dict[str, Cell]]:
    """Per instance (in natural order of names: ``small-2`` before ``small-10``) and solver
    label, the :class:`Cell` of its runs."""
    runs: dict[InstanceId, dict[str, list[Record]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        runs[instance_id(record)][solver_label(record)].append(record)
    out: dict[InstanceId, dict[str, Cell]] = {}
    for key in sorted(runs, key=lambda k: (natural_key(k[1]), k[2])):
        out[key] = {}
        for label, group in sorted(runs[key].items(), key=lambda kv: natural_key(kv[0])):
            objectives = [r["objective"] for r in group if has_solution(r)]
            failures = [r for r in group if not has_solution(r)]
            out[key][label] = Cell(
                objective=sum(objectives) / len(objectives) if objectives else None,
                time=_median([float(r["total_s"]) for r in group]),
                runs=len(group),
                failed=len(failures),
                optimal=all(r["status"] == "optimal" for r in group),
                time_limit=sum(hit_time_limit(r) for r in group),
                outcome=failures[0]["termination"] if failures else "",
            )
    return out


Problem = tuple[InstanceId, int, int]
"""A performance-profile problem: ``(instance, seed, repeat)``."""


def performance_profile(
    records: Sequence[Record], best: Mapping[InstanceId, BestKnown]
) -> dict[str, list[tuple[float, float]]]:
    """Dolan–Moré performance profiles of *time to the best known objective*.

    A solver solves a problem (an instance, seed and repeat) when its objective equals the best
    known; its time is ``total_s`` (at least :data:`MIN_PROFILE_TIME`). The ratio of a solver on
    a problem is its time over the fastest solver's; the profile of a solver is the fraction of
    all problems it solves within ratio ``tau``, as steps ``[(tau, fraction), ...]`` starting at
    ``(1, fraction at 1)``.

    Examples
    --------
    >>> rec = lambda solver, t, obj: {"family": "f", "instance": "a", "instance_hash": "h",
    ...     "sense": "minimize", "solver": f"f/{solver}", "backend": None, "seed": 0,
    ...     "repeat": 0, "status": "feasible", "objective": obj, "total_s": t}
    >>> recs = [rec("fast", 0.01, 1.0), rec("slow", 0.04, 1.0), rec("bad", 0.001, 2.0)]
    >>> performance_profile(recs, best_known(recs))
    {'bad': [(1.0, 0.0)], 'fast': [(1.0, 1.0)], 'slow': [(1.0, 0.0), (4.0, 1.0)]}
    """
    times: dict[Problem, dict[str, float]] = defaultdict(dict)
    labels = solver_labels(records)
    for r in records:
        problem = (instance_id(r), int(r["seed"]), int(r["repeat"]))
        solved = gap_to_best(r, best) == 0.0
        times[problem][solver_label(r)] = (
            max(float(r["total_s"]), MIN_PROFILE_TIME) if solved else math.inf
        )
    ratios: dict[str, list[float]] = {label: [] for label in labels}
    for by_solver in times.values():
        fastest = min(by_solver.values())
        for label in labels:
            t = by_solver.get(label, math.inf)
            ratios[label].append(t / fastest if math.isfinite(t) else math.inf)
    profiles: dict[str, list[tuple[float, float]]] = {}
    n = len(times)
    for label in labels:
        finite = sorted(r for r in ratios[label] if math.isfinite(r))
        steps = [(1.0, sum(r <= 1.0 for r in finite) / n)]
        for tau in sorted(set(finite)):
            if tau > 1.0:
                steps.append((tau, sum(r <= tau for r in finite) / n))
        profiles[label] = steps
    return profiles


def gap_distribution(
    records: Iterable[Record], best: Mapping[InstanceId, BestKnown]
) -> dict[str, list[float]]:
    """Per solver label, the sorted gaps of its runs to the best known (failed runs count as
    gap 1, the largest primal gap)."""
    gaps: dict[str, list[float]] = defaultdict(list)
    for record in records:
        gap = gap_to_best(record, best)
        gaps[solver_label(record)].append(1.0 if gap is None else gap)
    return {label: sorted(gaps[label]) for label in sorted(gaps, key=natural_key)}


def size_figure(records: Sequence[Record], preferred: str | None = None) -> str | None:
    """The size figure to plot time against: ``preferred`` if the records have it, else the
    first figure of the first record's ``size`` (``None`` when records carry none)."""
    sizes = [r.get("size") or {} for r in records]
    if preferred is not None and all(preferred in s for s in sizes):
        return preferred
    return next(iter(sizes[0]), None) if sizes else None


def time_vs_size(records: Iterable[Record], figure: str) -> dict[str, list[tuple[float, float]]]:
    """Per solver label, ``(size figure, total_s)`` of its runs that have a solution."""
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in records:
        if has_solution(r) and figure in (r.get("size") or {}):
            points[solver_label(r)].append((float(r["size"][figure]), float(r["total_s"])))
    return {label: sorted(points[label]) for label in sorted(points, key=natural_key)}


def distinct_values(records: Iterable[Record], field: str) -> dict[str, int]:
    """For a nested field such as ``versions`` or ``host``: each ``key: value`` seen, and in how
    many records (values rendered as text, sorted by key).

    Examples
    --------
    >>> distinct_values([{"host": {"cores": 2}}, {"host": {"cores": 2}}], "host")
    {'cores: 2': 2}
    """
    counts: dict[str, int] = defaultdict(int)
    for record in records:
        for key, value in (record.get(field) or {}).items():
            counts[f"{key}: {value}"] += 1
    return {entry: counts[entry] for entry in sorted(counts, key=natural_key)}


def settings(records: Iterable[Record]) -> dict[str, list[str]]:
    """The benchmark settings that occur: time limits, hard timeouts, seeds, repeats per
    setting, threads and executors (each as sorted text values).

    Examples
    --------
    >>> settings([{"time_limit": 60.0, "seed": 1, "repeat": 1, "executor": "local:2"}])["repeats"]
    ['2']
    """
    records = list(records)
    values: dict[str, set[str]] = {
        "time_limit": {str(r.get("time_limit")) for r in records},
        "hard_timeout": {str(r.get("hard_timeout")) for r in records},
        "seeds": {str(r.get("seed")) for r in records},
        "repeats": {str(max((int(r["repeat"]) for r in records), default=0) + 1)},
        "threads": {str(r.get("threads")) for r in records},
        "executor": {str(r.get("executor")) for r in records},
    }
    return {field: sorted(v, key=natural_key) for field, v in values.items()}


def failures(records: Iterable[Record]) -> list[Record]:
    """Runs without a solution, by instance then solver (natural order), seed and repeat."""
    return sorted(
        (r for r in records if not has_solution(r)),
        key=lambda r: (
            natural_key(r["instance"]),
            natural_key(solver_label(r)),
            r["seed"],
            r["repeat"],
        ),
    )


def mean_by(
    records: Iterable[Record], key: Any, value: Any
) -> dict[tuple[Any, str], tuple[float, int]]:
    """Mean of ``value(record)`` by ``(key(record), solver label)`` over records where both
    are not ``None``, with the number of records averaged.

    Examples
    --------
    >>> recs = [{"solver": "f/a", "backend": None, "k": 1, "v": 1.0},
    ...         {"solver": "f/a", "backend": None, "k": 1, "v": 3.0}]
    >>> mean_by(recs, lambda r: r["k"], lambda r: r["v"])
    {(1, 'a'): (2.0, 2)}
    """
    sums: dict[tuple[Any, str], list[float]] = defaultdict(list)
    for record in records:
        k, v = key(record), value(record)
        if k is not None and v is not None:
            sums[(k, solver_label(record))].append(float(v))
    return {
        k: (sum(v) / len(v), len(v))
        for k, v in sorted(
            sums.items(), key=lambda kv: (natural_key(str(kv[0][0])), natural_key(kv[0][1]))
        )
    }


def tag_values(records: Iterable[Record]) -> dict[str, list[str]]:
    """Every tag key of the records and its distinct values, both in natural order.

    Examples
    --------
    >>> tag_values([{"tags": {"setting": "ii"}}, {"tags": {"setting": "i", "job": "4x2"}}, {}])
    {'job': ['4x2'], 'setting': ['i', 'ii']}
    """
    values: dict[str, set[str]] = defaultdict(set)
    for record in records:
        for key, value in (record.get("tags") or {}).items():
            values[key].add(str(value))
    return {key: sorted(values[key], key=natural_key) for key in sorted(values, key=natural_key)}


def instances_by_tag(records: Iterable[Record], tag: str) -> dict[str, frozenset[InstanceId]]:
    """``tag value -> instances`` over the records carrying ``tag``.

    Examples
    --------
    >>> recs = [{"family": "f", "instance": "a", "instance_hash": "h", "tags": {"t": "x"}}]
    >>> instances_by_tag(recs, "t")
    {'x': frozenset({('f', 'a', 'h')})}
    """
    found: dict[str, set[InstanceId]] = defaultdict(set)
    for record in records:
        tags = record.get("tags") or {}
        if tag in tags:
            found[str(tags[tag])].add(instance_id(record))
    return {value: frozenset(found[value]) for value in sorted(found, key=natural_key)}


@dataclass(frozen=True)
class TagCell:
    """Runs of one solver on the instances with one tag value."""

    runs: int
    at_best: int
    mean_gap: float


def gap_by_tag(
    records: Iterable[Record], best: Mapping[InstanceId, BestKnown], tag: str
) -> dict[tuple[str, str], TagCell]:
    """``(tag value, solver label) -> TagCell`` over the records carrying ``tag`` (failed runs
    count as gap 1).

    Examples
    --------
    >>> recs = [{"family": "f", "instance": "a", "instance_hash": "h", "solver": "f/s",
    ...          "backend": None, "status": "feasible", "objective": 2.0, "tags": {"t": "x"}}]
    >>> gap_by_tag(recs, {("f", "a", "h"): BestKnown(1.0, True)}, "t")
    {('x', 's'): TagCell(runs=1, at_best=0, mean_gap=0.5)}
    """
    gaps: dict[tuple[str, str], list[float]] = defaultdict(list)
    for record in records:
        tags = record.get("tags") or {}
        if tag in tags:
            gap = gap_to_best(record, best)
            gaps[str(tags[tag]), solver_label(record)].append(1.0 if gap is None else gap)
    return {
        key: TagCell(len(values), sum(g == 0.0 for g in values), sum(values) / len(values))
        for key, values in sorted(gaps.items(), key=lambda kv: _names_key(kv[0]))
    }
