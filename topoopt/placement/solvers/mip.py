"""MIP solvers of the placement family: ``placement/coarse-mip`` and ``placement/exact-mip``.

Both are :class:`~topoopt.core.formulation.MipSolver` s over a formulation of
:mod:`topoopt.placement.formulations` (imported when they solve, so this module does not import
Pyomo); what is theirs is the choice of scheduling unit (coarse) and the decomposition over
target spreads (exact).
"""

from __future__ import annotations

from typing import Any

from topoopt.core.errors import InvalidOptionError
from topoopt.core.formulation import MipSolver
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement, evaluate
from topoopt.placement.solvers.baselines import fill_in_rank_order, packing_pods
from topoopt.placement.targets import (
    CountingBound,
    TargetPair,
    block_design,
    monochrome_columns,
    monochrome_rows,
    target_pairs,
)

UNITS = ("pp", "dp")
"""Scheduling units of the coarse model (``topoopt.placement.formulations.coarse.UNITS``)."""


@register_solver
class CoarseMipSolver(MipSolver):
    """Arnold's coarse MIP (eq. 4–10) with integral node counts, then rank assignment.

    Options: ``unit`` = ``"pp"`` (PP groups are the scheduling unit, the paper's choice),
    ``"dp"``, or ``"auto"`` (solve both, keep the better exact score).
    """

    name = "placement/coarse-mip"
    family = "placement"
    formulation = "topoopt.placement.formulations.coarse"

    def start(self, instance: PlacementInstance, *, unit: str = "pp", **opts: Any) -> Placement:
        """The closed-form start of ``unit`` (whole units, or units laid end to end)."""
        from topoopt.placement.formulations.coarse import start_solution

        return start_solution(instance, unit)

    def _solve(
        self, instance: PlacementInstance, ctx: SolveContext, *, unit: str = "pp"
    ) -> Attempt:
        if unit not in (*UNITS, "auto"):
            raise InvalidOptionError(f"unit: must be 'pp', 'dp' or 'auto', got {unit!r}")
        units = UNITS if unit == "auto" else (unit,)
        best: tuple[float, Placement] | None = None
        build_s = solve_s = 0.0
        notes = []
        termination = TerminationReason.COMPLETED
        for u in units:
            run = self.run(instance, ctx, unit=u)
            out = run.outcome
            build_s += run.build_s
            solve_s += run.solve_s
            if out.termination is not TerminationReason.OPTIMAL:
                termination = out.termination
            if run.solution is not None:
                score = evaluate(instance, run.solution)
                notes.append(
                    f"unit {u}: coarse objective {out.objective:g} ({out.termination}), "
                    f"exact score {score:g}"
                )
                if best is None or score < best[0]:
                    best = (score, run.solution)
            else:
                notes.append(f"unit {u}: no solution ({out.message})")
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

    def start(self, instance: PlacementInstance, **opts: Any) -> Placement | None:
        """The constructive incumbent for the monolithic model; none for a feasibility model."""
        return None if opts else _constructive_incumbent(instance)

    def _solve(
        self, instance: PlacementInstance, ctx: SolveContext, *, method: str = "decompose"
    ) -> Attempt:
        if method == "decompose":
            return self._decompose(instance, ctx)
        if method == "monolithic":
            return self.attempt(ctx, self.run(instance, ctx))
        raise InvalidOptionError(f"method: must be 'decompose' or 'monolithic', got {method!r}")

    def _decompose(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        counting = CountingBound(instance)
        decided = {"closed form": 0, "counting bound": 0, "block design": 0, "MIP": 0}
        build_s = solve_s = 0.0
        for pair in target_pairs(instance):
            if ctx.expired():
                return self._give_up(instance, pair, decided, build_s, solve_s)
            if pair.max_dp_use == 1 or pair.max_pp_use == 1:
                decided["closed form"] += 1
                found = (
                    monochrome_columns(instance, pair.max_pp_use)
                    if pair.max_dp_use == 1
                    else monochrome_rows(instance, pair.max_dp_use)
                )
            elif not counting.allows(pair.max_dp_use, pair.max_pp_use):
                decided["counting bound"] += 1
                continue
            else:
                found = block_design(instance, pair.max_dp_use, pair.max_pp_use)
                if found is not None:
                    decided["block design"] += 1
                else:
                    decided["MIP"] += 1
                    run = self.run(
                        instance,
                        ctx,
                        rel_gap=0.0,
                        max_dp_use=pair.max_dp_use,
                        max_pp_use=pair.max_pp_use,
                    )
                    build_s += run.build_s
                    solve_s += run.solve_s
                    found = run.solution
                    if (
                        found is None
                        and run.outcome.termination is not TerminationReason.INFEASIBLE
                    ):
                        return self._give_up(instance, pair, decided, build_s, solve_s)
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

    @staticmethod
    def _give_up(
        instance: PlacementInstance,
        pair: TargetPair,
        decided: dict[str, int],
        build_s: float,
        solve_s: float,
    ) -> Attempt:
        return Attempt(
            solution=_constructive_incumbent(instance),
            termination=TerminationReason.TIME_LIMIT,
            bound=pair.score,
            build_s=build_s,
            solve_s=solve_s,
            message=f"time limit while deciding A={pair.max_dp_use}, B={pair.max_pp_use}; "
            + _tally(decided),
        )


def _tally(decided: dict[str, int]) -> str:
    return "pairs decided by " + ", ".join(f"{k}: {v}" for k, v in decided.items())


def _constructive_incumbent(instance: PlacementInstance) -> Placement:
    """Best of the closed-form and block constructions for the lowest-scoring pair any of them
    realises, and of GPU packing (which always succeeds)."""
    candidates = [fill_in_rank_order(instance, packing_pods(instance))]
    for pair in target_pairs(instance):
        for make in (
            lambda p: monochrome_columns(instance, p.max_pp_use) if p.max_dp_use == 1 else None,
            lambda p: monochrome_rows(instance, p.max_dp_use) if p.max_pp_use == 1 else None,
            lambda p: block_design(instance, p.max_dp_use, p.max_pp_use),
        ):
            found = make(pair)
            if found is not None:
                candidates.append(found)
        if len(candidates) > 1:
            break
    return min(candidates, key=lambda p: evaluate(instance, p))
