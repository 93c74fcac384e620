"""A tiny document model for reports, rendered to Markdown, and through Markdown to HTML.

A report is a tree of :class:`Section` objects holding :class:`Text` paragraphs,
:class:`Table` objects and :class:`Plot` objects (data only; :mod:`topoopt.bench.plots` draws
them). Report sections build these from analysis results; :func:`render_markdown` turns the
tree into ``report.md`` and :func:`render_html` renders that Markdown with markdown-it-py into
``report.html``, so the two never disagree.

All text of the model is plain text, whatever its origin (instance, solver, tag and host names
come from records, i.e. from users): the Markdown renderer escapes it with
:func:`escape_markdown`, and the HTML renderer lets no raw HTML through. The one markup is a
```code``` span in a :class:`Text` paragraph.

The model and the Markdown renderer need nothing beyond the standard library, so families
build report sections without the ``report`` extra; :func:`render_html` needs markdown-it-py.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from markdown_it.rules_core import StateCore
    from markdown_it.token import Token

_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?( ?%)?$")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*\[\]<>|$~&]|(?<![^\W_])_|_(?![^\W_]))")
"""Characters that can start inline Markdown; ``_`` inside a word (``total_s``) cannot."""
_CODE_SPAN = re.compile(r"(`[^`\n]+`)")
_BLOCK_MARKER = re.compile(r"^(\d*)([-+=#.)])")
"""What would make a paragraph a list, heading or rule: ``-``, ``+``, ``#``, ``1.``, ``1)``."""


def escape_markdown(text: str) -> str:
    r"""``text`` as literal inline Markdown.

    Every character that could start inline markup (``\ ` * _ [ ] < > | $ ~ &``) is
    backslash-escaped, so a name from a record shows as written in ``report.md`` (on GitHub
    too: ``$`` math, ``~`` strike-through) and in ``report.html``; an ``_`` between two
    letters or digits is left alone, as it never delimits emphasis (CommonMark's flanking
    rules). Line breaks become spaces, so the text stays in its table cell. For text inside a
    heading, paragraph or table cell.

    Examples
    --------
    >>> print(escape_markdown("<script>alert(1)</script>"))
    \<script\>alert(1)\</script\>
    >>> print(escape_markdown("exact-mip[highs] | total_s\n* 2 _x_"))
    exact-mip\[highs\] \| total_s \* 2 \_x\_
    """
    return " ".join(_MARKDOWN_SPECIAL.sub(r"\\\1", text).splitlines())


@dataclass(frozen=True)
class Text:
    """A paragraph of plain text; ```code``` spans are the only markup."""

    text: str


@dataclass(frozen=True)
class Table:
    """A table of plain-text cells; numeric columns are right-aligned."""

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


def _md_row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(escape_markdown(c) for c in cells) + " |"


def _md_table(table: Table) -> list[str]:
    lines = [f"*{escape_markdown(table.caption)}*", ""] if table.caption else []
    lines.append(_md_row(table.columns))
    aligns = ["---:" if table.numeric(i) else "---" for i in range(len(table.columns))]
    lines.append("|" + "|".join(aligns) + "|")
    lines += [_md_row(row) for row in table.rows]
    return lines


def _md_text(text: str) -> str:
    """A paragraph: escaped, except its ```code``` spans (whose content Markdown keeps
    literal), and never starting like a list, heading or rule."""
    parts = _CODE_SPAN.split(text)
    escaped = "".join(part if i % 2 else escape_markdown(part) for i, part in enumerate(parts))
    return _BLOCK_MARKER.sub(r"\1\\\2", escaped)


def _md_heading(title: str, level: int) -> str:
    """A heading; a ``#`` at its end is escaped, or Markdown would drop it as closing."""
    return f"{'#' * level} " + re.sub(r"#+$", r"\\\g<0>", escape_markdown(title))


