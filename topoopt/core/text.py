"""Text from the input shown to people: one line, control characters escaped.

Names and values in messages come from users (instance files, results); a newline, an escape
sequence or a lone surrogate in them must not break a one-line error, a terminal or an
encoder. :func:`printable` is used by every :class:`~topoopt.core.errors.TopooptError`
message and by the command line's output.
"""

from __future__ import annotations

import re

_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0 controls, DEL, C1 controls (NEL, CSI, ...)
    "\u2028\u2029"  # line and paragraph separators
    "\u202a-\u202e\u2066-\u2069"  # bidirectional overrides and isolates
    "\ud800-\udfff]"  # lone surrogates (legal in JSON, not encodable)
)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, limit: int | None = None) -> str:
    """``text`` as one safe line: control characters escaped, at most ``limit`` characters.

    Newline, carriage return and tab become ``\\n``, ``\\r``, ``\\t``; other C0 and C1 control
    characters and DEL ``\\xHH``; the Unicode line and paragraph separators, bidirectional
    overrides and lone surrogates ``\\uHHHH``. Backslashes are left as they are (so Windows
    paths stay readable). A longer text keeps its first ``limit`` characters and says how many
    were left out.

    Examples
    --------
    >>> print(printable("host type 'H1\\n00\\x1b[31m'"))
    host type 'H1\\n00\\x1b[31m'
    >>> printable("\\ud800")
    '\\\\ud800'
    >>> printable("x" * 30, limit=10)
    'xxxxxxxxxx... (20 more characters)'
    """
    line = _UNSAFE.sub(_escape, str(text))
    if limit is not None and len(line) > limit:
        line = f"{line[:limit]}... ({len(line) - limit} more characters)"
    return line


_ROLE = re.compile(r":(?:[A-Za-z][\w.+-]*:)+`([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``")
_DEFAULT_ROLE = re.compile(r"(?<![\w`])`([^`]+)`(?![\w`])")
_TITLED_TARGET = re.compile(r"^(.+?)\s*<[^<>]+>$")


def _role_text(match: re.Match[str]) -> str:
    """What a reader sees of ``:role:`target```: the title of ``title <target>``, the last
    dotted part of ``~pkg.name``, else the target."""
    target = match.group(1).strip()
    titled = _TITLED_TARGET.match(target)
    if titled:
        return titled.group(1)
    if target.startswith("~"):
        return target[1:].rsplit(".", 1)[-1]
    return target.lstrip("!")


def plain_text(rst: str) -> str:
    """Inline reStructuredText of a docstring as plain text, for the command line.

    Double-backquoted literals lose their backquotes, an interpreted role
    (``:func:`topoopt.load```) becomes its target (``topoopt.load``; with ``~``, the last
    dotted part; ``title <target>`` shows the title), and single-backquoted text loses its
    backquotes. Everything else is left as it is.

    Examples
    --------
    >>> plain_text("``count`` random instances cycling through :data:`MODEL_KINDS`.")
    'count random instances cycling through MODEL_KINDS.'
    >>> plain_text("see :func:`~topoopt.core.io.load` and :py:class:`the result <Result>`")
    'see load and the result'
    >>> plain_text("a `default role` and ``x`` (``seed`` is unused)")
    'a default role and x (seed is unused)'
    """
    text = _ROLE.sub(_role_text, rst)
    text = _LITERAL.sub(r"\1", text)
    return _DEFAULT_ROLE.sub(r"\1", text)


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[str | int, ...], str]:
    """Sort key that orders the numbers inside names by value: ``small-1-2`` before
    ``small-1-10``, ``k8`` before ``k16``.

    Runs of digits compare as integers, the text between them as text; the text itself breaks
    ties (``a01`` and ``a1``), so the order is total and does not depend on the input order.

    Examples
    --------
    >>> sorted(["small-1-10", "small-1-2", "small-10-1", "small-2-1"], key=natural_key)
    ['small-1-2', 'small-1-10', 'small-2-1', 'small-10-1']
    >>> sorted(["k16", "k8", "b", "a10", "a9", "a09"], key=natural_key)
    ['a09', 'a9', 'a10', 'b', 'k8', 'k16']
    """
    parts = _DIGITS.split(text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text
