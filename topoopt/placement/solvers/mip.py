"""MIP solvers of the placement family: ``placement/coarse-mip`` and ``placement/exact-mip``.

Both are :class:`~topoopt.core.formulation.MipSolver` s over a formulation of
:mod:`topoopt.placement.formulations` (imported when they solve, so this module does not import
Pyomo); what is theirs is the choice of scheduling unit (coarse) and the decomposition over
target spreads (exact).

Both stay within the time limit and a memory bound on large instances: a model over its
formulation's size limit (``coarse.MAX_PAIRS``, ``exact.MAX_ASSIGNMENTS``) is not built (the
result says ``iteration_limit``), nor is one whose build would not end in the time left, and
after a build that used up the time the model is not solved (``time_limit``); the solvers
then return their constructive placement (the closed-form start of the coarse model, the
constructive incumbent of the exact one). The walk of the decomposition stops at the time
limit and so do its counting relaxation and block designs.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple

from topoopt.core.errors import InvalidOptionError
from topoopt.core.formulation import MipSolver
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import TerminationReason
from topoopt.placement.exact_mip.bands import realise as realise_bands
from topoopt.placement.exact_mip.narrow import decide as decide_narrow
from topoopt.placement.exact_mip.sides import Sides
from topoopt.placement.exact_mip.targets import (
    Constructions,
    CountingBound,
    Expired,
    TargetPair,
    iter_target_pairs,
)
from topoopt.placement.exact_mip.typed import decide as decide_typed
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement, evaluate
from topoopt.placement.solvers._budget import WRAP_UP_S_PER_NODE, cannot_build, deadline
from topoopt.placement.solvers.baselines import fill_in_rank_order, packing_pods

UNITS = ("pp", "dp")
"""Scheduling units of the coarse model (``topoopt.placement.formulations.coarse.UNITS``)."""

COARSE_S_PER_PAIR = 1.5e-4
"""Measured seconds to build a coarse model and hand it to HiGHS, per unit-minipod pair."""

ISOLATE_ASSIGNMENTS = 2_000
"""Under a time limit, feasibility MIPs with at least this many assignment variables run in a
child process ended at the deadline (see :meth:`ExactMipSolver._feasibility`)."""

CHILD_STOP_S = 0.2
"""Seconds kept for killing a child process and reading its answer."""

IN_PROCESS_TRY_S = 0.5
"""Time limit of the in-process try of a small feasibility MIP (see
:meth:`ExactMipSolver._feasibility`)."""

COMBINATORIAL_SHARE = 0.75
"""Share of the time left (after the wrap-up reserve) one integer programme of the narrow test
or the one-sided packing may take; the rest stays for the feasibility MIP of the pair or,
when a model overruns, for the constructive incumbent."""

LOOK_AHEAD_SHARE = 0.2
"""Share of the time limit the walk over pairs leaves for its incumbent when it stops at a
pair it cannot decide: the pairs after it are then tried with the one-sided construction and
the narrow test as well, not only with the millisecond constructions."""

LOOK_AHEAD_PART = 0.5
"""Share of the time left one integer programme of the look-ahead may take (less than
:data:`COMBINATORIAL_SHARE`: the look-ahead's last programme has nothing after it to absorb
its overrun of model building and teardown)."""


def weighted_reason(instance: PlacementInstance) -> str | None:
    """Why an exact solver of the minipod level cannot solve ``instance``: its objective
    weighs the levels below (``None`` for ``top`` and ``lex``, whose objective value is the
    minipod score), or it states constraints."""
    from topoopt.placement.constraints import unhonoured_reason

    if instance.constraints:
        return unhonoured_reason(instance)
    if instance.objective.mode == "weighted":
        return (
            "its objective weighs every level of the tree (objective.levels 'weighted') and "
            "this solver optimises the minipod level only; use placement/levels"
        )
    return None


EXACT_S_PER_ASSIGNMENT = 2e-4
"""Measured seconds to build an exact model and hand it to HiGHS, per assignment variable."""


@register_solver
class CoarseMipSolver(MipSolver):
    """Arnold's coarse MIP (eq. 4–10) with integral node counts, then rank assignment.

    Options: ``unit`` = ``"pp"`` (PP groups are the scheduling unit, the paper's choice),
    ``"dp"``, or ``"auto"`` (solve both, keep the better exact score).
    """

    name = "placement/coarse-mip"
    family = "placement"
    formulation = "topoopt.placement.formulations.coarse"

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """Constraints are not honoured."""
        from topoopt.placement.constraints import unhonoured_reason

        return unhonoured_reason(instance)

    def start(self, instance: PlacementInstance, *, unit: str = "pp", **opts: Any) -> Placement:
        """The closed-form start of ``unit`` (whole units, or units laid end to end)."""
        from topoopt.placement.formulations.coarse import start_solution

        return start_solution(instance, unit)

    def _solve(
        self, instance: PlacementInstance, ctx: SolveContext, *, unit: str = "pp"
    ) -> Attempt:
        from topoopt.placement.formulations import coarse

        if unit not in (*UNITS, "auto"):
            raise InvalidOptionError(f"unit: must be 'pp', 'dp' or 'auto', got {unit!r}")
        units = UNITS if unit == "auto" else (unit,)
        best: tuple[float, Placement] | None = None
        build_s = solve_s = 0.0
        notes = []
        termination = TerminationReason.COMPLETED
        for u in units:
            skip = cannot_build(
                ctx,
                coarse.model_size(instance, u),
                coarse.MAX_PAIRS,
                COARSE_S_PER_PAIR,
                "unit-minipod pairs",
                "topoopt.placement.formulations.coarse.MAX_PAIRS",
            )
            if skip is not None:
                termination, why = skip
                solution = self.start(instance, unit=u)
                note = f"unit {u}: {why}; closed-form start"
            else:
                run = self.run(instance, ctx, unit=u)
                out = run.outcome
                build_s += run.build_s
                solve_s += run.solve_s
                if out.termination is not TerminationReason.OPTIMAL:
                    termination = out.termination
                solution = run.solution
                if solution is None:
                    notes.append(f"unit {u}: no solution ({out.message})")
                    continue
                if out.has_solution:
                    note = f"unit {u}: coarse objective {out.objective:g} ({out.termination})"
                else:  # built, but no time left to solve: the start
                    note = f"unit {u}: {out.message}; closed-form start"
            score = evaluate(instance, solution)
            notes.append(f"{note}, exact score {score:g}")
            if best is None or score < best[0]:
                best = (score, solution)
        return Attempt(
            solution=None if best is None else best[1],
            termination=termination,
            build_s=build_s,
            solve_s=solve_s,
            message="; ".join(notes),
        )


@register_solver
class ExactMipSolver(MipSolver):
    """Exact optimum of the score (eq. 2–3) by MIP.

    Option ``stop_at``: stop the walk at the first pair scoring at least this much (the
    optimum is then proven to be at least that score, the result is the constructive
    placement with termination ``objective_limit``); ``placement/levels`` uses it to cut
    subtrees that cannot beat its incumbent. Option ``bound_only``: only the bound is
    wanted, so the slower constructions that can only realise a pair the exact tests leave
    open (bands, the one-sided packing) are skipped, and so is the look-ahead for the
    incumbent; the bound is the same (the walk stops at that pair either way).

    ``method="decompose"`` (default) walks the target spreads ``(A, B)`` in order of score:
    pairs with ``A = 1`` or ``B = 1`` are decided in closed form, others are first refuted by
    a counting relaxation or realised by a block construction, and only the rest go to the
    feasibility MIP; the first feasible pair is optimal. ``method="monolithic"`` solves the
    single model of :func:`topoopt.placement.formulations.exact.build` (slow at scale; kept as
    the reference formulation), warm started from the best constructive placement. See
    ``docs/placement.md``.
    """

    name = "placement/exact-mip"
    family = "placement"
    exact = True
    gives_bound = True
    formulation = "topoopt.placement.formulations.exact"

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """A ``weighted`` objective counts the levels below the minipods, which this solver
        does not see (``placement/levels`` does)."""
        return weighted_reason(instance)

    def start(self, instance: PlacementInstance, **opts: Any) -> Placement | None:
        """The constructive incumbent for the monolithic model; none for a feasibility model."""
        return None if opts else _constructive_incumbent(instance)

    def _solve(
        self,
        instance: PlacementInstance,
        ctx: SolveContext,
        *,
        method: str = "decompose",
        stop_at: float | None = None,
        bound_only: bool = False,
    ) -> Attempt:
        if stop_at is not None and (
            isinstance(stop_at, bool) or not isinstance(stop_at, (int, float))
        ):
            raise InvalidOptionError(f"stop_at: must be a number, got {stop_at!r}")
        if not isinstance(bound_only, bool):
            raise InvalidOptionError(f"bound_only: must be true or false, got {bound_only!r}")
        if method == "decompose":
            return self._decompose(instance, ctx, stop_at, bound_only)
        if method == "monolithic":
            skip = self._cannot_build(instance, ctx)
            if skip is not None:
                return Attempt(
                    solution=_constructive_incumbent(instance, deadline(ctx, instance)),
                    termination=skip[0],
                    message=f"{skip[1]}; constructive placement",
                )
            return self.attempt(ctx, self.run(instance, ctx))
        raise InvalidOptionError(f"method: must be 'decompose' or 'monolithic', got {method!r}")

    @staticmethod
    def _cannot_build(
        instance: PlacementInstance, ctx: SolveContext
    ) -> tuple[TerminationReason, str] | None:
        from topoopt.placement.formulations import exact

        size = exact.model_size(instance)
        if size > exact.MAX_ASSIGNMENTS:  # never built, however much time is left
            return (
                TerminationReason.ITERATION_LIMIT,
                f"model not built: {size:,} assignment variables exceed the limit of "
                f"{exact.MAX_ASSIGNMENTS:,} "
                "(topoopt.placement.formulations.exact.MAX_ASSIGNMENTS)",
            )
        return cannot_build(
            ctx,
            exact.model_size(instance),
            exact.MAX_ASSIGNMENTS,
            EXACT_S_PER_ASSIGNMENT,
            "assignment variables",
            "topoopt.placement.formulations.exact.MAX_ASSIGNMENTS",
        )

    def _feasibility(
        self, instance: PlacementInstance, ctx: SolveContext, pair: TargetPair
    ) -> tuple[Placement | None, TerminationReason, float]:
        """Decide ``pair`` by the per-cell feasibility MIP: ``(placement or None, termination,
        seconds)``.

        Under a time limit the model is solved in a child interpreter (:mod:`._isolated`)
        that is killed at the deadline: HiGHS 1.16 can spend a minute in its root cut loop
        without looking at its time limit (measured on ``uneven`` instances), and only a
        process can be stopped there. A model of fewer than :data:`ISOLATE_ASSIGNMENTS`
        assignment variables is first tried in the process for at most
        :data:`IN_PROCESS_TRY_S` (most such models are decided in milliseconds, and the child
        costs about 0.7 s of imports); only an undecided one goes to the child.
        """
        from topoopt.placement.formulations import exact

        a, b = pair.max_dp_use, pair.max_pp_use
        t0 = time.perf_counter()
        if ctx.time_limit is None:
            run = self.run(instance, ctx, rel_gap=0.0, max_dp_use=a, max_pp_use=b)
            return run.solution, run.outcome.termination, run.build_s + run.solve_s
        if exact.model_size(instance) < ISOLATE_ASSIGNMENTS:
            # the try leaves the child its imports' time; HiGHS may overrun the try's limit
            try_s = min(IN_PROCESS_TRY_S, ctx.time_left() - IN_PROCESS_TRY_S - CHILD_STOP_S)
            if try_s > 0:
                short = dataclasses.replace(ctx, time_limit=try_s, started=time.perf_counter())
                run = self.run(instance, short, rel_gap=0.0, max_dp_use=a, max_pp_use=b)
                if run.outcome.termination is not TerminationReason.TIME_LIMIT:
                    return run.solution, run.outcome.termination, time.perf_counter() - t0
        left = ctx.time_left() - WRAP_UP_S_PER_NODE * instance.n_nodes - CHILD_STOP_S
        if left <= 0:
            return None, TerminationReason.TIME_LIMIT, 0.0
        settings = (ctx.backend, ctx.threads, ctx.seed, dict(ctx.backend_options or {}))
        with tempfile.TemporaryDirectory(prefix="topoopt-placement-") as tmp:
            given, taken = Path(tmp, "in.pickle"), Path(tmp, "out.pickle")
            given.write_bytes(pickle.dumps((instance, a, b, time.time() + left, settings)))
            child = subprocess.Popen(
                [sys.executable, "-m", "topoopt.placement.solvers._isolated", given, taken],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                child.wait(timeout=max(left, 0.0))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            try:
                answer = pickle.loads(taken.read_bytes())
            except (OSError, EOFError, pickle.UnpicklingError):
                answer = None
        spent = time.perf_counter() - t0
        if answer is None:  # killed at the deadline, or died (memory, signal): undecided
            return None, TerminationReason.TIME_LIMIT, spent
        termination, matrix = answer
        found = None if matrix is None else Placement.from_rows(matrix)
        return found, TerminationReason(termination), spent

    def _decompose(
        self,
        instance: PlacementInstance,
        ctx: SolveContext,
        stop_at: float | None = None,
        bound_only: bool = False,
    ) -> Attempt:
        walk = ctx  # the walk over pairs stops early enough to leave the look-ahead its share
        if ctx.time_limit is not None:
            walk = dataclasses.replace(ctx, time_limit=(1 - LOOK_AHEAD_SHARE) * ctx.time_limit)
        out_of_time = deadline(walk, instance)
        build = Constructions(instance)
        counting = CountingBound(instance, out_of_time)
        narrow_stop, narrow_seconds = _combinatorial_budget(instance, walk)

        sides = Sides(instance, narrow_seconds)
        decided = {
            "closed form": 0,
            "counting bound": 0,
            "block design": 0,
            "guillotine": 0,
            "bands": 0,
            "one side": 0,
            "narrow test": 0,
            "group types": 0,
            "MIP": 0,
        }
        build_s = solve_s = 0.0

        def give_up(pair: TargetPair, why: str = "time limit", how: Any = None) -> Attempt:
            late_stop, late_seconds = _combinatorial_budget(instance, ctx, LOOK_AHEAD_PART)
            counting.expired, sides.seconds = deadline(ctx, instance), late_seconds
            look_ahead = (  # without a time limit it would have no bound on its time
                None
                if ctx.time_limit is None or bound_only
                else _look_ahead(instance, counting, sides, late_stop, late_seconds)
            )
            return Attempt(
                solution=_constructive_incumbent(
                    instance, deadline(ctx, instance), build, after=pair, look_ahead=look_ahead
                ),
                termination=how or TerminationReason.TIME_LIMIT,
                bound=pair.score,
                build_s=build_s,
                solve_s=solve_s,
                message=f"{why} while deciding A={pair.max_dp_use}, B={pair.max_pp_use}; "
                + _tally(decided),
            )

        def after_counting(a: int, b: int) -> tuple[str, Placement | Literal[False] | None]:
            """The constructions and exact tests of a pair the counting bound admits, cheapest
            first: what decided it ("" when none did, "time limit" when the walk must stop)
            and the outcome (a placement, ``False`` for infeasible, ``None``). With
            ``bound_only`` the only construction tried is the greedy guillotine cut: it
            takes milliseconds and ends the walk when it realises the pair, while the others
            may take seconds, and the pair's score is the bound whether they realise it or
            not."""
            found = construct(a, b)
            if found[0]:
                return found
            narrow = decide_narrow(instance, a, b, narrow_stop, narrow_seconds)
            if narrow is not None:
                return "narrow test", narrow
            if out_of_time():
                return "time limit", None
            if 2 not in (a, b):  # the narrow test is the exact test of the others
                typed = decide_typed(instance, a, b, narrow_seconds())
                if typed is not None:
                    return "group types", typed
            return ("time limit" if out_of_time() else ""), None

        def construct(a: int, b: int) -> tuple[str, Placement | None]:
            """The constructions of a pair, cheapest first: what realised it ("" when none
            did, "time limit" when the walk must stop) and the placement."""
            found = build.guillotine(a, b, out_of_time)
            if build.interrupted:
                return "time limit", None
            if found is not None:
                return "guillotine", found
            if out_of_time() or bound_only:
                return ("time limit" if out_of_time() else ""), None
            caps, rows, cols = instance.capacities, instance.rows, instance.cols
            cut = realise_bands(caps, rows, cols, a, b, narrow_seconds())
            if cut is not None:
                return "bands", Placement.from_rows(cut)
            if out_of_time():
                return "time limit", None
            found = sides.construct(a, b)
            if found is not None:
                return "one side", found
            return ("time limit" if out_of_time() else ""), None

        for pair in iter_target_pairs(instance):
            if out_of_time():
                return give_up(pair)
            if stop_at is not None and round(pair.score, 12) >= round(stop_at, 12):
                return Attempt(  # every pair below stop_at is infeasible: the caller's cut
                    solution=_constructive_incumbent(instance, out_of_time, build),
                    termination=TerminationReason.OBJECTIVE_LIMIT,
                    bound=pair.score,
                    build_s=build_s,
                    solve_s=solve_s,
                    message=f"stopped at A={pair.max_dp_use}, B={pair.max_pp_use}: no pair "
                    f"below stop_at={stop_at:g} is feasible; " + _tally(decided),
                )
            if pair.max_dp_use == 1 or pair.max_pp_use == 1:
                decided["closed form"] += 1
                found = (
                    build.monochrome_columns(pair.max_pp_use)
                    if pair.max_dp_use == 1
                    else build.monochrome_rows(pair.max_dp_use)
                )
            elif not counting.lagrangian.allows(pair.max_dp_use, pair.max_pp_use):
                decided["counting bound"] += 1
                continue
            else:
                # block design first: milliseconds, where the counting table can take a second
                found = build.block_design(pair.max_dp_use, pair.max_pp_use, out_of_time)
                if build.interrupted:
                    return give_up(pair)
                if found is not None:
                    decided["block design"] += 1
                elif not counting.allows(pair.max_dp_use, pair.max_pp_use):
                    decided["counting bound"] += 1
                    continue
                elif counting.interrupted:
                    return give_up(pair)
                elif sides.refutes(pair.max_dp_use, pair.max_pp_use):
                    decided["one side"] += 1
                    continue
                else:
                    how, outcome = after_counting(pair.max_dp_use, pair.max_pp_use)
                    if how == "time limit":
                        return give_up(pair)
                    if how:
                        decided[how] += 1
                    if outcome is False:
                        continue
                    found = outcome
                    if found is None:
                        skip = self._cannot_build(instance, walk)
                        if skip is not None:
                            return give_up(pair, skip[1], skip[0])
                        decided["MIP"] += 1
                        found, termination, spent = self._feasibility(instance, walk, pair)
                        solve_s += spent
                        if found is None and termination is not TerminationReason.INFEASIBLE:
                            return give_up(pair)
            if found is not None:
                return Attempt(
                    solution=found,
                    termination=TerminationReason.OPTIMAL,
                    proven_optimal=True,
                    bound=pair.score,
                    build_s=build_s,
                    solve_s=solve_s,
                    message=f"optimal target spreads A={pair.max_dp_use}, B={pair.max_pp_use}; "
                    + _tally(decided),
                )
        raise AssertionError("the pair (min(rows, M), min(cols, M)) is always feasible")


class LookAhead(NamedTuple):
    """The two stages of the look-ahead of :func:`_constructive_incumbent`: each maps a pair
    ``(A, B)`` to a placement realising it, or ``None``."""

    construct: Callable[[int, int], Placement | None]
    """Cheap and incomplete (the solver's: the one-sided construction)."""
    decide: Callable[[int, int], Placement | None]
    """Exact where it has the time (the solver's: the narrow test or the group-type
    programme)."""


def _look_ahead(
    instance: PlacementInstance,
    counting: CountingBound,
    sides: Sides,
    stop: Expired,
    seconds: Callable[[], float],
) -> LookAhead:
    """The solver's look-ahead: the one-sided construction, then the narrow test for a pair
    with a 2 and the group-type programme for the others; a stage returns ``None`` when the
    counting bound refutes the pair or it does not realise it in time."""

    def construct(a: int, b: int) -> Placement | None:
        if stop() or not counting.allows(a, b):
            return None
        return sides.construct(a, b)

    def decide(a: int, b: int) -> Placement | None:
        if stop() or not counting.allows(a, b):
            return None
        if 2 in (a, b):
            return decide_narrow(instance, a, b, stop, seconds) or None
        return decide_typed(instance, a, b, seconds()) or None

    return LookAhead(construct, decide)


def _combinatorial_budget(
    instance: PlacementInstance, ctx: SolveContext, share: float = COMBINATORIAL_SHARE
) -> tuple[Expired, Callable[[], float]]:
    """When the narrow test must stop, and the seconds one of its (or the one-sided
    packing's) integer programmes may take: ``share`` of the time left after the reserve for
    walking the pairs once more (no limit without a time limit)."""
    if ctx.time_limit is None:
        return _never, lambda: math.inf
    keep = WRAP_UP_S_PER_NODE * instance.n_nodes + CHILD_STOP_S

    def stop() -> bool:
        return ctx.time_left() <= keep

    def seconds() -> float:
        return share * (ctx.time_left() - keep)

    return stop, seconds


def _tally(decided: dict[str, int]) -> str:
    return "pairs decided by " + ", ".join(f"{k}: {v}" for k, v in decided.items())


def _constructive_incumbent(
    instance: PlacementInstance,
    out_of_time: Expired | None = None,
    build: Constructions | None = None,
    after: TargetPair | None = None,
    look_ahead: LookAhead | None = None,
) -> Placement:
    """Best of the closed-form and block constructions for the lowest-scoring pair any of them
    realises, and of GPU packing (which always succeeds). With ``after``, the walk starts
    after that pair (the decomposition already tried the constructions up to it). Then
    ``look_ahead.construct`` is given every pair between ``after`` and the incumbent's score,
    in increasing score, and the best placement it returns replaces the incumbent; then
    ``look_ahead.decide`` the pairs below the incumbent in decreasing score, and each
    placement it returns replaces it. With an exact ``decide`` the result is as good as the
    first feasible pair after ``after``.

    With ``out_of_time``, the walk over pairs stops when it says so and the best placement so
    far is returned, after adding the closed forms with the fewest minipods per row
    (``A = 1``) and per column (``B = 1``), which cost ``O(M log M + rows * cols)``.
    """
    build = build or Constructions(instance)
    candidates = [fill_in_rank_order(instance, packing_pods(instance))]
    realised = False
    for pair in _pairs_after(instance, after):
        if out_of_time is not None and out_of_time():
            break
        a, b = pair.max_dp_use, pair.max_pp_use
        for found in (
            build.monochrome_columns(b) if a == 1 else None,
            build.monochrome_rows(a) if b == 1 else None,
            build.block_design(a, b, out_of_time or _never),
            build.guillotine(a, b, out_of_time or _never) if a > 1 and b > 1 else None,
        ):
            if found is not None:
                candidates.append(found)
                realised = True
        if realised or build.interrupted:
            break
    if not realised and out_of_time is not None:
        candidates += _fewest_closed_forms(instance, build)
    best = min(candidates, key=lambda p: evaluate(instance, p))
    if look_ahead is None:
        return best
    # Only over the pairs that would beat the incumbent: never worse than it. The cheap stage
    # goes over all of them (a placement it builds for a pair may score below the pair); the
    # exact stage then goes down from the best so far, so that the time runs out on the hard
    # pairs near the bound, not on those it would realise at once.
    best_score = start_score = evaluate(instance, best)

    def keep(found: Placement | None) -> None:
        nonlocal best, best_score
        if found is not None and evaluate(instance, found) < best_score:
            best, best_score = found, evaluate(instance, found)

    for pair in _pairs_after(instance, after):
        if pair.score >= start_score or (out_of_time and out_of_time()):
            break
        if pair.max_dp_use > 1 and pair.max_pp_use > 1:
            keep(look_ahead.construct(pair.max_dp_use, pair.max_pp_use))
    below = [
        pair
        for pair in itertools.takewhile(
            lambda pair: pair.score < best_score, _pairs_after(instance, after)
        )
        if pair.max_dp_use > 1 and pair.max_pp_use > 1
    ]
    for pair in reversed(below):
        if out_of_time and out_of_time():
            break
        if pair.score < best_score:
            keep(look_ahead.decide(pair.max_dp_use, pair.max_pp_use))
    return best


def _fewest_closed_forms(instance: PlacementInstance, build: Constructions) -> list[Placement]:
    """The closed forms with the fewest minipods: every column whole (``A = 1``, least ``B``)
    and every row whole (``B = 1``, least ``A``), those that exist."""
    out = []
    for group_size, n_groups, make in (
        (instance.rows, instance.cols, build.monochrome_columns),
        (instance.cols, instance.rows, build.monochrome_rows),
    ):
        _, sums = build._groups_order(group_size)
        fewest = next((k for k, total in enumerate(sums) if total >= n_groups), None)
        if fewest is not None and fewest >= 1:
            found = make(fewest)
            if found is not None:
                out.append(found)
    return out


def _pairs_after(instance: PlacementInstance, after: TargetPair | None) -> Iterator[TargetPair]:
    """The target pairs in score order, from the one after ``after`` (all without it)."""
    pairs = iter_target_pairs(instance)
    if after is not None:
        for pair in pairs:
            if (pair.max_dp_use, pair.max_pp_use) == (after.max_dp_use, after.max_pp_use):
                break
    return pairs


def _never() -> bool:
    return False
