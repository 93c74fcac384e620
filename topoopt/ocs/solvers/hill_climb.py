"""``ocs/hill-climb``: the paper's Algorithm 1, with two extensions of ours (on by default).

Algorithm 1: start with every job in group A (line 2); the neighbours of a grouping switch the
group of one job (line 9); move to the best neighbour while it shortens the round (lines 3-8),
else stop (line 14). A grouping is scored (lines 10-12) with each group's servers and rings
chosen by ``routing`` and its circuits by the exact phase evaluator:

* ``routing="best-response"`` (default): :func:`topoopt.ocs.routing.best_response`,
  trying each option of each free job against the group's traffic so far, then improving;
* ``routing="algorithm2"``: the paper's Algorithm 2 (least-loaded server pod, Algorithm 3
  rings; :mod:`topoopt.ocs.solvers.greedy`).

Extensions (ours): ``neighbourhood="flip+swap"`` (default) also tries, when no switch
improves, every exchange of a job of group A with a job of group B (a round is a sum of maxima,
so single switches often leave it unchanged: a plateau); ``restart=True`` (default) climbs a
second time from ``ocs/oxc-greedy``'s grouping and keeps the better end. ``neighbourhood="flip",
restart=False`` is Algorithm 1 as written. When every job in one group cannot be served, the
climb starts from a grouping that can if ``restart`` finds one.

A neighbour's groups start from the current grouping's servers and rings (the moved jobs'
too) before the best response's passes revise them. Group scores are cached per set of jobs;
the time limit is checked before each neighbour. Line 7 (shrinking the GPUs of a job whose
communication is long) is not modelled (jobs given by units are placed once, by Algorithm 2).
"""

from __future__ import annotations

import math
from typing import Any

from topoopt.core.deadline import TimeUp, interrupt_at
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
NEIGHBOURHOODS = ("flip", "flip+swap")


@register_solver
class HillClimbSolver(Solver):
    """Algorithm 1: switch one job's group at a time while the round time improves."""

    name = "ocs/hill-climb"
    family = "ocs"
    complete = False

    def _solve(
        self,
        instance: OcsInstance,
        ctx: SolveContext,
        *,
        routing: str = "best-response",
        neighbourhood: str = "flip+swap",
        restart: bool = True,
    ) -> Attempt:
        if routing not in ROUTINGS:
            raise InvalidOptionError(
                f"routing: must be one of {', '.join(ROUTINGS)}, got {routing!r}"
            )
        if neighbourhood not in NEIGHBOURHOODS:
            raise InvalidOptionError(
                f"neighbourhood: must be one of {', '.join(NEIGHBOURHOODS)}, got {neighbourhood!r}"
            )
        if not isinstance(restart, bool):
            raise InvalidOptionError(f"restart: must be true or false, got {restart!r}")
        return solve_placed(
            instance, lambda placed: self._climb(placed, ctx, routing, neighbourhood, restart)
        )

    def _climb(
        self,
        instance: OcsInstance,
        ctx: SolveContext,
        routing: str,
        neighbourhood: str,
        restart: bool,
    ) -> Attempt:
        """Algorithm 1 on a placed instance."""
        cache: dict[frozenset[int], tuple[float, dict[int, Choice]]] = {}

        def group(jobs: frozenset[int], hint: dict[int, Choice]) -> tuple[float, dict[int, Choice]]:
            if jobs not in cache:
                if routing == "algorithm2":
                    choices, load = algorithm2(instance, sorted(jobs))
                else:
                    start = {j: c for j, c in hint.items() if j in jobs}
                    choices = best_response(
                        instance, sorted(jobs), start=start, deadline=ctx.deadline
                    )
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

        moves = 0
        termination = TerminationReason.COMPLETED

        def improve(current: tuple[int, ...], value: float) -> tuple[tuple[int, ...], float]:
            """Best improving neighbour, repeatedly: flips (line 9), then swaps when asked."""
            nonlocal moves
            while True:
                hint = routing_of(current)
                flips = [
                    tuple(3 - g if i == j else g for i, g in enumerate(current))
                    for j in range(instance.n_jobs)
                ]
                found = best_of(flips, hint)
                if found is not None and found[0] < value:
                    current, value = found[1], found[0]
                    keep(current, value)
                    moves += 1
                    continue
                if neighbourhood == "flip" or termination is not TerminationReason.COMPLETED:
                    return current, value
                one, two = members(current, 1), members(current, 2)
                swaps = [
                    tuple(3 - g if i in (a, b) else g for i, g in enumerate(current))
                    for a in sorted(one)
                    for b in sorted(two)
                ]
                found = best_of(swaps, hint)
                if found is None or not found[0] < value:
                    return current, value
                current, value = found[1], found[0]
                keep(current, value)
                moves += 1

        def best_of(
            candidates: list[tuple[int, ...]], hint: dict[int, Choice]
        ) -> tuple[float, tuple[int, ...]] | None:
            nonlocal termination
            best: tuple[float, tuple[int, ...]] | None = None
            for neighbour in candidates:
                if ctx.expired():
                    termination = TerminationReason.TIME_LIMIT
                    break
                trial = score(neighbour, hint)
                if best is None or trial < best[0]:
                    best = (trial, neighbour)
            return best

        starts = [tuple([1] * instance.n_jobs)]  # line 2
        fallback = None  # the greedy schedule, when the time is up before it is scored
        best: list[Any] = [starts[0], math.inf]

        def keep(groups: tuple[int, ...], value: float) -> None:
            if value < best[1]:
                best[:] = [groups, value]

        try:  # a score can take seconds on a large instance: the time limit stops it
            with interrupt_at(ctx.deadline):
                if restart:
                    left = ctx.time_left()
                    greedy = OxcGreedySolver().solve(
                        instance, time_limit=None if math.isinf(left) else left
                    )
                    if greedy.solution is not None:
                        starts.append(greedy.solution.groups)
                        fallback = greedy.solution
                for start in starts:
                    if termination is not TerminationReason.COMPLETED:
                        break
                    first = score(start, {})
                    keep(start, first)
                    improve(start, first)
        except TimeUp:
            termination = TerminationReason.TIME_LIMIT
        current, value = best
        if math.isinf(value) and fallback is not None:
            return Attempt(
                fallback, termination, message=f"{moves} moves; the greedy start, not improved"
            )
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
