"""Family-specific report sections, registered per family.

:func:`register_section` adds a view of one family's records to every report: a function
from the records of one family × suite (and the best known objectives) to document blocks.
Built in:

* ``placement`` — the score and the largest DP / PP spreads per solver and Arnold setting
  (the first ``-``-separated token of the instance name, e.g. ``iii`` in ``iii-even-a0.5``),
  as in Arnold Fig. 7; time is plotted against the number of nodes.
* ``gpuselect`` — GPU bandwidth efficiency ``GBE = objective / best known`` (BandPilot eq. 4)
  and bandwidth loss ``best known - objective``: a Table-2-style summary per cluster and
  solver and GBE-vs-k curves per cluster (Fig. 6). ``k`` is the instance's ``k`` size figure;
  the cluster is the start of the instance name (see :func:`cluster_of`).

Sections work from records alone: they never load instances or solvers.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class SectionContext:
    """What a section function gets besides the records.

    Attributes
    ----------
    best
        Best known objective of every solved instance.
    prefix
        Unique stem for the names of the section's plots (file names).
    """

    best: Mapping[InstanceId, BestKnown]
    prefix: str


SectionFn = Callable[[Sequence[Record], SectionContext], list[Block]]


@dataclass(frozen=True)
class FamilyView:
    """How reports show one family: a titled extra section and the size figure for time plots."""

    title: str
    section: SectionFn
    size_figure: str | None = None


_VIEWS: dict[str, FamilyView] = {}


def register_section(
    family: str, title: str, section: SectionFn, *, size_figure: str | None = None
) -> None:
    """Add ``section`` (titled ``title``) to the report of every suite of ``family``.

    ``size_figure`` names the instance size figure that time is plotted against (default: the
    first figure of the family's ``size``).
    """
    _VIEWS[family] = FamilyView(title, section, size_figure)


def family_view(family: str) -> FamilyView | None:
    """The registered view of ``family``, if any."""
    return _VIEWS.get(family)


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}g}"


def arnold_setting(name: str) -> str:
    """The Arnold setting of an instance name: its first ``-``-separated token.

    Examples
    --------
    >>> arnold_setting("iii-even-a0.5"), arnold_setting("small-0-3")
    ('iii', 'small')
    """
    return name.split("-", 1)[0]


def placement_section(records: Sequence[Record], ctx: SectionContext) -> list[Block]:
    """Mean score and mean largest DP / PP spread per solver and setting (Arnold Fig. 7)."""
    solved = [r for r in records if has_solution(r)]
    setting = lambda r: arnold_setting(r["instance"])  # noqa: E731
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
            "solution, per setting; lower is better.",
        )
    ]


_NAME_TAG = re.compile(r"^([a-z]+\d+|\d+)$")


def cluster_of(name: str) -> str:
    """The cluster of a gpuselect instance: the tokens of its name before the first tag
    token (lower-case letters followed by digits, such as ``k8`` or ``s3``, or digits alone).

    Examples
    --------
    >>> cluster_of("H100-k8-s3"), cluster_of("Het-4Mix-k16-s0"), cluster_of("Het-RA")
    ('H100', 'Het-4Mix', 'Het-RA')
    """
    tokens = name.split("-")
    for i, token in enumerate(tokens):
        if i and _NAME_TAG.match(token):
            return "-".join(tokens[:i])
    return name


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


def gpuselect_section(records: Sequence[Record], ctx: SectionContext) -> list[Block]:
    """Table-2-style GBE and bandwidth-loss summary and GBE-vs-k curves, per cluster."""
    by_cluster: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_cluster[cluster_of(record["instance"])].append(record)
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


register_section(
    "placement", "Placement: score and spreads per setting", placement_section, size_figure="nodes"
)
register_section(
    "gpuselect",
    "GPU selection: GBE (BandPilot Table 2, Fig. 6)",
    gpuselect_section,
    size_figure="available",
)
