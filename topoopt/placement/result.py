"""The placement family's result type: a :class:`~topoopt.core.result.Result` whose solution
is a :class:`~topoopt.placement.solution.Placement`, with the metrics as typed properties."""

from __future__ import annotations

from topoopt.core.result import Result
from topoopt.placement.solution import Placement


class PlacementResult(Result[Placement]):
    """What placement solvers return (``topoopt.solve`` is typed to give it)."""

    @property
    def dp_spread(self) -> float:
        """Largest DP-group spread ``max_c D(column c)`` (Arnold eq. 3); ``nan`` without a
        solution."""
        return self.metric("dp_spread")

    @property
    def pp_spread(self) -> float:
        """Largest PP-group spread ``max_r D(row r)`` (Arnold eq. 3); ``nan`` without a
        solution."""
        return self.metric("pp_spread")

    @property
    def minipods_used(self) -> float:
        """Number of minipods the placement uses; ``nan`` without a solution."""
        return self.metric("minipods_used")
