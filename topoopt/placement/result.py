"""The placement family's result type: a :class:`~topoopt.core.result.Result` whose solution
is a :class:`~topoopt.placement.solution.Placement`, with the metrics as typed properties."""

from __future__ import annotations

import math

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

    def _leaf(self, name: str) -> float:
        value = self.metrics.get(name)
        return math.nan if value is None else float(value)

    @property
    def leaf_dp_spread(self) -> float:
        """Largest DP-group spread over leaves, ``max_c D(leaves of column c)``; ``nan`` when
        the instance has no leaves or the run no solution. From the node assignment of
        ``placement/hierarchical``, else from the rank-order fill (``docs/placement.md``,
        "Hierarchical placement")."""
        return self._leaf("leaf_dp_spread")

    @property
    def leaf_pp_spread(self) -> float:
        """Largest PP-group spread over leaves, ``max_r D(leaves of row r)``; ``nan`` as
        :attr:`leaf_dp_spread`."""
        return self._leaf("leaf_pp_spread")

    @property
    def leaf_score(self) -> float:
        """``alpha * leaf_dp_spread + beta * leaf_pp_spread`` (eq. 2 one level down); ``nan``
        as :attr:`leaf_dp_spread`."""
        return self._leaf("leaf_score")

    def level_spreads(self) -> list[tuple[float, float]]:
        """``(dp_spread, pp_spread)`` at each level between the minipods and the leaves, top
        first: the metrics ``level<i>_dp_spread`` and ``level<i>_pp_spread`` (empty when the
        leaves have no paths or the run no solution; see
        :func:`topoopt.placement.levels.path_spreads`)."""
        out = []
        i = 1
        while f"level{i}_dp_spread" in self.metrics:
            out.append((self._leaf(f"level{i}_dp_spread"), self._leaf(f"level{i}_pp_spread")))
            i += 1
        return out
