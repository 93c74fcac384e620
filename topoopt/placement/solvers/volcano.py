"""Volcano's network-topology-aware scheduling (HyperNode tiers) as a placement baseline.

Upstream: volcano-sh/volcano (commit ed72c7c81 read for this port):
``pkg/scheduler/actions/allocate/allocate.go`` (``allocateResources``, ``allocateForJob``,
``allocateResourcesForTasks``, ``getNewAllocatedHyperNode``) and
``pkg/scheduler/plugins/network-topology-aware/network_topology_aware.go``
(``hyperNodeGradientFn``, ``isEligibleHyperNode``, ``HyperNodeOrderFn`` /
``getSubJobHyperNodeBinPackingScore``, ``batchNodeOrderFnForNetworkAwarePods`` /
``networkTopologyAwareScore``, ``scoreWithTaskNum``).

``placement/volcano`` — a job in *hard* network-topology mode: the HyperNodes are searched
tier by tier, lowest first (``hyperNodeGradientFn``: a breadth-first walk from the root
keeps the HyperNodes of tier at most ``highestTierAllowed`` whose idle resources cover the
job, grouped by tier in ascending order); in the first tier where the job can be placed in
some HyperNode, the HyperNode with the highest bin-packing score ``(used + request) /
allocatable`` is chosen (ties: the HyperNode holding more of the job's tasks, none here);
inside it every task goes to the node whose tier-1 HyperNode has the lowest common ancestor
with the job's HyperNode so far (``networkTopologyAwareScore``: full score in the same
HyperNode, ``(maxTier - tier) / (maxTier - minTier)`` otherwise), ties broken by the tasks
the job already has in that HyperNode (``scoreWithTaskNum``).

A job in *soft* mode (``networkTopology.mode: soft``; here: the instance has a
``preferred_level``) has no tier search: ``allocateResources`` sends a job without hard
topology to ``allocateResourcesForTasks`` over ``ClusterTopHyperNode``, so its tasks go one by
one on the node whose tier-1 HyperNode has the lowest common ancestor with the job's so far
(``getNewAllocatedHyperNode``), as inside a HyperNode in hard mode, from the first free node
in node order. Volcano's soft mode has no level of its own: the preferred level only selects
the mode.

**How this port reads Volcano.** HyperNodes: tier 1 is the instance's leaves, tier ``t`` the
level ``L - t``, and a root HyperNode of tier ``L + 1`` holds the minipods (the cluster's top
HyperNode). ``highestTierAllowed`` is the tier of the instance's ``required_level`` (the
root's without one). One task per node, so ``allocatable`` and ``idle`` are the HyperNode's
free nodes (the instance lists no busy ones): the bin-packing score then favours the
HyperNode with the fewest free nodes that holds the job. Node-order ties the plugins leave
(the first task, and equal scores) go to the node order (natural names). Tasks are the
ranks in order, so rank ``k`` runs on the ``k``-th node chosen.
"""

from __future__ import annotations

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solvers._placers import pending, ranked_placement
from topoopt.placement.tree import Tree, build_tree
from topoopt.topology._hostlist import natural_key


def _ancestors(tree: Tree, leaf: int) -> list[tuple[int, int]]:
    """``(tier, switch)`` of the HyperNodes above ``leaf``, tier 1 first, the root last."""
    levels = tree.n_levels
    chain = [(levels - lv, int(tree.switch[lv][leaf])) for lv in range(levels - 1, -1, -1)]
    return [*chain, (levels + 1, 0)]


def volcano_nodes(instance: PlacementInstance, tree: Tree) -> list[tuple[str, int]] | None:
    """``(node, minipod)`` of every task in order, or ``None`` when no HyperNode of an
    allowed tier can hold the job (the job waits)."""
    n, levels = instance.n_nodes, tree.n_levels
    c = instance.constraints
    highest = levels + 1 if c.required_level is None else levels - instance.level(c.required_level)
    free_nodes: list[tuple[str, int, int]] = []  # (node, leaf, minipod)
    for k in range(tree.n_leaves):
        j, local = tree.leaf_key[k]
        pod = instance.minipods[j]
        names = pod.leaves[local].nodes if pod.leaves else tuple(pod.node_names())
        free_nodes += [(name, k, j) for name in names]
    free_nodes.sort(key=lambda x: natural_key(x[0]))
    up = {k: _ancestors(tree, k) for k in range(tree.n_leaves)}
    # HyperNode (tier, id) -> free nodes; the root is (levels + 1, 0)
    idle: dict[tuple[int, int], int] = {(levels + 1, 0): int(tree.leaf_free.sum())}
    for lv in range(levels):
        for s, cap in enumerate(tree.capacity[lv].tolist()):
            idle[levels - lv, s] = int(cap)
    if c.preferred_level is not None:  # soft mode: one gradient, the root HyperNode
        return _inside((levels + 1, 0), free_nodes, up, n, levels)
    for tier in range(1, highest + 1):  # the gradients, lowest tier first
        eligible = sorted(h for h, free in idle.items() if h[0] == tier and free >= n)
        if not eligible:
            continue
        # HyperNodeOrderFn: the highest (used + request) / allocatable, used = 0
        best = max(eligible, key=lambda h: (n / idle[h], -h[1]))
        return _inside(best, free_nodes, up, n, levels)
    return None


