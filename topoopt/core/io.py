"""Reading and writing instance files: ``topoopt.load`` and ``topoopt.save``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.core.family import FORMAT_VERSION, Instance
from topoopt.core.registry import families, get_family


def load(source: str | PathLike[str] | Mapping[str, Any]) -> Instance:
    """Load an instance from a JSON file or an already parsed JSON object.

    Dispatches on the ``"family"`` key to the family's instance type, which validates every
    field. Relative file references inside the instance resolve against the file's folder.

    Raises
    ------
    InvalidInstanceError
        Naming the field and the rule broken (``family``, ``format_version``, or any field of
        the family).
    """
    if isinstance(source, Mapping):
        return instance_from_dict(source, base_dir=None)
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TopooptError(f"cannot read instance file {str(path)!r}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInstanceError(str(path), f"not valid JSON ({exc})") from None
    if not isinstance(data, Mapping):
        raise InvalidInstanceError(str(path), "must hold a JSON object")
    return instance_from_dict(data, base_dir=path.parent)


def instance_from_dict(data: Mapping[str, Any], *, base_dir: Path | None) -> Instance:
    """Validate the envelope (``family``, ``format_version``) and build the family's instance."""
    if "family" not in data:
        raise InvalidInstanceError("family", f"missing; one of {', '.join(families())}")
    family_name = data["family"]
    if not isinstance(family_name, str) or family_name not in families():
        raise InvalidInstanceError(
            "family", f"unknown family {family_name!r}; one of {', '.join(families())}"
        )
    version = data.get("format_version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise InvalidInstanceError(
            "format_version", f"this topoopt reads version {FORMAT_VERSION}, got {version!r}"
        )
    return get_family(family_name).instance_type.from_dict(data, base_dir=base_dir)


def save(instance: Instance, path: str | PathLike[str]) -> Path:
    """Write ``instance`` as JSON to ``path`` (parent folders are created) and return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(instance.to_dict(), indent=2) + "\n", encoding="utf-8")
    return out
