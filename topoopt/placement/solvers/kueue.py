"""Kueue Topology Aware Scheduling (TAS) as placement baselines, ported rule by rule.

Upstream: kubernetes-sigs/kueue, ``pkg/cache/scheduler/tas_flavor_snapshot.go`` (commit
ff69552e79 read for this port) — ``findTopologyAssignment`` (phase 1 ``fillInCounts`` /
``fillInCountsHelper``; phase 2a ``findLevelWithFitDomains``; phase 2b the two descent loops
with ``updateCountsToMinimumGeneric``; ``buildAssignment``), ``sortedDomains``,
``findBestFitDomainForSlices``; and ``pkg/cache/scheduler/tas_balanced_placement.go``
(``findBestDomainsForBalancedPlacement``, ``applyBalancedPlacementAlgorithm``,
``selectOptimalDomainSetToFit``, ``placeSlicesOnDomainsBalanced``,
``pruneDomainsBelowThreshold``). Three solvers:

* ``placement/kueue-best-fit`` — the BestFit profile (``useBestFitAlgorithm``): domains sorted
  by slices that fit descending, then free pods ascending, then level values; the last
  domain of a greedy run is replaced by the best fit (the smallest that holds the rest);
* ``placement/kueue-least-free`` — LeastFreeCapacity (``TASProfileMixed``, default on since
  Kueue 0.15): used for *unconstrained* requests, domains sorted by slices ascending;
* ``placement/kueue-balanced`` — BalancedPlacement (feature gate ``TASBalancedPlacement``,
  alpha): for a *preferred* request, the domains one level above are scored by the largest
  minimum number of slices every chosen domain can take (the balance threshold), the
  domains below the threshold pruned, the fewest domains of least total capacity chosen by
  dynamic programming, and the slices spread evenly.

**How this port reads Kueue** (documented choices where our instance and Kueue differ):

* The domain tree is the instance's levels plus a hostname level below the leaves (Kueue's
  recommended ``kubernetes.io/hostname`` lowest level): every free node is a domain that
  holds one pod (one pod per node, as a GPU training pod takes the node).
* The request comes from the instance's constraints: ``required_level`` is
  ``podset-required-topology``, ``preferred_level`` is ``podset-preferred-topology``,
  ``slice_size`` / ``slice_level`` are ``podset-slice-size`` /
  ``podset-slice-required-topology``; ``slice_layers`` is
  ``podset-slice-required-topology-constraints`` (multi-layer slices, feature gate
  ``TASMultiLayerTopology``): its first layer is the slice size and level, the others give
  ``sliceSizeAtLevel`` (``buildSliceSizeAtLevel``: every level from below the layer before
  down to a layer's level takes that layer's size), which ``fillInCountsHelper`` rounds the
  children's pods down to and the descent below the first layer's level distributes in
  (balanced placement's re-count after pruning ignores them, as upstream passes ``nil``).
  Without a level, best-fit and balanced ask for the
  level just above the leaves as *preferred* (a training job's
  ``podset-preferred-topology: block`` over racks; BestFit climbs from there as from the
  leaves, and BalancedPlacement then balances the job over the leaves), and least-free
  reads the request as Kueue's implied one: unconstrained at the lowest level.
  A slice-only request is unconstrained at the highest level (``levelKey``).
* Leaders, node affinity and taints do not exist here (every ``leaderCount`` is 0).
* Rank order: Kueue's ``TopologyAssignment`` lists the chosen lowest-level domains sorted by
  their level values (``buildAssignment``); pods take them in that order by index, so rank
  ``k`` runs on the ``k``-th chosen node in that order.

A request Kueue cannot place leaves the workload pending: the result has no solution and
says Kueue's reason (termination ``infeasible`` when the free nodes show the request is
impossible, :func:`topoopt.placement.constraints.infeasible_reason`). Slurm's ``segment`` and
``max_switches`` are not Kueue's: instances stating them are declined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solvers._placers import pending, ranked_placement
from topoopt.placement.tree import build_tree


@dataclass(eq=False)
class Domain:
    """A Kueue topology domain with its per-snapshot state (``domain`` + ``domainState``)."""

    values: tuple[str, ...]
    children: list[Domain] = field(default_factory=list)
    parent: Domain | None = None
    pod_count: int = 0
    slice_count: int = 0
    pod: int = -1
    """For a hostname domain: the minipod index of the node."""

    @property
    def name(self) -> str:
        """The node name of a hostname domain (its last level value)."""
        return self.values[-1]


@dataclass
class Request:
    """What ``findTopologyAssignment`` reads from a PodSet's topology request."""

    count: int
    slice_size: int
    slice_level: int
    requested_level: int
    required: bool
    unconstrained: bool
    least_free: bool = False
    """``useLeastFreeCapacityAlgorithm``: unconstrained with ``TASProfileMixed`` on."""
    inner: dict[int, int] = field(default_factory=dict)
    """``sliceSizeAtLevel``: the slice size of the inner layers at each level below the
    first layer's."""


