"""Placement instances from a real cluster: a topology, its free nodes and one job.

A :class:`~topoopt.topology.Topology` (read from Slurm ``topology.conf`` / ``topology.yaml``,
NVIDIA topograph or Kubernetes node labels) becomes a
:class:`~topoopt.placement.instance.PlacementInstance` by choosing which level of the tree
plays Arnold's *minipods* (§5.1): every switch of that level is a minipod, the switches one
level below it are its leaves, and each leaf carries the names of its free nodes. The
solvers then decide which minipod hosts each cell, and the result's ``rank_order`` names the
node of every node-level rank (see ``docs/placement.md``, "Rank order").
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Literal

from topoopt.core.errors import InvalidInstanceError
from topoopt.placement.instance import (
    DEFAULT_GPUS_PER_NODE,
    Constraints,
    Leaf,
    LevelObjective,
    Minipod,
    PlacementInstance,
    as_constraints,
    as_objective,
)
from topoopt.topology import FreeGroup, Switch, Topology


def gpus_per_node_of(topology: Topology, nodes: Collection[str]) -> int:
    """The GPUs per node of ``nodes`` as the topology gives them (8 when it gives none).

    Raises
    ------
    InvalidInstanceError
        ``gpus_per_node`` when the nodes do not all have the same number of GPUs (Arnold's
        model has one node size).
    """
    counts = {g for g in map(topology.gpus_of, nodes) if g is not None}
    if len(counts) > 1:
        raise InvalidInstanceError(
            "gpus_per_node",
            f"the free nodes have different GPU counts {sorted(counts)}; give the nodes of "
            "one size (e.g. restrict --free) or gpus_per_node",
        )
    return counts.pop() if counts else DEFAULT_GPUS_PER_NODE


def from_topology(
    topology: Topology,
    *,
    level: int | str,
    free: Collection[str],
    dp: int,
    tp: int,
    pp: int,
    alpha: float,
    gpus_per_node: int | None = None,
    name: str | None = None,
    unknown: Literal["error", "ignore"] = "error",
    leaf_level: int | str | None = None,
    objective: LevelObjective | str | Mapping[str, Any] | None = None,
    constraints: Constraints | Mapping[str, Any] | None = None,
) -> PlacementInstance:
    """The placement instance of one job on the free nodes of ``topology``.

    Parameters
    ----------
    topology
        The cluster (:func:`topoopt.topology.load_topology`).
    level
        The level whose switches are the minipods: a depth (0 = the top, negative from the
        bottom) or a level name (:meth:`~topoopt.topology.Topology.level`).
    free
        Names of the free nodes (:func:`topoopt.topology.read_free`).
    dp, tp, pp, alpha
        The job and the weight of the DP spread (Arnold eq. 2), as in
        :class:`~topoopt.placement.instance.PlacementInstance`.
    gpus_per_node
        GPUs per node; by default the topology's count for the free nodes (they must agree),
        else 8.
    name
        Instance name; by default ``<topology name>-<level>``.
    unknown
        ``"error"`` (default): a free node not in the topology is an error; ``"ignore"``: it
        is left out.
    leaf_level
        The level whose switches are the minipods' leaves (depth or name, below ``level``);
        by default the level just below ``level``. On a deeper tree this picks the level
        ``placement/hierarchical`` places on (e.g. racks two levels below the minipods); a
        branch that ends above it contributes its lowest switch. When it is more than one
        level below, each leaf's :attr:`~topoopt.placement.instance.Leaf.path` names the
        switches in between (top first; a branch ending above ``leaf_level`` repeats its
        lowest switch), and every result reports the DP/PP spreads at those levels
        (``level1_dp_spread``, ...).
    objective
        How the levels' scores combine (:class:`~topoopt.placement.instance.LevelObjective`,
        a mode name such as ``"lex"``, or its JSON object; default ``top``).
    constraints
        Rules the placement must respect (:class:`~topoopt.placement.instance.Constraints`
        or its JSON object; levels by the topology's names or by index from ``level``).

    Returns
    -------
    PlacementInstance
        One minipod per switch of ``level`` that has a free node (switches without one
        cannot host a cell and are left out), its leaves the switches below it with their
        free nodes, in topology order; labels ``topology`` and ``level``; the topology's
        names of the levels from ``level`` down to the leaves (``level_names``) and, for a
        Slurm block topology placed down to its base blocks, its ``BlockSizes`` of those
        levels (``block_sizes``).

    Raises
    ------
    TopologyError
        For an unknown level or an unknown free node.
    InvalidInstanceError
        For a job the free nodes cannot hold or any rule of the instance.

    Examples
    --------
    >>> from topoopt.topology import parse_slurm_conf
    >>> topo = parse_slurm_conf('''
    ... SwitchName=leaf0 Nodes=n[0-3]
    ... SwitchName=leaf1 Nodes=n[4-7]
    ... SwitchName=pod0 Switches=leaf[0-1]
    ... SwitchName=leaf2 Nodes=n[8-11]
    ... SwitchName=pod1 Switches=leaf2
    ... SwitchName=top Switches=pod[0-1]
    ... ''')
    >>> inst = from_topology(topo, level=1, free={"n0", "n1", "n4", "n9", "n10"},
    ...                      dp=1, tp=8, pp=4, alpha=0.5)
    >>> [(m.name, m.free_nodes) for m in inst.minipods]
    [('pod0', 3), ('pod1', 2)]
    >>> inst.minipods[0].leaves[1]
    Leaf(name='leaf1', nodes=('n4',))
    """
    if unknown not in ("error", "ignore"):
        raise InvalidInstanceError("unknown", f"must be 'error' or 'ignore', got {unknown!r}")
    groups = topology.free_groups(level, free, unknown=unknown, drop_empty=True)
    if leaf_level is None:
        minipods = tuple(Minipod.from_leaves(g.name, g.leaves) for g in groups)
    else:
        deeper = _deeper_leaves(topology, level, leaf_level, groups)
        minipods = tuple(Minipod.from_leaves(name, leaves) for name, leaves in deeper)
    if gpus_per_node is None:
        gpus_per_node = gpus_per_node_of(topology, [n for g in groups for n in g.node_names()])
    label = str(level)
    top = topology.level(level)
    low = top + 1 if leaf_level is None else topology.level(leaf_level)
    names: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()
    if low < topology.depth and any(pod.leaves for pod in minipods):
        names = tuple(topology.levels[top : low + 1])
        if topology.kind == "block" and low == topology.depth - 1:
            # Slurm BlockSizes are base first; the base blocks are the leaves
            sizes = tuple(topology.block_sizes[: low - top + 1])
            if len(sizes) != low - top + 1:
                sizes = ()
    wanted = as_constraints(constraints)
    if wanted.block and topology.kind != "block":
        raise InvalidInstanceError(
            "constraints.block",
            f"Slurm topology/block needs a block topology (BlockName lines, BlockSizes); this "
            f"one is a {topology.kind!r} topology",
        )
    if wanted.block and not sizes:
        raise InvalidInstanceError(
            "constraints.block",
            "Slurm topology/block needs the instance's levels to be block levels down to the "
            f"base blocks, one BlockSizes size each: the topology has levels "
            f"{list(topology.levels)} and BlockSizes {list(topology.block_sizes)}, the "
            f"minipods are level {topology.levels[top]!r}"
            + ("" if low >= topology.depth else f" and the leaves {topology.levels[low]!r}")
            + " (the minipods must be above the base blocks, which are the leaves)",
        )
    return PlacementInstance(
        name or f"{topology.name or 'cluster'}-{label}",
        minipods,
        dp,
        tp,
        pp,
        alpha,
        gpus_per_node=gpus_per_node,
        labels={"topology": topology.name or "cluster", "level": label},
        level_names=names,
        block_sizes=sizes,
        objective=as_objective(objective),
        constraints=wanted,
    )


def _deeper_leaves(
    topology: Topology, level: int | str, leaf_level: int | str, groups: tuple[FreeGroup, ...]
) -> tuple[tuple[str, tuple[Leaf, ...]], ...]:
    """``(minipod name, leaves)`` of ``groups`` with the switches at ``leaf_level`` (below
    ``level``) as the leaves, each with the free nodes of its subtree and the path of
    switches between the minipod and it (a branch ending above that level gives its lowest
    switch, named again at the levels below it), in topology order."""
    top, low = topology.level(level), topology.level(leaf_level)
    if low <= top:
        raise InvalidInstanceError(
            "leaf_level",
            f"must be below the minipod level {level!r} (depth {top}), got {leaf_level!r} "
            f"(depth {low})",
        )
    out = []
    for group in groups:
        free = set(group.node_names())
        leaves: list[Leaf] = []
        stack: list[tuple[Switch, int, tuple[str, ...]]] = [(topology.switch(group.name), top, ())]
        while stack:
            switch, depth, path = stack.pop()
            if depth == low or not switch.children:
                nodes = tuple(n for n in switch.all_nodes() if n in free)
                if nodes:
                    # from the minipod down to leaf_level; a branch ending above it stands
                    # for itself at the levels below
                    chain = (*path, switch.name) + (switch.name,) * (low - depth)
                    leaves.append(Leaf(switch.name, nodes, chain[1:-1]))
                continue
            stack.extend(
                (child, depth + 1, (*path, switch.name)) for child in reversed(switch.children)
            )
        out.append((group.name, tuple(leaves)))
    return tuple(out)
