"""``partition/bound``: a certificate for a heuristic's cut — greedy-lowcut's assignment with the
best lower bound of :func:`topoopt.partition.bounds.lower_bounds` proven within the time limit.

For users who want to know how far a cut can be from the optimum without running the MIP: the
result's ``objective`` is ``partition/greedy-lowcut``'s cut, ``bound`` the best proven lower
bound (the eigenvalue bound, coarsenings, the isoperimetric profile, the spreading metric;
the message names it) and
``gap`` their relative difference. Option ``columns`` (as in ``partition/mip``: by default
after the spreading metric on jobs of 64 vertices or more) adds the column-generation bound of
:mod:`topoopt.partition.colgen`. It is ``optimal`` when the bound
reaches the cut. Under a time limit on a large instance the bounds run in a child process
killed at the deadline (as in ``partition/mip``); sub-problems are proved on the call's
backend.
"""

from __future__ import annotations

import math
import time

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import TerminationReason
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solvers.mip import PartitionMipSolver


@register_solver
class PartitionBoundSolver(PartitionMipSolver):
    """Lower bounds only: greedy-lowcut's cut with the best bound proven within the limit."""

    name = "partition/bound"
    family = "partition"
    exact = False
    gives_bound = True

    def _solve(  # type: ignore[override]
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        *,
        symmetry: bool = True,
        columns: bool | None = None,
    ) -> Attempt:
        t0 = time.perf_counter()
        left = ctx.time_left()
        share = None if math.isinf(left) else max(left * self.start_share, 1e-3)
        start = self.start_within(instance, share)
        attempt = self.bounds_only(instance, ctx, start, symmetry, t0, columns)
        if attempt.termination is TerminationReason.TIME_LIMIT or attempt.proven_optimal:
            return attempt
        return Attempt(
            solution=attempt.solution,
            termination=TerminationReason.COMPLETED,
            bound=attempt.bound,
            solve_s=attempt.solve_s,
            message=attempt.message,
        )
