"""Draw the :class:`~topoopt.bench.document.Plot` objects of a report as PNG files (matplotlib).

The files are reproducible: the same plot data gives the same bytes (no timestamps or
version strings in the PNG metadata). Every text of a plot (title, axis labels, legend) is
drawn as written: names come from records, i.e. from users, so mathtext is off for those texts
(``parse_math=False``; the axes' own tick labels such as ``10^2`` keep it) and an instance
named ``$\\frac{$`` is shown, not parsed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from topoopt.bench.document import Plot

MARKERS = "os^vD<>pPX*h"
LINESTYLES = ("-", "--", ":", "-.")
MESSAGE_CHARS = 120
"""Characters of the reason shown in a plot that could not be drawn."""


def draw(plot: Plot, path: Path) -> Path:
    """Draw ``plot`` into the PNG file ``path`` and return the path.

    The plot's texts (title, axis labels, legend) are drawn as written, never parsed as
    mathtext. Data matplotlib cannot draw (values near the float range on a log axis) gives a
    figure with the title and the reason instead of an error: a report never fails on a plot.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        _save(plot, path, _draw)
    except (ValueError, ArithmeticError) as exc:  # e.g. values matplotlib cannot place
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:MESSAGE_CHARS]
        _save(plot, path, lambda p, ax: _not_drawn(p, ax, reason))
    return path


def _save(plot: Plot, path: Path, paint: Callable[[Plot, Axes], None]) -> None:
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    try:
        # matplotlib's remarks on odd data or names (a glyph the font lacks, no positive value
        # on a log axis, overflow) are not the report's output: the figure shows what it can.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy overflow near float max
            paint(plot, ax)
            fig.tight_layout()
            fig.savefig(path, dpi=100, metadata={"Software": None})
    finally:
        plt.close(fig)


def _not_drawn(plot: Plot, ax: Axes, reason: str) -> None:
    """A plot matplotlib failed to draw from its data: its title and the reason."""
    ax.set_axis_off()
    ax.set_title(plot.title, parse_math=False)
    ax.text(0.5, 0.5, f"not drawn ({reason})", ha="center", wrap=True, parse_math=False)


def _draw(plot: Plot, ax: Axes) -> None:
    colors = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]
    right = max((max(s.x) for s in plot.series if s.x), default=1.0)
    handles: list[Any] = []
    labels: list[str] = []
    for i, series in enumerate(plot.series):
        style = {"color": colors[i % len(colors)]}
        if plot.kind == "step" and series.x:
            xs, ys = [*series.x, right], [*series.y, series.y[-1]]
            artists: Any = ax.step(
                xs,
                ys,
                where="post",
                linewidth=1.6,
                linestyle=LINESTYLES[i // len(colors) % len(LINESTYLES)],
                **style,
            )
        elif plot.kind == "scatter":
            artists = [
                ax.scatter(
                    series.x, series.y, s=22, alpha=0.8, marker=MARKERS[i % len(MARKERS)], **style
                )
            ]
        else:
            artists = ax.plot(
                series.x,
                series.y,
                marker=MARKERS[i % len(MARKERS)],
                markersize=4,
                linestyle=LINESTYLES[i // len(colors) % len(LINESTYLES)],
                **style,
            )
        # Legend entries are passed explicitly: matplotlib hides a label starting with "_".
        handles.append(artists[0])
        labels.append(series.label)
    ax.set_xscale(plot.xscale)
    ax.set_yscale(plot.yscale)
    ax.set_title(plot.title, parse_math=False)
    ax.set_xlabel(plot.xlabel, parse_math=False)
    ax.set_ylabel(plot.ylabel, parse_math=False)
    ax.grid(True, alpha=0.3)
    if handles:
        legend = ax.legend(
            handles,
            labels,
            fontsize=8,
            loc="center left",
            bbox_to_anchor=(1.01, 0.5),
            frameon=False,
        )
        for text in legend.get_texts():
            text.set_parse_math(False)
