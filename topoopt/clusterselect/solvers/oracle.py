"""``clusterselect/enumerate``: the enumeration oracle.

Every set ``S`` of clusters whose free GPUs hold the task, by increasing size; the first size
with such a set is the optimal ``K`` (a smaller ``K`` always wins), and every set of that size
is scored by its key (bottleneck rank, then latency) from dense widest-path and latency tables.
Sizes whose ``k`` largest clusters cannot hold the task are skipped (no set of that size can),
and so are the clusters too small to be in any set of ``k`` that holds it (``g_i < d - `` the
``k - 1`` largest ``g``); the tables are computed for the others only. The GPUs are then taken
from the chosen clusters in order (any split is optimal: the key depends on ``S`` only).
Exponential in ``n``; the time limit is checked between table rows and between batches of sets
(stopped, it returns the best set so far, or the ``k`` largest clusters).
"""

from __future__ import annotations

import itertools
import math

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.clusterselect.solution import Selection, fewest_clusters, scalar, split
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason

MAX_SETS = 2_000_000
"""Most sets of the optimal size the oracle agrees to enumerate."""


def count_sets(n: int, k: int, limit: int) -> int:
    """``comb(n, k)``, or the first partial product above ``limit`` (the exact count of a huge
    instance would take long to compute and has thousands of digits).

    Examples
    --------
    >>> count_sets(28, 3, 10**6), count_sets(100_000, 13_000, 10**6) > 10**6
    (3276, True)
    """
    count = 1
    for j in range(min(k, n - k)):
        count = count * (n - j) // (j + 1)  # comb(n, j + 1), growing while j + 1 <= n / 2
        if count > limit:
            return count
    return count


@register_solver
class EnumerateSolver(Solver):
    """Enumeration oracle: every set of the fewest clusters, scored by bottleneck and latency."""

    name = "clusterselect/enumerate"
    family = "clusterselect"
    exact = True
    gives_bound = True

    @classmethod
    def unsupported_reason(cls, instance: ClusterSelectInstance) -> str | None:
        """Why the oracle refuses ``instance`` (more than :data:`MAX_SETS` sets), or ``None``."""
        k = fewest_clusters(instance.free, instance.demand)
        sets = count_sets(instance.n_clusters, k, MAX_SETS)
        if sets > MAX_SETS:
            return (
                f"more than {MAX_SETS} sets of {k} clusters (the oracle's limit); use "
                "clusterselect/mip or clusterselect/spinsearch"
            )
        return None

    def _solve(self, instance: ClusterSelectInstance, ctx: SolveContext) -> Attempt:
        graph, free, demand = instance.graph, instance.free, instance.demand
        k = fewest_clusters(free, demand)
        # a member i of a k-set holding d has g_i >= d - (the k - 1 largest g): the others
        # are left out (docs/clusterselect.md, "The MIP", step 3); any k-set holding d is
        # feasible, the k largest clusters first
        threshold = demand - sum(sorted(free, reverse=True)[: k - 1])
        members = [i for i in range(graph.n) if free[i] >= threshold]
        largest = sorted(range(graph.n), key=lambda i: (-free[i], i))[:k]
        width: dict[int, list[float]] = {}
        delay: dict[int, list[float]] = {}
        if k > 1:
            for i in members:
                if ctx.expired():
                    return self._stopped(
                        instance,
                        sorted(largest),
                        k,
                        f"stopped computing the tables for sets of {k}",
                    )
                width[i] = graph.widest_from(graph.clusters[i])
                delay[i] = graph.latency_row(i).tolist()
        levels = len(graph.levels)
        best: tuple[float, tuple[int, ...]] | None = None
        for count, chosen in enumerate(itertools.combinations(members, k)):
            if count % 4096 == 0 and ctx.expired():
                done = sorted(largest) if best is None else list(best[1])
                return self._stopped(instance, done, k, f"stopped after {count} sets of {k}")
            if sum(free[i] for i in chosen) < demand:
                continue
            pairs = list(itertools.combinations(chosen, 2))
            bottleneck = min((width[u][v] for u, v in pairs), default=math.inf)
            latency = sum(delay[u][v] for u, v in pairs)
            value = scalar(k, graph.rank(bottleneck), latency, levels)
            if best is None or value < best[0]:
                best = (value, chosen)
        assert best is not None  # the k largest clusters hold the task
        take = split(free, list(best[1]), demand)
        return Attempt(
            Selection.from_counts(instance, take),
            TerminationReason.OPTIMAL,
            proven_optimal=True,
            bound=best[0],
        )

    @staticmethod
    def _stopped(instance: ClusterSelectInstance, chosen: list[int], k: int, how: str) -> Attempt:
        """The best set so far (or the ``k`` largest clusters) when the time limit passed."""
        take = split(instance.free, chosen, instance.demand)
        return Attempt(
            Selection.from_counts(instance, take),
            TerminationReason.TIME_LIMIT,
            bound=float(k),
            message=f"{how} clusters",
        )
