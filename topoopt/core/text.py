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
