"""Results files as bytes: JSON-object lines with exact offsets, and torn-line detection.

A results file is read as bytes, never as newline-translated text, so every offset is a real
byte offset in the file. The rules (``docs/bench.md``, "Results files"):

* lines end with LF or CRLF (both accepted, also mixed); a UTF-8 byte order mark at the start
  of the file is skipped; blank lines are skipped;
* every other line is one JSON object in UTF-8 (strict JSON: no ``NaN``/``Infinity``, no
  number that overflows a float, no key twice in one object);
* the last line may lack its terminator. If it is a complete JSON object it is a record (the
  writer adds the terminator before appending). If it is *provably torn* — it starts with
  ``{``, is a strict prefix of some JSON object text (:func:`json_prefix`) and does not parse —
  it is a record cut short by an interrupted writer: it is not a record, and
  :attr:`Scan.keep` marks where it starts so that a writer can cut it off;
* anything else is a :class:`ResultsFileError` naming the file, the line and the problem.

:func:`scan` only reads; the caller (:class:`topoopt.bench.records.RecordWriter`) decides to
modify the file, and only when the rest of the file is valid.

Examples
--------
>>> import io
>>> s = scan(io.BytesIO(b'{"a": 1}\\r\\n\\r\\n{"b": [2, '), "r.jsonl")
>>> [(line.number, line.value) for line in s.lines], s.size, s.keep, s.newline
([(1, {'a': 1})], 22, 12, b'\\r\\n')
>>> scan(io.BytesIO(b"hello"), "r.jsonl")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
topoopt.bench.jsonl.ResultsFileError: r.jsonl line 1: not valid JSON (Expecting value at ...)
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from dataclasses import dataclass
from os import PathLike
from typing import IO, Any, Literal

from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.core.safejson import parse_json

MAX_LINE_BYTES = 16 * 2**20
"""Longest line (one record) read, in bytes: a record is a few KiB."""


LF, CRLF = b"\n", b"\r\n"
BOM = b"\xef\xbb\xbf"


class ResultsFileError(TopooptError, ValueError):
    """A results file breaks a rule; the message names the file, the line and the problem.

    Parameters
    ----------
    path
        The file as given.
    line
        1-based line number, or ``None`` for a problem of the whole file.
    problem
        What is wrong, in words.

    Examples
    --------
    >>> str(ResultsFileError("results.jsonl", 7, "seed must be a non-negative integer, got 'x'"))
    "results.jsonl line 7: seed must be a non-negative integer, got 'x'"
    """

    def __init__(self, path: str | PathLike[str], line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = self.path if line is None else f"{self.path} line {line}"
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class Line:
    """A JSON-object line of a results file.

    Attributes
    ----------
    number
        1-based line number.
    start
        Byte offset of the line's first byte.
    value
        The parsed object.
    """

    number: int
    start: int
    value: dict[str, Any]


@dataclass(frozen=True)
class Scan:
    """What :func:`scan` found in a results file.

    Attributes
    ----------
    lines
        The JSON-object lines, in file order.
    size
        Bytes in the file.
    keep
        Bytes before a torn last line (``size`` when there is none): a writer truncates the
        file to ``keep`` before appending.
    newline
        Line ending for appended lines: that of the last terminated line (``b"\\r\\n"`` for a
        CRLF file), LF for a file without one.
    pending
        Bytes a writer appends first to terminate a complete last line that lacks its
        terminator (``b""`` when the file ends with a line ending or a torn line is cut).
    torn_line
        Line number of the torn last line, or ``None``.
    """

    lines: list[Line]
    size: int
    keep: int
    newline: bytes
    pending: bytes
    torn_line: int | None


class _BadValue(ValueError):
    """A JSON value that strict record JSON refuses (raised from the decoder's hooks)."""


def loads(text: str) -> Any:
    """Parse one record under the JSON rules of every topoopt input
    (:func:`topoopt.core.safejson.parse_json`: finite numbers, bounded integers, depth and
    sizes, unique keys).

    Raises
    ------
    ValueError
        With the problem in words.

    Examples
    --------
    >>> loads('{"a": [1, 2.5, null]}')
    {'a': [1, 2.5, None]}
    >>> loads('{"a": NaN}')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topoopt.bench.jsonl._BadValue: not valid JSON (NaN is not a JSON number ...
    """
    try:
        return parse_json(text, "record")
    except InvalidInstanceError as exc:
        raise _BadValue(exc.rule) from None


# ---------------------------------------------------------------------------------------------
# JSON prefixes

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_PREFIX = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*|(?:\.[0-9]+)?[eE][+-]?[0-9]*)?)?")
_NUMBER_CHARS = frozenset("+-0123456789.eE")
_LITERALS = ("true", "false", "null")
_ESCAPES = frozenset('"\\/bfnrtu')
_HEX = frozenset("0123456789abcdefABCDEF")
_WHITESPACE = frozenset(" \t\n\r")