def domain_tree(instance: PlacementInstance) -> list[list[Domain]]:
    """``domainsPerLevel``: the instance's levels and a hostname level below (one domain per
    free node, ``podCount`` 1), in topology order."""
    tree = build_tree(instance)
    levels = tree.n_levels
    per_level: list[list[Domain]] = [[] for _ in range(levels + 1)]
    made: dict[tuple[str, ...], Domain] = {}
    for k in range(tree.n_leaves):
        j, local = tree.leaf_key[k]
        pod = instance.minipods[j]
        if pod.leaves:
            leaf = pod.leaves[local]
            chain = (pod.name, *leaf.path, f"{leaf.name}#{local}") if levels > 1 else (pod.name,)
            nodes = leaf.nodes
        else:  # one leaf: the minipod stands for itself at every level
            chain = (pod.name,) * levels
            nodes = tuple(pod.node_names())
        parent: Domain | None = None
        for lv in range(levels):
            key = (*chain[: lv + 1], str(j))
            here = made.get(key)
            if here is None:
                here = Domain(chain[: lv + 1], parent=parent)
                made[key] = here
                per_level[lv].append(here)
                if parent is not None:
                    parent.children.append(here)
            parent = here
        for node in nodes:
            host = Domain((*chain, node), parent=parent, pod=j)
            assert parent is not None
            parent.children.append(host)
            per_level[levels].append(host)
    return per_level


def fill_in_counts(
    roots: list[Domain], slice_size: int, slice_level: int, inner: dict[int, int] | None = None
) -> None:
    """``fillInCounts``: a hostname domain holds 1 pod; a parent the sum of its children
    (each rounded down to a multiple of ``inner[level]``, the inner slice layer's size at
    the child's level, when there is one); ``sliceCount`` is ``podCount // sliceSize`` at
    the slice level and the sum of the children's above it (``fillInCountsHelper``,
    without leaders)."""
    inner = inner or {}

    def helper(domain: Domain, level: int) -> None:
        if not domain.children:  # a hostname holds one pod; a leaf without free nodes none
            domain.pod_count = 1 if domain.pod >= 0 else 0
            domain.slice_count = domain.pod_count // slice_size if level == slice_level else 0
            return
        pods = slices = 0
        size = inner.get(level + 1, 1)
        for child in domain.children:
            helper(child, level + 1)
            pods += child.pod_count // size * size
            slices += child.slice_count
        domain.pod_count = pods
        domain.slice_count = pods // slice_size if level == slice_level else slices

    for root in roots:
        helper(root, 0)


def sorted_domains(domains: list[Domain], least_free: bool) -> list[Domain]:
    """``sortedDomains``: BestFit ``sliceCount`` descending (LeastFreeCapacity ascending),
    then ``podCount`` ascending, then level values ascending."""
    sign = 1 if least_free else -1
    return sorted(domains, key=lambda d: (sign * d.slice_count, d.pod_count, d.values))


def best_fit(domains: list[Domain], needed: int) -> Domain:
    """``findBestFitDomainForSlices``: the first domain with the smallest ``sliceCount`` that
    is at least ``needed`` (the first domain when none is)."""
    chosen, count = domains[0], None
    for domain in domains:
        if domain.slice_count >= needed and (count is None or domain.slice_count < count):
            chosen, count = domain, domain.slice_count
    return chosen


class NoFit(Exception):
    """Kueue cannot place the request (the workload stays pending); the message is its
    reason."""


