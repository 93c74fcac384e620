"""Slurm's ``topology.conf`` (topology/tree and topology/block) and ``topology.yaml``.

topology.conf, one definition per line (parameter names are case-insensitive, ``#`` starts a
comment, a trailing ``\\`` continues a line)::

    SwitchName=s0 Nodes=tux[0-3]   LinkSpeed=900      # topology/tree
    SwitchName=s4 Switches=s[0-3]
    BlockName=b1 Nodes=node[1-32]                     # topology/block
    BlockSizes=30,120

topology.yaml, a list of named topologies, the first with ``cluster_default: true`` used by
default::

    - topology: topo1
      cluster_default: true
      tree:
        switches:
          - switch: sw_root
            children: s[1-2]
          - switch: s1
            nodes: node[01-04]
    - topology: topo2
      block:
        block_sizes: [4, 16]
        blocks:
          - block: b1
            nodes: node[01-04]

A block topology becomes a forest: the blocks are the leaves (level ``"block"``); each larger
block size ``S`` of ``BlockSizes`` adds a level ``"block<S>"`` above, grouping ``S / base``
consecutive blocks (in file order) the way Slurm pairs contiguous blocks; a trailing
incomplete group is kept. Such a group is named ``"<first block>..<last block>"`` (with
``"/<size>"`` appended when a group one level down has the same blocks).
"""

from __future__ import annotations

import re
from itertools import pairwise
from os import PathLike
from pathlib import Path
from typing import Any

from topoopt.topology._build import SwitchDef, build_forest
from topoopt.topology._errors import TopologyError
from topoopt.topology._hostlist import expand, fold, natural_key
from topoopt.topology._model import Switch, Topology
from topoopt.topology._yaml import line_of, load_yaml

__all__ = [
    "parse_slurm_conf",
    "parse_slurm_yaml",
    "read_slurm_conf",
    "read_slurm_yaml",
    "write_slurm_conf",
]

