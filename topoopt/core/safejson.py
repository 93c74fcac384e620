"""The one place untrusted JSON and the files it names enter topoopt.

:func:`read_json_file` and :func:`parse_json` turn a file or bytes into plain JSON values
(``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``) or raise a
:class:`~topoopt.core.errors.TopooptError` in one line; :func:`check_json` holds an
already-parsed value (from a caller's ``dict``) to the same rules. The rules, each a named
limit of :mod:`topoopt.core.limits`:

* only regular files are read (a FIFO, a device such as ``/dev/zero``, a folder: refused
  before opening), at most ``json_file_bytes`` bytes;
* bytes are strict UTF-8 (the error gives the byte offset), a leading UTF-8 byte-order mark
  is allowed;
* nesting depth at most ``json_depth`` (checked by a scan of the bytes before parsing, so a
  deeply nested file cannot exhaust the parser's recursion);
* no ``NaN`` / ``Infinity`` literals and no float that overflows to infinity;
* integers of at most ``json_int_digits`` digits (huge integers are refused before Python
  converts them);
* strings of at most ``json_string_chars`` characters, arrays and objects of at most
  ``json_array_items`` items; duplicate keys in an object are an error.

:class:`FileAccess` reads the files an instance names (bandwidth tables, topology text):
relative to the instance file's folder, never outside it (absolute paths and ``..`` escapes)
unless the caller allows it, regular files only, size-capped, strict UTF-8. A reference
``data:NAME`` names a file of the data folders instead (:mod:`topoopt.core.datapath`:
``TOPOOPT_DATA``, by default ``shared/data`` beside the checkout), wherever the instance is.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topoopt.core import datapath, limits
from topoopt.core.errors import InvalidInstanceError, TopooptError

_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")


def _fail(where: str, rule: str) -> InvalidInstanceError:
    return InvalidInstanceError(where, rule)


def read_bytes(path: str | os.PathLike[str], *, what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``json_file_bytes`` bytes.

    Raises
    ------
    TopooptError
        For a path that cannot be a file name (a NUL byte), does not exist, is not a
        regular file (a FIFO, a device, a folder), is too large or cannot be read.
    """
    name = os.fspath(path)
    if "\x00" in name:
        raise TopooptError(f"{what} {name!r}: a file name cannot contain a NUL byte")
    try:
        info = os.stat(name)
    except OSError as exc:
        raise TopooptError(f"cannot read {what} {name!r}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise TopooptError(f"{what} {name!r}: not a regular file")
    cap = limits.value("json_file_bytes")
    if info.st_size > cap:
        raise TopooptError(
            f"{what} {name!r}: " + limits.exceeded("json_file_bytes", f"its {info.st_size} bytes")
        )
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped after the first check
                raise TopooptError(f"{what} {name!r}: not a regular file")
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read(cap + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise TopooptError(f"cannot read {what} {name!r}: {exc.strerror}") from None
    if len(data) > cap:
        raise TopooptError(f"{what} {name!r}: " + limits.exceeded("json_file_bytes", "its bytes"))
    return data


def decode_utf8(data: bytes, where: str) -> str:
    """``data`` as strict UTF-8 text (a leading byte-order mark is dropped).

    Raises
    ------
    TopooptError
        Naming ``where`` and the byte offset of the first invalid byte.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TopooptError(
            f"{where}: not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
        ) from None


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def _check_depth(data: bytes, where: str, extra: int = 0) -> None:
    """Refuse nesting deeper than ``json_depth`` (plus ``extra`` levels of an envelope) by a
    scan that skips strings."""
    cap = limits.value("json_depth") + extra
    if data.count(b"[") + data.count(b"{") <= cap:
        return  # too few brackets to nest deeper
    stripped = _STRING.sub(b"", data)
    quote = stripped.find(b'"')
    if quote >= 0:  # a string left open runs to the end
        stripped = stripped[:quote]
    depth = 0
    for byte in stripped.translate(None, _NOT_BRACKET):
        if byte in _OPEN:
            depth += 1
            if depth > cap:
                raise _fail(where, limits.exceeded("json_depth", f"more than {cap} nested levels"))
        else:
            depth -= 1


def _int_parser(cap: int) -> Any:
    """``parse_int`` of :func:`json.loads`: integers of at most ``cap`` digits (the limit is
    read once per document, not once per integer)."""

    def parse_int(text: str) -> int:
        if len(text) > cap:
            digits = len(text.lstrip("-"))
            if digits > cap:
                raise ValueError(
                    limits.exceeded("json_int_digits", f"an integer of {digits} digits")
                )
        return int(text)

    return parse_int


def _parse_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:40]} overflows to infinity")
    return number


def _parse_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number (only finite numbers are allowed)")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = item
    return out


def parse_json(
    data: bytes | str, where: str = "<json>", *, envelope: int = 0, check: bool = True
) -> Any:
    """Parse untrusted JSON under the rules of the module docstring.

    ``envelope`` levels of nesting are allowed beyond ``json_depth`` and ``check=False``
    leaves out :func:`check_json` (sizes of strings and arrays), for a document that wraps
    others which are checked on their own, with JSON paths of their own: the HTTP service's
    request ``{"instance": {...}, ...}`` (:mod:`topoopt.serve`).

    Raises
    ------
    InvalidInstanceError
        With ``where`` as the field and the broken rule (invalid JSON with its position).
    """
    if isinstance(data, bytes):
        raw, text = data, decode_utf8(data, where)
    else:
        raw, text = data.encode("utf-8", "surrogatepass"), data
    _check_depth(raw, where, envelope)
    try:
        value = json.loads(
            text,
            parse_int=_int_parser(limits.value("json_int_digits")),
            parse_float=_parse_float,
            parse_constant=_parse_constant,
            object_pairs_hook=_object,
        )
    except json.JSONDecodeError as exc:
        raise _fail(
            where,
            f"not valid JSON ({exc.msg.removesuffix(' at')} at line {exc.lineno} "
            f"column {exc.colno})",
        ) from None
    except (ValueError, RecursionError) as exc:
        raise _fail(where, f"not valid JSON ({exc})") from None
    if check:
        check_json(value, where)
    return value


def read_json_file(path: str | os.PathLike[str], *, what: str = "file") -> Any:
    """:func:`read_bytes` then :func:`parse_json` (errors name the file)."""
    return parse_json(read_bytes(path, what=what), os.fspath(path))


def check_json(value: Any, where: str = "<json>") -> None:
    """Hold a parsed value to the JSON rules: plain JSON types only, depth, string and array
    sizes, finite numbers, integer magnitude. Iterative, so any depth is safe to check.

    Raises
    ------
    InvalidInstanceError
        Naming the JSON path of the first offending value.
    """
    max_depth = limits.value("json_depth")
    max_chars = limits.value("json_string_chars")
    max_items = limits.value("json_array_items")
    max_digits = limits.value("json_int_digits")
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        here = path or where
        if isinstance(item, str):
            if len(item) > max_chars:
                raise _fail(here, limits.exceeded("json_string_chars", f"{len(item)} characters"))
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if abs(item) >= 10**max_digits:
                raise _fail(here, limits.exceeded("json_int_digits", "an integer's digits"))
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise _fail(here, f"must be a finite number, got {item!r}")
        elif isinstance(item, (Mapping, list, tuple)):
            if depth >= max_depth:
                raise _fail(
                    here, limits.exceeded("json_depth", f"more than {max_depth} nested levels")
                )
            if len(item) > max_items:
                raise _fail(here, limits.exceeded("json_array_items", f"{len(item)} items"))
            if isinstance(item, Mapping):
                for key, child in item.items():
                    if not isinstance(key, str):
                        raise _fail(here, f"object keys must be strings, got {key!r}")
                    if len(key) > max_chars:
                        raise _fail(
                            here, limits.exceeded("json_string_chars", "a key's characters")
                        )
                    stack.append((child, f"{path}.{key}" if path else key, depth + 1))
            else:
                for index, child in enumerate(item):
                    stack.append((child, f"{path}[{index}]", depth + 1))
        else:
            raise _fail(here, f"not a JSON value: {type(item).__name__}")


@dataclass(frozen=True)
class FileAccess:
    """Where the files an instance names may be read from.

    A reference ``data:NAME`` is looked up in the data folders (:mod:`topoopt.core.datapath`)
    whatever ``base_dir`` and ``allow`` say: the folders are the user's configuration, and the
    name cannot leave them. Any other reference is a path, as below.

    Attributes
    ----------
    base_dir
        The instance file's folder: relative names resolve against it (the working directory
        for an instance given as a JSON object).
    allow
        ``False`` (default): only files inside ``base_dir``; ``True``: any file; or folders
        whose files may be read besides ``base_dir``'s.
    network
        The instance came over the network (the HTTP service): it has no folder of its own,
        so a path must be absolute and inside a folder of ``allow`` (``base_dir`` is not
        used); data names are read as always. See :meth:`remote`.
    """

    base_dir: Path | None = None
    allow: bool | tuple[Path, ...] = False
    network: bool = False
    _resolved_allow: tuple[Path, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.allow, bool):
            roots = tuple(Path(p).resolve() for p in self.allow)
            object.__setattr__(self, "allow", roots)
            object.__setattr__(self, "_resolved_allow", roots)

    @classmethod
    def of(
        cls, base_dir: Path | None, allow: bool | Iterable[str | os.PathLike[str]]
    ) -> FileAccess:
        """A :class:`FileAccess` from what ``topoopt.load`` was given."""
        if isinstance(allow, bool):
            return cls(base_dir, allow)
        return cls(base_dir, tuple(Path(p) for p in allow))

    @classmethod
    def remote(cls, allow: Iterable[str | os.PathLike[str]] = ()) -> FileAccess:
        """The access of an instance sent over the network: no file but data names and
        absolute paths inside the folders ``allow`` (the operator's ``--allow-path``)."""
        return cls(None, tuple(Path(p) for p in allow), network=True)

    def resolve(self, reference: Any, field: str) -> Path:
        """The file ``reference`` names, if this access allows it.

        Raises
        ------
        InvalidInstanceError
            At ``field``: not a non-empty string, a NUL byte, or a file outside the instance's
            folder (absolute or ``..``) without permission — naming how to allow it; a
            malformed data name.
        topoopt.core.datapath.DataNotFoundError
            At ``field``: a data name that no data folder holds (naming the folders).
        """
        if not isinstance(reference, str) or not reference:
            raise _fail(field, f"must be a file name (a non-empty string), got {reference!r}")
        if "\x00" in reference:
            raise _fail(field, "a file name cannot contain a NUL byte")
        if datapath.is_data_name(reference):
            return datapath.resolve(reference, field)
        if self.network:
            return self._resolve_remote(reference, field)
        base = (self.base_dir or Path.cwd()).resolve()
        target = (base / reference).resolve()
        if self.allow is True or target.is_relative_to(base):
            return target
        if any(target.is_relative_to(root) for root in self._resolved_allow):
            return target
        raise _fail(
            field,
            f"{reference!r} is outside the instance's folder {str(base)!r}; allow it with "
            "topoopt.load(..., allow_paths=[folder]) or the CLI option --allow-path FOLDER",
        )

    def _resolve_remote(self, reference: str, field: str) -> Path:
        target = Path(reference)
        if target.is_absolute():
            target = target.resolve()
            if any(target.is_relative_to(root) for root in self._resolved_allow):
                return target
        raise _fail(
            field,
            f"{reference!r}: an instance sent over the network may not name files; give the "
            "data inline, as a data name (data:...), or as an absolute path inside a folder "
            "the server allows (topoopt serve --allow-path FOLDER)",
        )

    def read_text(self, reference: Any, field: str) -> tuple[Path, str]:
        """The path and UTF-8 text of the file ``reference`` names (see :meth:`resolve`)."""
        path = self.resolve(reference, field)
        try:
            data = read_bytes(path, what="file")
        except TopooptError as exc:
            raise _fail(field, str(exc)) from None
        return path, decode_utf8(data, f"{field} ({reference})")