def find_level(
    per_level: list[list[Domain]], level: int, request: Request
) -> tuple[int, list[Domain]]:
    """``findLevelWithFitDomains``: the level and the domains the assignment starts from."""
    least_free = request.least_free
    ordered = sorted_domains(per_level[level], least_free)
    if not ordered:
        raise NoFit(f"no topology domains at level {level}")
    needed = request.count // request.slice_size
    top = ordered[0]
    if not least_free and top.slice_count >= needed:
        top = best_fit(ordered, needed)
    if least_free:
        for candidate in ordered:
            if candidate.slice_count >= needed:
                return level, [candidate]
        if request.required:
            raise NoFit(
                f"{ordered[-1].pod_count} pods fit in the best domain, {needed} slices needed"
            )
    if top.slice_count < needed:
        if request.required:
            raise NoFit(f"the best domain holds {top.slice_count} of {needed} slices")
        if level > 0 and not request.unconstrained:
            return find_level(per_level, level - 1, request)
        chosen, left = [], needed
        for i, domain in enumerate(ordered):
            if left <= 0:
                break
            if not least_free and domain.slice_count >= left:
                domain = best_fit(ordered[i:], left)
            chosen.append(domain)
            left -= domain.slice_count
        if left > 0:
            raise NoFit(f"the domains hold {needed - left} of {needed} slices")
        return level, chosen
    return level, [top]


def to_minimum(
    domains: list[Domain], count: int, slice_size: int, least_free: bool, slices: bool
) -> list[Domain]:
    """``updateCountsToMinimumGeneric`` (no leaders): take domains in order until they hold
    ``count`` pods (in whole slices when ``slices``), each set to what it takes; with
    BestFit the domain that can hold the rest is replaced by the best fit among those
    left."""
    result: list[Domain] = []
    left = count // slice_size if slices else count
    for i, domain in enumerate(domains):
        if slices:
            if not least_free and domain.slice_count >= left:
                domain = best_fit(domains[i:], left)
            if domain.slice_count >= left:
                domain.pod_count, domain.slice_count = left * slice_size, left
                result.append(domain)
                return result
            domain.pod_count = domain.slice_count * slice_size
            left -= domain.slice_count
            result.append(domain)
            continue
        if not least_free and domain.pod_count >= left:
            domain = _best_fit_pods(domains[i:], left)
        if domain.pod_count >= left:
            domain.pod_count = left
            result.append(domain)
            return result
        left -= domain.pod_count
        result.append(domain)
    if left == 0:  # no domain and nothing to place (a domain given no pods: upstream logs
        return result  # "unexpected remainingCount" and returns no domains)
    raise NoFit(f"{left} {'slices' if slices else 'pods'} left after every domain")


def _best_fit_pods(domains: list[Domain], needed: int) -> Domain:
    """``findBestFitDomain``: the first domain with the smallest ``podCount`` >= ``needed``."""
    chosen, count = domains[0], None
    for domain in domains:
        if domain.pod_count >= needed and (count is None or domain.pod_count < count):
            chosen, count = domain, domain.pod_count
    return chosen


def descend(
    per_level: list[list[Domain]],
    fit_level: int,
    fit: list[Domain],
    request: Request,
    balanced: bool,
) -> list[Domain]:
    """Phase 2b of ``findTopologyAssignment``: from the fit domains down to the hostnames.
    Above the slice level (and not balanced) all children of the current domains are taken
    greedily for the whole count; at and below it each domain's pods go to its children."""
    least_free = request.least_free
    lowest = len(per_level) - 1
    level = fit_level
    fit = to_minimum(fit, request.count, request.slice_size, least_free, True)
    if not balanced:
        while level < min(lowest, request.slice_level):
            below = sorted_domains([c for d in fit for c in d.children], least_free)
            fit = to_minimum(below, request.count, request.slice_size, least_free, True)
            level += 1
    while level < lowest:
        size = request.slice_size
        if level >= request.slice_level:  # below the first layer: the inner layers' sizes
            size = request.inner.get(level + 1, 1)
        out: list[Domain] = []
        for domain in fit:
            children = sorted_domains(domain.children, least_free)
            if size > 1:
                for child in children:
                    child.slice_count = child.pod_count // size
            out += to_minimum(children, domain.pod_count, size, least_free, size > 1)
        fit = out
        level += 1
    return fit


# --- balanced placement (tas_balanced_placement.go, without leaders) --------------------------


def _clone(domain: Domain, parent: Domain | None = None) -> Domain:
    """``cloneDomain``: a copy of the subtree with its state (the copy's parent is
    ``parent``)."""
    out = Domain(domain.values, [], parent, domain.pod_count, domain.slice_count, domain.pod)
    out.children = [_clone(c, out) for c in domain.children]
    return out


def _greedy(domains: list[Domain], needed: int) -> tuple[bool, int, Domain | None]:
    """``evaluateGreedyAssignment``: whether the BestFit order fits ``needed`` slices, how
    many domains it takes and the last one."""
    count, last, left = 0, None, needed
    for domain in sorted_domains(domains, False):
        if left <= 0 or domain.slice_count <= 0:
            break
        count, last = count + 1, domain
        left -= domain.slice_count
    return left <= 0, count, last


