"""The placement family's section of ``topoopt report`` (Arnold Fig. 7).

Groups runs by the instance's ``setting`` tag (the ``labels`` of the Arnold settings i, ii,
iii in ``instances/placement/arnold-paper``; instances without it are grouped by the job's
matrix shape, the ``job`` tag) and shows the mean score and the mean largest DP / PP spreads
of every solver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from topoopt.bench.analysis import has_solution, mean_by, solver_labels
from topoopt.bench.document import Block, Table
from topoopt.bench.records import Record
from topoopt.bench.sections import SectionContext


def setting(record: Mapping[str, Any]) -> str:
    """The group of a run: its ``setting`` tag, else its ``job`` tag, else ``"-"``.

    Examples
    --------
    >>> setting({"tags": {"setting": "iii", "job": "46x8"}}), setting({"tags": {"job": "4x2"}})
    ('iii', '4x2')
    """
    tags = record.get("tags") or {}
    return str(tags.get("setting", tags.get("job", "-")))


def spreads_section(records: Sequence[Record], ctx: SectionContext) -> list[Block]:
    """Mean score and mean largest DP / PP spread per solver and setting (Arnold Fig. 7)."""
    solved = [r for r in records if has_solution(r)]
    score = mean_by(solved, setting, lambda r: r["objective"])
    dp = mean_by(solved, setting, lambda r: r.get("dp_spread"))
    pp = mean_by(solved, setting, lambda r: r.get("pp_spread"))
    settings = list(dict.fromkeys(k for k, _ in score))
    rows = []
    for label in solver_labels(records):
        cells = [label]
        for s in settings:
            if (s, label) not in score:
                cells.append("-")
                continue
            spreads = ""
            if (s, label) in dp and (s, label) in pp:
                spreads = f" ({dp[s, label][0]:.3g} / {pp[s, label][0]:.3g})"
            cells.append(f"{score[s, label][0]:.3g}{spreads}")
        rows.append(tuple(cells))
    return [
        Table(
            ("solver", *(f"setting {s}" for s in settings)),
            tuple(rows),
            "Mean score (mean largest DP spread / mean largest PP spread) over the runs with a "
            "solution, per setting (the instance's setting tag); lower is better.",
        )
    ]
