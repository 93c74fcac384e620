"""The parallelconfig family's section of ``topoopt report`` (SpiderFlow §4.2, §5.4.2).

Per solver: how many runs found a configuration, how often it was the best run of its instance
(the optimum wherever the oracle or the MIP proved it), its cost relative to that best run, how
often it chose the best run's ``(d, p)``, the mean ``d`` and ``p`` it chose, the share of
``T_comp`` in its objective (the rest is ``alpha·T_dp + beta·T_pp``) and its median time. This is
how the greedy baseline is compared with the exact ILP and the oracle.
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


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}g}"


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def configuration_section(records: Sequence[Record], ctx: SectionContext) -> list[Block]:
    """Per-solver summary of the configurations found against the best run per instance.

    Examples
    --------
    >>> from topoopt.bench.analysis import best_known
    >>> runs = [
    ...     {"family": "parallelconfig", "instance": "i", "instance_hash": "h",
    ...      "sense": "minimize", "solver": s, "status": st, "objective": obj, "d": d, "p": p,
    ...      "t_comp_s": tc, "total_s": 0.002}
    ...     for s, st, obj, d, p, tc in [
    ...         ("parallelconfig/enumerate", "optimal", 0.148, 2, 4, 0.14),
    ...         ("parallelconfig/greedy", "feasible", 0.185, 8, 1, 0.04)]]
    >>> table = configuration_section(runs, SectionContext(best_known(runs), "x"))[0]
    >>> [row[:6] for row in table.rows]
    [('enumerate', '1', '1', '100', '1', '100'), ('greedy', '1', '1', '0', '1.25', '0')]
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
        pairs = [(r, best_run[instance_id(r)]) for r in solved]
        share = 100.0 / len(solved) if solved else math.nan
        rows.append(
            (
                label,
                str(len(runs)),
                str(len(solved)),
                _fmt(share * sum(same_objective(r["objective"], b["objective"]) for r, b in pairs)),
                _fmt(_mean([r["objective"] / b["objective"] for r, b in pairs])),
                _fmt(share * sum((r["d"], r["p"]) == (b["d"], b["p"]) for r, b in pairs)),
                _fmt(_mean([float(r["d"]) for r in solved])),
                _fmt(_mean([float(r["p"]) for r in solved])),
                _fmt(100 * _mean([r["t_comp_s"] / r["objective"] for r in solved])),
                _fmt(1000 * statistics.median([float(r["total_s"]) for r in runs])),
            )
        )
    table = Table(
        (
            "solver",
            "runs",
            "solved",
            "best cost (%)",
            "cost / best",
            "best (d, p) (%)",
            "mean d",
            "mean p",
            "T_comp share (%)",
            "median time (ms)",
        ),
        tuple(rows),
        "Against the best run of each instance (the optimum where proven). best cost: same "
        "objective; cost / best: mean ratio of the objectives; best (d, p): the same degree and "
        "depth as the best run; T_comp share: compute with the pipeline bubble over the "
        "objective (the rest is alpha·T_dp + beta·T_pp).",
    )
    note = Text(
        "The objective is SpiderFlow's estimated time per iteration, T_comp + alpha·T_dp + "
        "beta·T_pp, in seconds (docs/parallelconfig.md)."
    )
    return [table, note]