def _prune(domains: list[Domain], threshold: int, request: Request, level: int) -> None:
    """``pruneDomainsBelowThreshold``: children that cannot take ``threshold`` slices are
    emptied, the counts refilled, and so is a domain below it."""

    def clear(d: Domain) -> None:
        d.pod_count = d.slice_count = 0
        for c in d.children:
            clear(c)

    for d in domains:
        for c in d.children:
            if c.slice_count < threshold:
                clear(c)
    for d in domains:
        _refill(d, request, level)
        if d.slice_count < threshold:
            clear(d)


def _refill(domain: Domain, request: Request, level: int) -> None:
    """``fillInCountsHelper`` on a subtree whose leaves keep their (pruned) counts."""
    if not domain.children:
        if level == request.slice_level:
            domain.slice_count = domain.pod_count // request.slice_size
        return
    pods = slices = 0
    for c in domain.children:
        _refill(c, request, level + 1)
        pods += c.pod_count
        slices += c.slice_count
    domain.pod_count = pods
    domain.slice_count = pods // request.slice_size if level == request.slice_level else slices


def _entropy(domain: Domain) -> float:
    """``calculateDomainsEntropy`` of a domain's children: of their shares of its pods."""
    total = sum(c.pod_count for c in domain.children)
    if total == 0:
        return 0.0
    return -sum(
        c.pod_count / total * math.log2(c.pod_count / total)
        for c in domain.children
        if c.pod_count > 0
    )


def _optimal_set(
    domains: list[Domain], needed: int, request: Request, by_entropy: bool = False
) -> list[Domain] | None:
    """``selectOptimalDomainSetToFit`` (no leaders): among the sets of as many domains as the
    greedy run needs, the first found (domains in level-value order, or with ``by_entropy``
    by slices descending then the entropy of their children descending,
    ``compareDomainCapacityAndEntropy``) with the pods left over closest to 0 from below."""
    fits, count, _ = _greedy(domains, needed)
    if not fits:
        return None
    if by_entropy:
        ordered = sorted(domains, key=lambda d: (-d.slice_count, -_entropy(d), d.values))
    else:
        ordered = sorted(domains, key=lambda d: d.values)
    table: list[dict[int, list[Domain]]] = [{} for _ in range(count + 1)]
    table[0][needed * request.slice_size] = []
    # Upstream loops over every i for every domain; rows above the domains seen so far are
    # empty and a domain without slices extends nothing, so both are skipped (same result:
    # 2,048 hosts took 5.8 s).
    for seen, domain in enumerate(ordered):
        if domain.slice_count <= 0:
            continue
        for i in range(min(count, seen + 1), 0, -1):
            for before in sorted(table[i - 1]):
                if before <= 0:
                    continue
                after = before - domain.pod_count
                if after not in table[i]:
                    table[i][after] = [*table[i - 1][before], domain]
    best = [left for left in table[count] if left <= 0]
    return table[count][max(best)] if best else None


def balanced(per_level: list[list[Domain]], request: Request) -> tuple[int, list[Domain]] | None:
    """``findBestDomainsForBalancedPlacement`` + ``applyBalancedPlacementAlgorithm``: the
    domains with slices set evenly, or ``None`` when no threshold above 0 exists (then Kueue
    falls back to BestFit)."""
    needed = request.count // request.slice_size
    level = request.requested_level
    if level == 0:
        groups = [per_level[0]]
    else:
        groups = [d.children for d in sorted(per_level[level - 1], key=lambda d: d.values)]
    best_threshold, best_count, fit = 0, 0, None
    for siblings in groups:
        candidates = [_clone(d) for d in siblings]
        below = (
            [c for d in candidates for c in d.children]
            if level < request.slice_level
            else candidates
        )
        fits, count, last = _greedy(below, needed)
        if not fits or count == 0:
            continue
        threshold = needed // count
        if last is not None:
            threshold = min(threshold, last.slice_count)
        if threshold >= best_threshold:
            _prune(candidates, threshold, request, level)
            fits, on_level, _ = _greedy(candidates, needed)
            if not fits:
                continue
            if threshold > best_threshold or (
                threshold == best_threshold and on_level < best_count
            ):
                best_threshold, best_count, fit = threshold, on_level, candidates
    if best_threshold <= 0 or fit is None:
        return None
    fit_level = level
    if level < request.slice_level:
        chosen = _optimal_set(fit, needed, request, by_entropy=True)
        if chosen is None:
            return None
        fit = [c for d in chosen for c in d.children]
        fit_level = level + 1
    chosen = _optimal_set(fit, needed, request)
    if chosen is None or needed < len(chosen) * best_threshold:
        return None
    extra = needed - len(chosen) * best_threshold
    for domain in sorted_domains(chosen, False):
        take = min(domain.slice_count - best_threshold, extra) if extra > 0 else 0
        domain.slice_count = best_threshold + take
        domain.pod_count = domain.slice_count * request.slice_size
        extra -= take
    if extra > 0:
        return None
    return fit_level, chosen


