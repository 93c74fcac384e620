"""Draw the :class:`~topoopt.bench.document.Plot` objects of a report as PNG files (matplotlib).

The files are reproducible: the same plot data gives the same bytes (no timestamps or
version strings in the PNG metadata).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from topoopt.bench.document import Plot

MARKERS = "os^vD<>pPX*h"
LINESTYLES = ("-", "--", ":", "-.")


def draw(plot: Plot, path: Path) -> Path:
    """Draw ``plot`` into the PNG file ``path`` and return the path."""
    colors = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    right = max((max(s.x) for s in plot.series if s.x), default=1.0)
    for i, series in enumerate(plot.series):
        style = {"color": colors[i % len(colors)], "label": series.label}
        if plot.kind == "step" and series.x:
            xs, ys = [*series.x, right], [*series.y, series.y[-1]]
            ax.step(
                xs,
                ys,
                where="post",
                linewidth=1.6,
                linestyle=LINESTYLES[i // len(colors) % len(LINESTYLES)],
                **style,
            )
        elif plot.kind == "scatter":
            ax.scatter(
                series.x, series.y, s=22, alpha=0.8, marker=MARKERS[i % len(MARKERS)], **style
            )
        else:
            ax.plot(
                series.x,
                series.y,
                marker=MARKERS[i % len(MARKERS)],
                markersize=4,
                linestyle=LINESTYLES[i // len(colors) % len(LINESTYLES)],
                **style,
            )
    ax.set_xscale(plot.xscale)
    ax.set_yscale(plot.yscale)
    ax.set_title(plot.title)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    ax.grid(True, alpha=0.3)
    if plot.series:
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path
