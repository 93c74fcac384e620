"""The cluster-topology type: a forest of switches (or blocks) down to named nodes."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from topoopt.topology._errors import TopologyError
from topoopt.topology._hostlist import check_name, natural_key

__all__ = ["FreeGroup", "Switch", "Topology"]

Kind = Literal["tree", "block"]


@dataclass(frozen=True)
class Switch:
    """A switch (or a Slurm block) and what hangs below it.

    A switch has either child switches or nodes, not both; a switch with neither is allowed
    (an empty rack in a discovered topology). Children and nodes are kept in natural name
    order (``n2`` before ``n10``), so two switches built from the same names in any order are
    equal.

    Parameters
    ----------
    name
        Switch name: non-empty, without whitespace or hostlist syntax (``[ ] , ! & ^ @ # =``).
    children
        Child switches.
    nodes
        Names of the nodes attached to this (leaf) switch.
    link_speed
        Slurm's optional ``LinkSpeed`` (arbitrary units), or ``None``.
    redundant
        Names of parallel switches merged into this one: Slurm lists a fat-tree's spines as
        several switches with the same children (``SwitchName=s4 Switches=s[0-3]``,
        ``SwitchName=s5 Switches=s[0-3]``); the readers keep one of them, named by the first,
        and list the others here, and the writer emits them all again.

    Examples
    --------
    >>> leaf = Switch("s0", nodes=("tux3", "tux1", "tux2"))
    >>> leaf.nodes
    ('tux1', 'tux2', 'tux3')
    >>> Switch("s4", children=(leaf, Switch("s1", nodes=("tux4",)))).all_nodes()
    ('tux1', 'tux2', 'tux3', 'tux4')
    """

    name: str
    children: tuple[Switch, ...] = ()
    nodes: tuple[str, ...] = ()
    link_speed: int | None = None
    redundant: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_name(self.name, "switch")
        children = tuple(self.children)
        for child in children:
            if not isinstance(child, Switch):
                raise TopologyError(
                    f"switch {self.name!r}: children must be Switch objects, got {child!r}"
                )
        nodes = tuple(check_name(node, "node") for node in self.nodes)
        if children and nodes:
            raise TopologyError(f"switch {self.name!r} has both child switches and nodes")
        if len(set(nodes)) != len(nodes):
            twice = sorted({n for n in nodes if nodes.count(n) > 1}, key=natural_key)
            raise TopologyError(f"switch {self.name!r} lists node {twice[0]!r} twice")
        if self.link_speed is not None and (
            isinstance(self.link_speed, bool)
            or not isinstance(self.link_speed, int)
            or self.link_speed < 0
        ):
            raise TopologyError(
                f"switch {self.name!r}: link speed must be a non-negative integer, "
                f"got {self.link_speed!r}"
            )
        redundant = tuple(check_name(n, "switch") for n in self.redundant)
        object.__setattr__(self, "children", tuple(sorted(children, key=_switch_key)))
        object.__setattr__(self, "nodes", tuple(sorted(nodes, key=natural_key)))
        object.__setattr__(self, "redundant", tuple(sorted(redundant, key=natural_key)))

    @property
    def is_leaf(self) -> bool:
        """Whether no switch hangs below this one."""
        return not self.children

    def walk(self) -> Iterator[Switch]:
        """This switch and every switch below it, depth first, parents before children."""
        yield self
        for child in self.children:
            yield from child.walk()

    def all_nodes(self) -> tuple[str, ...]:
        """Names of every node below this switch, leaf by leaf."""
        return tuple(node for switch in self.walk() for node in switch.nodes)

    def height(self) -> int:
        """Number of switch levels from this switch down to its deepest leaf (a leaf: 1)."""
        return 1 + max((child.height() for child in self.children), default=0)


def _switch_key(switch: Switch) -> tuple[Any, ...]:
    return natural_key(switch.name)


@dataclass(frozen=True)
class FreeGroup:
    """The free nodes under one switch of a chosen level, by the next level down.

    Made by :meth:`Topology.free_groups`; shaped for the placement family's minipods
    (``Minipod.from_leaves(group.name, group.leaves)``).

    Parameters
    ----------
    name
        Name of the switch at the chosen level.
    leaves
        ``(name, free nodes)`` for each switch one level down (for a leaf switch, the switch
        itself), in natural name order; node names in natural order.
    """

    name: str
    leaves: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def free_nodes(self) -> int:
        """Number of free nodes in the group."""
        return sum(len(nodes) for _, nodes in self.leaves)

    def node_names(self) -> tuple[str, ...]:
        """The group's free nodes, leaf by leaf."""
        return tuple(node for _, nodes in self.leaves for node in nodes)


@dataclass(frozen=True)
class Topology:
    """A cluster's network: a forest of switches (or Slurm blocks) down to named nodes.

    Depth 0 holds the top switches (the roots; a file may define several, e.g. fabrics
    without a common parent), depth 1 their children, and so on; the leaf switches hold the
    nodes. Levels are addressed by depth (``0``, ``1``, ...; negative depths count from the
    bottom: ``-1`` is the deepest level) or, when the source names them, by name
    (Kubernetes label keys, Slurm block sizes). A tree whose leaves are not all at the same
    depth is allowed (:attr:`balanced` is then ``False``): a level then covers only the
    nodes below the switches at that depth.

    The type checks its own rules on construction: every switch name appears once, every
    node hangs under exactly one leaf, level names are distinct and at most one per level,
    GPU counts are for known nodes.

    Parameters
    ----------
    roots
        The top switches.
    level_names
        Optional names of the levels, top first (``len(level_names) == depth``), or ``()``.
    kind
        ``"tree"`` (Slurm topology/tree, topograph switches, Kubernetes labels) or
        ``"block"`` (Slurm topology/block: the leaves are blocks).
    block_sizes
        For ``kind="block"``: Slurm's ``BlockSizes`` (base size first), else ``()``.
    gpus
        Optional GPUs per node, ``{node: count}``; :meth:`gpus_of` falls back to
        ``default_gpus``.
    default_gpus
        GPUs of a node missing from ``gpus`` (``None``: unknown).
    name
        Optional name (the Slurm topology.yaml topology name, a file stem, ...).

    Examples
    --------
    >>> topo = Topology(
    ...     (
    ...         Switch(
    ...             "s3",
    ...             children=(
    ...                 Switch("s0", nodes=("n1", "n2")),
    ...                 Switch("s1", nodes=("n3", "n4")),
    ...             ),
    ...         ),
    ...     ),
    ...     level_names=("spine", "leaf"),
    ... )
    >>> topo.depth, topo.levels, topo.switch_of("n3", "spine")
    (2, ('spine', 'leaf'), 's3')
    >>> [(g.name, g.leaves) for g in topo.free_groups("spine", {"n1", "n4"})]
    [('s3', (('s0', ('n1',)), ('s1', ('n4',))))]
    """

    roots: tuple[Switch, ...]
    level_names: tuple[str, ...] = ()
    kind: Kind = "tree"
    block_sizes: tuple[int, ...] = ()
    gpus: Mapping[str, int] = field(default_factory=dict, hash=False)
    default_gpus: int | None = None
    name: str | None = None
    _parent: dict[str, str] = field(init=False, repr=False, compare=False, hash=False)
    _depth_of: dict[str, int] = field(init=False, repr=False, compare=False, hash=False)
    _switches: dict[str, Switch] = field(init=False, repr=False, compare=False, hash=False)
    _leaf_of: dict[str, str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        roots = tuple(self.roots)
        if not roots:
            raise TopologyError("a topology needs at least one switch")
        for root in roots:
            if not isinstance(root, Switch):
                raise TopologyError(f"roots must be Switch objects, got {root!r}")
        roots = tuple(sorted(roots, key=_switch_key))
        object.__setattr__(self, "roots", roots)
        if self.kind not in ("tree", "block"):
            raise TopologyError(f"kind must be 'tree' or 'block', got {self.kind!r}")
        parent: dict[str, str] = {}
        depth_of: dict[str, int] = {}
        switches: dict[str, Switch] = {}
        leaf_of: dict[str, str] = {}
        stack: list[tuple[Switch, int, str | None]] = [(r, 0, None) for r in reversed(roots)]
        while stack:
            switch, depth, up = stack.pop()
            for alias in (switch.name, *switch.redundant):
                if alias in switches or alias in depth_of:
                    raise TopologyError(f"switch {alias!r} appears twice in the topology")
                depth_of[alias] = depth
            switches[switch.name] = switch
            if up is not None:
                parent[switch.name] = up
            for node in switch.nodes:
                if node in leaf_of:
                    raise TopologyError(
                        f"node {node!r} is under two switches: "
                        f"{leaf_of[node]!r} and {switch.name!r}"
                    )
                leaf_of[node] = switch.name
            stack.extend((c, depth + 1, switch.name) for c in reversed(switch.children))
        object.__setattr__(self, "_parent", parent)
        object.__setattr__(self, "_depth_of", depth_of)
        object.__setattr__(self, "_switches", switches)
        object.__setattr__(self, "_leaf_of", leaf_of)
        depth = max(r.height() for r in roots)
        names = tuple(self.level_names)
        if names:
            if len(names) != depth:
                raise TopologyError(
                    f"level_names has {len(names)} names for a topology of depth {depth}"
                )
            for n in names:
                if not isinstance(n, str) or not n:
                    raise TopologyError(f"level names must be non-empty strings, got {n!r}")
            if len(set(names)) != len(names):
                raise TopologyError(f"level names must be distinct, got {list(names)}")
        object.__setattr__(self, "level_names", names)
        sizes = tuple(self.block_sizes)
        if sizes and self.kind != "block":
            raise TopologyError("block_sizes are only for a block topology")
        for s in sizes:
            if isinstance(s, bool) or not isinstance(s, int) or s <= 0:
                raise TopologyError(f"block sizes must be positive integers, got {s!r}")
        object.__setattr__(self, "block_sizes", sizes)
        gpus = dict(self.gpus)
        for node, count in gpus.items():
            if node not in leaf_of:
                raise TopologyError(f"gpus: node {node!r} is not in the topology")
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise TopologyError(f"gpus: node {node!r} has {count!r} GPUs")
        object.__setattr__(
            self, "gpus", dict(sorted(gpus.items(), key=lambda i: natural_key(i[0])))
        )
        if self.default_gpus is not None and (
            isinstance(self.default_gpus, bool)
            or not isinstance(self.default_gpus, int)
            or self.default_gpus < 0
        ):
            raise TopologyError("default_gpus must be a non-negative integer or None")

    # ------------------------------------------------------------------ shape

    @property
    def depth(self) -> int:
        """Number of switch levels (a single leaf switch: 1)."""
        return max(root.height() for root in self.roots)

    @property
    def levels(self) -> tuple[str, ...]:
        """The level names, top first; ``"0"``, ``"1"``, ... when the source names none."""
        return self.level_names or tuple(str(d) for d in range(self.depth))

    @property
    def balanced(self) -> bool:
        """Whether every leaf switch is at the deepest level."""
        deepest = self.depth - 1
        return all(self._depth_of[s.name] == deepest for s in self._switches.values() if s.is_leaf)

    def level(self, level: int | str) -> int:
        """The depth of a level given by depth (negative from the bottom) or by name.

        Raises
        ------
        TopologyError
            For an unknown name or a depth out of range; the message lists the levels.
        """
        depth = self.depth
        if isinstance(level, bool):
            raise TopologyError(f"level must be a depth or a level name, got {level!r}")
        if isinstance(level, int):
            d = level + depth if level < 0 else level
            if not 0 <= d < depth:
                raise TopologyError(
                    f"level {level} is out of range: the topology has {depth} levels "
                    f"(0..{depth - 1}, or -1..-{depth} from the bottom)"
                )
            return d
        if isinstance(level, str):
            if level in self.level_names:
                return self.level_names.index(level)
            short = [i for i, n in enumerate(self.level_names) if n.rsplit("/", 1)[-1] == level]
            if len(short) == 1:
                return short[0]
            if level.lstrip("-").isdigit():
                return self.level(int(level))
            raise TopologyError(
                f"unknown level {level!r}; the levels are {list(self.levels)} "
                f"(or a depth 0..{depth - 1})"
            )
        raise TopologyError(f"level must be a depth or a level name, got {level!r}")

    # --------------------------------------------------------------- lookups

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every node, leaf by leaf (switches in natural order)."""
        return tuple(node for root in self.roots for node in root.all_nodes())

    @property
    def switches(self) -> tuple[Switch, ...]:
        """Every switch, top down, depth first."""
        return tuple(s for root in self.roots for s in root.walk())

    def __contains__(self, node: object) -> bool:
        return node in self._leaf_of

    def switch(self, name: str) -> Switch:
        """The switch called ``name`` (also by one of its :attr:`Switch.redundant` names)."""
        found = self._switches.get(name)
        if found is None:
            for switch in self._switches.values():
                if name in switch.redundant:
                    return switch
            raise TopologyError(f"no switch is called {name!r}")
        return found

    def switches_at(self, level: int | str) -> tuple[Switch, ...]:
        """The switches at a level (depth or name), in natural name order per parent."""
        d = self.level(level)
        return tuple(s for s in self.switches if self._depth_of[s.name] == d)

    def depth_of(self, switch: str) -> int:
        """The depth of a switch (0: a root)."""
        return self._depth_of[self.switch(switch).name]

    def parent(self, switch: str) -> str | None:
        """The parent of a switch, ``None`` for a root."""
        return self._parent.get(self.switch(switch).name)

    def path(self, node: str) -> tuple[str, ...]:
        """The switches from the top down to the node's leaf switch.

        Like Slurm's ``SLURM_TOPOLOGY_ADDR`` without the node itself.
        """
        if node not in self._leaf_of:
            raise TopologyError(f"node {node!r} is not in the topology")
        out = [self._leaf_of[node]]
        while out[-1] in self._parent:
            out.append(self._parent[out[-1]])
        return tuple(reversed(out))

    def switch_of(self, node: str, level: int | str = -1) -> str | None:
        """The switch above ``node`` at a level (default: its leaf switch).

        ``None`` when the node's leaf is shallower than the level (an unbalanced tree).
        """
        d = self.level(level)
        path = self.path(node)
        return path[d] if d < len(path) else None

    def nodes_under(self, switch: str) -> tuple[str, ...]:
        """Every node below a switch."""
        return self.switch(switch).all_nodes()

    def gpus_of(self, node: str) -> int | None:
        """GPUs of a node: from :attr:`gpus`, else :attr:`default_gpus`."""
        if node not in self._leaf_of:
            raise TopologyError(f"node {node!r} is not in the topology")
        return self.gpus.get(node, self.default_gpus)

    # ------------------------------------------------------------- subtrees

    def subtree(self, switch: str) -> Topology:
        """The topology below one switch (it becomes the only root); level names and GPU
        counts of the kept nodes carry over."""
        top = self.switch(switch)
        d = self._depth_of[top.name]
        height = top.height()
        names = self.level_names[d : d + height] if self.level_names else ()
        kept = set(top.all_nodes())
        return replace(
            self,
            roots=(top,),
            level_names=names,
            gpus={n: g for n, g in self.gpus.items() if n in kept},
            block_sizes=(),
            kind="tree" if self.kind == "block" and top.children else self.kind,
        )

    def cut(self, level: int | str) -> Topology:
        """The topology from the top down to a level (depth or name): the switches at that
        level become leaves holding every node below them; levels further down are dropped.

        Examples
        --------
        >>> topo = Topology((Switch("s2", children=(Switch("s0", nodes=("a",)),
        ...                                          Switch("s1", nodes=("b",)))),))
        >>> topo.cut(0).roots
        (Switch(name='s2', children=(), nodes=('a', 'b'), link_speed=None, redundant=()),)
        """
        d = self.level(level)

        def trim(s: Switch, depth: int) -> Switch:
            if depth == d:
                return replace(s, children=(), nodes=s.all_nodes())
            return replace(s, children=tuple(trim(c, depth + 1) for c in s.children))

        names = self.level_names[: d + 1] if self.level_names else ()
        return replace(
            self, roots=tuple(trim(r, 0) for r in self.roots), level_names=names, block_sizes=()
        )

    def restricted(self, nodes: Collection[str]) -> Topology:
        """The topology keeping only ``nodes`` (switches left empty are kept, with no nodes)."""
        keep = set(nodes)

        def trim(s: Switch) -> Switch:
            return replace(
                s,
                children=tuple(trim(c) for c in s.children),
                nodes=tuple(n for n in s.nodes if n in keep),
            )

        return replace(
            self,
            roots=tuple(trim(r) for r in self.roots),
            gpus={n: g for n, g in self.gpus.items() if n in keep},
        )

    # -------------------------------------------------------- free nodes

    def free_groups(
        self,
        level: int | str,
        free: Collection[str],
        *,
        unknown: Literal["error", "ignore"] = "error",
        drop_empty: bool = False,
    ) -> tuple[FreeGroup, ...]:
        """The switches at a level with their free nodes, grouped by the next level down.

        This is what a placement instance needs: each group is a minipod candidate and its
        leaves are the switches one level below it (for a switch that is itself a leaf,
        the switch alone), each with the free nodes of its whole subtree.

        Parameters
        ----------
        level
            Depth (negative from the bottom) or level name of the groups.
        free
            Names of the free nodes (e.g. from :func:`topoopt.topology.read_free`).
        unknown
            ``"error"`` (default): a free node that is not in the topology is an error;
            ``"ignore"``: it is left out.
        drop_empty
            Leave out leaves, and groups, without a free node.

        Raises
        ------
        TopologyError
            For an unknown level or, with ``unknown="error"``, an unknown free node.
        """
        free_set = set(free)
        missing = free_set - self._leaf_of.keys()
        if missing and unknown == "error":
            first = sorted(missing, key=natural_key)[:3]
            raise TopologyError(f"{len(missing)} free node(s) not in the topology, e.g. {first}")
        groups = []
        for switch in self.switches_at(level):
            below = switch.children or (switch,)
            leaves = tuple(
                (child.name, tuple(n for n in child.all_nodes() if n in free_set))
                for child in below
            )
            if drop_empty:
                leaves = tuple(leaf for leaf in leaves if leaf[1])
                if not leaves:
                    continue
            groups.append(FreeGroup(switch.name, leaves))
        return tuple(groups)

    def describe(self) -> str:
        """One line: kind, depth, switches per level, nodes.

        Examples
        --------
        >>> Topology((Switch("s0", nodes=("a", "b")),)).describe()
        'tree topology: 1 level (1 switch), 2 nodes'
        """
        counts = [len(self.switches_at(d)) for d in range(self.depth)]
        per = ", ".join(
            f"{c} switch{'es' if c != 1 else ''}"
            + (f" at {self.level_names[i]!r}" if self.level_names else "")
            for i, c in enumerate(counts)
        )
        levels = "level" if self.depth == 1 else "levels"
        return f"{self.kind} topology: {self.depth} {levels} ({per}), {len(self.nodes)} nodes"
