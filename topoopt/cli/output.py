"""What every command of the ``topoopt`` CLI shares: exit statuses, one-line errors, safe text
in tables, the narrow-console listing, and the root command's options.

Every error message is one line: control characters are escaped (:func:`printable`) and long
messages are shortened. Text from the input is escaped the same way in tables, and
characters the terminal's encoding cannot show are written as backslash escapes
(:func:`safe_streams`) instead of failing.
"""

from __future__ import annotations

import contextlib
import re
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from topoopt.core.errors import TopooptError
from topoopt.core.safejson import parse_json
from topoopt.core.text import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

__all__ = [
    "DEBUG_ENV",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NO_SOLUTION",
    "EXIT_OK",
    "MAX_CELL_CHARS",
    "MAX_MESSAGE_CHARS",
    "WIDE_TABLE",
    "allowed_paths",
    "cell",
    "error_line",
    "exit_with",
    "fail",
    "is_file",
    "json_or_text",
    "print_block",
    "printable",
    "printable_lines",
    "root_plugins",
    "safe_streams",
    "warn",
]

EXIT_OK = 0
EXIT_NO_SOLUTION = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

DEBUG_ENV = "TOPOOPT_DEBUG"
"""Environment variable: when set (and not ``0`` or empty), internal errors print their
traceback, as ``topoopt --debug`` does."""

MAX_MESSAGE_CHARS = 1000
"""Longest error message printed; a longer one is cut and says how much was left out."""
MAX_CELL_CHARS = 200
"""Longest text from the input shown in one table cell."""
WIDE_TABLE = 120
"""Narrowest console (columns) on which ``topoopt solvers`` and ``topoopt instances list``
print a table; narrower consoles (an 80-column terminal, a pipe) get one block per entry."""


def printable_lines(text: str) -> str:
    """Multi-line ``text`` (a solution's rendering) with every line made :func:`printable`."""
    return "\n".join(printable(line, limit=None) for line in text.split("\n"))


def cell(value: object) -> Text:
    """A table cell from input text: escaped, shortened, never parsed as rich markup."""
    from rich.text import Text

    return Text(printable(value, limit=MAX_CELL_CHARS))


def error_line(message: object) -> str:
    """The stderr line of an error: ``error: <message>``, made :func:`printable`."""
    return f"error: {printable(message, MAX_MESSAGE_CHARS)}"


def exit_with(line: str, code: int) -> NoReturn:
    """Print ``line`` on stderr and exit with ``code``."""
    click.echo(line, err=True)
    sys.exit(code)


def fail(message: str) -> NoReturn:
    """Stop with a bad-input error: the root group prints ``message`` as one escaped
    ``error:`` line and exits with status 2."""
    raise TopooptError(message)


def warn(message: str) -> None:
    """Print ``message`` as one ``warning:`` line on stderr."""
    click.echo(f"warning: {message}", err=True)


def safe_streams() -> None:
    """Make stdout and stderr write unencodable characters as backslash escapes.

    With ``PYTHONIOENCODING=ascii`` or a ``C`` locale, a name such as ``"é"`` or a lone
    surrogate would otherwise raise :class:`UnicodeEncodeError` while a table is printed.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        # A closed or detached stream has nothing to protect.
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="backslashreplace")


def json_or_text(raw: str) -> Any:
    """``raw`` parsed as a JSON value, or ``raw`` itself when it is not one.

    A value the JSON rules of :func:`topoopt.core.safejson.parse_json` refuse (``NaN``,
    ``1e999``, too long an integer, too deep a nesting) is passed on as text, for the receiver
    to refuse with a named error.
    """
    try:
        return parse_json(raw, "option")
    except TopooptError:
        return raw


def _root_obj() -> dict[str, Any]:
    context = click.get_current_context(silent=True)
    return (context.find_root().obj if context is not None else None) or {}


def allowed_paths() -> tuple[str, ...]:
    """The ``--allow-path`` folders of the running command (none outside a command)."""
    return tuple(_root_obj().get("allow_paths", ()))


def root_plugins() -> tuple[str, ...]:
    """The ``--plugin`` modules given to the root command (none outside a command)."""
    return tuple(_root_obj().get("plugins", ()))


def is_file(target: str) -> bool:
    """Whether ``target`` names a file (``False`` for names no file can have, e.g. with NUL)."""
    try:
        return Path(target).is_file()
    except (OSError, ValueError):
        return False


class _ListWrapper(textwrap.TextWrapper):
    """Wraps at spaces and after the commas of a list (``--ks 1,2,...,32``), never inside a
    hyphenated word."""

    wordsep_simple_re = re.compile(r"(\s+|(?<=,)(?=\S))")

    def __init__(self, width: int, **kwargs: Any) -> None:
        super().__init__(width, break_on_hyphens=False, **kwargs)


def print_block(console: Console, head: str, paragraphs: list[str], detail: str = "") -> None:
    """One entry of a narrow listing (``topoopt solvers``, ``topoopt instances list``): the
    ``head`` in bold and ``detail`` on one line, then each paragraph indented, wrapped to the
    console's width (text made :func:`printable` by the caller)."""
    from rich.text import Text

    width = max(console.width, 40)
    first = Text(head, style="bold")
    if detail:
        first.append(f"  {detail}")
    lines = [first]
    wrapper = _ListWrapper(width, initial_indent="    ", subsequent_indent="      ")
    for paragraph in paragraphs:
        lines += [Text(line) for line in wrapper.wrap(paragraph)]
    for line in lines:
        console.print(line, soft_wrap=len(line) <= width)
