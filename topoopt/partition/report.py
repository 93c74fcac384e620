"""The partition family's section of ``topoopt report``: SpiderFlow Table 2.

Per job-graph size (the instances' ``size`` tag, ``vertices/edges``) and solver: the median
runtime and the edge-cut quality, the run's eq. 9 cut divided by the best cut of its instance
(1.00 = the best; the paper normalises to its ILP). The best is the optimum where a run proved
it, else the best any run found — the table says which, and gives the best proven lower bound
where nothing is proven, so a quality of 1.00 against an unproven best is read as "best found".
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence

from topoopt.bench.analysis import has_solution, instance_id, solver_label
from topoopt.bench.document import Block, Table, Text
from topoopt.bench.records import Record
from topoopt.bench.sections import SectionContext


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}g}"


def size_tag(record: Record) -> str:
    """The run's ``size`` tag (``"-"`` without one).

    Examples
    --------
    >>> size_tag({"tags": {"size": "128/512"}}), size_tag({})
    ('128/512', '-')
    """
    return str((record.get("tags") or {}).get("size", "-"))


def table2_section(records: Sequence[Record], ctx: SectionContext) -> list[Block]:
    """Runtime and cut quality per size and solver (SpiderFlow Table 2 layout).

    Examples
    --------
    >>> from topoopt.bench.analysis import best_known
    >>> runs = [
    ...     {"family": "partition", "instance": "i", "instance_hash": "h", "sense": "minimize",
    ...      "solver": s, "status": st, "objective": obj, "bound": b, "total_s": t,
    ...      "tags": {"size": "128/512"}}
    ...     for s, st, obj, b, t in [("partition/mip", "optimal", 10.0, 10.0, 30.0),
    ...                              ("partition/greedy-lowcut", "feasible", 10.4, None, 0.2)]]
    >>> table = table2_section(runs, SectionContext(best_known(runs), "x"))[0]
    >>> [row[:4] for row in table.rows]
    [('128/512', 'greedy-lowcut', '0.2', '1.04'), ('128/512', 'mip', '30', '1')]
    """
    lower: dict[object, float] = defaultdict(lambda: -math.inf)
    for record in records:
        bound = record.get("bound")
        if isinstance(bound, (int, float)):
            key = instance_id(record)
            lower[key] = max(lower[key], float(bound))
    groups: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for record in records:
        groups[size_tag(record), solver_label(record)].append(record)
    rows = []
    for (size, label), runs in sorted(groups.items()):
        solved = [r for r in runs if has_solution(r)]
        quality = [
            r["objective"] / ctx.best[instance_id(r)].value
            if ctx.best[instance_id(r)].value > 0
            else 1.0
            for r in solved
        ]
        proven = sum(1 for r in solved if ctx.best[instance_id(r)].proven)
        gaps = [
            1.0 - lower[instance_id(r)] / r["objective"]
            for r in solved
            if r["objective"] > 0 and math.isfinite(lower[instance_id(r)])
        ]
        rows.append(
            (
                size,
                label,
                _fmt(statistics.median(float(r["total_s"]) for r in runs)),
                _fmt(statistics.fmean(quality) if quality else math.nan),
                _fmt(max(quality) if quality else math.nan),
                f"{proven}/{len(solved)}",
                _fmt(100 * statistics.fmean(gaps)) if gaps else "-",
                f"{len(solved)}/{len(runs)}",
            )
        )
    table = Table(
        (
            "size (vertices/edges)",
            "solver",
            "median runtime (s)",
            "mean quality",
            "worst quality",
            "best proven",
            "mean gap to best bound (%)",
            "solved",
        ),
        tuple(rows),
        "SpiderFlow Table 2 layout: quality = eq. 9 cut / best cut of the instance (1.00 = best; "
        "the paper normalises to its ILP). best proven: runs whose instance's best cut is a "
        "proven optimum; gap to best bound: 1 - (largest proven lower bound of the instance) / "
        "cut.",
    )
    note = Text(
        "Paper (Table 2): ILP (ALPA) 182.4 s / 1.00, DT-FM genetic 145.7 s / 1.18, "
        "Heuristic-ILP 3.37 s / 1.05 at 128/512; ILP > 3600 s, genetic 812.6 s / 1.23, "
        "Heuristic-ILP 12.15 s / 1.08 at 512/2048."
    )
    return [table, note]