def _inside(
    hyper: tuple[int, int],
    free_nodes: list[tuple[str, int, int]],
    up: dict[int, list[tuple[int, int]]],
    n: int,
    levels: int,
) -> list[tuple[str, int]]:
    """The tasks on the nodes of ``hyper``, each by the LCA tier with the job's HyperNode."""
    tier, _ = hyper
    candidates = [x for x in free_nodes if up[x[1]][tier - 1] == hyper]
    rank_of = {x[0]: i for i, x in enumerate(free_nodes)}

    def natural_key_index(name: str) -> int:
        """The node's position in node order (ties go to the earlier node)."""
        return rank_of[name]

    above: dict[tuple[int, int], dict[int, tuple[int, int]]] = {}
    for chain in up.values():  # every HyperNode's ancestors by tier
        for i, h in enumerate(chain):
            above.setdefault(h, {a[0]: a for a in chain[i:]})
    min_tier, max_tier = 1, levels + 1

    def lca(chain: list[tuple[int, int]], h: tuple[int, int]) -> tuple[int, int]:
        """``GetLCAHyperNode`` of a node's tier-1 HyperNode (its ``chain``) and ``h``."""
        for a in chain:
            if a[0] >= h[0] and above[h].get(a[0]) == a:
                return a
        return chain[-1]

    # nodes of one tier-1 HyperNode score alike: pick the HyperNode, then its next node
    by_leaf: dict[int, list[tuple[str, int]]] = {}
    for name, leaf, pod in candidates:
        by_leaf.setdefault(leaf, []).append((name, pod))
    leaves = sorted(by_leaf, key=lambda k: natural_key(by_leaf[k][0][0]))
    chosen: list[tuple[str, int]] = []
    allocated: tuple[int, int] | None = None  # the job's HyperNode so far
    tasks_in: dict[tuple[int, int], int] = {}
    best = -1
    for _ in range(n):
        if best >= 0 and by_leaf[best]:
            # the leaf just used still scores highest: a node of it is in the job's
            # HyperNode, which only grows above it, and its task count only grows
            chosen.append(by_leaf[best].pop(0))
            tasks_in[up[best][0]] += 1
            continue
        best, best_key = -1, None
        for leaf in leaves:
            if not by_leaf[leaf]:
                continue
            chain = up[leaf]
            if allocated is None:
                score = 0.0
            elif chain[0] == allocated:
                score = 1.0
            else:
                score = (max_tier - lca(chain, allocated)[0]) / (max_tier - min_tier)
            key = (score, tasks_in.get(chain[0], 0), -natural_key_index(by_leaf[leaf][0][0]))
            if best_key is None or key > best_key:
                best, best_key = leaf, key
        chosen.append(by_leaf[best].pop(0))
        chain = up[best]
        tasks_in[chain[0]] = tasks_in.get(chain[0], 0) + 1
        allocated = chain[0] if allocated is None else lca(chain, allocated)
    return chosen


@register_solver
class VolcanoSolver(Solver):
    """Volcano network-topology-aware scheduling: HyperNode tiers searched from the lowest."""

    name = "placement/volcano"
    family = "placement"
    complete = False

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """Volcano's requests are a required level (hard mode, ``highestTierAllowed``) or a
        preferred one (soft mode)."""
        c = instance.constraints
        if any(getattr(c, k) is not None for k in ("slice_size", "slice_layers", "segment",
                                                    "max_switches", "block")):  # fmt: skip
            return "Volcano honours only a required level (hard mode) or a preferred one (soft)"
        return None

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        tree = build_tree(instance)
        chosen = volcano_nodes(instance, tree)
        if chosen is None:
            return pending(
                instance,
                "volcano: no HyperNode of an allowed tier can hold the job (pending)",
                tree,
            )
        return Attempt(
            ranked_placement(instance, chosen),
            TerminationReason.COMPLETED,
            message="volcano: tier-ascending HyperNode search",
        )
