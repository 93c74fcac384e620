"""``clusterselect/spinsearch``: SpiderFlow's SpinSearch (§4.1.2–4.1.4, eq. 2–8).

The paper's steps, as implemented (§4.1.4 fixes the order; the equations fix the keys):

1. **Bandwidth-first ordering.** Every cluster gets a score ``B_i``: the sum of its link
   bandwidths (eq. 2), or the widest-path bandwidth from the source cluster when the task has
   one (eq. 3). Clusters are sorted by ``B_i``, descending (ties: more free GPUs, then instance
   order).
2. **One cluster when one suffices.** The source if it holds the task, else the first cluster
   in that order with ``g_i >= d``.
3. **Hop-based expansion.** The anchor ``s*`` is ``argmax B_i`` (eq. 5: the source under eq. 3
   scores, where ``beta(r -> r) = inf``; the best-connected cluster under eq. 2). The
   candidates ``C(r)`` are the clusters within ``r`` hops of it (eq. 6); the radius grows until
   ``C(r)`` holds ``d`` free GPUs. Within ``C(r)`` the anchor's GPUs are pre-allocated, then
   clusters are visited by the key ``(beta(s* -> i), g_i, B_i)`` (eq. 7, descending): the first
   one holding the residual demand ``R`` takes it; when none does, the cluster with the most
   free GPUs is taken whole and ``R`` shrinks (``Δ_i = min(g_i, R)``, eq. 4), as in the Fig. 4(b)
   walk-through.

Cost (eq. 8): the scores take ``O(m)``, the sorts ``O(n log n)``, the hop layers one BFS
``O(n + m)``; step 3 pushes and pops each candidate once in a heap, ``O(n log n)``. The
widest paths from the anchor come from the cluster graph's maximum spanning tree, built once
per instance in ``O(m log m)`` (:mod:`topoopt.crosscluster.graph`).

SpinSearch is a heuristic: the first radius that holds the task may need more clusters than a
wider one, and the anchor is always used.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.clusterselect.solution import Selection
from topoopt.core.errors import InvalidOptionError
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.crosscluster.graph import ClusterGraph

EXPANSIONS = ("first", "all")
"""Values of the ``expand`` option: stop at the first radius that holds the task (the paper's
SpinSearch), or try every radius and keep the best key."""
STOPPED = " (stopped by the time limit)"
"""End of the message of an ``expand="all"`` search that the time limit cut short."""
SCORES = ("auto", "incident", "source")
"""Values of the ``score`` option: eq. 3 when the task has a source else eq. 2 (``auto``), always
eq. 2 (``incident``), always eq. 3 (``source``, needs a source)."""


def scores(instance: ClusterSelectInstance, score: str = "auto") -> list[float]:
    """``B_i`` for every cluster: eq. 2 (incident bandwidth) or eq. 3 (widest path from the
    source)."""
    if score not in SCORES:
        raise InvalidOptionError(f"score: must be one of {', '.join(SCORES)}, got {score!r}")
    if score == "source" and instance.source is None:
        raise InvalidOptionError("score: 'source' needs an instance with a source cluster")
    if instance.source is not None and score != "incident":
        return instance.graph.widest_from(instance.source)
    return instance.graph.incident_bandwidth()


def fill(order: list[int], free: list[int], demand: int, first: int | None = None) -> list[int]:
    """``Δ`` over the candidates ``order`` (eq. 7 order): ``first`` pre-allocated, then the first
    candidate holding the residual takes it, else the largest candidate is taken whole (eq. 4).

    Assumes the candidates hold ``demand`` GPUs together.

    Examples
    --------
    >>> fill([0, 1, 2, 3], [4, 3, 8, 12], 16, first=0)  # a pre-allocated, then 12 fits
    [4, 0, 0, 12]
    >>> fill([0, 1, 2], [2, 3, 4], 8)  # none holds 8 or 4: take 4 and 3, then the first fits
    [1, 3, 4]
    """
    take = [0] * len(free)
    residual = demand
    if first is not None:
        take[first] = min(free[first], residual)
        residual -= take[first]
    # the candidates with free GPUs, largest first (ties in eq. 7 order), and their positions
    sizes = np.asarray(free, dtype=np.int64)
    open_ = np.asarray(order, dtype=np.int64)
    keep = sizes[open_] > 0
    if first is not None:
        keep &= open_ != first
    positions = np.flatnonzero(keep)
    by_rank = np.argsort(-sizes[open_[positions]], kind="stable")
    by_size = open_[positions[by_rank]].tolist()
    position_of = positions[by_rank].tolist()  # eq. 7 position of by_size[k]
    fitting: list[int] = []  # heap of eq. 7 positions of candidates with g_i >= residual
    added = largest = 0
    while residual > 0:
        while added < len(by_size) and free[by_size[added]] >= residual:
            heapq.heappush(fitting, position_of[added])
            added += 1
        while fitting and take[order[fitting[0]]]:
            heapq.heappop(fitting)
        if fitting:
            take[order[fitting[0]]] = residual
            return take
        while take[by_size[largest]]:
            largest += 1
        chosen = by_size[largest]
        take[chosen] = free[chosen]
        residual -= free[chosen]
    return take


def spinsearch(
    instance: ClusterSelectInstance,
    score: str = "auto",
    expand: str = "first",
    expired: Callable[[], bool] = lambda: False,
) -> tuple[list[int], str]:
    """SpinSearch's ``Δ`` per cluster (instance order) and which step decided it.

    ``expand="first"`` stops at the first radius whose candidates hold the task (the paper);
    ``"all"`` fills every radius up to the anchor's eccentricity and keeps the best key, and
    stops early with the best so far when ``expired()`` says the time is up (the message then
    says so).
    """
    if expand not in EXPANSIONS:
        raise InvalidOptionError(f"expand: must be one of {', '.join(EXPANSIONS)}, got {expand!r}")
    graph, free, demand = instance.graph, instance.free, instance.demand
    b = np.asarray(scores(instance, score), dtype=np.float64)
    sizes = np.asarray(free, dtype=np.int64)
    at = np.arange(graph.n)
    order = np.lexsort((at, -sizes, -b))  # B_i descending, then more free GPUs, then order
    single = order[sizes[order] >= demand]
    if len(single):
        source = graph.index.get(instance.source) if instance.source else None
        pick = source if source is not None and free[source] >= demand else int(single[0])
        take = [0] * graph.n
        take[pick] = demand
        return take, f"one cluster ({graph.clusters[pick]}) holds the task"
    anchor = int(order[0])  # eq. 5; with eq. 3 scores the source (beta(r -> r) = inf)
    name = graph.clusters[anchor]
    hops = graph.hop_counts(name)  # eq. 6: C(r) = {i : hops[i] <= r}
    width = np.asarray(graph.widest_from(name))
    ranked = np.lexsort((at, -b, -sizes, -width))  # eq. 7: (beta(s* -> i), g_i, B_i) descending
    held = np.cumsum(np.bincount(hops, weights=sizes))  # free GPUs within each radius
    radii = range(int(np.argmax(held >= demand)), len(held))
    best: tuple[tuple[int, int], list[int], int] | None = None  # (K, rank), take, radius
    best_latency: float | None = None  # computed when a later radius ties on (K, rank)
    for radius in radii:
        take = fill(ranked[hops[ranked] <= radius].tolist(), free, demand, first=anchor)
        if expand == "first":
            return take, f"hop expansion from {name}, radius {radius}"
        # the key (K, rank, latency) compared in order; an earlier radius wins a full tie
        head = (sum(1 for t in take if t > 0), graph.rank(graph.bottleneck(_chosen(graph, take))))
        if best is None or head < best[0]:
            best, best_latency = (head, take, radius), None
        elif head == best[0]:
            if best_latency is None:
                best_latency = graph.total_latency(_chosen(graph, best[1]))
            latency = graph.total_latency(_chosen(graph, take))
            if latency < best_latency:
                best, best_latency = (head, take, radius), latency
        if expired() and radius < radii[-1]:
            return best[1], f"hop expansion from {name}, best radius {best[2]}{STOPPED}"
    assert best is not None  # the whole graph holds the task
    return best[1], f"hop expansion from {name}, best radius {best[2]}"


def _chosen(graph: ClusterGraph, take: list[int]) -> list[str]:
    """The names of the clusters with GPUs taken."""
    return [graph.clusters[i] for i, t in enumerate(take) if t > 0]


@register_solver
class SpinSearchSolver(Solver):
    """SpiderFlow's SpinSearch: bandwidth-first ordering, FFD, hop expansion (eq. 2–7).

    Options: ``score`` — ``"auto"`` (eq. 3 with a source, else eq. 2), ``"incident"`` (eq. 2)
    or ``"source"`` (eq. 3); ``expand`` — ``"first"`` (the paper: the first radius that holds
    the task) or ``"all"`` (every radius, the best key).
    """

    name = "clusterselect/spinsearch"
    family = "clusterselect"

    def _solve(
        self,
        instance: ClusterSelectInstance,
        ctx: SolveContext,
        *,
        score: str = "auto",
        expand: str = "first",
    ) -> Attempt:
        take, how = spinsearch(instance, score, expand, expired=ctx.expired)
        stopped = how.endswith(STOPPED)
        return Attempt(
            Selection.from_counts(instance, take),
            TerminationReason.TIME_LIMIT if stopped else TerminationReason.COMPLETED,
            message=how,
        )
