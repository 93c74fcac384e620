"""``ocs/no-tdm``: the paper's baseline without time-division multiplexing ("aggregation
scheduling"): every job in one group, so all jobs train, then all communicate, for the same
iterations as a TDM round (spec ``ocs.md``). Servers and rings by the greedy best response of
:mod:`topoopt.ocs.routing`, circuits exact."""

from __future__ import annotations

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.routing import best_response
from topoopt.ocs.solution import schedule
from topoopt.ocs.solvers.placing import solve_placed


@register_solver
class NoTdmSolver(Solver):
    """No TDM: every job in one group (train all, then communicate all)."""

    name = "ocs/no-tdm"
    family = "ocs"
    complete = False

    def _solve(self, instance: OcsInstance, ctx: SolveContext) -> Attempt:
        return solve_placed(instance, lambda placed: self._solve_placed(placed, ctx))

    def _solve_placed(self, instance: OcsInstance, ctx: SolveContext) -> Attempt:
        jobs = range(instance.n_jobs)
        choices = best_response(instance, jobs, deadline=ctx.deadline)
        found = schedule(instance, [1] * instance.n_jobs, choices)
        if found is None:
            return Attempt(
                None,
                TerminationReason.COMPLETED,
                message="the jobs' joint traffic cannot be served by the OXC ports in one group",
            )
        stopped = ctx.expired()  # the best-response passes were cut short
        return Attempt(
            found, TerminationReason.TIME_LIMIT if stopped else TerminationReason.COMPLETED
        )
