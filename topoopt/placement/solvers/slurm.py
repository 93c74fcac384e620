"""Slurm's topology plugins as placement baselines, ported rule by rule.

Upstream: SchedMD/slurm (commit 284c3b95f0 read for this port).

* ``placement/slurm-tree-eval`` — topology/tree, ``src/plugins/topology/tree/eval_nodes_tree.c``
  ``_eval_nodes_topo``: the *top switch* is the highest-level switch with enough free nodes
  (the last in table order among equals); then leaf switches are added one at a time by
  ``_topo_choose_best_switch``, whose comparison ``_topo_compare_switches`` prefers a leaf
  that holds the rest (the tightest: fewest free nodes), else climbs to the parents while
  they differ and compares there (a fitting ancestor, else the one with more free nodes,
  else the lower level), and prefers a leaf closer (``switches_dist``, hops through the
  tree) to the leaves already taken when it fits. A leaf's free nodes are taken in node
  order. ``--switches=count``: an allocation on more leaf switches than ``count`` does not
  start (``best_switch = false``; Slurm waits up to ``max_switch_wait``, here the request
  stays pending).
* ``placement/slurm-block`` — topology/block,
  ``src/plugins/topology/block/eval_nodes_block.c`` ``eval_nodes_block`` with
  ``_get_block_level`` and ``_choose_best_bblock``: the block level is the smallest
  ``BlockSizes`` size that holds the job (each ``--segment`` separately, one after the
  other); the block of that level with enough free nodes and the fewest (the last among
  equals) is chosen; then base blocks are added one at a time: one in a lower-level block
  already used first, then one in a lower-level block that holds the rest (the one with the
  fewest free nodes), else the one with the most, then a base block that holds the rest
  (the smallest), else the largest, at most ``ceil(rest / llblock size)`` lower-level
  blocks.

**How this port reads Slurm.** Node weights, CPUs, GRES, required nodes and hres do not
exist here (one weight, whole nodes). The instance's minipods hang under one root switch
(Arnold's core), so Slurm's top switch can span minipods. Switch table order: leaves first,
then each level up, in topology order; node order: the topology's (natural name order within
a leaf). The rank order is the allocated nodes in node order (Slurm's job node list, which
``srun`` ranks in order). topology/block reads the instance's ``topology.block_sizes``
(``BlockSizes``: the leaves are the base blocks, each level above an aggregated block). An
instance without ``block_sizes`` is read as Slurm reads a file without ``BlockSizes``:
levels 0-3 (1, 2, 4, 8 consecutive base blocks, here consecutive leaves) and the first
block's size as the base, here the most free nodes of a leaf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement
from topoopt.placement.solvers._placers import pending, ranked_placement
from topoopt.placement.tree import Tree, build_tree
from topoopt.topology._hostlist import natural_key


@dataclass(frozen=True)
class _Nodes:
    """The free nodes of every leaf, in node order, with their minipods."""

    by_leaf: list[list[str]]
    pod_of: dict[str, int]
    order: dict[str, tuple[int, tuple[Any, ...]]]


def _nodes(instance: PlacementInstance, tree: Tree) -> _Nodes:
    by_leaf: list[list[str]] = []
    pod_of: dict[str, int] = {}
    for k in range(tree.n_leaves):
        j, local = tree.leaf_key[k]
        pod = instance.minipods[j]
        names = list(pod.leaves[local].nodes) if pod.leaves else pod.node_names()
        by_leaf.append(names)
        pod_of.update(dict.fromkeys(names, j))
    order = {name: (j, tuple(natural_key(name))) for name, j in pod_of.items()}
    return _Nodes(by_leaf, pod_of, order)


def _placement(instance: PlacementInstance, nodes: _Nodes, chosen: list[str]) -> Placement:
    """Ranks on the allocated nodes in node order (Slurm's node list)."""
    ordered = sorted(chosen, key=nodes.order.__getitem__)
    return ranked_placement(instance, [(node, nodes.pod_of[node]) for node in ordered])


class _Pending(Exception):
    """Slurm does not start the job now; the message says why."""


# --- topology/tree ----------------------------------------------------------------------------


@dataclass
class _SwitchTable:
    """Slurm's ``switch_table``: every switch of the tree plus the root above the minipods;
    leaves first, then each level up. ``level`` is Slurm's (leaves 0)."""

    level: list[int]
    parent: list[int]
    leaves: list[int]
    """Table index -> leaf index of the tree (-1 for other switches)."""
    depth: list[int]
    count: list[int]
    """``switch_node_cnt``: free nodes below each switch."""

    def dist(self, a: int, b: int) -> int:
        """``switches_dist``: hops between two switches through the tree."""
        hops = 0
        while a != b:
            if self.depth[a] >= self.depth[b]:
                a, hops = self.parent[a], hops + 1
            else:
                b, hops = self.parent[b], hops + 1
        return hops


def _switch_table(tree: Tree) -> _SwitchTable:
    levels = tree.n_levels
    index: dict[tuple[int, int], int] = {}
    slurm_level: list[int] = []
    depth: list[int] = []
    leaves: list[int] = []
    for lv in range(levels - 1, -1, -1):
        for s in range(len(tree.capacity[lv])):
            index[lv, s] = len(slurm_level)
            slurm_level.append(levels - 1 - lv)
            depth.append(lv + 1)
            leaves.append(s if lv == levels - 1 else -1)
    root = len(slurm_level)
    slurm_level.append(levels)
    depth.append(0)
    leaves.append(-1)
    parent = [root] * (root + 1)
    for (lv, s), i in index.items():
        parent[i] = index[lv - 1, int(tree.parent[lv][s])] if lv > 0 else root
    parent[root] = -1
    count = [0] * (root + 1)
    for (lv, s), i in index.items():
        count[i] = int(tree.capacity[lv][s])
    count[root] = int(tree.leaf_free.sum())
    return _SwitchTable(slurm_level, parent, leaves, depth, count)


def _compare(t: _SwitchTable, i: int, j: int, rem: int) -> tuple[int, bool]:
    """``_topo_compare_switches``: 1 when ``i`` is the better fit, -1 when ``j`` is, 0 when
    neither; and whether ``i`` (or its compared ancestor) fits."""
    count = t.count
    while True:
        i_fit, j_fit = count[i] >= rem, count[j] >= rem
        if i_fit and j_fit:
            if count[i] != count[j]:
                return (1 if count[i] < count[j] else -1), i_fit
            break
        if i_fit or j_fit:
            return (1 if i_fit else -1), i_fit
        if t.parent[i] >= 0 and t.parent[j] >= 0 and t.parent[i] != t.parent[j]:
            i, j = t.parent[i], t.parent[j]
            continue
        break
    if count[i] != count[j]:
        return (1 if count[i] > count[j] else -1), i_fit
    if t.level[i] != t.level[j]:
        return (1 if t.level[i] < t.level[j] else -1), i_fit
    return 0, i_fit


def slurm_tree_nodes(instance: PlacementInstance, tree: Tree, nodes: _Nodes) -> list[str]:
    """The nodes ``_eval_nodes_topo`` allocates (see the module docstring).

    Raises
    ------
    _Pending
        When Slurm does not start the job (too few free nodes under one switch, or more
        leaf switches than ``--switches`` allows).
    """
    t = _switch_table(tree)
    n = instance.n_nodes
    top = -1
    for i in range(len(t.count)):
        if t.count[i] >= n and (top == -1 or t.level[i] >= t.level[top]):
            top = i
    if top == -1:
        raise _Pending("no switch has enough free nodes (ESLURM_TOPO_INSUFFICIENT_RESOURCES)")
    dist = [0.0] * len(t.count)
    taken: list[str] = []
    used_leaves = 0
    rem = n
    previous = rem + 1
    while previous != rem:
        previous = rem
        best = -1
        for i in range(len(t.count)):
            if t.level[i] != 0:
                continue
            if best == -1 or math.isinf(dist[i]) or not t.count[i]:
                if t.count[i] and not math.isinf(dist[i]):
                    best = i
                continue
            tcs, i_fit = _compare(t, i, best, rem)
            if (dist[i] < dist[best] and i_fit) or (dist[i] == dist[best] and tcs > 0):
                best = i
        if best == -1:
            break
        for i in range(len(dist)):  # _topo_add_dist
            dist[i] += t.dist(best, i)
        fresh = nodes.by_leaf[t.leaves[best]][:rem]  # a leaf is chosen once
        taken += fresh
        used_leaves += 1
        rem -= len(fresh)
        if rem <= 0:
            break
        a, took = best, t.count[best]  # _decrement_node_cnt: the leaf is used up
        while a != -1:
            t.count[a] = max(t.count[a] - took, 0)
            a = t.parent[a]
    if rem > 0:
        raise _Pending("the leaf switches ran out (ESLURM_TOPO_INSUFFICIENT_RESOURCES)")
    limit = instance.constraints.max_switches
    if limit is not None and used_leaves > limit:
        raise _Pending(
            f"the allocation spans {used_leaves} leaf switches, more than --switches={limit} "
            "(the job waits, best_switch = false)"
        )
    return taken


@register_solver
class SlurmTreeEvalSolver(Solver):
    """Slurm topology/tree, ``eval_nodes_tree.c`` ``_eval_nodes_topo`` on every level."""

    name = "placement/slurm-tree-eval"
    family = "placement"
    complete = False

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """Only ``max_switches`` (``--switches``) is a topology/tree request."""
        c = instance.constraints
        if any(getattr(c, k) is not None for k in ("required_level", "preferred_level",
                                                    "slice_size", "slice_layers", "segment",
                                                    "block")):  # fmt: skip
            return "topology/tree honours only --switches (constraints.max_switches)"
        return None

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        tree = build_tree(instance)
        nodes = _nodes(instance, tree)
        try:
            chosen = slurm_tree_nodes(instance, tree, nodes)
        except _Pending as why:
            return pending(instance, f"slurm: {why}", tree)
        return Attempt(
            _placement(instance, nodes, chosen),
            TerminationReason.COMPLETED,
            message="slurm topology/tree: nodes in node order",
        )


# --- topology/block ---------------------------------------------------------------------------


def _block_level(rem: int, base: int, enabled: list[bool]) -> tuple[int, int]:
    """``_get_block_level``: the first enabled level holding ``rem`` nodes (-1: the whole
    topology) and the last enabled level below it (the llblock level)."""
    per_block = -(-rem // base)
    level = math.ceil(math.log2(per_block)) if per_block > 0 else 0
    ll = 0
    if level > 0:
        below = [k for k in range(min(level, len(enabled))) if enabled[k]]
        ll = below[-1] if below else 0
    up = [k for k in range(level, len(enabled)) if enabled[k]]
    return (up[0] if up else -1), ll


def _choose(
    i: int,
    rem: int,
    on_bblock: list[int],
    on_ll: dict[int, int] | None,
    ll_of: np.ndarray,
    required: set[int],
    state: dict[str, object],
) -> None:
    """``_choose_best_bblock`` (llblocks given by ``ll_of``, the lower-level block of every
    base block)."""
    fit = on_bblock[i] >= rem
    best = int(state["best"])  # type: ignore[call-overload]
    if on_ll is not None and not (best >= 0 and ll_of[best] == ll_of[i]):
        same_block = any(ll_of[j] == ll_of[i] for j in required)
        if best == -1 or (same_block and not state["same"]):
            state.update(best=i, fit=fit, same=same_block)
            return
        if not same_block and state["same"]:
            return
        best_ll, ll_count = on_ll[int(ll_of[best])], on_ll[int(ll_of[i])]
        ll_fit, best_ll_fit = ll_count >= rem, best_ll >= rem
        if ll_fit and not best_ll_fit:
            state.update(best=i, fit=fit, same=same_block)
            return
        if not ll_fit and best_ll_fit:
            return
        if ll_fit and best_ll_fit:
            if ll_count < best_ll:
                state.update(best=i, fit=fit, same=same_block)
                return
            if ll_count > best_ll:
                return
        else:
            if ll_count > best_ll:
                state.update(best=i, fit=fit, same=same_block)
                return
            if ll_count < best_ll:
                return
    best_fit = bool(state["fit"])
    if (
        best == -1
        or (fit and not best_fit)
        or (not fit and not best_fit and on_bblock[i] >= on_bblock[best])
        or (fit and on_bblock[i] <= on_bblock[best])
    ):
        state.update(best=i, fit=fit)


def slurm_block_nodes(instance: PlacementInstance, tree: Tree, nodes: _Nodes) -> list[str]:
    """The nodes ``eval_nodes_block`` allocates (see the module docstring). Slurm's blocks of
    level ``k`` (``2^k`` consecutive base blocks) are the switches of the instance's level
    with that size; the whole topology when no size holds the request."""
    sizes = instance.block_sizes
    enabled = [False] * 16
    last = tree.n_levels - 1
    if sizes:
        base = sizes[0]
        for size in sizes:
            enabled[round(math.log2(size // base))] = True
    else:  # Slurm without BlockSizes: levels 0-3, the first block's size as the base
        base = max(int(tree.leaf_free.max()), 1)
        enabled[:4] = [True] * 4

    def blocks_at(k: int) -> np.ndarray:
        """The block of level ``k`` of every base block (leaf): the instance's switches of
        that size, or without ``block_sizes`` runs of ``2^k`` consecutive leaves."""
        if not sizes:
            return np.arange(tree.n_leaves) >> k
        return tree.switch[last - sizes.index(base << k)]

    free = [list(names) for names in nodes.by_leaf]
    n = instance.n_nodes
    segment = instance.constraints.segment
    if segment is not None and segment > n:
        segment = None  # "Ignoring segment_size: larger than job size"
    if segment is not None and n % segment:
        raise _Pending(f"segment_size ({segment}) does not fit the job size ({n})")
    parts = [segment] * (n // segment) if segment else [n]
    taken: list[str] = []
    for rem in parts:
        k, ll_k = _block_level(rem, base, enabled)
        per_block = 1 << k if k >= 0 else tree.n_leaves
        per_ll = 1 << ll_k
        max_ll = -(-rem // (per_ll * base))
        block_of = blocks_at(k) if k >= 0 else np.zeros(tree.n_leaves, int)
        ll_of = blocks_at(ll_k)
        on_bblock = [len(names) for names in free]
        use_ll = per_block != per_ll * max_ll
        choice, choice_count = -1, 0
        for b in sorted(set(block_of.tolist())):
            members = [x for x in range(tree.n_leaves) if block_of[x] == b]
            total = sum(on_bblock[x] for x in members)
            if use_ll:
                lls: dict[int, int] = {}
                for x in members:
                    lls[int(ll_of[x])] = lls.get(int(ll_of[x]), 0) + on_bblock[x]
                avail = sum(sorted(lls.values(), reverse=True)[:max_ll])
            else:
                avail = total
            if avail < rem:
                continue
            if choice == -1 or total <= choice_count:  # the fewest sufficient nodes
                choice, choice_count = b, total
        if choice == -1:
            raise _Pending("unable to find block (ESLURM_TOPO_NO_FIT)")
        members = [x for x in range(tree.n_leaves) if block_of[x] == choice]
        on_ll: dict[int, int] | None = None
        if use_ll:
            on_ll = {}
            for x in members:
                on_ll[int(ll_of[x])] = on_ll.get(int(ll_of[x]), 0) + on_bblock[x]
        required: set[int] = set()
        ll_left = max_ll
        previous = rem + 1
        while previous != rem and rem > 0:
            previous = rem
            state: dict[str, object] = {"best": -1, "fit": False, "same": True}
            for x in members:
                if x not in required:
                    _choose(x, rem, on_bblock, on_ll, ll_of, required, state)
            best = int(state["best"])  # type: ignore[call-overload]
            if best == -1 or (ll_left <= 0 and not state["same"]):
                break
            required.add(best)
            grab = free[best][:rem]
            free[best] = free[best][len(grab) :]
            taken += grab
            rem -= len(grab)
            if not state["same"]:
                ll_left -= 1
        if rem > 0:
            raise _Pending(
                "insufficient resources in the block (ESLURM_TOPO_INSUFFICIENT_RESOURCES)"
            )
    return taken


@register_solver
class SlurmBlockSolver(Solver):
    """Slurm topology/block, ``eval_nodes_block.c`` (``_choose_best_bblock``)."""

    name = "placement/slurm-block"
    family = "placement"
    complete = False

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """Honours ``segment`` (and ``block``) only."""
        c = instance.constraints
        if any(getattr(c, k) is not None for k in ("required_level", "preferred_level",
                                                    "slice_size", "slice_layers",
                                                    "max_switches")):  # fmt: skip
            return "topology/block honours only --segment (constraints.segment)"
        return None

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        tree = build_tree(instance)
        nodes = _nodes(instance, tree)
        try:
            chosen = slurm_block_nodes(instance, tree, nodes)
        except _Pending as why:
            return pending(instance, f"slurm: {why}", tree)
        placement = _placement(instance, nodes, chosen)
        return Attempt(
            placement,
            TerminationReason.COMPLETED,
            message="slurm topology/block: nodes in node order",
        )
