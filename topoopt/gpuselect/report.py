"""The gpuselect family's section of ``topoopt report`` (BandPilot Table 2, Fig. 6).

GPU bandwidth efficiency ``GBE = objective / best known`` (BandPilot eq. 4) and bandwidth loss
``best known - objective``: a Table-2-style summary per cluster and solver and GBE-vs-k curves
per cluster (Fig. 6). The cluster is the run's ``cluster`` tag (the instance's ``cluster``
field), ``k`` its ``k`` size figure.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from topoopt.bench.analysis import (
    BestKnown,
    InstanceId,
    has_solution,
    instance_id,
    mean_by,
    solver_label,
    solver_labels,
)
from topoopt.bench.document import Block, Plot, Series, Table, Text, slug
from topoopt.bench.records import Record
from topoopt.bench.sections import SectionContext


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}g}"


def cluster_tag(record: Mapping[str, Any]) -> str:
    """The cluster of a run: its ``cluster`` tag (``"-"`` without one).

    Examples
    --------
    >>> cluster_tag({"tags": {"cluster": "het-4mix", "model": "table"}}), cluster_tag({"tags": {}})
    ('het-4mix', '-')
    """
    return str((record.get("tags") or {}).get("cluster", "-"))


def gbe(record: Record, best: Mapping[InstanceId, BestKnown]) -> float | None:
    """GPU bandwidth efficiency of a run: objective / best known (``None`` without a solution).

    Examples
    --------
    >>> r = {"family": "gpuselect", "instance": "H100-k2", "instance_hash": "h",
    ...      "status": "feasible", "objective": 90.0}
    >>> gbe(r, {("gpuselect", "H100-k2", "h"): BestKnown(120.0, True)})
    0.75
    """
    if not has_solution(record):
        return None
    top = best[instance_id(record)].value
    return 1.0 if top == 0 else record["objective"] / top


def gbe_section(records: Sequence[Record], ctx: SectionContext) -> list[Block]:
    """Table-2-style GBE and bandwidth-loss summary and GBE-vs-k curves, per cluster."""
    by_cluster: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_cluster[cluster_tag(record)].append(record)
    rows = []
    blocks: list[Block] = []
    for cluster, runs in sorted(by_cluster.items()):
        by_label: dict[str, list[Record]] = defaultdict(list)
        for r in runs:
            by_label[solver_label(r)].append(r)
        summary = []
        for label, group in by_label.items():
            solved = [r for r in group if has_solution(r)]
            efficiency = _mean([gbe(r, ctx.best) or 0.0 for r in solved])
            loss = _mean([ctx.best[instance_id(r)].value - r["objective"] for r in solved])
            summary.append((efficiency, label, loss, len(group), len(group) - len(solved)))
        for g, label, bw, n, failed in sorted(summary, key=lambda t: (-_nan_low(t[0]), t[1])):
            rows.append((cluster, label, _fmt(100 * g, 4), _fmt(bw, 4), str(n), str(failed)))
        by_k = mean_by(runs, lambda r: (r.get("size") or {}).get("k"), lambda r: gbe(r, ctx.best))
        series = []
        for label in solver_labels(runs):
            points = sorted((k, 100 * v) for (k, lab), (v, _) in by_k.items() if lab == label)
            if points:
                xs, ys = zip(*points, strict=True)
                series.append(Series(label, tuple(map(float, xs)), tuple(ys)))
        if series:
            blocks.append(
                Plot(
                    name=f"{ctx.prefix}-gbe-vs-k-{slug(cluster)}",
                    title=f"GBE vs k on {cluster}",
                    xlabel="k (GPUs requested)",
                    ylabel="mean GBE (%)",
                    series=tuple(series),
                    caption=f"Mean GBE over the scenarios of each k on {cluster} "
                    "(BandPilot Fig. 6); runs without a solution are left out.",
                )
            )
    table = Table(
        ("cluster", "solver", "mean GBE (%)", "mean BW loss (GB/s)", "runs", "failed"),
        tuple(rows),
        "BandPilot Table 2 layout: GBE = bandwidth / best known bandwidth of the instance, "
        "bandwidth loss = best known - bandwidth, averaged over the runs with a solution.",
    )
    note = Text(
        "Best known = the largest bandwidth any run found; it is the optimum where an exact "
        "solver or the oracle proved it (see the per-instance table)."
    )
    return [table, note, *blocks]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _nan_low(x: float) -> float:
    return -math.inf if math.isnan(x) else x
