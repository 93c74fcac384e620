"""``partition/mip``: the exact MIP of :mod:`topoopt.partition.formulations.cut_mip`.

Assignment binaries, one separation variable per edge and bandwidth level (the eq. 9 cost is a
sum over the levels of the widest-path ultrametric) and twin-cluster symmetry breaking; solved
through the common MIP driver on HiGHS, SCIP or Gurobi, warm started from
``partition/greedy-lowcut``. Option ``symmetry`` (default ``True``) keeps the twin constraints.
"""

from __future__ import annotations

from topoopt.core.formulation import MipSolver
from topoopt.core.registry import get_solver, register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment

START_TIME_S = 10.0
"""Time limit of the greedy low-cut run that warm starts the MIP (and at most a fifth of the
call's remaining time, ``MipSolver.start_share``)."""


@register_solver
class PartitionMipSolver(MipSolver):
    """Exact MIP: vertex-to-cluster binaries, per-level cut separation, twin symmetry."""

    name = "partition/mip"
    family = "partition"
    exact = True
    gives_bound = True
    formulation = "topoopt.partition.formulations.cut_mip"

    def start(self, instance: PartitionInstance, **opts: object) -> Assignment | None:
        """``partition/greedy-lowcut``'s assignment (at most :data:`START_TIME_S`), or ``None``
        when it finds none or refuses the instance."""
        return self.start_within(instance, None, **opts)

    def start_within(
        self, instance: PartitionInstance, time_limit: float | None, **opts: object
    ) -> Assignment | None:
        """:meth:`start` within ``time_limit`` too (a fifth of the call's remaining time)."""
        greedy = get_solver("partition/greedy-lowcut")
        if greedy.unsupported_reason(instance) is not None:
            return None
        limit = START_TIME_S if time_limit is None else min(START_TIME_S, time_limit)
        return greedy.solve(instance, time_limit=limit).solution

    def _solve(
        self, instance: PartitionInstance, ctx: SolveContext, *, symmetry: bool = True
    ) -> Attempt:
        return self.attempt(ctx, self.run(instance, ctx, symmetry=symmetry))
