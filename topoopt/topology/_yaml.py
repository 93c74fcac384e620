"""YAML loading that remembers line numbers, so errors can name the line."""

from __future__ import annotations

from os import PathLike
from typing import Any

import yaml

from topoopt.topology._errors import TopologyError

__all__ = ["LineDict", "LineList", "line_of", "load_yaml"]


class LineDict(dict[Any, Any]):
    """A YAML mapping with the 1-based line of itself (``line``) and of each key."""

    line: int = 0
    key_lines: dict[Any, int]


class LineList(list[Any]):
    """A YAML sequence with the 1-based line of itself (``line``) and of each item."""

    line: int = 0
    item_lines: list[int]


class _Loader(yaml.SafeLoader):
    pass


def _mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise TopologyError(f"key {key!r} given twice", line=key_node.start_mark.line + 1)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def load_yaml(text: str, source: str | PathLike[str]) -> Any:
    """Parse YAML text; mappings and lists carry line numbers (:class:`LineDict`,
    :class:`LineList`). A syntax error is a :class:`TopologyError` naming the line."""
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except TopologyError as exc:
        raise exc.at(source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise TopologyError(f"not valid YAML: {problem}", source=source, line=line) from None


def line_of(container: Any, key: Any = None) -> int | None:
    """The line of ``container`` (or of its ``key``/index), when it was loaded from YAML."""
    if key is not None:
        if isinstance(container, LineDict):
            return container.key_lines.get(key, container.line)
        if isinstance(container, LineList) and isinstance(key, int):
            if 0 <= key < len(container.item_lines):
                return container.item_lines[key]
            return container.line
    if isinstance(container, (LineDict, LineList)):
        return container.line
    return None
