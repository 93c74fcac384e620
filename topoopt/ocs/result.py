"""The ocs family's result type: a :class:`~topoopt.core.result.Result` whose solution is a
:class:`~topoopt.ocs.solution.Schedule`, with the round's figures as properties."""

from __future__ import annotations

from topoopt.core.result import Result
from topoopt.ocs.solution import Schedule


class OcsResult(Result[Schedule]):
    """What ocs solvers return (``topoopt.solve`` is typed to give it)."""

    @property
    def round_s(self) -> float:
        """The TDM round time (the objective), s; ``nan`` without a solution."""
        return self.metric("round_s")

    @property
    def no_tdm_round_s(self) -> float:
        """The round time of the same servers and rings with every job in one group (no TDM),
        s; ``inf`` when their joint traffic cannot be served, ``nan`` without a solution."""
        return self.metric("no_tdm_round_s")

    @property
    def tdm_speedup(self) -> float:
        """``no_tdm_round_s / round_s``; ``nan`` without a solution."""
        return self.metric("tdm_speedup")

    def iterations_per_s(self, job: str) -> float:
        """Training iterations per second of ``job`` (1 PS or 2 other iterations per round);
        ``nan`` without a solution."""
        return self.metric(f"iterations_per_s.{job}")
