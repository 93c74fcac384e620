"""NVIDIA topograph's cluster-model YAML (the models of its ``tests/models/``).

Three shapes are in use across topograph's history, and all are read:

* **blocks** (current): ``switches`` maps a switch name to ``{switches: [...], labels,
  metadata}``; ``blocks`` is a list of ``{switch: <leaf>, nodes: [hostlists], labels,
  annotations}`` attaching node ranges to leaf switches. A child switch named by its parent
  but holding no block is an empty leaf (a rack without nodes).
* **maps**: ``switches`` maps a switch name to ``{switches: [...]}`` or ``{nodes:
  [hostlists]}``; ``nodes`` maps node names to their attributes (``capacity_block``,
  ``capacity_block_id``, ``type``, ``attributes``); ``capacity_blocks`` maps a block name to
  ``{nodes: [...], attributes}``. The switch tree is read; capacity blocks are accelerator
  (NVLink) domains, not switches, and are ignored.
* **lists** (early): ``switches`` is a list of ``{name, switches, capacity_blocks,
  metadata}``; ``capacity_blocks`` a list of ``{name, type, nvlink, nodes}``. Here a switch
  holds capacity blocks, so each capacity block becomes a leaf below its switch (a level of
  its own); a capacity block no switch names is left out, like topograph does.

Node lists are hostlist expressions (``"node[1101-1118]"``, ``"[1101-1108]"``).
"""

from __future__ import annotations

from os import PathLike
from typing import Any

from topoopt.topology._build import SwitchDef, build_forest
from topoopt.topology._errors import TopologyError
from topoopt.topology._model import Topology
from topoopt.topology._slurm import _check_keys, _expect, _read_text, _yaml_hostlist
from topoopt.topology._yaml import line_of, load_yaml

__all__ = ["parse_topograph", "read_topograph"]

_TOP = {"switches", "blocks", "nodes", "capacity_blocks", "physical_layers"}
_SWITCH = {"name", "switches", "nodes", "capacity_blocks", "labels", "metadata", "annotations"}
_BLOCK = {"switch", "nodes", "labels", "annotations"}
_CB = {"name", "type", "nvlink", "nodes", "attributes", "labels", "metadata"}
_NODE = {"name", "capacity_block", "capacity_block_id", "type", "attributes", "labels", "metadata"}


def _names(value: Any, what: str, src: str, line: int | None) -> list[str]:
    items = _expect(value, list, what, src, line)
    out: list[str] = []
    for k, item in enumerate(items):
        out.extend(_yaml_hostlist(str(item), what, src, line_of(items, k)))
    return out


def parse_topograph(
    text: str, source: str | PathLike[str] = "<model.yaml>", *, gpus_per_node: int | None = None
) -> Topology:
    """A :class:`Topology` from the text of a topograph cluster model.

    Parameters
    ----------
    text
        The model YAML (any of the three shapes of the module docstring).
    source
        File name for errors.
    gpus_per_node
        GPUs of every node (the model does not say), or ``None``.

    Raises
    ------
    TopologyError
        Naming the file and line, for invalid YAML, unknown keys, an empty or malformed node
        range, a block or capacity block attached to an unknown switch (dangling name), a
        switch with two parents, a switch cycle, a node under two switches.

    Examples
    --------
    >>> topo = parse_topograph('''
    ... switches:
    ...   spine: {switches: [leaf1, leaf2]}
    ... blocks:
    ... - switch: leaf1
    ...   nodes: ["n[1-2]"]
    ... - switch: leaf2
    ...   nodes: [n3]
    ... ''')
    >>> topo.switch_of("n3", 0), topo.nodes_under("leaf1")
    ('spine', ('n1', 'n2'))
    """
    src = str(source)
    data = load_yaml(text, src)
    _expect(data, dict, "a topograph model", src, 1)
    _check_keys(data, _TOP, "the model", src)
    switches = data.get("switches")
    if switches is None:
        raise TopologyError("the model has no 'switches'", source=src, line=1)
    if isinstance(switches, list):
        defs = _list_shape(data, switches, src)
        undefined = False
    else:
        _expect(switches, dict, "'switches'", src, line_of(data, "switches"))
        defs = _map_shape(data, switches, src)
        undefined = True
    roots = build_forest(defs, src, undefined_children=undefined)
    return Topology(
        roots,
        level_names=_level_names(roots, switches),
        default_gpus=gpus_per_node,
    )


def _level_names(roots: tuple[Any, ...], switches: Any) -> tuple[str, ...]:
    """Every level kept, named by the label key its switches share (topograph writes
    ``topology.kubernetes.io/region``, ``.../zone``, ``network.topology.nvidia.com/...``);
    a level without one shared key is ``level<depth>``. No names when no level has one."""
    if not isinstance(switches, dict):
        return ()
    keys_at: dict[int, set[tuple[str, ...]]] = {}
    stack = [(r, 0) for r in roots]
    while stack:
        switch, depth = stack.pop()
        body = switches.get(switch.name)
        labels = body.get("labels") if isinstance(body, dict) else None
        keys_at.setdefault(depth, set()).add(
            tuple(sorted(labels)) if isinstance(labels, dict) else ()
        )
        stack.extend((c, depth + 1) for c in switch.children)
    names = []
    for depth in range(len(keys_at)):
        keys = keys_at[depth]
        only = next(iter(keys)) if len(keys) == 1 else ()
        names.append(only[0] if len(only) == 1 else f"level{depth}")
    if all(n.startswith("level") for n in names) or len(set(names)) != len(names):
        return ()
    return tuple(names)


