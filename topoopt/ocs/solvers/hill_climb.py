"""Hill climbing over the grouping (paper Algorithm 1): the paper's algorithm as written
(``ocs/hill-climb-paper``) and an incremental iterated local search (``ocs/hill-climb``, ours).

``ocs/hill-climb-paper`` — **Algorithm 1 as the paper wrote it**: start with every job in group
A (line 2); the neighbours of a grouping switch the group of one job (line 9); each neighbour
is scored from scratch (lines 10-12): each group's servers and rings by ``routing`` (default
``"algorithm2"``, the paper's line 10: Algorithm 2 with Algorithm 3's rings; or
``"best-response"``, :func:`topoopt.ocs.routing.best_response`), its circuits by the exact
phase evaluator, the round by the phase table; move to the best neighbour while it shortens
the round (lines 3-8), else stop (line 14). Each step scores ``|J|`` neighbours, each a full
routing and evaluation of both groups: ``O(|J|²)`` work per step.

``ocs/hill-climb`` — ours, on the same neighbourhood idea, built for speed and quality:

* **incremental scores** (:mod:`topoopt.ocs.search`, :mod:`topoopt.ocs.incremental`): a
  group's communication time is the largest *pod value* (each pod's least OXC time and ToR
  time), and a move changes only the pod values of the moved jobs' pods; a move is scored from
  those and the two groups' maxima, without re-routing or re-evaluating anything else;
* **moves**: switch one job's group with its best server or ring in the new group (line 9),
  re-route one job within its group, and, when none improves, exchange a job that a better
  round must move (on a busiest pod of a deciding group, or the slowest job of a deciding
  compute phase) with any job of the other group; best improvement, lexicographic score
  ``(round, unserved pods, Σ pod value²)`` so that plateaus of the round are crossed;
* **start** (instead of line 2): the jobs by decreasing traffic ``F·G`` (Algorithm 2 line 1),
  each put in the group and with the choice that give the best score of the jobs placed so far;
* **perturbation**: ``kicks`` times, switch the group of ``kick_size`` jobs drawn with the
  call's seed (one of them a job the round must move), climb again, and keep the result when
  it is better, else go back to the best; it stops after ``patience`` kicks without
  improvement. Deterministic given the seed.

Both check the time limit between moves and return the best grouping found so far. Line 7
(shrinking the GPUs of a job whose communication is long) is not modelled (jobs given by units
are placed once, by Algorithm 2).
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

from topoopt.core.deadline import TimeUp, interrupt_at
from topoopt.core.errors import InvalidOptionError
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.core.validate import option_int
from topoopt.ocs.choices import Choice, default_choices
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.routing import best_response, by_traffic, comm_or_inf, group_load
from topoopt.ocs.search import EPS, Move, State, best_option, better, job_options
from topoopt.ocs.solution import round_of, schedule
from topoopt.ocs.solvers.greedy import algorithm2
from topoopt.ocs.solvers.placing import solve_placed

ROUTINGS = ("algorithm2", "best-response")
RESERVE = 0.1
"""Share of the time limit ``ocs/hill-climb`` leaves for building its final schedule."""
PATIENCE = 10
"""Fewest kicks without a shorter round before ``ocs/hill-climb`` stops (default ``patience``)."""
PATIENCE_JOBS = 1000
PATIENCE_MAX = 50
"""The default ``patience`` is ``min(PATIENCE_MAX, max(PATIENCE, PATIENCE_JOBS // jobs))``:
50 kicks up to 20 jobs, 20 at 48 jobs, 10 from 100 jobs on (a kick costs more on a larger
instance), and at most ``2^jobs`` (the number of groupings)."""


@register_solver
class HillClimbPaperSolver(Solver):
    """Algorithm 1 as the paper wrote it: switch one job's group at a time while the round
    improves, every neighbour routed (Algorithm 2) and evaluated from scratch."""

    name = "ocs/hill-climb-paper"
    family = "ocs"
    complete = False

    def _solve(
        self, instance: OcsInstance, ctx: SolveContext, *, routing: str = "algorithm2"
    ) -> Attempt:
        if routing not in ROUTINGS:
            raise InvalidOptionError(
                f"routing: must be one of {', '.join(ROUTINGS)}, got {routing!r}"
            )
        return solve_placed(instance, lambda placed: self._climb(placed, ctx, routing))

    def _climb(self, instance: OcsInstance, ctx: SolveContext, routing: str) -> Attempt:
        """Algorithm 1 on a placed instance."""

        def group(jobs: list[int]) -> tuple[float, dict[int, Choice]]:
            if routing == "algorithm2":
                choices, load = algorithm2(instance, jobs)
            else:
                choices = best_response(instance, jobs, deadline=ctx.deadline)
                load = group_load(instance, choices)
            return comm_or_inf(instance, load), choices

        def score(groups: tuple[int, ...]) -> tuple[float, dict[int, Choice]]:
            one, first = group([j for j, g in enumerate(groups) if g == 1])
            two, second = group([j for j, g in enumerate(groups) if g == 2])
            if math.isinf(one) or math.isinf(two):
                return math.inf, {}
            return round_of(instance, groups, {1: one, 2: two}), {**first, **second}

        moves = 0
        termination = TerminationReason.COMPLETED
        current = tuple([1] * instance.n_jobs)  # line 2: every job in group A
        best: list[Any] = [current, math.inf, {}]
        try:
            with interrupt_at(ctx.deadline):
                value, choices = score(current)
                best[:] = [current, value, choices]
                while True:  # lines 3-13
                    found: tuple[float, tuple[int, ...], dict[int, Choice]] | None = None
                    for j in range(instance.n_jobs):  # line 9: switch one job's group
                        if ctx.expired():
                            raise TimeUp
                        neighbour = tuple(3 - g if i == j else g for i, g in enumerate(current))
                        trial, routed = score(neighbour)  # lines 10-12
                        if found is None or trial < found[0]:
                            found = (trial, neighbour, routed)
                    if found is None or not found[0] < value:
                        break  # line 14: no better neighbour
                    value, current, choices = found
                    best[:] = [current, value, choices]
                    moves += 1
        except TimeUp:
            termination = TerminationReason.TIME_LIMIT
        current, value, choices = best
        if math.isinf(value):
            return Attempt(
                None, termination, message=f"no grouping reached in {moves} moves can be served"
            )
        return Attempt(schedule(instance, current, choices), termination, message=f"{moves} moves")


@register_solver
class HillClimbSolver(Solver):
    """Iterated local search over groups, servers and rings with incremental move scores
    (ours, after Algorithm 1): switches, re-routings, exchanges and seeded perturbations."""

    name = "ocs/hill-climb"
    family = "ocs"
    complete = False
    stochastic = True

    def _solve(
        self,
        instance: OcsInstance,
        ctx: SolveContext,
        *,
        kicks: int = 200,
        patience: int | None = None,
        kick_size: int = 3,
    ) -> Attempt:
        kicks = option_int("kicks", kicks, 0, 1_000_000)
        if patience is None:  # more kicks on small instances, where a kick costs little
            n = max(1, instance.n_jobs)
            patience = min(PATIENCE_MAX, 2**n, max(PATIENCE, PATIENCE_JOBS // n))
        patience = option_int("patience", patience, 1, 1_000_000)
        kick_size = option_int("kick_size", kick_size, 1, 1_000)
        return solve_placed(
            instance, lambda placed: search(placed, ctx, kicks, patience, kick_size)
        )


class _Stop(Exception):
    """The time limit passed between two moves."""


def search(
    instance: OcsInstance, ctx: SolveContext, kicks: int, patience: int, kick_size: int
) -> Attempt:
    """``ocs/hill-climb`` on a placed instance (module docstring)."""
    # the search stops a little before the limit: the best schedule's circuits are still to
    # be computed (a tenth of a second at 640 pods)
    deadline = math.inf if ctx.deadline is None else ctx.deadline - RESERVE * ctx.time_left()
    n = instance.n_jobs
    counts = {"moves": 0, "kicks": 0, "improved": 0, "cursor": 0}
    best: list[Any] = [None, None, None]  # groups, choices, score

    def keep(state: State) -> None:
        score = state.score()
        if best[2] is None or better(score, best[2]):
            groups, choices = state.snapshot()
            best[:] = [groups, choices, score]

    termination = TerminationReason.COMPLETED
    try:
        with interrupt_at(ctx.deadline):
            state = State(instance)
            opts = [job_options(instance, j) for j in range(n)]
            for j in by_traffic(instance, range(n)):  # the start: greedy insertion
                if time.perf_counter() > deadline:
                    raise _Stop
                found = None
                for g in (1, 2):
                    trial = best_option(state, j, g, opts[j])
                    if found is None or better(trial[0], found[0]):
                        found = (trial[0], g, trial[1])
                assert found is not None
                state.apply([(j, found[1], found[2])])
            keep(state)
            climb(state, opts, deadline, counts)
            keep(state)
            rng = random.Random(ctx.seed)
            idle = 0
            for _ in range(kicks):
                if idle >= patience or n < 2:
                    break
                counts["kicks"] += 1
                kind = counts["kicks"] % 3
                if kind == 0:  # fill one group up to a raised level from the other
                    g = rng.choice((1, 2))
                    level = state.comm(g) * (1 + rng.uniform(0.0, 0.3))
                    for j in by_traffic(
                        instance, (j for j in range(n) if state.groups[j] == 3 - g)
                    ):
                        choice = best_option(state, j, g, opts[j])[1]
                        if state.comm_with(j, g, choice) <= level:
                            state.apply([(j, g, choice)])
                elif kind == 1:
                    critical = state.critical()
                    picked = [rng.choice(critical)] if critical else []
                    rest = [j for j in range(n) if j not in picked]
                    picked += rng.sample(rest, min(len(rest), kick_size - len(picked)))
                    for j in picked:
                        g = 3 - state.groups[j]
                        state.apply([(j, g, best_option(state, j, g, opts[j])[1])])
                else:  # drain one group's busiest pods a few times
                    g = rng.choice((1, 2))
                    for _ in range(rng.randint(1, kick_size + 1)):
                        for j in state.busiest(g):
                            state.apply([(j, 3 - g, best_option(state, j, 3 - g, opts[j])[1])])
                climb(state, opts, deadline, counts)
                now = state.score()
                if better(now, best[2]):
                    if now[0] < best[2][0] * (1 - EPS):  # a shorter round, not a tie-break
                        counts["improved"] += 1
                        idle = 0
                    else:
                        idle += 1
                    keep(state)
                else:
                    idle += 1
                    back: Move = [
                        (j, best[0][j], best[1][j])
                        for j in range(n)
                        if state.groups[j] != best[0][j] or state.choices[j] != best[1][j]
                    ]
                    state.apply(back)
    except (_Stop, TimeUp):
        termination = TerminationReason.TIME_LIMIT
    message = f"{counts['moves']} moves, {counts['kicks']} kicks ({counts['improved']} improved)"
    groups, choices, score = best
    if groups is None or not math.isfinite(score[0]):
        fallback = schedule(instance, [1] * n, default_choices(instance))
        if fallback is not None:
            return Attempt(
                fallback, termination, message=f"{message}; every job in one group, default routing"
            )
        return Attempt(None, termination, message=f"{message}; no grouping found can be served")
    final = schedule(instance, groups, choices)
    if final is None:  # the incremental and the full evaluator disagree: cannot happen
        return Attempt(None, TerminationReason.ERROR, message=f"{message}; unservable grouping")
    return Attempt(final, termination, message=message)


def climb(
    state: State,
    opts: list[list[Choice]],
    deadline: float,
    counts: dict[str, int],
    full: bool = True,
) -> None:
    """Best-improvement moves until none improves. Only the jobs a better round must move
    (:meth:`State.critical`) are tried: their switches and re-routings, then draining a
    group's busiest pods into the other group, then exchanges of a critical job with a job of
    the other group on one of its pods or among its slowest."""
    n = len(opts)
    while True:
        current = state.score()
        move: Move | None = None
        score = current
        flip: dict[int, Choice] = {}

        def flipped(j: int, flip: dict[int, Choice] = flip) -> Choice:
            if j not in flip:
                flip[j] = best_option(state, j, 3 - state.groups[j], opts[j])[1]
            return flip[j]

        critical = state.critical()
        for j in critical:
            if time.perf_counter() > deadline:
                raise _Stop
            g = state.groups[j]
            trial, choice = best_option(state, j, 3 - g, opts[j])
            flip[j] = choice
            if better(trial, score):
                move, score = [(j, 3 - g, choice)], trial
            if len(opts[j]) > 1:
                others = [c for c in opts[j] if c != state.choices[j]]
                trial, choice = best_option(state, j, g, others)
                if better(trial, score):
                    move, score = [(j, g, choice)], trial
        if move is None:  # drain a group's busiest pods into the other group
            for g in (1, 2):
                drained = [(j, 3 - g, flipped(j)) for j in state.busiest(g)]
                if drained:
                    trial = state.score(drained)
                    if better(trial, score):
                        move, score = drained, trial
        if move is None and full:  # every job's re-routing and switch, first improvement
            for step in range(n):
                if time.perf_counter() > deadline:
                    raise _Stop
                j = (counts["cursor"] + step) % n
                g = state.groups[j]
                if len(opts[j]) > 1:
                    others = [c for c in opts[j] if c != state.choices[j]]
                    trial, choice = best_option(state, j, g, others)
                    if better(trial, score):
                        move, score = [(j, g, choice)], trial
                if j not in critical:
                    trial, choice = best_option(state, j, 3 - g, opts[j])
                    if better(trial, score):
                        move, score = [(j, 3 - g, choice)], trial
                if move is not None:
                    counts["cursor"] = j + 1
                    break
        if move is None:
            for a in critical:
                if time.perf_counter() > deadline:
                    raise _Stop
                g = state.groups[a]
                partners = state.partners(a)
                for b in partners:
                    pair = [(a, 3 - g, flipped(a)), (b, g, state.choices[b])]
                    trial = state.score(pair)
                    if better(trial, score):
                        move, score = pair, trial
        if move is None:
            return
        state.apply(move)
        counts["moves"] += 1