# --- the solvers -------------------------------------------------------------------------------


def kueue_request(instance: PlacementInstance, profile: str) -> Request:
    """The PodSet request this port reads from the instance (see the module docstring)."""
    c = instance.constraints
    hostnames = instance.n_levels  # the hostname level's index
    slice_size = c.slice_size or 1
    slice_level = hostnames if c.slice_size is None else instance.level(c.slice_level or -1)
    inner: dict[int, int] = {}
    if c.slice_layers:  # the first layer as the slice, the others by level
        slice_size, slice_level = c.slice_layers[0][0], instance.level(c.slice_layers[0][1])
        above = slice_level
        for size, name in c.slice_layers[1:]:
            at = instance.level(name)
            inner.update(dict.fromkeys(range(above + 1, at + 1), size))
            above = at
    if c.required_level is not None:
        return Request(instance.n_nodes, slice_size, slice_level,
                       instance.level(c.required_level), True, False, inner=inner)  # fmt: skip
    if c.preferred_level is not None:
        return Request(instance.n_nodes, slice_size, slice_level,
                       instance.level(c.preferred_level), False, False, inner=inner)  # fmt: skip
    if c.slice_size is not None or c.slice_layers:  # slices only: unconstrained at the top
        return Request(instance.n_nodes, slice_size, slice_level, 0, False, True, inner=inner)
    if profile == "least-free":  # implied: unconstrained at the lowest level
        return Request(instance.n_nodes, 1, hostnames, hostnames, False, True)
    above_leaves = max(instance.n_levels - 2, 0)
    return Request(instance.n_nodes, 1, hostnames, above_leaves, False, False)


def kueue_nodes(instance: PlacementInstance, profile: str) -> list[Domain]:
    """The hostname domains Kueue assigns, in ``buildAssignment`` order (one pod each).

    Raises
    ------
    NoFit
        When Kueue leaves the workload pending.
    """
    per_level = domain_tree(instance)
    request = kueue_request(instance, profile)
    request.least_free = profile == "least-free" and request.unconstrained
    fill_in_counts(per_level[0], request.slice_size, request.slice_level, request.inner)
    found = None
    if profile == "balanced" and not request.required and not request.unconstrained:
        found = balanced(per_level, request)
    if found is not None:
        fit_level, fit = found
        hosts = descend(per_level, fit_level, fit, request, balanced=True)
    else:
        fit_level, fit = find_level(per_level, request.requested_level, request)
        hosts = descend(per_level, fit_level, fit, request, balanced=False)
    chosen = [h for h in hosts if h.pod_count > 0]
    return sorted(chosen, key=lambda h: h.values)


class _Kueue(Solver):
    """Kueue TAS with one profile (see the module docstring)."""

    family = "placement"
    complete = False
    profile = "best-fit"

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """Slurm's segment and switch count are not Kueue's."""
        c = instance.constraints
        if c.segment is not None or c.max_switches is not None or c.block:
            return "Slurm's segment, max_switches and block are not Kueue requests"
        return None

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        try:
            hosts = kueue_nodes(instance, self.profile)
        except NoFit as why:
            return pending(instance, f"kueue: {why} (pending)")
        return Attempt(
            ranked_placement(instance, [(host.name, host.pod) for host in hosts]),
            TerminationReason.COMPLETED,
            message=f"kueue {self.profile}: {len(hosts)} nodes in level-value order",
        )


@register_solver
class KueueBestFitSolver(_Kueue):
    """Kueue TAS, BestFit profile (``tas_flavor_snapshot.go``, ``findTopologyAssignment``)."""

    name = "placement/kueue-best-fit"
    profile = "best-fit"


@register_solver
class KueueLeastFreeSolver(_Kueue):
    """Kueue TAS, LeastFreeCapacity profile for unconstrained requests (``TASProfileMixed``)."""

    name = "placement/kueue-least-free"
    profile = "least-free"


@register_solver
class KueueBalancedSolver(_Kueue):
    """Kueue TAS, BalancedPlacement for preferred requests (``tas_balanced_placement.go``)."""

    name = "placement/kueue-balanced"
    profile = "balanced"