def render_markdown(sections: list[Section], figures: str = "figures") -> str:
    """The document as GitHub-flavoured Markdown; plots link ``figures/<name>.png``.

    Captions are emphasised paragraphs just before their table and just after their image
    (the convention :func:`render_html` turns into HTML captions); numeric columns are
    right-aligned (``---:``). All text is escaped with :func:`escape_markdown`.

    Examples
    --------
    >>> doc = [Section("Runs", (Table(("solver", "s"), (("<a>", "0.5"),), "Times."),))]
    >>> print(render_markdown(doc), end="")
    # Runs
    <BLANKLINE>
    *Times.*
    <BLANKLINE>
    | solver | s |
    |---|---:|
    | \\<a\\> | 0.5 |
    """
    lines: list[str] = []

    def emit(section: Section, level: int) -> None:
        lines.extend([_md_heading(section.title, level), ""])
        for block in section.blocks:
            if isinstance(block, Section):
                emit(block, level + 1)
                continue
            if isinstance(block, Text):
                lines.append(_md_text(block.text))
            elif isinstance(block, Table):
                lines.extend(_md_table(block))
            else:
                lines.append(f"![{escape_markdown(block.title)}]({figures}/{block.name}.png)")
                if block.caption:
                    lines.extend(["", f"*{escape_markdown(block.caption)}*"])
            lines.append("")

    for section in sections:
        emit(section, 1)
    return "\n".join(lines).rstrip() + "\n"


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
{body}</body>
</html>
"""

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f3f3f3; }
td[style*="right"] { font-variant-numeric: tabular-nums; }
caption { caption-side: top; text-align: left; font-style: italic; padding-bottom: 0.3em; }
figure { margin: 1em 0 2em; } figcaption { font-style: italic; }
img { max-width: 100%; }
code { background: #f3f3f3; padding: 0 0.2em; }
"""


def _caption_at(tokens: list[Token], i: int) -> bool:
    """Whether ``tokens[i:i + 3]`` is a paragraph of one emphasised span (a caption)."""
    if i + 2 >= len(tokens) or tokens[i].type != "paragraph_open":
        return False
    kinds = [child.type for child in tokens[i + 1].children or []]
    return kinds[:1] == ["em_open"] and kinds[-1:] == ["em_close"] and kinds.count("em_open") == 1


def _table_caption_at(tokens: list[Token], i: int) -> bool:
    """Whether ``tokens[i:i + 3]`` is a caption and a table follows it."""
    return _caption_at(tokens, i) and i + 3 < len(tokens) and tokens[i + 3].type == "table_open"


def _image_at(tokens: list[Token], i: int) -> bool:
    """Whether ``tokens[i:i + 3]`` is a paragraph of one image (a figure)."""
    if i + 2 >= len(tokens) or tokens[i].type != "paragraph_open":
        return False
    return [child.type for child in tokens[i + 1].children or []] == ["image"]


def _captions(state: StateCore) -> None:
    """markdown-it core rule: the caption convention of :func:`render_markdown` as HTML.

    A caption paragraph just before a table becomes the table's ``<caption>``; an image
    paragraph becomes a ``<figure>``, with the caption paragraph after it (unless that is the
    next table's) as ``<figcaption>``. Text of the document is escaped, so only the renderer
    makes emphasised and image paragraphs: the convention is unambiguous.
    """
    from markdown_it.token import Token

    def block(tag: str, *inner: Token) -> list[Token]:
        return [
            Token(f"{tag}_open", tag, 1, block=True),
            *inner,
            Token(f"{tag}_close", tag, -1, block=True),
        ]

    def caption(tag: str, paragraph: int) -> list[Token]:
        inline = tokens[paragraph + 1]
        inline.children = (inline.children or [])[1:-1]  # the emphasis is the caption's style
        return block(tag, inline)

    tokens, i = state.tokens, 0
    out: list[Token] = []
    while i < len(tokens):
        if _table_caption_at(tokens, i):
            out += [tokens[i + 3], *caption("caption", i)]
            i += 4
        elif _image_at(tokens, i):
            figure = [tokens[i + 1]]
            i += 3
            if _caption_at(tokens, i) and not _table_caption_at(tokens, i):
                figure += caption("figcaption", i)
                i += 3
            out += block("figure", *figure)
        else:
            out.append(tokens[i])
            i += 1
    state.tokens = out


def render_html(sections: list[Section], title: str, figures: str = "figures") -> str:
    """The document as one self-contained HTML page (figures linked as PNG files).

    The page is :func:`render_markdown`'s Markdown rendered by markdown-it-py (CommonMark and
    tables, raw HTML off: text shows as written, tags included), with table and figure
    captions as ``<caption>`` and ``<figcaption>``.

    Examples
    --------
    >>> page = render_html([Section("Runs", (Text("`<b>` & <i>"),))], "T")
    >>> print(page[page.index("<body>") :], end="")
    <body>
    <h1>Runs</h1>
    <p><code>&lt;b&gt;</code> &amp; &lt;i&gt;</p>
    </body>
    </html>
    """
    from markdown_it import MarkdownIt  # the report extra; the model does not need it

    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    parser.core.ruler.push("captions", _captions)
    body = parser.render(render_markdown(sections, figures))
    return _PAGE.format(title=html.escape(title), style=_STYLE, body=body)


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