_TREE_KEYS = {
    "switchname": "SwitchName",
    "switches": "Switches",
    "nodes": "Nodes",
    "linkspeed": "LinkSpeed",
}
_BLOCK_KEYS = {"blockname": "BlockName", "nodes": "Nodes"}
_TOKEN = re.compile(r"""([^\s=]+)=("[^"]*"|'[^']*'|\S*)|(\S+)""")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text without comment) for each non-empty logical line."""
    out: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip():
            out.append((start, line.strip()))
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def _pairs(text: str, source: str, line: int) -> list[tuple[str, str]]:
    pairs = []
    for m in _TOKEN.finditer(text):
        if m.group(3) is not None:
            raise TopologyError(f"expected Key=Value, got {m.group(3)!r}", source=source, line=line)
        value = m.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        pairs.append((m.group(1), value))
    return pairs


def _hostlist(value: str, key: str, source: str, line: int) -> list[str]:
    if not value.strip():
        raise TopologyError(f"{key}= has an empty hostlist", source=source, line=line)
    try:
        return expand(value)
    except TopologyError as exc:
        raise TopologyError(f"{key}=: {exc.rule}", source=source, line=line) from None


def _int(value: Any, what: str, source: str, line: int | None) -> int:
    text = str(value).strip()
    if isinstance(value, bool) or not re.fullmatch(r"\d+", text):
        raise TopologyError(
            f"{what} must be a non-negative integer, got {value!r}", source=source, line=line
        )
    return int(text)


def parse_slurm_conf(text: str, source: str | PathLike[str] = "<topology.conf>") -> Topology:
    """A :class:`Topology` from the text of a Slurm ``topology.conf``.

    Raises
    ------
    TopologyError
        Naming the file and line, for: a line that is not ``Key=Value`` pairs, an unknown
        or repeated parameter, a missing ``SwitchName``/``BlockName``, an empty or malformed
        hostlist, a switch or block defined twice, a dangling switch name, a node under two
        switches (or in two blocks), a switch with two parents, a switch cycle, a switch
        with neither child switches nor nodes, tree and block lines mixed, a ``BlockSizes``
        that is not base size times powers of two, or a block smaller than the base size.

    Examples
    --------
    >>> topo = parse_slurm_conf('''
    ... SwitchName=s0 Nodes=tux[0-3]
    ... SwitchName=s1 Nodes=tux[4-7]
    ... SwitchName=s2 Switches=s[0-1] LinkSpeed=100
    ... ''')
    >>> topo.depth, len(topo.nodes), topo.switch_of("tux5", 0)
    (2, 8, 's2')
    """
    src = str(source)
    tree: list[SwitchDef] = []
    blocks: list[SwitchDef] = []
    sizes: tuple[int, ...] | None = None
    sizes_line = 0
    for line, text_line in _logical_lines(text):
        pairs = _pairs(text_line, src, line)
        head = pairs[0][0].lower()
        if head == "blocksizes":
            if len(pairs) > 1:
                raise TopologyError(
                    f"BlockSizes= stands alone on its line, got {pairs[1][0]}=",
                    source=src,
                    line=line,
                )
            if sizes is not None:
                raise TopologyError(
                    f"BlockSizes= given twice (first on line {sizes_line})", source=src, line=line
                )
            parts = [p for p in pairs[0][1].split(",") if p.strip()]
            if not parts:
                raise TopologyError("BlockSizes= is empty", source=src, line=line)
            sizes = tuple(_int(p, "each of BlockSizes", src, line) for p in parts)
            sizes_line = line
            continue
        if head in ("switchname", "blockname"):
            known = _TREE_KEYS if head == "switchname" else _BLOCK_KEYS
        elif head in ("ringname",):
            raise TopologyError(
                "RingName=: topology/ring is not supported (only topology/tree and topology/block)",
                source=src,
                line=line,
            )
        else:
            raise TopologyError(
                f"unknown parameter {pairs[0][0]}= (a line starts with SwitchName=, "
                "BlockName= or BlockSizes=)",
                source=src,
                line=line,
            )
        values: dict[str, str] = {}
        for key, value in pairs:
            canon = known.get(key.lower())
            if canon is None:
                allowed = ", ".join(f"{k}=" for k in known.values())
                raise TopologyError(
                    f"unknown parameter {key}= on a {known[head]} line (allowed: {allowed})",
                    source=src,
                    line=line,
                )
            if canon in values:
                raise TopologyError(f"{canon}= given twice", source=src, line=line)
            values[canon] = value
        name = values[known[head]]
        if not name:
            raise TopologyError(f"{known[head]}= is empty", source=src, line=line)
        if head == "switchname":
            d = SwitchDef(name, line)
            if "Switches" in values:
                d.children = _hostlist(values["Switches"], "Switches", src, line)
            if "Nodes" in values:
                d.nodes = _hostlist(values["Nodes"], "Nodes", src, line)
            if "LinkSpeed" in values:
                d.link_speed = _int(values["LinkSpeed"], "LinkSpeed", src, line)
            if not d.children and not d.nodes:
                raise TopologyError(
                    f"switch {name!r} has neither Switches= nor Nodes=", source=src, line=line
                )
            tree.append(d)
        else:
            if "Nodes" not in values:
                raise TopologyError(f"block {name!r} has no Nodes=", source=src, line=line)
            blocks.append(
                SwitchDef(name, line, nodes=_hostlist(values["Nodes"], "Nodes", src, line))
            )
    if tree and (blocks or sizes is not None):
        first = (blocks[0].line if blocks else sizes_line) or 0
        raise TopologyError(
            "tree (SwitchName=) and block (BlockName=, BlockSizes=) lines are mixed; a "
            "topology.conf describes one plugin",
            source=src,
            line=first,
        )
    if tree:
        return Topology(build_forest(tree, src))
    if blocks:
        return _block_topology(blocks, sizes or (), src, sizes_line)
    raise TopologyError(
        "no SwitchName= or BlockName= line: the file defines no topology", source=src
    )


def _block_topology(
    blocks: list[SwitchDef],
    sizes: tuple[int, ...],
    src: str,
    sizes_line: int | None,
    name: str | None = None,
) -> Topology:
    for a, b in pairwise(sizes):
        ratio, rest = divmod(b, a) if a else (0, 1)
        if rest or ratio < 2 or ratio & (ratio - 1):
            raise TopologyError(
                f"BlockSizes {list(sizes)}: each size must be a power-of-two multiple (2, 4, "
                f"8, ...) of the one before, got {a} then {b}",
                source=src,
                line=sizes_line,
            )
    if sizes:
        for d in blocks:
            if len(d.nodes) < sizes[0]:
                raise TopologyError(
                    f"block {d.name!r} has {len(d.nodes)} nodes, fewer than the base block "
                    f"size {sizes[0]}",
                    source=src,
                    line=d.line,
                )
    leaves = build_forest(blocks, src, what="block")
    order = {d.name: i for i, d in enumerate(blocks)}
    level: list[Switch] = sorted(leaves, key=lambda s: order[s.name])
    names = ["block"]
    taken = {d.name for d in blocks}
    for size in sizes[1:]:
        step = size // sizes[0]
        grouped: list[Switch] = []
        # group base blocks in file order; an upper level groups whole lower groups
        base = [leaf for s in level for leaf in _leaves_in_order(s, order)]
        for i in range(0, len(base), step):
            members = base[i : i + step]
            children = _regroup(level, {m.name for m in members})
            ends = sorted((m.name for m in members), key=natural_key)
            label = f"{ends[0]}..{ends[-1]}"
            if label in taken:  # the same blocks as a group one level down
                label = f"{label}/{size}"
            taken.add(label)
            grouped.append(Switch(label, children=children))
        level = grouped
        names.insert(0, f"block{size}")
    return Topology(
        tuple(level), level_names=tuple(names), kind="block", block_sizes=sizes, name=name
    )


def _leaves_in_order(s: Switch, order: dict[str, int]) -> list[Switch]:
    if s.is_leaf:
        return [s]
    return sorted((x for x in s.walk() if x.is_leaf), key=lambda x: order[x.name])


def _regroup(level: list[Switch], members: set[str]) -> tuple[Switch, ...]:
    """The switches of ``level`` whose base blocks are all in ``members``."""
    return tuple(s for s in level if {x.name for x in s.walk() if x.is_leaf} <= members)


def read_slurm_conf(path: str | PathLike[str]) -> Topology:
    """A :class:`Topology` from a Slurm ``topology.conf`` file (see :func:`parse_slurm_conf`)."""
    return parse_slurm_conf(_read_text(path), path)


def _read_text(path: str | PathLike[str]) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TopologyError(f"cannot read the file: {exc.strerror or exc}", source=path) from None
    except UnicodeDecodeError:
        raise TopologyError("not a UTF-8 text file", source=path) from None


def write_slurm_conf(topology: Topology) -> str:
    """The ``topology.conf`` text of a topology (topology/tree or topology/block).

    A tree gives one ``SwitchName=`` line per switch, top down (merged parallel switches
    again one line each); a block topology gives one ``BlockName=`` line per block, in
    order, then ``BlockSizes=`` when it has block sizes (the grouping levels above the
    blocks are Slurm's own and are not written). Node and switch lists are folded into
    hostlist expressions. Level names and GPU counts have no place in the format.

    Examples
    --------
    >>> topo = parse_slurm_conf("SwitchName=s0 Nodes=n[1-4]\\nSwitchName=s1 Switches=s0")
    >>> print(write_slurm_conf(topo), end="")
    SwitchName=s1 Switches=s0
    SwitchName=s0 Nodes=n[1-4]
    """
    lines = []
    if topology.kind == "block":
        for leaf in (s for s in topology.switches if s.is_leaf):
            lines.append(f"BlockName={leaf.name} Nodes={fold(leaf.nodes)}")
        if topology.block_sizes:
            lines.append("BlockSizes=" + ",".join(str(s) for s in topology.block_sizes))
        return "\n".join(lines) + "\n"
    for switch in topology.switches:
        if switch.children:
            body = f"Switches={fold(c.name for c in switch.children)}"
        elif switch.nodes:
            body = f"Nodes={fold(switch.nodes)}"
        else:
            raise TopologyError(
                f"switch {switch.name!r} has neither child switches nor nodes: topology.conf "
                "cannot describe it"
            )
        speed = f" LinkSpeed={switch.link_speed}" if switch.link_speed is not None else ""
        for name in (switch.name, *switch.redundant):
            lines.append(f"SwitchName={name} {body}{speed}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------- topology.yaml

_TOP_KEYS = {"topology", "cluster_default", "tree", "block", "flat"}


def _expect(value: Any, kind: type, what: str, src: str, line: int | None) -> Any:
    if not isinstance(value, kind):
        wants: dict[type, str] = {dict: "a mapping", list: "a list", str: "a string"}
        want = wants.get(kind, kind.__name__)
        raise TopologyError(f"{what} must be {want}, got {value!r}", source=src, line=line)
    return value


def _check_keys(item: dict[Any, Any], allowed: set[str], what: str, src: str) -> None:
    for key in item:
        if key not in allowed:
            raise TopologyError(
                f"unknown key {key!r} in {what} (allowed: {', '.join(sorted(allowed))})",
                source=src,
                line=line_of(item, key),
            )


def _yaml_hostlist(value: Any, what: str, src: str, line: int | None) -> list[str]:
    if isinstance(value, list):
        value = ",".join(str(v) for v in value)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise TopologyError(f"{what} has an empty hostlist", source=src, line=line)
    if not isinstance(value, str):
        value = str(value)
    try:
        return expand(value)
    except TopologyError as exc:
        raise TopologyError(f"{what}: {exc.rule}", source=src, line=line) from None


def parse_slurm_yaml(
    text: str, source: str | PathLike[str] = "<topology.yaml>", *, topology: str | None = None
) -> Topology:
    """A :class:`Topology` from the text of a Slurm ``topology.yaml``.

    Parameters
    ----------
    text
        The YAML text: a list of topologies (``topology``, ``cluster_default`` and one of
        ``tree``, ``block``, ``flat``).
    source
        File name for errors.
    topology
        Name of the topology to read; default: the first with ``cluster_default: true``,
        else the first one.

    Raises
    ------
    TopologyError
        Naming file and line, for invalid YAML, an unknown key, a topology with no or two
        types, a flat topology (it has no switches), an unknown topology name, two
        topologies with one name, and every rule of :func:`parse_slurm_conf`.

    Examples
    --------
    >>> topo = parse_slurm_yaml('''
    ... - topology: topo1
    ...   cluster_default: true
    ...   tree:
    ...     switches:
    ...     - switch: sw_root
    ...       nodes: node[01-04]
    ... ''')
    >>> topo.name, topo.nodes
    ('topo1', ('node01', 'node02', 'node03', 'node04'))
    """
    src = str(source)
    data = load_yaml(text, src)
    _expect(data, list, "a topology.yaml", src, line_of(data) or 1)
    if not data:
        raise TopologyError("the file lists no topology", source=src, line=1)
    chosen: dict[Any, Any] | None = None
    default: dict[Any, Any] | None = None
    names: dict[str, int | None] = {}
    for i, item in enumerate(data):
        _expect(item, dict, "each topology", src, line_of(data, i))
        _check_keys(item, _TOP_KEYS, "a topology", src)
        if "topology" not in item:
            raise TopologyError("a topology has no 'topology' name", source=src, line=line_of(item))
        name = _expect(item["topology"], str, "'topology'", src, line_of(item, "topology"))
        if name in names:
            raise TopologyError(
                f"topology {name!r} is defined twice (first on line {names[name]})",
                source=src,
                line=line_of(item, "topology"),
            )
        names[name] = line_of(item, "topology")
        flag = item.get("cluster_default", False)
        if not isinstance(flag, bool):
            raise TopologyError(
                f"cluster_default must be true or false, got {flag!r}",
                source=src,
                line=line_of(item, "cluster_default"),
            )
        if topology is not None and name == topology:
            chosen = item
        if flag and default is None:
            default = item
    if topology is not None and chosen is None:
        raise TopologyError(
            f"no topology is called {topology!r} (the file has {list(names)})", source=src
        )
    item = chosen or default or data[0]
    name = item["topology"]
    types = [k for k in ("tree", "block", "flat") if k in item]
    if len(types) != 1:
        raise TopologyError(
            f"topology {name!r} must have exactly one of tree, block, flat; it has {types}",
            source=src,
            line=line_of(item),
        )
    kind = types[0]
    if kind == "flat":
        raise TopologyError(
            f"topology {name!r} is flat: it has no switches or blocks to read",
            source=src,
            line=line_of(item, "flat"),
        )
    body = _expect(item[kind], dict, f"'{kind}'", src, line_of(item, kind))
    if kind == "tree":
        _check_keys(body, {"switches"}, "a tree", src)
        switches = _expect(body.get("switches"), list, "tree.switches", src, line_of(body))
        defs = []
        for k, sw in enumerate(switches):
            _expect(sw, dict, "each switch", src, line_of(switches, k))
            _check_keys(sw, {"switch", "children", "nodes"}, "a switch", src)
            line = line_of(switches, k)
            if "switch" not in sw:
                raise TopologyError("a switch has no 'switch' name", source=src, line=line)
            d = SwitchDef(str(sw["switch"]), line)
            if "children" in sw:
                d.children = _yaml_hostlist(
                    sw["children"], "children", src, line_of(sw, "children")
                )
            if "nodes" in sw:
                d.nodes = _yaml_hostlist(sw["nodes"], "nodes", src, line_of(sw, "nodes"))
            if not d.children and not d.nodes:
                raise TopologyError(
                    f"switch {d.name!r} has neither children nor nodes", source=src, line=line
                )
            defs.append(d)
        return Topology(build_forest(defs, src), name=name)
    _check_keys(body, {"block_sizes", "blocks"}, "a block topology", src)
    raw_sizes = body.get("block_sizes", [])
    sizes_line = line_of(body, "block_sizes")
    if isinstance(raw_sizes, str):
        raw_sizes = [p for p in raw_sizes.split(",") if p.strip()]
    elif isinstance(raw_sizes, int) and not isinstance(raw_sizes, bool):
        raw_sizes = [raw_sizes]
    _expect(raw_sizes, list, "block_sizes", src, sizes_line)
    sizes = tuple(_int(s, "each of block_sizes", src, sizes_line) for s in raw_sizes)
    blocks = _expect(body.get("blocks"), list, "block.blocks", src, line_of(body))
    defs = []
    for k, b in enumerate(blocks):
        _expect(b, dict, "each block", src, line_of(blocks, k))
        _check_keys(b, {"block", "nodes"}, "a block", src)
        line = line_of(blocks, k)
        if "block" not in b:
            raise TopologyError("a block has no 'block' name", source=src, line=line)
        if "nodes" not in b:
            raise TopologyError(f"block {b['block']!r} has no nodes", source=src, line=line)
        defs.append(
            SwitchDef(
                str(b["block"]),
                line,
                nodes=_yaml_hostlist(b["nodes"], "nodes", src, line_of(b, "nodes")),
            )
        )
    if not defs:
        raise TopologyError(
            f"block topology {name!r} lists no block", source=src, line=line_of(body)
        )
    return _block_topology(defs, sizes, src, sizes_line, name=name)


def read_slurm_yaml(path: str | PathLike[str], *, topology: str | None = None) -> Topology:
    """A :class:`Topology` from a Slurm ``topology.yaml`` file (see :func:`parse_slurm_yaml`)."""
    return parse_slurm_yaml(_read_text(path), path, topology=topology)
