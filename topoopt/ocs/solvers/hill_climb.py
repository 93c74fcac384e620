"""``ocs/hill-climb``: the paper's Algorithm 1.

Start with every job in group A (line 2; when that cannot be served, from ``ocs/oxc-greedy``'s
grouping instead, ours); the neighbours of a grouping switch the group of one
job (line 9); move to the best neighbour while it shortens the round (lines 3-8), else stop
(line 14). A grouping is scored (lines 10-12) with each group's servers and rings chosen by
``routing`` and its circuits by the exact phase evaluator:

* ``routing="best-response"`` (default): :func:`topoopt.ocs.routing.best_response`,
  trying each option of each free job against the group's traffic so far;
* ``routing="algorithm2"``: the paper's Algorithm 2 (least-loaded server pod, Algorithm 3
  rings; :mod:`topoopt.ocs.solvers.greedy`).

A neighbour's groups start from the current grouping's servers and rings (the moved job's
choice too) before the best response's passes revise them. Group scores are cached per set of
jobs; the time limit is checked before each neighbour. Line 7 (shrinking the GPUs of a job whose
communication is long) does not apply: the instance fixes every job's GPUs.
"""

from __future__ import annotations

import math

from topoopt.core.errors import InvalidOptionError
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.ocs.choices import Choice
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.routing import best_response, comm_or_inf, group_load
from topoopt.ocs.solution import round_of, schedule
from topoopt.ocs.solvers.greedy import OxcGreedySolver, algorithm2
from topoopt.ocs.solvers.placing import solve_placed

ROUTINGS = ("best-response", "algorithm2")


@register_solver
class HillClimbSolver(Solver):
    """Algorithm 1: switch one job's group at a time while the round time improves."""

    name = "ocs/hill-climb"
    family = "ocs"
    complete = False

    def _solve(
        self, instance: OcsInstance, ctx: SolveContext, *, routing: str = "best-response"
    ) -> Attempt:
        if routing not in ROUTINGS:
            raise InvalidOptionError(
                f"routing: must be one of {', '.join(ROUTINGS)}, got {routing!r}"
            )
        return solve_placed(instance, lambda placed: self._climb(placed, ctx, routing))

    def _climb(self, instance: OcsInstance, ctx: SolveContext, routing: str) -> Attempt:
        """Algorithm 1 on a placed instance."""
        cache: dict[frozenset[int], tuple[float, dict[int, Choice]]] = {}

        def group(jobs: frozenset[int], hint: dict[int, Choice]) -> tuple[float, dict[int, Choice]]:
            if jobs not in cache:
                if routing == "algorithm2":
                    choices, load = algorithm2(instance, sorted(jobs))
                else:
                    start = {j: c for j, c in hint.items() if j in jobs}
                    choices = best_response(instance, sorted(jobs), start=start)
                    load = group_load(instance, choices)
                cache[jobs] = (comm_or_inf(instance, load), choices)
            return cache[jobs]

        def members(groups: tuple[int, ...], g: int) -> frozenset[int]:
            return frozenset(j for j, x in enumerate(groups) if x == g)

        def score(groups: tuple[int, ...], hint: dict[int, Choice]) -> float:
            one = group(members(groups, 1), hint)[0]
            two = group(members(groups, 2), hint)[0]
            if math.isinf(one) or math.isinf(two):
                return math.inf
            return round_of(instance, groups, {1: one, 2: two})

        def routing_of(groups: tuple[int, ...]) -> dict[int, Choice]:
            return {**group(members(groups, 1), {})[1], **group(members(groups, 2), {})[1]}

        current = tuple([1] * instance.n_jobs)  # line 2
        value = score(current, {})
        if math.isinf(value):  # every job in one group cannot be served: start from the greedy
            greedy = OxcGreedySolver().solve(instance).solution
            if greedy is not None:
                current = greedy.groups
                value = score(current, {})
        moves = 0
        termination = TerminationReason.COMPLETED
        while termination is TerminationReason.COMPLETED:
            hint = routing_of(current)
            best: tuple[float, tuple[int, ...]] | None = None
            for j in range(instance.n_jobs):  # line 9: switch the group of one job
                if ctx.expired():
                    termination = TerminationReason.TIME_LIMIT
                    break
                neighbour = tuple(3 - g if i == j else g for i, g in enumerate(current))
                trial = score(neighbour, hint)
                if best is None or trial < best[0]:
                    best = (trial, neighbour)
            if best is None or not best[0] < value:
                break
            current, value = best[1], best[0]
            moves += 1
        if math.isinf(value):
            return Attempt(
                None, termination, message=f"no grouping reached in {moves} moves can be served"
            )
        choices = routing_of(current)
        return Attempt(
            schedule(instance, current, choices),
            termination,
            message=f"{moves} moves, {len(cache)} groups evaluated",
        )
