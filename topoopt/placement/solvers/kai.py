"""NVIDIA KAI-Scheduler's topology plugin (domain bin-packing) as a placement baseline.

Upstream: NVIDIA/KAI-Scheduler (commit 72de64fc read for this port):
``pkg/scheduler/plugins/topology/job_filtering.go`` (``subSetNodesFn``,
``calculateRelevantDomainLevels``, ``getJobAllocatableDomains``, ``checkJobDomainFit``,
``sortTree``, ``getJobRatioToFreeResources``, ``sortDomainInfos``),
``pkg/scheduler/plugins/topology/topology_utils.go`` (``reverseLevelOrder``),
``pkg/scheduler/plugins/topology/node_scoring.go`` (``calculateNodeScores``) and
``pkg/scheduler/actions/common/allocate.go`` (``allocateSubGroupSet``: the node sets are
tried in order, the first that holds the job wins).

``placement/kai`` — the topology tree (the instance's levels under a root) is sorted for
bin-packing: each domain's children by the job's share of their free resources, descending
(``getJobRatioToFreeResources``: the fullest after placing the job first; ties by ID), down
to the preferred level (else the required one). The candidate domains are those of the
*relevant levels* — from the preferred (or required) level up to the required level, or up
to the root without one — that can hold the whole job (``checkJobDomainFit``), in reverse
level order (``reverseLevelOrder``: the lowest level first, each level in the sorted tree's
breadth-first order). The first candidate is the job's node set. Inside it, with a
preferred level, node ``x`` scores ``floor(10 (i + 1) / m)`` when its preferred-level domain
is the ``i``-th of the ``m`` preferred-level domains of the sorted tree (``calculateNodeScores``
on the lowest common domain of the candidate nodes, ``lowestCommonDomainID``: the root when the
free nodes span the top level); nodes are taken by score, highest first.

The scores are *not* inverted by this port: ``sortTree`` orders children by the job's ratio
descending (``cmp.Compare(jRatio, iRatio)``, although its comment says "ascending"), so domains
that cannot hold the job (ratio > 1) come first and the domains with the most room last, and
``calculateNodeScores`` gives the last the highest score. Upstream thus sends pods to the
preferred-level domains with the most room relative to the job, which keeps a job inside one
preferred domain when one can hold it, at the cost of bin-packing at that level (the test
``TestCalculateNodeScores`` upstream fixes the same arithmetic).

**How this port reads KAI.** One GPU pod per node, so a domain's free GPUs are its free
nodes times the GPUs per node and the ratio is ``n / free``. KAI needs a required or
preferred level (else the plugin reports a configuration error); without one in the
instance the preferred level is the leaves. Equal node scores (and the nodes of a domain)
go in node order (natural names). Rank ``k`` runs on the ``k``-th node taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solvers._placers import pending, ranked_placement
from topoopt.placement.tree import build_tree
from topoopt.topology._hostlist import natural_key


@dataclass(eq=False)
class _Domain:
    ident: str
    level: int
    """The instance level (0 = the minipods), ``-1`` for the root."""
    free: int = 0
    children: list[_Domain] = field(default_factory=list)
    nodes: list[tuple[str, int]] = field(default_factory=list)
    """``(node, minipod)`` below the domain, in node order."""


def _tree(instance: PlacementInstance) -> _Domain:
    tree = build_tree(instance)
    root = _Domain("root", -1)
    made: dict[tuple[int, int], _Domain] = {}
    for k in range(tree.n_leaves):
        j, local = tree.leaf_key[k]
        pod = instance.minipods[j]
        names = pod.leaves[local].nodes if pod.leaves else tuple(pod.node_names())
        parent = root
        for lv in range(tree.n_levels):
            s = int(tree.switch[lv][k])
            here = made.get((lv, s))
            if here is None:
                here = made[lv, s] = _Domain(tree.switch_names[lv][s], lv)
                parent.children.append(here)
            parent = here
        for d in [root, *(made[lv, int(tree.switch[lv][k])] for lv in range(tree.n_levels))]:
            d.free += len(names)
            d.nodes += [(x, j) for x in names]
    for d in [root, *made.values()]:
        d.nodes.sort(key=lambda x: natural_key(x[0]))
    return root


def _ratio(n: int, domain: _Domain) -> float:
    """``getJobRatioToFreeResources`` for whole-node pods: the job's nodes over the free."""
    return n / domain.free if domain.free else float("inf")


def _sort(n: int, domain: _Domain, depth: int) -> None:
    """``sortTree``: children by ratio descending, then ID, down to level ``depth``."""
    domain.children.sort(key=lambda c: (-_ratio(n, c), c.ident))
    if domain.level == depth:
        return
    for child in domain.children:
        _sort(n, child, depth)


def _reverse_level_order(root: _Domain) -> list[_Domain]:
    levels, queue = [], [root]
    while queue:
        levels.append(queue)
        queue = [c for d in queue for c in d.children]
    return [d for level in reversed(levels) for d in level]


def _level_domains(domain: _Domain, level: int) -> list[_Domain]:
    if domain.level == level:
        return [domain]
    return [x for c in domain.children for x in _level_domains(c, level)]


def kai_nodes(instance: PlacementInstance) -> list[tuple[str, int]] | None:
    """``(node, minipod)`` of every pod in order, or ``None`` when no domain of the relevant
    levels holds the job."""
    n = instance.n_nodes
    c = instance.constraints
    last = instance.n_levels - 1
    required = None if c.required_level is None else instance.level(c.required_level)
    preferred = None if c.preferred_level is None else instance.level(c.preferred_level)
    if required is None and preferred is None:
        preferred = last
    root = _tree(instance)
    depth = preferred if preferred is not None else required
    assert depth is not None
    _sort(n, root, depth)
    # relevant levels, lowest first: from the preferred (or required) one up to the
    # required one, or to the root
    start = preferred if preferred is not None else required
    assert start is not None
    stop = required if required is not None else -1
    relevant = set(range(start, stop - 1, -1))
    candidates = [d for d in _reverse_level_order(root) if d.level in relevant and d.free >= n]
    if not candidates:
        return None
    chosen = candidates[0]
    nodes = list(chosen.nodes)
    if preferred is not None and chosen.level <= preferred:
        # scored over every preferred-level domain of the tree (KAI scores the lowest common
        # domain of the candidate nodes: all free nodes, the root here), not only the chosen's
        domains = _level_domains(root, preferred)
        m = len(domains)
        score = {x: int(10 * (i + 1) / m) for i, d in enumerate(domains) for x, _ in d.nodes}
        nodes.sort(key=lambda x: -score[x[0]])  # stable: node order within a score
    return nodes[:n]


@register_solver
class KaiSolver(Solver):
    """KAI-Scheduler topology plugin: the first domain of the bin-packed tree that holds the
    job."""

    name = "placement/kai"
    family = "placement"
    complete = False

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """KAI's constraints are a required and a preferred level."""
        c = instance.constraints
        if any(getattr(c, k) is not None for k in ("slice_size", "slice_layers", "segment",
                                                    "max_switches", "block")):  # fmt: skip
            return "KAI honours a required and a preferred level only"
        return None

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        chosen = kai_nodes(instance)
        if chosen is None:
            return pending(
                instance, "kai: no domain of the relevant levels holds the job (pending)"
            )
        return Attempt(
            ranked_placement(instance, chosen),
            TerminationReason.COMPLETED,
            message="kai: first domain of the bin-packed tree",
        )
