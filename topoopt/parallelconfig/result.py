"""The parallelconfig family's result type: a :class:`~topoopt.core.result.Result` whose solution
is a :class:`~topoopt.parallelconfig.solution.ParallelConfig`, with the cost's parts as
properties."""

from __future__ import annotations

from topoopt.core.result import Result
from topoopt.parallelconfig.solution import ParallelConfig


class ParallelConfigResult(Result[ParallelConfig]):
    """What parallelconfig solvers return (``topoopt.solve`` is typed to give it)."""

    @property
    def d(self) -> float:
        """Data-parallel degree of the solution; ``nan`` without one."""
        return self.metric("d")

    @property
    def p(self) -> float:
        """Pipeline depth of the solution; ``nan`` without one."""
        return self.metric("p")

    @property
    def t_comp_s(self) -> float:
        """``T_comp``, compute with the pipeline bubble, s per iteration; ``nan`` without a
        solution."""
        return self.metric("t_comp_s")

    @property
    def t_dp_s(self) -> float:
        """``T_dp``, the slowest stage's ring all-reduce, s per iteration; ``nan`` without a
        solution."""
        return self.metric("t_dp_s")

    @property
    def t_pp_s(self) -> float:
        """``T_pp``, the slowest replica's stage-to-stage sends, s per iteration; ``nan``
        without a solution."""
        return self.metric("t_pp_s")

    @property
    def idle_gpus(self) -> float:
        """GPUs of the job the configuration leaves idle (``r - d·p``); ``nan`` without a
        solution."""
        return self.metric("idle_gpus")
