"""The clusterselect family's section of ``topoopt report`` (SpiderFlow §4.1, §5.4.1).

Per solver: how many runs placed the task, the clusters ``K`` spanned, the bottleneck bandwidth
and the total pairwise latency (the three parts of the lexicographic key), and how close each
run came to the best run of its instance — the optimum wherever the oracle or the MIP proved it:
the share of runs with the best key and with the fewest clusters, the clusters and bottleneck
levels missed otherwise. This is how SpinSearch is compared with the oracle.

The best run of an instance is the one with the smallest objective; because the objective's
integer part is ``K`` (:mod:`topoopt.clusterselect.solution`), its ``K`` and bottleneck rank
are those of the best key.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence

from topoopt.bench.analysis import has_solution, instance_id, same_objective, solver_label
from topoopt.bench.document import Block, Table, Text
from topoopt.bench.records import Record
from topoopt.bench.sections import SectionContext
from topoopt.core.result import number_from_json


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}g}"


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def _bottleneck(record: Record) -> float:
    """The run's bottleneck in Gb/s (``inf`` for one cluster, written ``"inf"``; older
    records wrote ``null``)."""
    value = number_from_json(record.get("bottleneck_gbps"))
    return math.inf if value is None else value


def selection_section(records: Sequence[Record], ctx: SectionContext) -> list[Block]:
    """Per-solver summary of K, bottleneck and latency against the best run per instance.

    Examples
    --------
    >>> from topoopt.bench.analysis import best_known
    >>> runs = [
    ...     {"family": "clusterselect", "instance": "i", "instance_hash": "h", "sense": "minimize",
    ...      "solver": s, "status": st, "objective": obj, "clusters": k,
    ...      "bottleneck_gbps": bw, "bottleneck_rank": rk, "latency_ms": lat, "total_s": 0.001}
    ...     for s, st, obj, k, bw, rk, lat in [
    ...         ("clusterselect/enumerate", "optimal", 2.1, 2, 100.0, 0, 1.0),
    ...         ("clusterselect/spinsearch", "feasible", 2.7, 2, 10.0, 3, 7.0)]]
    >>> table = selection_section(runs, SectionContext(best_known(runs), "x"))[0]
    >>> [row[:5] for row in table.rows]
    [('enumerate', '1', '1', '2', '100'), ('spinsearch', '1', '1', '2', '0')]
    """
    best_run: dict[object, Record] = {}
    for record in records:
        if has_solution(record):
            key = instance_id(record)
            if key not in best_run or record["objective"] < best_run[key]["objective"]:
                best_run[key] = record
    by_solver: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_solver[solver_label(record)].append(record)
    rows = []
    for label, runs in sorted(by_solver.items()):
        solved = [r for r in runs if has_solution(r)]
        reference = [best_run[instance_id(r)] for r in solved]
        best_key = [
            same_objective(r["objective"], b["objective"])
            for r, b in zip(solved, reference, strict=True)
        ]
        extra_k = [r["clusters"] - b["clusters"] for r, b in zip(solved, reference, strict=True)]
        extra_rank = [
            r["bottleneck_rank"] - b["bottleneck_rank"]
            for r, b in zip(solved, reference, strict=True)
            if r["clusters"] == b["clusters"]
        ]
        widths = [
            min(_bottleneck(r) / _bottleneck(b), 1.0)
            for r, b in zip(solved, reference, strict=True)
            if math.isfinite(_bottleneck(b))
        ]
        share = 100.0 / len(solved) if solved else math.nan
        rows.append(
            (
                label,
                str(len(runs)),
                str(len(solved)),
                _fmt(_mean([float(r["clusters"]) for r in solved])),
                _fmt(share * sum(best_key)),
                _fmt(share * sum(1 for e in extra_k if e == 0)),
                _fmt(_mean([float(e) for e in extra_k])),
                _fmt(_mean([float(e) for e in extra_rank])),
                _fmt(_mean(widths)),
                _fmt(_mean([float(r["latency_ms"]) for r in solved])),
                _fmt(1000 * statistics.median([float(r["total_s"]) for r in runs])),
            )
        )
    table = Table(
        (
            "solver",
            "runs",
            "placed",
            "mean K",
            "best key (%)",
            "fewest K (%)",
            "mean extra K",
            "mean extra rank (same K)",
            "bottleneck / best",
            "mean latency (ms)",
            "median time (ms)",
        ),
        tuple(rows),
        "Against the best run of each instance (the optimum where proven). best key: same "
        "objective; fewest K: same number of clusters; extra rank: bandwidth levels below the "
        "best bottleneck, over the runs with the fewest K; bottleneck / best: mean ratio where "
        "the best run spans two or more clusters.",
    )
    note = Text(
        "A single-cluster (Mast) run places the task only when one cluster holds it; the "
        "others always place it. Latency is the total shortest-path latency over the pairs of "
        "chosen clusters."
    )
    return [table, note]