Verdict = Literal["complete", "prefix", "invalid"]


def _string_end(text: str, i: int) -> int | None:
    """Index after the closing quote of the string whose body starts at ``i``; ``len(text)``
    when the text ends inside a valid string; ``None`` for an invalid string."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i + 1
        if c == "\\":
            if i + 1 < n and text[i + 1] not in _ESCAPES:
                return None
            if i + 1 < n and text[i + 1] == "u":
                digits = text[i + 2 : i + 6]
                if not all(d in _HEX for d in digits):
                    return None
                i += 6
                continue
            i += 2
            continue
        if c < " ":
            return None
        i += 1
    return n


def json_prefix(text: str) -> Verdict:
    """Whether ``text`` is a complete JSON object, a strict prefix of one, or neither.

    A prefix means: some continuation makes ``text`` one JSON object (RFC 8259, no leading
    whitespace, nothing after the object but whitespace). This is what a writer killed while
    writing ``json.dumps(record)`` leaves; garbage (``{hello``, ``{"a": 1}}``, ``[1]``) is
    ``"invalid"``.

    Examples
    --------
    >>> json_prefix('{"a": [1, {"b": tr'), json_prefix('{"a": 1}  '), json_prefix('{hello')
    ('prefix', 'complete', 'invalid')
    >>> json_prefix('{"a": 1.'), json_prefix('{"a": 01'), json_prefix('{"\\\\u00')
    ('prefix', 'invalid', 'prefix')
    """
    if not text.startswith("{"):
        return "invalid"
    stack = ["}"]  # the closing brackets still owed
    expect = "key_or_close"
    i, n = 1, len(text)
    while i < n:
        c = text[i]
        if c in _WHITESPACE:
            i += 1
            continue
        if expect == "end":
            return "invalid"
        if expect in ("key_or_close", "key"):
            if c == "}" and expect == "key_or_close":
                stack.pop()
                expect, i = ("comma_or_close" if stack else "end"), i + 1
                continue
            if c != '"':
                return "invalid"
            end = _string_end(text, i + 1)
            if end is None:
                return "invalid"
            expect, i = "colon", end
            continue
        if expect == "colon":
            if c != ":":
                return "invalid"
            expect, i = "value", i + 1
            continue
        if expect == "comma_or_close":
            if c == ",":
                expect, i = ("key" if stack[-1] == "}" else "value"), i + 1
                continue
            if c != stack[-1]:
                return "invalid"
            stack.pop()
            expect, i = ("comma_or_close" if stack else "end"), i + 1
            continue
        # expect is "value" or "value_or_close" (just after "[")
        if c == "]" and expect == "value_or_close":
            stack.pop()
            expect, i = ("comma_or_close" if stack else "end"), i + 1
            continue
        if c == "{":
            stack.append("}")
            expect, i = "key_or_close", i + 1
            continue
        if c == "[":
            stack.append("]")
            expect, i = "value_or_close", i + 1
            continue
        if c == '"':
            end = _string_end(text, i + 1)
            if end is None:
                return "invalid"
            expect, i = "comma_or_close", end
            continue
        j = i
        if c in _NUMBER_CHARS:
            while j < n and text[j] in _NUMBER_CHARS:
                j += 1
            pattern = _NUMBER_PREFIX if j == n else _NUMBER
            if not pattern.fullmatch(text, i, j):
                return "invalid"
        elif c.isalpha():
            while j < n and text[j].isalpha():
                j += 1
            word = text[i:j]
            if not (word in _LITERALS or (j == n and any(w.startswith(word) for w in _LITERALS))):
                return "invalid"
        else:
            return "invalid"
        expect, i = "comma_or_close", j
    return "complete" if expect == "end" else "prefix"


# ---------------------------------------------------------------------------------------------
# Reading


def open_regular(path: str | PathLike[str], *, append: bool = False) -> int:
    """Open ``path`` as a file descriptor — read-only, or read-write in append mode (created
    if missing) — refusing anything but a regular file without blocking on a FIFO.

    Raises
    ------
    ResultsFileError
        When the file cannot be opened or is not a regular file.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_APPEND if append else os.O_RDONLY
    flags |= getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ResultsFileError(path, None, f"cannot open: {reason}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ResultsFileError(path, None, "not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _kind(value: Any) -> str:
    """The JSON kind of a parsed value, with an article."""
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"


def _utf8_problem(exc: UnicodeDecodeError, skipped: int) -> str:
    byte = exc.object[exc.start]
    return f"not valid UTF-8: byte 0x{byte:02x} at column {exc.start + skipped + 1}"


def _torn(body: bytes) -> bool:
    """Whether the unterminated last line ``body`` is provably a torn record."""
    try:  # a torn line may end inside a multi-byte character
        text = codecs.getincrementaldecoder("utf-8")().decode(body, final=False)
    except UnicodeDecodeError:
        return False
    return json_prefix(text) == "prefix"


def scan(stream: IO[bytes], path: str | PathLike[str]) -> Scan:
    """Read a results file from the binary ``stream`` (at its start) by the module's rules.

    Parameters
    ----------
    stream
        The file's bytes.
    path
        The file's name, for messages.

    Raises
    ------
    ResultsFileError
        For the first line that is neither blank, a JSON object, nor a torn last line.
    """
    lines: list[Line] = []
    offset = number = 0
    newline = LF
    pending = b""
    torn_line: int | None = None
    keep: int | None = None
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            break
        number += 1
        start, offset = offset, offset + len(raw)
        if len(raw) > MAX_LINE_BYTES:
            raise ResultsFileError(path, number, f"longer than {MAX_LINE_BYTES} bytes")
        terminated = raw.endswith(LF)
        body = raw[:-1] if terminated else raw
        if terminated:
            newline = CRLF if body.endswith(b"\r") else LF
            body = body.removesuffix(b"\r")
        skipped = 0
        if start == 0 and body.startswith(BOM):
            body, skipped = body[len(BOM) :], len(BOM)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not terminated and _torn(body):
                keep, torn_line = start, number
                break
            raise ResultsFileError(path, number, _utf8_problem(exc, skipped)) from None
        if not text.strip(" \t\r"):
            continue
        try:
            value = loads(text)
        except ValueError as exc:
            if not terminated and json_prefix(text) == "prefix":
                keep, torn_line = start, number
                break
            raise ResultsFileError(path, number, str(exc)) from None
        if not isinstance(value, dict):
            raise ResultsFileError(path, number, f"not a JSON object but {_kind(value)}")
        lines.append(Line(number, start, value))
        if not terminated:  # a complete record that lost (part of) its line ending
            pending = LF if text.endswith("\r") else newline
            newline = CRLF if text.endswith("\r") else newline
    return Scan(
        lines=lines,
        size=offset,
        keep=offset if keep is None else keep,
        newline=newline,
        pending=pending,
        torn_line=torn_line,
    )
