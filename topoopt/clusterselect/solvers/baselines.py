"""The baselines SpiderFlow compares SpinSearch with (§5): opportunistic and single-cluster.

* ``clusterselect/opportunistic`` grabs free GPUs cluster by cluster in descending incident
  bandwidth (eq. 2), ``Δ_i = min(g_i, R)`` (eq. 4), without looking for fewer clusters.
* ``clusterselect/single-cluster`` is Mast's policy (Choudhury et al., 2024): a task runs in one
  cluster or waits. It takes the source when it holds the task, else the cluster with the fewest
  free GPUs that still holds it (best fit, keeping large clusters for later tasks), and returns
  no solution when no cluster holds the task.
"""

from __future__ import annotations

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.clusterselect.solution import Selection
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason


def opportunistic(instance: ClusterSelectInstance) -> list[int]:
    """``Δ`` in instance order: eq. 4 over the clusters sorted by eq. 2, descending."""
    free, residual = instance.free, instance.demand
    b = instance.graph.incident_bandwidth()
    take = [0] * len(free)
    for i in sorted(range(len(free)), key=lambda i: (-b[i], i)):
        take[i] = min(free[i], residual)
        residual -= take[i]
        if residual == 0:
            break
    return take


@register_solver
class OpportunisticSolver(Solver):
    """Opportunistic: free GPUs in descending incident bandwidth (eq. 2, eq. 4)."""

    name = "clusterselect/opportunistic"
    family = "clusterselect"

    def _solve(self, instance: ClusterSelectInstance, ctx: SolveContext) -> Attempt:
        take = opportunistic(instance)
        return Attempt(Selection.from_counts(instance, take), TerminationReason.COMPLETED)


@register_solver
class SingleClusterSolver(Solver):
    """Mast-style: the whole task in one cluster (source first, else best fit), or nothing."""

    name = "clusterselect/single-cluster"
    family = "clusterselect"
    complete = False

    def _solve(self, instance: ClusterSelectInstance, ctx: SolveContext) -> Attempt:
        demand = instance.demand
        fits = [c for c in instance.clusters if c.free_gpus >= demand]
        if not fits:
            most = max(c.free_gpus for c in instance.clusters)
            return Attempt(
                None,
                TerminationReason.COMPLETED,
                message=f"no cluster has {demand} free GPUs (the most is {most}); the task waits",
            )
        pick = next((c for c in fits if c.name == instance.source), None)
        if pick is None:
            pick = min(fits, key=lambda c: c.free_gpus)
        return Attempt(Selection.of({pick.name: demand}), TerminationReason.COMPLETED)
