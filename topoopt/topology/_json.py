"""topoopt's own JSON form of a topology (lossless: every field of :class:`Topology`).

.. code-block:: json

    {"format": "topoopt-topology", "format_version": 1, "name": "lab", "kind": "tree",
     "level_names": ["spine", "leaf"], "block_sizes": [], "default_gpus": 8,
     "gpus": {"n1": 4},
     "switches": [{"name": "s2", "link_speed": 100, "switches": [
         {"name": "s0", "nodes": ["n1", "n2"]}, {"name": "s1", "nodes": "n[3-4]"}]}]}

``nodes`` is a list of names or a hostlist expression; ``link_speed``, ``redundant``,
``switches`` and ``nodes`` are optional per switch; every top-level key but ``format`` and
``switches`` is optional.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from os import PathLike
from typing import Any

from topoopt.topology._errors import TopologyError
from topoopt.topology._hostlist import expand
from topoopt.topology._model import Switch, Topology
from topoopt.topology._slurm import _read_text

__all__ = ["FORMAT", "topology_from_dict", "topology_to_dict"]

FORMAT = "topoopt-topology"
_TOP = {
    "format",
    "format_version",
    "name",
    "kind",
    "level_names",
    "block_sizes",
    "gpus",
    "default_gpus",
    "switches",
}
_SWITCH = {"name", "link_speed", "redundant", "switches", "nodes"}


def _switch_dict(s: Switch) -> dict[str, Any]:
    out: dict[str, Any] = {"name": s.name}
    if s.link_speed is not None:
        out["link_speed"] = s.link_speed
    if s.redundant:
        out["redundant"] = list(s.redundant)
    if s.children:
        out["switches"] = [_switch_dict(c) for c in s.children]
    else:
        out["nodes"] = list(s.nodes)
    return out


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    """The JSON-ready dictionary of a topology (see the module docstring)."""
    out: dict[str, Any] = {"format": FORMAT, "format_version": 1}
    if topology.name is not None:
        out["name"] = topology.name
    out["kind"] = topology.kind
    if topology.level_names:
        out["level_names"] = list(topology.level_names)
    if topology.block_sizes:
        out["block_sizes"] = list(topology.block_sizes)
    if topology.default_gpus is not None:
        out["default_gpus"] = topology.default_gpus
    if topology.gpus:
        out["gpus"] = dict(topology.gpus)
    out["switches"] = [_switch_dict(r) for r in topology.roots]
    return out


def _unknown(d: Mapping[str, Any], allowed: set[str], src: str, path: str) -> None:
    for key in d:
        if key not in allowed:
            raise TopologyError(
                f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})",
                source=src,
                path=path or "(top)",
            )


def _switch(d: Any, src: str, path: str) -> Switch:
    if not isinstance(d, Mapping):
        raise TopologyError(f"a switch must be an object, got {d!r}", source=src, path=path)
    _unknown(d, _SWITCH, src, path)
    if "name" not in d:
        raise TopologyError("a switch has no name", source=src, path=path)
    nodes = d.get("nodes", [])
    if isinstance(nodes, str):
        try:
            nodes = expand(nodes)
        except TopologyError as exc:
            raise TopologyError(exc.rule, source=src, path=f"{path}.nodes") from None
    children = d.get("switches", [])
    if not isinstance(children, list) or not isinstance(nodes, list):
        raise TopologyError("switches and nodes must be lists", source=src, path=path)
    try:
        return Switch(
            d["name"],
            children=tuple(
                _switch(c, src, f"{path}.switches[{i}]") for i, c in enumerate(children)
            ),
            nodes=tuple(nodes),
            link_speed=d.get("link_speed"),
            redundant=tuple(d.get("redundant", ())),
        )
    except TopologyError as exc:
        if exc.source is not None:
            raise
        raise TopologyError(exc.rule, source=src, path=path) from None


def topology_from_dict(data: Any, source: str | PathLike[str] = "<json>") -> Topology:
    """A :class:`Topology` from its JSON dictionary (inverse of :func:`topology_to_dict`).

    Raises
    ------
    TopologyError
        Naming the JSON path, for a missing or wrong ``format``, an unknown key, a
        malformed switch, and every rule of :class:`Topology`.
    """
    src = str(source)
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise TopologyError(
            f'not a topology file: expected "format": "{FORMAT}"', source=src, path="format"
        )
    _unknown(data, _TOP, src, "")
    if data.get("format_version", 1) != 1:
        raise TopologyError(
            f"format_version {data['format_version']!r} is not supported (1 is)",
            source=src,
            path="format_version",
        )
    switches = data.get("switches")
    if not isinstance(switches, list):
        raise TopologyError("switches must be a list", source=src, path="switches")
    roots = tuple(_switch(s, src, f"switches[{i}]") for i, s in enumerate(switches))
    try:
        return Topology(
            roots,
            level_names=tuple(data.get("level_names", ())),
            kind=data.get("kind", "tree"),
            block_sizes=tuple(data.get("block_sizes", ())),
            gpus=dict(data.get("gpus", {})),
            default_gpus=data.get("default_gpus"),
            name=data.get("name"),
        )
    except TopologyError as exc:
        raise exc.at(src) from None


def read_json_topology(path: str | PathLike[str]) -> Topology:
    """A :class:`Topology` from a JSON file written by :func:`write_topology`."""
    text = _read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TopologyError(f"not valid JSON: {exc.msg}", source=path, line=exc.lineno) from None
    return topology_from_dict(data, path)
