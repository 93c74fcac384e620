"""``partition/enumerate``: the enumeration oracle.

Every assignment of the ``V`` vertices to the ``C`` clusters (``C**V`` of them, numbered in base
``C``), in vectorised batches: its eq. 9 cut from the weight matrix and its cluster loads
against the capacities; the cheapest feasible one wins (the lowest number on ties). Refuses
instances with more than :data:`MAX_ASSIGNMENTS` assignments; checks the time limit between
batches.
"""

from __future__ import annotations

import math

import numpy as np

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment

MAX_ASSIGNMENTS = 5_000_000
"""Most assignments the oracle agrees to enumerate."""
BATCH = 20_000
"""Assignments per batch."""


def assignments(start: int, stop: int, clusters: int, vertices: int) -> np.ndarray:
    """Rows ``start .. stop - 1`` of the enumeration: the base-``clusters`` digits of each
    number, one column per vertex (vertex 0 the least significant).

    Examples
    --------
    >>> assignments(0, 4, 2, 2).tolist()
    [[0, 0], [1, 0], [0, 1], [1, 1]]
    """
    numbers = np.arange(start, stop, dtype=np.int64)[:, None]
    return (numbers // clusters ** np.arange(vertices, dtype=np.int64)) % clusters


@register_solver
class EnumerateSolver(Solver):
    """Enumeration oracle: every assignment, the cheapest one within the capacities."""

    name = "partition/enumerate"
    family = "partition"
    exact = True
    gives_bound = True

    @classmethod
    def unsupported_reason(cls, instance: PartitionInstance) -> str | None:
        """Why the oracle refuses ``instance`` (more than :data:`MAX_ASSIGNMENTS`), or
        ``None``."""
        count = instance.n_clusters ** min(instance.n_vertices, 64)
        if count > MAX_ASSIGNMENTS:
            return (
                f"{instance.n_clusters}^{instance.n_vertices} assignments exceed the oracle's "
                f"{MAX_ASSIGNMENTS}; use partition/mip"
            )
        return None

    def _solve(self, instance: PartitionInstance, ctx: SolveContext) -> Attempt:
        clusters, vertices = instance.n_clusters, instance.n_vertices
        weights = instance.weights
        u, v, traffic = instance.edge_arrays
        gpus = np.array([x.gpus for x in instance.vertices], dtype=np.int64)
        capacity = np.array([c.capacity_gpus for c in instance.clusters], dtype=np.int64)
        total = clusters**vertices
        best, best_row = math.inf, None
        for start in range(0, total, BATCH):
            if ctx.expired():
                solution = None if best_row is None else Assignment.from_indices(instance, best_row)
                return Attempt(
                    solution,
                    TerminationReason.TIME_LIMIT,
                    message=f"stopped after {start} of {total} assignments",
                )
            rows = assignments(start, min(start + BATCH, total), clusters, vertices)
            cost = (weights[rows[:, u], rows[:, v]] * traffic).sum(axis=1)
            loads = np.stack([((rows == c) * gpus).sum(axis=1) for c in range(clusters)], axis=1)
            cost[(loads > capacity).any(axis=1)] = math.inf
            i = int(np.argmin(cost))
            if cost[i] < best:
                best, best_row = float(cost[i]), rows[i].tolist()
        if best_row is None:
            return Attempt(
                None,
                TerminationReason.INFEASIBLE,
                message="no assignment fits the capacities (bin packing of the vertices' GPUs)",
            )
        return Attempt(
            Assignment.from_indices(instance, best_row),
            TerminationReason.OPTIMAL,
            proven_optimal=True,
            bound=best,
        )