def _map_shape(data: dict[Any, Any], switches: dict[Any, Any], src: str) -> list[SwitchDef]:
    defs: dict[str, SwitchDef] = {}
    for name, body in switches.items():
        line = line_of(switches, name)
        body = {} if body is None else body
        _expect(body, dict, f"switch {name!r}", src, line)
        _check_keys(body, _SWITCH - {"name"}, f"switch {name!r}", src)
        d = SwitchDef(str(name), line)
        if "switches" in body:
            d.children = [str(c) for c in _expect(body["switches"], list, "switches", src, line)]
        if "nodes" in body:
            d.nodes = _names(body["nodes"], f"switch {name!r} nodes", src, line_of(body, "nodes"))
        defs[d.name] = d
    blocks = data.get("blocks")
    if blocks is not None:
        _expect(blocks, list, "'blocks'", src, line_of(data, "blocks"))
        for k, block in enumerate(blocks):
            line = line_of(blocks, k)
            _expect(block, dict, "each block", src, line)
            _check_keys(block, _BLOCK, "a block", src)
            if "switch" not in block:
                raise TopologyError("a block names no 'switch'", source=src, line=line)
            leaf = str(block["switch"])
            if "nodes" not in block:
                raise TopologyError(
                    f"the block of switch {leaf!r} has no nodes", source=src, line=line
                )
            nodes = _names(
                block["nodes"], f"the nodes of block {leaf!r}", src, line_of(block, "nodes")
            )
            d = defs.setdefault(leaf, SwitchDef(leaf, line))
            if d.children:
                raise TopologyError(
                    f"a block attaches nodes to switch {leaf!r}, which has child switches",
                    source=src,
                    line=line,
                )
            d.nodes.extend(nodes)
    node_map = data.get("nodes")
    if node_map is not None:
        _expect(node_map, dict, "'nodes'", src, line_of(data, "nodes"))
        for name, body in node_map.items():
            if body is not None:
                _expect(body, dict, f"node {name!r}", src, line_of(node_map, name))
                _check_keys(body, _NODE, f"node {name!r}", src)
    cbs = data.get("capacity_blocks")
    if cbs is not None:
        _expect(cbs, dict, "'capacity_blocks'", src, line_of(data, "capacity_blocks"))
        for name, body in cbs.items():
            if body is not None:
                _expect(body, dict, f"capacity block {name!r}", src, line_of(cbs, name))
                _check_keys(body, _CB - {"name"}, f"capacity block {name!r}", src)
                if "nodes" in body:
                    _names(
                        body["nodes"], f"capacity block {name!r} nodes", src, line_of(body, "nodes")
                    )
    return list(defs.values())


def _list_shape(data: dict[Any, Any], switches: list[Any], src: str) -> list[SwitchDef]:
    cbs = data.get("capacity_blocks") or []
    _expect(cbs, list, "'capacity_blocks'", src, line_of(data, "capacity_blocks"))
    blocks: dict[str, SwitchDef] = {}
    for k, cb in enumerate(cbs):
        line = line_of(cbs, k)
        _expect(cb, dict, "each capacity block", src, line)
        _check_keys(cb, _CB, "a capacity block", src)
        if "name" not in cb:
            raise TopologyError("a capacity block has no name", source=src, line=line)
        name = str(cb["name"])
        if name in blocks:
            raise TopologyError(f"capacity block {name!r} is defined twice", source=src, line=line)
        nodes = _names(cb.get("nodes"), f"capacity block {name!r} nodes", src, line_of(cb, "nodes"))
        blocks[name] = SwitchDef(name, line, nodes=nodes)
    defs: list[SwitchDef] = []
    used: set[str] = set()
    for k, sw in enumerate(switches):
        line = line_of(switches, k)
        _expect(sw, dict, "each switch", src, line)
        _check_keys(sw, _SWITCH, "a switch", src)
        if "name" not in sw:
            raise TopologyError("a switch has no name", source=src, line=line)
        d = SwitchDef(str(sw["name"]), line)
        d.children = [str(c) for c in sw.get("switches") or []]
        if "nodes" in sw:
            d.nodes = _names(sw["nodes"], f"switch {d.name!r} nodes", src, line_of(sw, "nodes"))
        for cb in sw.get("capacity_blocks") or []:
            if str(cb) not in blocks:
                raise TopologyError(
                    f"dangling capacity block name: switch {d.name!r} lists {cb!r}, which is "
                    "not defined",
                    source=src,
                    line=line,
                )
            if str(cb) in used:
                raise TopologyError(
                    f"capacity block {cb!r} is under two switches", source=src, line=line
                )
            used.add(str(cb))
            d.children.append(str(cb))
        defs.append(d)
    defs.extend(b for name, b in blocks.items() if name in used)
    return defs


def read_topograph(path: str | PathLike[str], *, gpus_per_node: int | None = None) -> Topology:
    """A :class:`Topology` from a topograph model file (see :func:`parse_topograph`)."""
    return parse_topograph(_read_text(path), path, gpus_per_node=gpus_per_node)
