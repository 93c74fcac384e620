"""A tiny document model for reports, rendered to Markdown and to HTML.

A report is a tree of :class:`Section` objects holding :class:`Text` paragraphs,
:class:`Table` objects and :class:`Plot` objects (data only; :mod:`topoopt.bench.plots` draws
them). Report sections build these from analysis results; the renderers here turn the same
tree into ``report.md`` and ``report.html``, so the two never disagree.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Union

_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?( ?%)?$")


@dataclass(frozen=True)
class Text:
    """A paragraph; ```code``` spans are the only markup."""

    text: str


@dataclass(frozen=True)
class Table:
    """A table of text cells; numeric columns are right-aligned."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""

    def numeric(self, column: int) -> bool:
        """Whether every non-empty cell of ``column`` is a number.

        Examples
        --------
        >>> Table(("a", "b"), (("x", "1.5"), ("y", "-")), "").numeric(1)
        True
        """
        cells = [row[column] for row in self.rows if row[column] not in ("", "-")]
        return bool(cells) and all(_NUMBER.match(c) for c in cells)


@dataclass(frozen=True)
class Series:
    """One labelled line or point set of a plot."""

    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]


@dataclass(frozen=True)
class Plot:
    """A figure, as data: ``kind`` is ``"step"`` (profiles, distributions), ``"line"`` or
    ``"scatter"``; ``name`` is the PNG file stem."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    kind: str = "line"
    xscale: str = "linear"
    yscale: str = "linear"
    caption: str = ""


Block = Union[Text, Table, Plot, "Section"]


@dataclass(frozen=True)
class Section:
    """A titled part of a document; nested sections are sub-headings."""

    title: str
    blocks: tuple[Block, ...] = field(default_factory=tuple)


def slug(text: str) -> str:
    """``text`` as a file-name stem.

    Examples
    --------
    >>> slug("placement / Arnold-paper")
    'placement-arnold-paper'
    """
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(table: Table) -> list[str]:
    lines = []
    if table.caption:
        lines += [f"*{table.caption}*", ""]
    lines.append("| " + " | ".join(_md_cell(c) for c in table.columns) + " |")
    aligns = ["---:" if table.numeric(i) else "---" for i in range(len(table.columns))]
    lines.append("|" + "|".join(aligns) + "|")
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    return lines


def render_markdown(sections: list[Section], figures: str = "figures") -> str:
    """The document as GitHub-flavoured Markdown; plots link ``figures/<name>.png``."""
    lines: list[str] = []

    def emit(section: Section, level: int) -> None:
        lines.extend([f"{'#' * level} {section.title}", ""])
        for block in section.blocks:
            if isinstance(block, Section):
                emit(block, level + 1)
                continue
            if isinstance(block, Text):
                lines.append(block.text)
            elif isinstance(block, Table):
                lines.extend(_md_table(block))
            else:
                lines.append(f"![{block.title}]({figures}/{block.name}.png)")
                if block.caption:
                    lines.extend(["", f"*{block.caption}*"])
            lines.append("")

    for section in sections:
        emit(section, 1)
    return "\n".join(lines).rstrip() + "\n"


def _inline(text: str) -> str:
    escaped = html.escape(text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
caption { caption-side: top; text-align: left; font-style: italic; padding-bottom: 0.3em; }
figure { margin: 1em 0 2em; } figcaption { font-style: italic; }
img { max-width: 100%; }
code { background: #f3f3f3; padding: 0 0.2em; }
"""


def _html_table(table: Table) -> list[str]:
    numeric = [table.numeric(i) for i in range(len(table.columns))]
    out = ["<table>"]
    if table.caption:
        out.append(f"<caption>{_inline(table.caption)}</caption>")
    out.append("<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in table.columns) + "</tr>")
    for row in table.rows:
        cells = "".join(
            f'<td class="num">{_inline(c)}</td>' if num else f"<td>{_inline(c)}</td>"
            for c, num in zip(row, numeric, strict=True)
        )
        out.append(f"<tr>{cells}</tr>")
    out.append("</table>")
    return out


def render_html(sections: list[Section], title: str, figures: str = "figures") -> str:
    """The document as one self-contained HTML page (figures linked as PNG files)."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
    ]

    def emit(section: Section, level: int) -> None:
        out.append(f"<h{min(level, 6)}>{_inline(section.title)}</h{min(level, 6)}>")
        for block in section.blocks:
            if isinstance(block, Section):
                emit(block, level + 1)
            elif isinstance(block, Text):
                out.append(f"<p>{_inline(block.text)}</p>")
            elif isinstance(block, Table):
                out.extend(_html_table(block))
            else:
                caption = (
                    f"<figcaption>{_inline(block.caption)}</figcaption>" if block.caption else ""
                )
                out.append(
                    f'<figure><img src="{figures}/{block.name}.png" '
                    f'alt="{html.escape(block.title)}">{caption}</figure>'
                )

    for section in sections:
        emit(section, 1)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def plots(sections: list[Section]) -> list[Plot]:
    """Every plot of the document, in order."""
    found: list[Plot] = []

    def walk(blocks: tuple[Block, ...]) -> None:
        for block in blocks:
            if isinstance(block, Section):
                walk(block.blocks)
            elif isinstance(block, Plot):
                found.append(block)

    walk(tuple(sections))
    return found
