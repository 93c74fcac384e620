"""Turn flat switch definitions (as files list them) into a checked forest of switches.

Every reader that describes a switch by name and its children by name goes through
:func:`build_forest`, so the rules are the same for all of them:

* a switch is defined once;
* a child switch must be defined (a *dangling* name is an error), unless the format allows
  bare leaf names;
* a node hangs under one switch only;
* a switch has one parent, except parallel switches with the same children and no nodes
  (a fat-tree's spines), which are merged into one (:attr:`Switch.redundant`);
* following parents never comes back to the same switch (no *cycle*).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike

from topoopt.topology._errors import TopologyError
from topoopt.topology._hostlist import natural_key
from topoopt.topology._model import Switch

__all__ = ["SwitchDef", "build_forest"]


@dataclass
class SwitchDef:
    """One switch as a file defines it (names only), with the line that defines it."""

    name: str
    line: int | None = None
    children: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    link_speed: int | None = None


def build_forest(
    defs: list[SwitchDef],
    source: str | PathLike[str],
    *,
    undefined_children: bool = False,
    what: str = "switch",
) -> tuple[Switch, ...]:
    """The root switches built from ``defs`` after checking the rules of the module.

    Parameters
    ----------
    defs
        The switches in file order.
    source
        File name used in errors.
    undefined_children
        Whether a child name with no definition is an empty leaf (topograph models) rather
        than a dangling-name error (Slurm).
    what
        ``"switch"`` or ``"block"``, for messages.
    """
    by_name: dict[str, SwitchDef] = {}
    for d in defs:
        if d.name in by_name:
            first = by_name[d.name].line
            where = f" (first defined on line {first})" if first else ""
            raise TopologyError(
                f"{what} {d.name!r} is defined twice{where}", source=source, line=d.line
            )
        by_name[d.name] = d
    for d in defs:
        if d.children and d.nodes:
            raise TopologyError(
                f"switch {d.name!r} has both child switches and nodes", source=source, line=d.line
            )
        for child in d.children:
            if child == d.name:
                raise TopologyError(
                    f"switch cycle: {d.name!r} lists itself as a child", source=source, line=d.line
                )
            if child not in by_name:
                if not undefined_children:
                    raise TopologyError(
                        f"dangling switch name: {d.name!r} lists child switch {child!r}, "
                        "which is not defined",
                        source=source,
                        line=d.line,
                    )
                by_name[child] = SwitchDef(child, d.line)
    owner: dict[str, SwitchDef] = {}
    for d in by_name.values():
        for node in d.nodes:
            if node in owner:
                other = owner[node]
                at = f" (line {other.line})" if other.line else ""
                raise TopologyError(
                    f"node {node!r} is under two {what}es: {other.name!r}{at} and {d.name!r}"
                    if what == "switch"
                    else f"node {node!r} is in two {what}s: {other.name!r}{at} and {d.name!r}",
                    source=source,
                    line=d.line,
                )
            owner[node] = d
    redundant = _merge_parallel(by_name, source)
    parent: dict[str, str] = {}
    for d in by_name.values():
        for child in d.children:
            if child in parent:
                p = by_name[parent[child]]
                at = f" (line {p.line})" if p.line else ""
                raise TopologyError(
                    f"switch {child!r} has two parents, {p.name!r}{at} and {d.name!r}, with "
                    "different children (only parallel switches with the same children may "
                    "share them)",
                    source=source,
                    line=d.line,
                )
            parent[child] = d.name
    roots = [d.name for d in by_name.values() if d.name not in parent]
    reached: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        reached.add(name)
        stack.extend(by_name[name].children)
    if len(reached) < len(by_name):
        start = min((n for n in by_name if n not in reached), key=natural_key)
        cycle = [start]
        while parent[cycle[-1]] not in cycle:
            cycle.append(parent[cycle[-1]])
        cycle = cycle[cycle.index(parent[cycle[-1]]) :]
        down = list(reversed(cycle))  # each switch lists the next one as a child
        first = down.index(min(down, key=natural_key))
        down = down[first:] + down[:first]
        loop = " -> ".join([*down, down[0]])
        raise TopologyError(f"switch cycle: {loop}", source=source, line=by_name[down[0]].line)

    def make(name: str) -> Switch:
        d = by_name[name]
        try:
            return Switch(
                name,
                children=tuple(make(c) for c in d.children),
                nodes=tuple(d.nodes),
                link_speed=d.link_speed,
                redundant=tuple(redundant.get(name, ())),
            )
        except TopologyError as exc:
            raise exc.at(source, d.line) from None

    return tuple(make(r) for r in roots)


def _merge_parallel(
    by_name: dict[str, SwitchDef], source: str | PathLike[str]
) -> dict[str, list[str]]:
    """Merge switches that share all their children (parallel spines); returns
    ``{kept name: [merged names]}`` and rewrites ``by_name`` in place."""
    parents: dict[str, list[str]] = {}
    for d in by_name.values():
        for child in d.children:
            parents.setdefault(child, []).append(d.name)
    shared = {c: ps for c, ps in parents.items() if len(ps) > 1}
    if not shared:
        return {}
    groups: dict[tuple[str, ...], set[str]] = {}
    for ps in shared.values():
        key = tuple(sorted(set(by_name[ps[0]].children)))
        if all(tuple(sorted(set(by_name[p].children))) == key for p in ps):
            groups.setdefault(key, set()).update(ps)
    merged: dict[str, list[str]] = {}
    renamed: dict[str, str] = {}
    for members in groups.values():
        # every child of the group must have exactly the group as parents
        ordered = sorted(members, key=natural_key)
        children = by_name[ordered[0]].children
        if any(set(parents.get(c, ())) != members for c in children):
            continue
        speeds = {by_name[m].link_speed for m in ordered}
        keep = ordered[0]
        if len(speeds) > 1:
            by_name[keep].link_speed = None
        merged[keep] = ordered[1:]
        for m in ordered[1:]:
            renamed[m] = keep
            del by_name[m]
    for d in by_name.values():
        if any(c in renamed for c in d.children):
            seen: list[str] = []
            for c in d.children:
                c = renamed.get(c, c)
                if c not in seen:
                    seen.append(c)
            d.children = seen
    return merged
