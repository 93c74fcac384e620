"""The partition family's result type: a :class:`~topoopt.core.result.Result` whose solution is
an :class:`~topoopt.partition.solution.Assignment`, with the metrics as typed properties."""

from __future__ import annotations

import math

from topoopt.core.result import Result
from topoopt.partition.solution import Assignment


class PartitionResult(Result[Assignment]):
    """What partition solvers return (``topoopt.solve`` is typed to give it)."""

    @property
    def cut_edges(self) -> float:
        """Edges between clusters; ``nan`` without a solution."""
        return self.metric("cut_edges")

    @property
    def cut_traffic(self) -> float:
        """Traffic on edges between clusters (unweighted); ``nan`` without a solution."""
        return self.metric("cut_traffic")

    @property
    def clusters_used(self) -> float:
        """Clusters holding at least one vertex; ``nan`` without a solution."""
        return self.metric("clusters_used")

    @property
    def step_time_s(self) -> float:
        """Two-level solutions (with per-cluster configurations): the step-time estimate
        ``max_c T_c + 8 · cut`` in seconds (``docs/partition.md``, "Heuristic-ILP"); ``nan``
        without a solution or without configurations."""
        return float(self.metrics.get("step_time_s", math.nan))
