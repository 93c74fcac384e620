"""Reading and writing instance files: ``topoopt.load`` and ``topoopt.save``.

Every instance enters through :func:`load`: the JSON rules and limits of
:mod:`topoopt.core.safejson`, the envelope (``family``, ``format_version``), the family's
JSON Schema (:mod:`topoopt.core.schema`), then the family's constructors. Whatever the input,
the outcome is an instance or a :class:`~topoopt.core.errors.TopooptError` naming the field
and the rule.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from topoopt.core.errors import InvalidInstanceError
from topoopt.core.family import FORMAT_VERSION, Instance
from topoopt.core.registry import family_names, get_family
from topoopt.core.safejson import FileAccess, check_json, read_json_file
from topoopt.core.schema import validate

AllowPaths = bool | Iterable[str | PathLike[str]]
"""``allow_paths`` of :func:`load`: ``False``, ``True`` or folders."""


def load(
    source: str | PathLike[str] | Mapping[str, Any], *, allow_paths: AllowPaths = False
) -> Instance[Any]:
    """Load an instance from a JSON file or an already parsed JSON object.

    Parameters
    ----------
    source
        A path to an instance file, or its JSON object.
    allow_paths
        Files the instance names (bandwidth tables, topology text) are read relative to the
        instance file's folder (the working directory for a JSON object) and, by default,
        only from inside it. ``True`` allows any path; a list of folders allows those too.

    Raises
    ------
    TopooptError
        For a file that cannot be read (missing, not a regular file, too large, not UTF-8).
    InvalidInstanceError
        Naming the field and the rule broken (invalid JSON, a limit, ``family``,
        ``format_version``, the family's schema or its rules).
    """
    if isinstance(source, Mapping):
        check_json(source)
        return instance_from_dict(source, files=FileAccess.of(None, allow_paths))
    path = Path(source)
    data = read_json_file(path, what="instance file")
    if not isinstance(data, dict):
        raise InvalidInstanceError(str(path), "must hold a JSON object")
    return instance_from_dict(data, files=FileAccess.of(path.parent, allow_paths))


def instance_from_dict(
    data: Mapping[str, Any], *, files: FileAccess | None = None
) -> Instance[Any]:
    """Validate the envelope and the family's schema, then build the family's instance."""
    known = family_names()
    if "family" not in data:
        raise InvalidInstanceError("family", f"missing required field; one of {', '.join(known)}")
    name = data["family"]
    if not isinstance(name, str) or name not in known:
        close = difflib.get_close_matches(name, known, n=1) if isinstance(name, str) else []
        hint = f"; did you mean {close[0]!r}?" if close else f"; one of {', '.join(known)}"
        raise InvalidInstanceError("family", f"unknown family {name!r}{hint}")
    version = data.get("format_version", FORMAT_VERSION)
    if type(version) is not int or version != FORMAT_VERSION:
        raise InvalidInstanceError(
            "format_version",
            f"must be the integer {FORMAT_VERSION} (this topoopt reads version "
            f"{FORMAT_VERSION}), got {version!r}",
        )
    family = get_family(name)
    if family.schema is not None:
        validate(family.schema, data)
    return family.instance_type.from_dict(data, files=files)


def save(instance: Instance[Any], path: str | PathLike[str]) -> Path:
    """Write ``instance`` as JSON to ``path`` (parent folders are created) and return the path.

    The text is ASCII (other characters escaped), so any name round-trips.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(instance.to_dict(), indent=2) + "\n", encoding="utf-8")
    return out
