"""The clusterselect family's result type: a :class:`~topoopt.core.result.Result` whose solution
is a :class:`~topoopt.clusterselect.solution.Selection`, with the key's parts as properties."""

from __future__ import annotations

from topoopt.clusterselect.solution import Selection
from topoopt.core.result import Result


class ClusterSelectResult(Result[Selection]):
    """What clusterselect solvers return (``topoopt.solve`` is typed to give it)."""

    @property
    def clusters(self) -> float:
        """``K``, the clusters the task spans; ``nan`` without a solution."""
        return self.metric("clusters")

    @property
    def bottleneck_gbps(self) -> float:
        """Smallest widest-path bandwidth between two chosen clusters in Gb/s (SpiderFlow
        eq. 1; ``inf`` for one cluster); ``nan`` without a solution."""
        return self.metric("bottleneck_gbps")

    @property
    def latency_ms(self) -> float:
        """Total shortest-path latency over the pairs of chosen clusters; ``nan`` without a
        solution."""
        return self.metric("latency_ms")
