"""The gpuselect family's result type: a :class:`~topoopt.core.result.Result` whose solution
is a :class:`~topoopt.gpuselect.solution.Selection`, with the metrics as typed properties."""

from __future__ import annotations

from topoopt.core.result import Result
from topoopt.gpuselect.solution import Selection


class GpuSelectResult(Result[Selection]):
    """What gpuselect solvers return (``topoopt.solve`` is typed to give it)."""

    @property
    def bandwidth(self) -> float:
        """``B(S)`` of the selection in GB/s (BandPilot eq. 2); ``nan`` without a solution."""
        return self.metric("bandwidth")

    @property
    def hosts_used(self) -> float:
        """Number of hosts the selection spans; ``nan`` without a solution."""
        return self.metric("hosts_used")

    @property
    def max_gpus_per_host(self) -> float:
        """Most GPUs taken on one host; ``nan`` without a solution."""
        return self.metric("max_gpus_per_host")
