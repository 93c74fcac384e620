"""``placement/levels``: the placement optimised at every level of the tree, with proof.

The instance's :class:`~topoopt.placement.instance.LevelObjective` says how the levels'
scores ``S_0 .. S_{L-1}`` (Arnold eq. 2 over the switches of each level, 0 = the minipods)
combine: ``lex`` (lexicographically from the top; also what this solver does on a ``top``
instance, whose objective ``S_0`` is the leading term) or ``weighted``
(``sum_l w_l S_l``). The result carries the node of every cell
(:attr:`Placement.nodes <topoopt.placement.solution.Placement.nodes>`), so its
``rank_order`` follows the decision at every level, and a proven lower bound per level
(metrics ``minipod_bound``, ``level<i>_bound``, ``leaf_bound``).

Method ``mip`` solves the model of the whole tree
(:mod:`topoopt.placement.formulations.levels`): one solve for ``weighted``; for ``lex`` one
per level, stage ``t`` minimising ``S_t`` with every level above capped at its proven
optimum.

Method ``walk`` (:class:`_Planner`) walks down the tree. Where the job fits in one switch of
a level it tries each such switch (that level's spreads are then 0), best bounds first, and
recurses into it; at the first level where it must span switches (the *split* level) it
solves Arnold's problem over those switches exactly (``placement/exact-mip``), then puts
every switch's cells on its children one level at a time
(:func:`topoopt.placement.levels.assign_leaves`, each level's score given the one above).
Every level gets a lower bound: 0 above the split, ``exact-mip``'s bound at it, and below it
the single-level optimum (or bound) over that level's switches of the subtree, which no
placement beats. The result is proven optimal when the bounds meet the scores (for ``lex``
level by level, for ``weighted`` their weighted sums).

An unproven walk also tries the placements of the production placers of :data:`PORTFOLIO`
(Kueue, KAI, Slurm, Volcano) and keeps the best: ``placement/levels`` is never worse than
them, and one of theirs that meets the walk's bounds is proven optimal. Then the racks of
the incumbent's whole groups are chosen for all of them at once (option ``racks``,
:mod:`topoopt.placement.column_racks`), and the walk is tried again without the smallest
leaves (option ``trim``, :func:`_trimmed_walks`).

Method ``auto`` (default) walks, and when the walk is not proven and the model of the whole
tree is small (:data:`MIP_ASSIGNMENTS`) solves it from the walk's placement. An instance
without leaves has one level: ``exact-mip`` solves it. See ``docs/levels.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from topoopt.core.deadline import TimeUp, interrupt_at
from topoopt.core.errors import InvalidOptionError
from topoopt.core.formulation import MipSolver
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.placement.constraints import infeasible_reason, job_level, room, slice_rules
from topoopt.placement.instance import (
    Constraints,
    Leaf,
    LevelObjective,
    Minipod,
    PlacementInstance,
)
from topoopt.placement.levels import assign_leaves
from topoopt.placement.solution import Placement, check
from topoopt.placement.solvers._budget import deadline, seconds_left
from topoopt.placement.tree import (
    DIGITS,
    Tree,
    build_tree,
    cell_leaf_array,
    d,
    fewest_holding,
    level_scores,
    lex_key,
    placement_from_leaves,
    scores_of_leaves,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from topoopt.placement.split_blocks import Blocks, Frontier
    from topoopt.placement.whole_side import WholeSide

    _Search = Callable[
        [PlacementInstance, "_Planner", "_Candidate", Placement, SolveContext],
        "tuple[Placement, tuple[float, ...], str] | None",
    ]

METHODS = ("auto", "walk", "mip")
"""Values of the option ``method``."""

MIP_ASSIGNMENTS = 3_000
"""``auto`` solves the model of the whole tree after an unproven walk when it has at most
this many assignment variables (``rows * cols * leaves with a free node``)."""

SINGLE_SHARE = 0.3
"""Share of the time left one single-level ``exact-mip`` call of the walk may take."""

LEAVES_SHARE = 0.3
"""Share of the time left one step of the walk (a switch level's cells on its children,
:func:`assign_leaves`) may take: its branch and bound on jobs of at most 48 cells could take
the whole limit (a 6 x 8 job, weights 16 / 4 / 1: 1.5 s of 2 s in one step, then nothing
left for the other classes and the whole-tree model; 6.3 against 5.6 with time for them)."""

QUICK_S = 0.05
"""Time of a single-level ``exact-mip`` call in the walk's first pass over the switches that
hold the job (see :meth:`_Planner.plan`)."""

WITHIN_SUBSETS = 32
"""The floor within the few switches of a split with one side whole
(:meth:`_Planner.within`) is the least over every subset of that many switches when there
are at most this many subsets, else the floor of the largest switches below them."""

CAP_SLACK = 1e-6
"""What a lex stage adds to the proven optimum of a level above when it caps it."""


def bound_names(levels: int) -> list[str]:
    """Metric names of the per-level bounds, top first: ``minipod_bound``,
    ``level<i>_bound`` (``1 .. L-2``), ``leaf_bound``.

    Examples
    --------
    >>> bound_names(4)
    ['minipod_bound', 'level1_bound', 'level2_bound', 'leaf_bound']
    """
    if levels == 1:
        return ["minipod_bound"]
    return ["minipod_bound", *(f"level{i}_bound" for i in range(1, levels - 1)), "leaf_bound"]


@register_solver
class LevelsSolver(MipSolver):
    """Every level of the tree: lexicographic from the top (``lex`` and ``top`` instances) or
    the instance's weights (``weighted``), proven optimal with a bound per level.

    Option ``method``: ``"mip"`` (the model of the whole tree) or ``"auto"`` (default; the
    same for now). Option ``trim`` (default ``True``): an unproven walk is tried again
    without the smallest leaves (:func:`_trimmed_walks`, at most half the time left).
    Option ``racks`` (default ``True``): an unproven placement's groups (the switches above
    the leaves) get their racks chosen for all of them at once (:func:`_column_racks`).
    """

    name = "placement/levels"
    family = "placement"
    exact = True
    gives_bound = True
    formulation = "topoopt.placement.formulations.levels"

    def _solve(
        self,
        instance: PlacementInstance,
        ctx: SolveContext,
        *,
        method: str = "auto",
        trim: bool = True,
        racks: bool = True,
    ) -> Attempt:
        if method not in METHODS:
            raise InvalidOptionError(f"method: must be one of {', '.join(METHODS)}, got {method!r}")
        for name, value in (("trim", trim), ("racks", racks)):
            if not isinstance(value, bool):
                raise InvalidOptionError(f"{name}: must be true or false, got {value!r}")
        if instance.constraints:
            reason = infeasible_reason(instance, build_tree(instance))
            if reason is not None:
                return Attempt(None, TerminationReason.INFEASIBLE, message=reason)
        if method == "mip":
            return self._mip(instance, ctx)
        searches = tuple(
            search
            for search, wanted in (
                (_independent_lines, True),
                (_column_racks, racks),
                (functools.partial(_trimmed_walks, racks=racks), trim),
            )
            if wanted
        )
        plain, why = _without_implied(instance)
        if plain is not instance:
            attempt = self._plain(plain, ctx, method, searches)
            if attempt.solution is None or not check(instance, attempt.solution):
                return dataclasses.replace(attempt, message=f"{why}; {attempt.message}")
        return self._plain(instance, ctx, method, searches)

    def _plain(
        self,
        instance: PlacementInstance,
        ctx: SolveContext,
        method: str,
        searches: tuple[_Search, ...],
    ) -> Attempt:
        """One level by ``placement/exact-mip``; a job of one row or one column by the
        dynamic programme over the tree (:func:`_line`); else the walk."""
        if instance.n_levels == 1 and not instance.constraints:
            return self._flat(instance, ctx)
        if 1 in (instance.rows, instance.cols) and not instance.constraints:
            line = _line(instance)
            if line is not None:
                return line
        return self._walk(instance, ctx, method, searches)

    def _flat(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        """One level: ``placement/exact-mip`` on the instance (its answer and bound)."""
        from topoopt.placement.solvers.mip import ExactMipSolver

        result = ExactMipSolver().solve(
            dataclasses.replace(instance, objective=LevelObjective()),
            backend=ctx.backend,
            time_limit=None if ctx.time_limit is None else max(ctx.time_left(), 1e-3),
            seed=ctx.seed,
            threads=ctx.threads,
            rel_gap=ctx.rel_gap,
            backend_options=ctx.backend_options,
        )
        bound = result.bound if math.isfinite(result.bound) else None
        return Attempt(
            solution=result.solution,
            termination=result.termination,
            proven_optimal=result.status is SolutionStatus.OPTIMAL,
            bound=None if bound is None else _weight0(instance) * bound,
            build_s=result.build_s,
            solve_s=result.solve_s,
            message=f"one level: placement/exact-mip: {result.message}",
            metrics={} if bound is None else {"minipod_bound": bound},
        )

    def _walk(
        self,
        instance: PlacementInstance,
        ctx: SolveContext,
        method: str,
        searches: tuple[_Search, ...],
    ) -> Attempt:
        """The walk down the tree (:class:`_Planner`); when it is unproven, the production
        placers' placements (:func:`_portfolio`) and ``searches`` in turn, each from the
        best placement so far; then the whole-tree model if it is still unproven and small
        (``auto``)."""
        t0 = time.perf_counter()
        tree = build_tree(instance)
        # the whole-tree model's assignment variables (its module imports Pyomo: not here)
        assignments = instance.rows * instance.cols * tree.free_leaves
        small = method == "auto" and assignments <= MIP_ASSIGNMENTS
        try:
            planner = _Planner(instance, tree, ctx)
        except ValueError as exc:  # slices the walk cannot keep whole
            mip = self._mip(instance, ctx) if small else None
            if mip is not None and (
                mip.solution is not None or mip.termination is TerminationReason.INFEASIBLE
            ):
                return mip
            # the whole-tree model stopped without a placement: the slices in rank order
            tried = "" if mip is None else f" (the whole-tree model found none: {mip.message})"
            placement = _slices_in_order(instance, tree)
            if placement is None:
                return Attempt(
                    None,
                    TerminationReason.COMPLETED if mip is None else mip.termination,
                    message=f"walk: {exc}; the slices in rank order found no room{tried}"
                    + ("" if small else " (try method='mip')"),
                )
            return Attempt(
                placement,
                TerminationReason.COMPLETED if mip is None else mip.termination,
                message=f"walk: {exc}: the slices in rank order, best fit, unproven{tried}",
            )
        found = planner.run()
        if found.how == "infeasible":
            if small:
                return self._mip(instance, ctx)
            return Attempt(
                None,
                TerminationReason.INFEASIBLE,
                message="constraints.required_level: no switch of that level can hold the job"
                if instance.constraints.required_level is not None
                else "constraints: no placement found",
            )
        leaves = found.leaves
        note = ""
        if instance.constraints.max_switches is not None:
            leaves, note = planner.within_switches(leaves)
        placement = placement_from_leaves(instance, tree, leaves)
        scores = tuple(s.score for s in scores_of_leaves(instance, tree, leaves))
        found = dataclasses.replace(found, leaves=leaves, scores=scores)
        proven = planner.proven(found) and not check(instance, placement)
        for search in (_portfolio, *searches):
            if proven:
                break
            alternative = search(instance, planner, found, placement, ctx)
            if alternative is not None:
                placement, scores, name = alternative
                found = dataclasses.replace(found, scores=scores)
                note += f"; incumbent from {name}"
                proven = planner.proven(found)
        walk_s = time.perf_counter() - t0
        message = f"walk: {found.how}{note}; {planner.summary()}"
        bounds = planner.bound_vector(found)
        if not proven and small and not ctx.expired():
            feasible = not check(instance, placement)
            mip = self._mip(instance, ctx, start=placement if feasible else None)
            if mip.solution is not None or mip.termination is TerminationReason.INFEASIBLE:
                better = mip.solution is None or not feasible
                if mip.solution is not None and feasible:
                    mip_scores = level_scores(instance, mip.solution)
                    better = planner.key(tuple(s.score for s in mip_scores)) <= planner.key(
                        found.scores
                    )
                if better:
                    return _with_walk_bounds(
                        mip,
                        planner,
                        found,
                        solve_s=mip.solve_s + walk_s,
                        message=f"{message}; then {mip.message}",
                        metrics=_max_bounds(mip.metrics, bounds, instance.n_levels),
                    )
        if check(instance, placement):
            return Attempt(
                None,
                TerminationReason.COMPLETED,
                solve_s=walk_s,
                message=f"{message}; it breaks {'; '.join(check(instance, placement))}",
            )
        if not proven and planner.top_proven(found.scores, found.bounds[0]):
            proven = True
            message += "; S_0 proven (the objective 'top'), the levels below unproven"
        return Attempt(
            solution=placement,
            termination=TerminationReason.OPTIMAL if proven else planner.termination(),
            proven_optimal=proven,
            bound=planner.scalar_bound(found),
            solve_s=walk_s,
            message=message,
            metrics=dict(zip(bound_names(instance.n_levels), bounds, strict=True)),
        )

    def _mip(
        self,
        instance: PlacementInstance,
        ctx: SolveContext,
        start: Placement | None = None,
    ) -> Attempt:
        """The model of the whole tree: one solve (``weighted``) or one per level (``lex``)."""
        formulation = self.load()
        levels = instance.n_levels
        names = bound_names(levels)
        t0 = time.perf_counter()
        try:
            with interrupt_at(ctx.deadline):
                model = formulation.build(instance)
                if start is not None:
                    formulation.warm_start(model, start)
        except TimeUp:
            return Attempt(
                start,
                TerminationReason.TIME_LIMIT,
                build_s=time.perf_counter() - t0,
                message="no time left to build the model of the whole tree",
            )
        build_s = time.perf_counter() - t0
        warm = start is not None
        solve_s = 0.0
        if instance.objective.mode == "weighted":
            outcome = ctx.solve_model(model, warmstart=warm)
            solve_s += outcome.solve_s
            if outcome.termination is TerminationReason.INFEASIBLE:
                return _proven_infeasible(instance, build_s, solve_s)
            found = formulation.extract(model, instance) if outcome.has_solution else start
            attempt = ctx.exact_attempt(outcome, found, build_s)
            return Attempt(
                solution=found,
                termination=attempt.termination,
                proven_optimal=attempt.proven_optimal,
                bound=attempt.bound,
                build_s=build_s,
                solve_s=solve_s,
                message=f"whole-tree model, weights {list(instance.objective.weights)}; "
                + outcome.message,
            )
        bounds: dict[str, float] = {}
        found = start
        termination = TerminationReason.OPTIMAL
        notes = []
        for stage in range(levels):
            for lv in range(levels):
                model.weight[lv] = 1.0 if lv == stage else 0.0
            outcome = ctx.solve_model(model, warmstart=warm)
            solve_s += outcome.solve_s
            if stage == 0 and outcome.termination is TerminationReason.INFEASIBLE:
                return _proven_infeasible(instance, build_s, solve_s)
            if outcome.has_solution:
                found = formulation.extract(model, instance)
                warm = True
            proven = outcome.termination is TerminationReason.OPTIMAL and ctx.rel_gap == 0
            if found is None or not proven:
                if outcome.bound is not None and math.isfinite(outcome.bound):
                    bounds[names[stage]] = max(outcome.bound, 0.0)
                termination = outcome.termination
                notes.append(f"stage {stage} ({instance.levels[stage]}): {outcome.message}")
                break
            best = level_scores(instance, found)[stage].score
            bounds[names[stage]] = round(best, DIGITS)
            model.cap[stage] = best + CAP_SLACK
        proven_all = termination is TerminationReason.OPTIMAL and len(bounds) == levels
        stages = "lexicographic, one model solve per level"
        return Attempt(
            solution=found,
            termination=termination,
            proven_optimal=proven_all,
            bound=bounds.get(names[0]),
            build_s=build_s,
            solve_s=solve_s,
            message=f"whole-tree model, {stages}" + ("; " + "; ".join(notes) if notes else ""),
            metrics=bounds,
        )

    def start(self, instance: Any, **opts: Any) -> Any | None:
        """No start of its own (the stages warm start each other)."""
        return None


PORTFOLIO = (
    "placement/kueue-balanced",
    "placement/kueue-best-fit",
    "placement/kai",
    "placement/slurm-tree-eval",
    "placement/volcano",
)
"""Production placers whose placements an unproven walk also tries (each takes at most a few
hundred milliseconds at 16,384 nodes): ``placement/levels`` is then never worse than them,
and an incumbent of theirs that meets the walk's bounds is proven."""


def _portfolio(
    instance: PlacementInstance,
    planner: _Planner,
    found: _Candidate,
    placement: Placement,
    ctx: SolveContext,
) -> tuple[Placement, tuple[float, ...], str] | None:
    """The best placement of :data:`PORTFOLIO` when it beats the walk's (feasible, within
    the constraints), with its scores and the placer's name."""
    from topoopt.core.registry import get_solver

    best_key = planner.key(found.scores) if not check(instance, placement) else None
    out = None
    for name in PORTFOLIO:
        if ctx.expired():
            break
        solver = get_solver(name)
        if solver.unsupported_reason(instance) is not None:
            continue
        result = solver.solve(instance, seed=ctx.seed)
        if result.solution is None or check(instance, result.solution):
            continue
        scores = tuple(s.score for s in level_scores(instance, result.solution))
        key = planner.key(scores)
        if best_key is None or key < best_key:
            best_key, out = key, (result.solution, scores, name)
    return out


RACKS_SHARE = 0.25
"""Share of the time left that :func:`_column_racks` may take."""

RACKS_SECONDS = 2.0
"""The most seconds :func:`_rechosen` takes, whatever the time left (on the benchmark's
4,096-node job it takes 0.4-0.7 s)."""


def _independent_lines(
    instance: PlacementInstance,
    planner: _Planner,
    found: _Candidate,
    placement: Placement,
    ctx: SolveContext,
) -> tuple[Placement, tuple[float, ...], str] | None:
    """With ``alpha`` 1 (0) only the columns' (rows') spreads count, so each column (row) is
    a one-line problem of its own and the lines only share the free nodes: the lines placed
    one by one, each exactly on what the others left
    (:func:`~topoopt.placement.single_line.lines_one_by_one`), when that beats the
    incumbent (a construction; the bounds stay the walk's). A random sweep of jobs of at most
    48 nodes found the walk at rack 2.0 where every line fits in one rack (bound 0)."""
    from topoopt.placement.single_line import level_costs, lines_one_by_one

    if instance.constraints or instance.alpha not in (0.0, 1.0) or instance.n_levels < 2:
        return None
    tree = planner.tree
    costs = level_costs(instance, tree)
    if costs is None:
        return None
    grid = lines_one_by_one(instance, tree, costs, columns=instance.alpha == 1.0)
    if grid is None:
        return None
    scores = tuple(s.score for s in scores_of_leaves(instance, tree, grid))
    if planner.key(scores) >= planner.key(found.scores):
        return None
    candidate = placement_from_leaves(instance, tree, grid)
    if check(instance, candidate):
        return None
    return candidate, scores, "the lines placed one by one (alpha 0 or 1)"


def _column_racks(
    instance: PlacementInstance,
    planner: _Planner,
    found: _Candidate,
    placement: Placement,
    ctx: SolveContext,
) -> tuple[Placement, tuple[float, ...], str] | None:
    """The incumbent with the racks of its groups chosen for all of them at once
    (:func:`~topoopt.placement.column_racks.rechoose`, within :data:`RACKS_SHARE` of the
    time left), when that beats it: a construction, the bounds stay the walk's.

    The walk puts each group's cells on its racks one group at a time, but a column's
    racks add up over its groups. Measured on the benchmark's 4,096-node job (512 x 8),
    seeds 0-2, 10 s: see ``docs/levels.md`` ("Racks for the columns"). Instances with
    constraints are left as they are."""
    if instance.constraints or instance.n_levels < 2 or check(instance, placement):
        return None
    better = _rechosen(instance, planner, placement, ctx)
    if better is None or planner.key(better[1]) >= planner.key(found.scores):
        return None
    return (*better, "the groups' racks chosen for their columns")


def _rechosen(
    instance: PlacementInstance, planner: _Planner, placement: Placement, ctx: SolveContext
) -> tuple[Placement, tuple[float, ...]] | None:
    """``placement`` (feasible) with its groups' racks chosen again and its scores,
    when that lowers its objective (:func:`~topoopt.placement.column_racks.rechoose`,
    within :data:`RACKS_SHARE` of the time ``ctx`` has left and :data:`RACKS_SECONDS`)."""
    from topoopt.placement.column_racks import rechoose

    tree = planner.tree  # the instance's (a trimmed walk's placement is one of the instance's)
    seconds = RACKS_SECONDS
    if ctx.time_limit is not None:
        seconds = min(seconds, RACKS_SHARE * ctx.time_left())
    leaves = cell_leaf_array(instance, placement, tree)
    grid = rechoose(instance, tree, leaves, planner.key, seconds)
    if grid is None:
        return None
    candidate = placement_from_leaves(instance, tree, grid)
    if check(instance, candidate):
        return None
    return candidate, tuple(s.score for s in scores_of_leaves(instance, tree, grid))


TRIM_ROUNDS = 3
"""Thresholds :func:`_trimmed_walks` tries: the smallest distinct free-node counts of the
leaves."""

TRIM_SHARE = 0.5
"""Share of the time left that :func:`_trimmed_walks` may take."""


def _trimmed_walks(
    instance: PlacementInstance,
    planner: _Planner,
    found: _Candidate,
    placement: Placement,
    ctx: SolveContext,
    racks: bool = False,
) -> tuple[Placement, tuple[float, ...], str] | None:
    """The walk again on the instance without its smallest leaves (those of at most ``t``
    free nodes), when it beats the incumbent on the instance itself (with ``racks``, after
    :func:`_rechosen`): a construction, the bounds stay those of the whole instance.

    The walk fills the switches of its split level as far as their free nodes go, blind to
    the levels below: a group filled to its last free node uses its smallest racks, and
    every column on them touches one rack more. Without those racks the levels above leave
    them empty where they can. ``t`` runs over the :data:`TRIM_ROUNDS` smallest free-node
    counts of the leaves, largest first (the most racks left out first), until one beats
    the incumbent, within :data:`TRIM_SHARE` of the time left; a threshold that leaves
    fewer free nodes than the job needs is skipped. Instances with constraints are left as
    they are. Measured on the benchmark's 4,096-node job (512 x 8), seeds 0-2, 10 s: rack
    scores 36.5 / 35.5 / 37.0 became 35.0 / 34.5 / 37.0, the pod and group levels at the
    same optimum (seed 2: 36.5 when its trimmed walks get the time; ``docs/levels.md``)."""
    if instance.constraints or instance.n_levels < 2:
        return None
    best = planner.key(found.scores) if not check(instance, placement) else None
    share = None if ctx.time_limit is None else TRIM_SHARE * ctx.time_left()
    sub = dataclasses.replace(ctx, time_limit=share, started=time.perf_counter())
    sizes = sorted({len(leaf.nodes) for pod in instance.minipods for leaf in pod.leaves} - {0})
    for t in reversed(sizes[:TRIM_ROUNDS]):
        if sub.expired():
            break
        pods = []
        for pod in instance.minipods:
            kept = [leaf for leaf in pod.leaves if len(leaf.nodes) > t]
            if kept:
                pods.append(Minipod.from_leaves(pod.name, kept))
        if sum(pod.free_nodes for pod in pods) < instance.n_nodes:
            continue
        trimmed = dataclasses.replace(instance, minipods=tuple(pods))
        tree = build_tree(trimmed)
        got = _Planner(trimmed, tree, sub).run()
        if got.how == "infeasible" or not all(map(math.isfinite, got.scores)):
            continue
        candidate = placement_from_leaves(trimmed, tree, got.leaves)
        if check(instance, candidate):
            continue
        scores = tuple(s.score for s in level_scores(instance, candidate))
        polished = _rechosen(instance, planner, candidate, sub) if racks else None
        if polished is not None and planner.key(polished[1]) < planner.key(scores):
            candidate, scores = polished
        if best is None or planner.key(scores) < best:
            nodes = f"{t} free node{'s' if t > 1 else ''}"
            return candidate, scores, f"the walk without the leaves of at most {nodes}"
    return None


def _proven_infeasible(instance: PlacementInstance, build_s: float, solve_s: float) -> Attempt:
    """The whole-tree model proved that no placement respects the constraints."""
    fields = ", ".join(f"constraints.{name}" for name in instance.constraints.to_dict())
    return Attempt(
        None,
        TerminationReason.INFEASIBLE,
        build_s=build_s,
        solve_s=solve_s,
        message=f"whole-tree model: no placement respects {fields or 'the instance'}",
    )


def _line(instance: PlacementInstance) -> Attempt | None:
    """A job of one row or one column, every level exact (:mod:`~topoopt.placement.single_line`):
    the bound is the optimum; per level, for ``weighted``, the level's own least score (the
    programme with that level's cost alone), else the scores (lexicographic bounds). ``None``
    when the lexicographic costs would not stay exact."""
    from topoopt.placement.single_line import level_costs, line_leaves

    t0 = time.perf_counter()
    tree = build_tree(instance)
    costs = level_costs(instance, tree)
    if costs is None:
        return None
    leaves = line_leaves(instance, tree, costs)
    scores = [s.score for s in scores_of_leaves(instance, tree, leaves)]
    if instance.objective.mode == "weighted":
        bound = _weighted(instance.objective.weights, scores)
        bounds = []
        for level in range(tree.n_levels):
            alone = np.zeros(tree.n_levels)
            alone[level] = 1.0
            least = line_leaves(instance, tree, alone)
            bounds.append(scores_of_leaves(instance, tree, least)[level].score)
    else:
        bound, bounds = scores[0], scores
    return Attempt(
        solution=placement_from_leaves(instance, tree, leaves),
        termination=TerminationReason.OPTIMAL,
        proven_optimal=True,
        bound=bound,
        solve_s=time.perf_counter() - t0,
        message="one row or one column: every level exact by a dynamic programme over the tree",
        metrics=dict(
            zip(bound_names(tree.n_levels), (round(b, DIGITS) for b in bounds), strict=True)
        ),
    )


def _without_implied(instance: PlacementInstance) -> tuple[PlacementInstance, str]:
    """The instance without the constraints that only name a level whose one switch must
    hold the job (``required_level``, ``preferred_level``, ``block`` without segments) when
    they bind nothing its optimum does not already keep, and why; else ``instance`` itself.

    Such a constraint asks for one switch of a level ``L`` (:func:`job_level`; none: a
    preferred level no switch can hold, or no block size that holds the job, binds
    nothing). With the ``lex`` objective and ``0 < alpha < 1`` every optimum keeps the job
    in one switch of each level where some switch holds it (spanning two costs at least
    ``2 min(alpha, 1 - alpha)`` there, with every level above at 0), and a required level no
    switch can hold is refused before (:func:`infeasible_reason`); so the optimum without
    the constraint is the optimum with it. The instance without them gets the walk's whole
    machinery (the constructions below the split take no constraints); the solver checks
    the result against the constraints and solves with them if it breaks one.
    """
    c = instance.constraints
    if not c or any(
        x is not None for x in (c.slice_size, c.slice_layers, c.segment, c.max_switches)
    ):
        return instance, ""
    level = job_level(instance, build_tree(instance))
    fields = ", ".join(f"constraints.{name}" for name in c.to_dict())
    if level is None:
        why = f"{fields}: binds nothing here (no switch must hold the whole job)"
    elif instance.objective.mode == "lex" and 0.0 < instance.alpha < 1.0:
        why = f"{fields}: every lex optimum keeps the job in one {instance.levels[level]}"
    else:
        return instance, ""
    return dataclasses.replace(instance, constraints=Constraints()), why


def _weight0(instance: PlacementInstance) -> float:
    """The factor of ``S_0`` in the objective (1 unless ``weighted``)."""
    if instance.objective.mode == "weighted":
        return instance.objective.weights[0]
    return 1.0


def _with_walk_bounds(
    mip: Attempt, planner: _Planner, found: _Candidate, **changes: Any
) -> Attempt:
    """The whole-tree model's attempt with the walk's bounds kept: they hold for every
    placement (lexicographically for ``lex``), so the larger of the two scalar bounds is
    reported, and the model's placement is proven when the walk's bounds meet its scores
    (a model stopped at its time limit often has a weaker bound than the walk, or none)."""
    bound = max(
        (b for b in (mip.bound, planner.scalar_bound(found)) if b is not None and math.isfinite(b)),
        default=None,
    )
    if mip.solution is not None and not mip.proven_optimal:
        scores = tuple(s.score for s in level_scores(planner.inst, mip.solution))
        if planner.key(found.bounds) >= planner.key(scores) or planner.top_proven(scores, bound):
            changes.update(termination=TerminationReason.OPTIMAL, proven_optimal=True)
    return dataclasses.replace(mip, bound=bound, **changes)


def _max_bounds(
    mip: dict[str, float] | Any, walk: Sequence[float], levels: int
) -> dict[str, float]:
    """Per-level bounds: the larger of the whole-tree model's and the walk's."""
    out = dict(zip(bound_names(levels), walk, strict=True))
    for key, value in dict(mip).items():
        out[key] = max(out.get(key, value), value)
    return out


@dataclass(frozen=True)
class _Single:
    """What ``placement/exact-mip`` found on one level's switches."""

    matrix: np.ndarray
    score: float
    bound: float
    proven: bool
    stopped: bool = False


@dataclass(frozen=True)
class _Candidate:
    """A placement the walk found: its leaves, its scores and lower bounds per level (for
    the placements of its class: inside one switch, or spanning a split level), and how."""

    leaves: np.ndarray
    scores: tuple[float, ...]
    bounds: tuple[float, ...]
    how: str
    floor: tuple[float, ...] = ()
    """Per-level bounds of every placement of the class (for ``weighted``: ``bounds`` is
    the vector whose weighted sum bounds the objective, not a bound per level)."""


def _weighted(weights: Sequence[float], values: Sequence[float]) -> float:
    """``sum_l w_l values_l`` over the levels of positive weight: a level of weight 0 does not
    count even at the score ``inf`` of a class with no placement (``0 * inf`` is nan, which
    compares as neither better nor worse)."""
    return float(sum(w * v for w, v in zip(weights, values, strict=True) if w > 0))


class _Planner:
    """The walk down the tree of ``placement/levels`` (see the module docstring)."""

    def __init__(self, instance: PlacementInstance, tree: Tree, ctx: SolveContext) -> None:
        self.inst, self.tree, self.ctx = instance, tree, ctx
        self.levels = tree.n_levels
        self.n = instance.n_nodes
        self.children = [tree.children(lv) for lv in range(self.levels - 1)]
        self.singles: dict[tuple[bool | int, ...], _Single] = {}
        self.floors: dict[tuple[tuple[int, ...], tuple[int, int]], float] = {}
        self.sides: dict[tuple[tuple[int, ...], ...], tuple[WholeSide, Frontier]] = {}
        self.blocks: dict[tuple[Any, ...], tuple[float, Blocks | None]] = {}
        self.out_of_time = deadline(ctx, instance)
        self.seconds_left = seconds_left(ctx, instance)
        self.calls = 0
        self.pruned = 0
        self.expired = False
        alpha = instance.alpha
        # where the job fits in one switch, spreading it over several may still pay off
        self.split_too = instance.objective.mode == "weighted" or alpha in (0.0, 1.0)
        # constraints: the level whose one switch holds the job, the free nodes a switch
        # offers with slices whole, and the slices as coarse cells (see _Units)
        self.job_level = job_level(instance, tree)
        self.room = [room(instance, tree, lv) for lv in range(self.levels)]
        self.units = _Units.of(instance)

    # --- keys and bounds ------------------------------------------------------------------

    def key(self, scores: Sequence[float]) -> tuple[float, ...]:
        """The objective key of a vector of level scores."""
        if self.inst.objective.mode == "weighted":
            return (round(_weighted(self.inst.objective.weights, scores), DIGITS),)
        return lex_key(scores)

    def proven(self, found: _Candidate) -> bool:
        """Whether the bounds meet the scores (every class left out has bounds that do not
        beat the placement, so this proves it optimal)."""
        return self.key(found.bounds) >= self.key(found.scores)

    def top_proven(self, scores: Sequence[float], bound: float | None) -> bool:
        """Whether a ``top`` instance's placement is optimal: its objective is ``S_0`` alone,
        so ``S_0`` meeting its bound is enough (the walk ranks the levels below as well)."""
        return self.inst.objective.mode == "top" and bound is not None and scores[0] <= bound + 1e-9

    def bound_vector(self, found: _Candidate) -> list[float]:
        """Per-level bounds, rounded: for ``lex`` the least bound vector of the classes
        (level ``l``'s bound holds for the placements whose levels above score as found),
        for ``weighted`` each level's least bound over the classes."""
        values = found.bounds if self.inst.objective.mode != "weighted" else found.floor
        return [round(b, DIGITS) for b in (values or found.bounds)]

    def scalar_bound(self, found: _Candidate) -> float:
        """The bound of the objective value (``S_0``, or the weighted sum)."""
        if self.inst.objective.mode == "weighted":
            return _weighted(self.inst.objective.weights, found.bounds)
        return found.bounds[0]

    def share(self, fraction: float) -> Callable[[], bool]:
        """Whether to stop: out of time, or ``fraction`` of the seconds left now spent."""
        left = self.seconds_left()
        if math.isinf(left):
            return self.out_of_time
        end = time.perf_counter() + fraction * left
        return lambda: self.out_of_time() or time.perf_counter() >= end

    def termination(self) -> TerminationReason:
        """Why an unproven walk stopped."""
        return TerminationReason.TIME_LIMIT if self.expired else TerminationReason.COMPLETED

    def summary(self) -> str:
        """Counts for the message."""
        return f"{self.calls} single-level solves, {self.pruned} subtrees cut by their bounds"

    def cheap(self, caps: Sequence[int]) -> float:
        """A lower bound on the single-level score over ``caps``: a column needs the fewest
        switches that hold ``rows`` cells, a row those that hold ``cols``, and both fit in
        one only if a switch holds the job."""
        inst = self.inst
        a, b = fewest_holding(caps, inst.rows), fewest_holding(caps, inst.cols)
        alpha, beta = inst.alpha, inst.beta
        if a == 1 and b == 1 and max(caps, default=0) < self.n:
            return min(alpha * 2, beta * 2)
        return alpha * d(a) + beta * d(b)

    # --- single levels --------------------------------------------------------------------

    def single(
        self,
        caps: tuple[int, ...],
        stop_at: float | None = None,
        quick: bool = False,
        unit: _Unit | None = None,
        bound_only: bool = False,
    ) -> _Single:
        """``placement/exact-mip`` on switches of free nodes ``caps`` (cached by ``caps``),
        stopped once its walk over target pairs reaches ``stop_at``; ``quick`` gives it at
        most :data:`QUICK_S`, ``bound_only`` skips its constructions (the placement is not
        wanted). With a ``unit`` the job is the coarse one of its slices (:class:`_Units`)
        and ``caps`` count whole slices."""
        key = (0 if unit is None else unit.size, *caps)
        cached = self.singles.get(key)
        if cached is not None and (
            cached.proven
            or (cached.stopped and stop_at is not None and stop_at <= cached.bound)
            or (quick and not cached.stopped)
        ):
            return cached
        from topoopt.placement.solvers.mip import ExactMipSolver

        inst, ctx = self.inst, self.ctx
        rows, cols = inst.rows, inst.cols
        if unit is not None:
            rows, cols = unit.rows, unit.cols
        level = PlacementInstance(
            "level",
            tuple(Minipod(f"s{i}", c) for i, c in enumerate(caps)),
            rows,
            1,
            cols,
            inst.alpha,
            gpus_per_node=1,
        )
        limit = None
        if ctx.time_limit is not None:
            limit = max(ctx.time_left() * SINGLE_SHARE, 1e-3)
        if quick:
            limit = QUICK_S if limit is None else min(limit, QUICK_S)
        self.calls += 1
        result = ExactMipSolver().solve(
            level,
            backend=ctx.backend,
            time_limit=limit,
            seed=ctx.seed,
            threads=ctx.threads,
            backend_options=ctx.backend_options,
            stop_at=stop_at,
            bound_only=bound_only,
        )
        stopped = result.termination is TerminationReason.OBJECTIVE_LIMIT
        if result.solution is None:  # no time even for a construction: fill in order
            self.expired = True
            matrix = np.asarray(_fill(caps, rows, cols))
            single = _Single(matrix, math.inf, 0.0, False)
        else:
            proven = result.status is SolutionStatus.OPTIMAL
            self.expired |= result.termination is TerminationReason.TIME_LIMIT
            bound = result.bound if math.isfinite(result.bound) else 0.0
            single = _Single(
                np.asarray(result.solution.matrix, dtype=np.int64).reshape(rows, cols),
                float(result.objective or 0.0),
                float(bound),
                proven,
                stopped,
            )
        self.singles[key] = single
        return single

    def within_switches(self, leaves: np.ndarray) -> tuple[np.ndarray, str]:
        """Slurm ``--switches``: when ``leaves`` use more leaves than allowed, the job again
        on the fewest leaves with the most room under the lowest switch that offers enough
        (best fit among those, as Slurm's tree plugin chooses), walked down from there."""
        limit = self.inst.constraints.max_switches
        assert limit is not None
        if len(np.unique(leaves)) <= limit:
            return leaves, ""
        n, tree = self.n, self.tree
        last = self.levels - 1
        leaf_room = self.room[last]
        for level in range(last, -1, -1):
            under = tree.leaves_under(level)
            options = []
            for s, ks in enumerate(under):
                best = sorted(ks, key=lambda k: (-leaf_room[k], k))[:limit]
                total = int(sum(leaf_room[k] for k in best))
                if total >= n:
                    options.append((total, s, best))
            if options:
                _, _, chosen = min(options)
                break
        else:
            return leaves, ""
        caps = tuple(int(leaf_room[k]) for k in chosen)
        single = self.single(caps)
        grid = np.asarray(chosen, dtype=np.int64)[single.matrix]
        return (
            grid,
            f"; {len(np.unique(leaves))} leaves over max_switches: re-placed on {len(chosen)}",
        )

    # --- the walk -------------------------------------------------------------------------

    def run(self) -> _Candidate:
        """The best placement of the walk from the top."""
        top = [s for s in range(len(self.tree.capacity[0])) if self.tree.capacity[0][s] > 0]
        return self.plan(0, top, None, quick=False)

    def _cut(self, bounds: tuple[float, ...], leaves: np.ndarray) -> _Candidate:
        """A class of placements left out: no placement of it beats the incumbent."""
        self.pruned += 1
        return _Candidate(leaves, (math.inf,) * self.levels, bounds, "cut")

    def beats(self, bounds: Sequence[float], incumbent: _Candidate | None) -> bool:
        """Whether a class with these bounds may hold a placement better than ``incumbent``."""
        return incumbent is None or self.key(bounds) < self.key(incumbent.scores)

    def plan(
        self,
        level: int,
        kids: list[int],
        incumbent: _Candidate | None,
        quick: bool,
        rivals: tuple[float, ...] | None = None,
    ) -> _Candidate:
        """The best placement of the whole job on the switches ``kids`` of ``level`` (the
        children of one switch, or the top level), or a cut class when none beats
        ``incumbent``: in one of them when it fits, else spanning them.

        Where several switches hold the job, a first pass gives each single-level solve
        :data:`QUICK_S` (``quick``), so that an incumbent comes early; unless ``quick``, a
        second pass solves again, without that limit, the classes left unproven whose
        bounds still beat the best placement, in the order of their first-pass bounds and,
        among equal bounds, the switch with the most free nodes first.

        ``rivals`` are, per level, the least bounds known of the other classes of the
        first pass (their first-pass bounds, else their cheap bounds; ``None``: none): in
        the first pass a class runs the rack patterns (:meth:`conditional`) only at a bound
        no rival undercuts, and leaves them to the second pass otherwise (measured on the
        benchmark's 32 x 8 job, seed 6: one pod's 20 programmes took 0.25 s each at a bound
        of 5.5 and realised nothing, where another pod's bound was 5.0 and its programme
        realised it).
        """
        caps = self.room[level]
        fits = sorted((k for k in kids if caps[k] >= self.n), key=lambda k: (caps[k], k))
        last = self.levels - 1
        options: list[_Candidate] = []
        best = incumbent
        pinned = self.job_level is not None and level <= self.job_level
        if pinned and not fits:  # one switch of this level must hold the job: none can
            none = (math.inf,) * self.levels
            return _Candidate(np.zeros((0, 0), dtype=np.int64), none, none, "infeasible")
        if fits and level == last:
            leaf = fits[0]  # best fit: the smallest leaf that holds the job
            grid = np.full((self.inst.rows, self.inst.cols), leaf, dtype=np.int64)
            zero = (0.0,) * self.levels
            return _Candidate(grid, zero, zero, f"the whole job on one {self.tree.names[-1]}")
        if fits:
            below = [
                [c for c in self.children[level][k] if self.tree.capacity[level + 1][c] > 0]
                for k in fits
            ]
            cheap = [self._cheap_vector(level + 1, b) for b in below]
            order = sorted(range(len(fits)), key=lambda i: (self.key(cheap[i]), i))
            found_by: dict[int, _Candidate] = {}
            for rush in (True, False) if not quick else (True,):
                if not rush:  # the first pass's bounds, and the most room first among equals
                    order = sorted(
                        order,
                        key=lambda i: (
                            self.key(found_by[i].bounds if i in found_by else cheap[i]),
                            -caps[fits[i]],
                            i,
                        ),
                    )
                for i in order:
                    known = found_by.get(i)
                    if known is not None and (
                        known.how == "cut" or self.key(known.bounds) >= self.key(known.scores)
                    ):
                        continue  # cut, or proven in the first pass
                    bounds = cheap[i] if known is None else known.bounds
                    if best is not None and (not self.beats(bounds, best) or self.out_of_time()):
                        self.expired |= self.beats(bounds, best)
                        found_by[i] = self._cut(bounds, best.leaves)
                        continue
                    least = None  # the first pass: what the other classes may reach
                    if rush:
                        others = [
                            found_by[j].bounds if j in found_by else cheap[j]
                            for j in range(len(fits))
                            if j != i
                        ]
                        if rivals is not None:
                            others.append(rivals)
                        if others:
                            least = tuple(map(min, zip(*others, strict=True)))
                    found = self.plan(level + 1, below[i], best, rush, least)
                    if known is not None and self.key(known.scores) <= self.key(found.scores):
                        # the second pass, cut by (or tying) the first pass's placement of
                        # this class: keep that placement, with the second pass's bounds
                        found = dataclasses.replace(
                            found, leaves=known.leaves, scores=known.scores, how=known.how
                        )
                    found_by[i] = found
                    if found.how != "cut" and (
                        best is None or self.key(found.scores) < self.key(best.scores)
                    ):
                        best = found
            options.extend(found_by.values())
        if not pinned and (not fits or self.split_too):
            cheap_split = self._split_cheap(level, kids)
            if best is None or (self.beats(cheap_split, best) and not self.out_of_time()):
                found = self.split(level, kids, best, quick, rivals if quick else None)
                options.append(found)
            else:
                self.expired |= self.beats(cheap_split, best)
                options.append(self._cut(cheap_split, best.leaves))
        if not options:
            none = (math.inf,) * self.levels
            return _Candidate(np.zeros((0, 0), dtype=np.int64), none, none, "infeasible")
        chosen = self._best(options)
        bounds = min((o.bounds for o in options), key=self.key)
        floors = [o.floor or o.bounds for o in options]
        floor = tuple(min(values) for values in zip(*floors, strict=True))
        return dataclasses.replace(chosen, bounds=bounds, floor=floor)

    def _best(self, options: list[_Candidate]) -> _Candidate:
        return min(options, key=lambda o: self.key(o.scores))

    def _cheap_vector(self, level: int, kids: list[int]) -> tuple[float, ...]:
        """Cheap bounds of placing the job on ``kids`` of ``level``: 0 above, then the
        :meth:`cheap` bound of each level below over the switches of that subtree."""
        out = [0.0] * level
        caps = self.tree.capacity[level]
        out.append(self.counted([int(caps[k]) for k in kids]))
        current = kids
        for lv in range(level + 1, self.levels):
            current = [c for k in current for c in self.children[lv - 1][k]]
            below = [int(self.tree.capacity[lv][c]) for c in current]
            out.append(max(out[-1], self.counted([b for b in below if b > 0])))
        return tuple(out)

    def counted(self, caps: Sequence[int], least: tuple[int, int] = (1, 1)) -> float:
        """:meth:`cheap`, raised to the counting floor of ``placement/exact-mip``
        (:func:`~topoopt.placement.exact_mip.targets.counting_floor`: closed forms and the
        Lagrangian counting bound, milliseconds whatever the number of switches), with the
        pairs below the spreads ``least`` (proven by the caller) refuted. Both are lower
        bounds on the single-level optimum over ``caps``, which depends on the multiset of
        free nodes only: the floor is cached by it and ``least``."""
        bound = self.cheap(caps)
        caps = [c for c in caps if c > 0]
        if sum(caps) < self.n or self.out_of_time():
            return bound
        key = (tuple(sorted(caps)), least)
        floor = self.floors.get(key)
        if floor is None:
            from topoopt.placement.exact_mip.targets import counting_floor

            inst = self.inst
            pods = tuple(Minipod(f"s{i}", c) for i, c in enumerate(key[0]))
            level = PlacementInstance("floor", pods, inst.rows, 1, inst.cols, inst.alpha,
                                      gpus_per_node=1)  # fmt: skip
            floor = self.floors[key] = counting_floor(level, least=least)
        return max(bound, floor)

    def within(self, level: int, kids: list[int], optimum: float, below: int) -> float:
        """For ``lex``, a bound on level ``below`` among the placements of the class that
        score their proven ``optimum`` at the split ``level`` over ``kids``, from where
        the job can lie; 0 unless every pair of that score has a side whole or is refuted
        by the Lagrangian counting bound
        (:func:`~topoopt.placement.whole_side.whole_side_pairs`).

        A placement whose level-``level`` spreads are ``(A, 1)`` (every row in one switch)
        lies in at most ``A`` switches of the level: a column has a cell in every row, so
        it touches the switch of every row. ``(1, B)`` likewise in ``B``. When every pair
        ``(A, B)`` of score ``optimum`` has a 1, the job lies in at most ``G`` = the largest
        such ``A`` or ``B`` switches, and level ``below``'s score is at least the least
        :meth:`counted` floor over the level-``below`` switches of ``G`` of ``kids`` (a
        subset of fewer lies in one of ``G``, and fewer switches only raise the floor).
        With more than :data:`WITHIN_SUBSETS` subsets, the floor over the largest level-
        ``below`` switches, as many as the ``G`` largest subtrees have: its ``i``-th
        largest is at least the ``i``-th largest of every subset (a floor only falls when
        switches grow or are added). Each orientation (columns or rows whole) has its own
        floor, with the pairs below its least spreads refuted
        (:func:`~topoopt.placement.whole_side.least_spreads`: the lines whole in a switch
        take only its switches below), and the bound is the least of them."""
        from topoopt.placement.whole_side import least_spreads, whole_side_pairs

        inst = self.inst
        switch_free = [int(self.tree.capacity[level][k]) for k in kids]
        sides = whole_side_pairs(switch_free, inst.rows, inst.cols, inst.alpha, optimum)
        if not sides:
            return 0.0  # the job may spread over many switches
        widest = max(side.switches for side in sides)
        if widest >= len(kids):
            return 0.0  # the job may spread over all of them
        caps = self.tree.capacity[below]
        subtrees = [
            [int(caps[c]) for c in self._below(level, k, below) if caps[c] > 0] for k in kids
        ]
        if math.comb(len(kids), widest) <= WITHIN_SUBSETS:
            floors: list[float] = []
            for subset in itertools.combinations(subtrees, widest):
                free = [c for cs in subset for c in cs]
                if sum(free) >= self.n:
                    floors.extend(
                        self.counted(free, least_spreads(subset, inst.rows, inst.cols, side))
                        for side in sides
                    )
            return min(floors, default=math.inf)
        most_switches = sum(sorted((len(cs) for cs in subtrees), reverse=True)[:widest])
        largest = sorted((c for cs in subtrees for c in cs), reverse=True)[:most_switches]
        return min(
            self.counted(largest, least_spreads(subtrees, inst.rows, inst.cols, side))
            for side in sides
        )

    def _below(self, level: int, switch: int, below: int) -> list[int]:
        """The level-``below`` switches under ``switch`` of ``level``."""
        current = [switch]
        for lv in range(level, below):
            current = [c for k in current for c in self.children[lv][k]]
        return current

    def _split_cheap(self, level: int, kids: list[int]) -> tuple[float, ...]:
        """Cheap bounds of spanning several of ``kids`` (both groups kinds at least 2
        switches apart when one of them holds the job... at least one kind)."""
        vec = list(self._cheap_vector(level, kids))
        vec[level] = max(vec[level], min(self.inst.alpha * 2, self.inst.beta * 2))
        for lv in range(level + 1, self.levels):
            vec[lv] = max(vec[lv], vec[lv - 1])
        return tuple(vec)

    def _stop_at(self, level: int, incumbent: _Candidate | None) -> float | None:
        """The least score at the split ``level`` that already loses to ``incumbent`` (the
        levels above score 0 in the class), or ``None``."""
        if incumbent is None or not math.isfinite(incumbent.scores[0]):
            return None
        if self.inst.objective.mode == "weighted":
            w = self.inst.objective.weights
            rest = sum(w[level:])
            if rest <= 0:
                return None
            return _weighted(w, incumbent.scores) / rest + 1e-9
        if any(round(x, DIGITS) > 0 for x in incumbent.scores[:level]):
            return None  # the incumbent spans switches higher up: any placement here beats it
        return incumbent.scores[level] + 1e-9

    def split(
        self,
        level: int,
        kids: list[int],
        incumbent: _Candidate | None,
        quick: bool = False,
        rivals: tuple[float, ...] | None = None,
    ) -> _Candidate:
        """The job spanning the switches ``kids`` of ``level``: exact there, then down (or a
        cut class when ``placement/exact-mip`` proves that level worse than ``incumbent``)."""
        unit = self.unit_at(level)
        divisor = 1 if unit is None else unit.size
        caps = tuple(int(self.room[level][k]) // divisor for k in kids)
        single = self.single(caps, self._stop_at(level, incumbent), quick, unit)
        if single.stopped:
            cheap = list(self._split_cheap(level, kids))
            cheap[level] = max(cheap[level], single.bound)
            for lv in range(level + 1, self.levels):
                cheap[lv] = max(cheap[lv], cheap[lv - 1])
            assert incumbent is not None
            return self._cut(tuple(cheap), incumbent.leaves)
        grid = np.asarray(kids, dtype=np.int64)[single.matrix]
        leaves = self.walk(level, grid, unit)
        scores = tuple(s.score for s in scores_of_leaves(self.inst, self.tree, leaves))
        conditional, better = self.conditional(level, kids, single, scores, incumbent, rivals)
        if better is not None:
            leaves, scores = better
        bounds = [0.0] * level + [single.bound]
        current = kids
        proving = True
        within_too = (
            self.inst.objective.mode != "weighted"
            and single.proven
            and round(scores[level], DIGITS) == round(single.bound, DIGITS)
        )
        for lv in range(level + 1, self.levels):
            current = [c for k in current for c in self.children[lv - 1][k]]
            below = tuple(
                int(self.tree.capacity[lv][c]) for c in current if self.tree.capacity[lv][c] > 0
            )
            bound = max(bounds[-1], self.counted(below))
            if lv == level + 1:
                bound = max(bound, conditional)
            if within_too and round(bound, DIGITS) < round(scores[lv], DIGITS):
                bound = max(bound, self.within(level, kids, single.bound, lv))
            if proving and round(bound, DIGITS) < round(scores[lv], DIGITS):
                if not self.out_of_time():
                    here = self.unit_at(lv)
                    if here is not None:
                        in_units = tuple(
                            int(self.room[lv][c]) // here.size
                            for c in current
                            if self.room[lv][c] >= here.size
                        )
                        in_units_bound = self.single(in_units, unit=here, bound_only=True).bound
                        bound = max(bound, in_units_bound)
                    else:
                        bound = max(bound, self.single(below, bound_only=True).bound)
                # for lex a level left unproven leaves the levels below unprovable
                proving = self.inst.objective.mode == "weighted" or round(bound, DIGITS) >= round(
                    scores[lv], DIGITS
                )
            bounds.append(bound)
        name = self.tree.names[level]
        how = f"spans {len(set(grid.ravel().tolist()))} {name} switches (exact-mip"
        how += ", proven)" if single.proven else ", unproven)"
        return _Candidate(leaves, scores, tuple(bounds), how)

    def conditional(
        self,
        level: int,
        kids: list[int],
        single: _Single,
        scores: tuple[float, ...],
        incumbent: _Candidate | None,
        rivals: tuple[float, ...] | None = None,
    ) -> tuple[float, tuple[np.ndarray, tuple[float, ...]] | None]:
        """For ``lex``, the bound of level ``level + 1`` among the placements whose split
        ``level`` scores its proven optimum, where one side stays whole in the split's
        switches (:func:`~topoopt.placement.whole_side.conditional_floor`), and a placement
        of the class that beats ``scores`` with its leaves and scores (or ``None``; for
        ``weighted`` too, by the weighted sum). Bound 0 when it does not apply
        (``weighted``: it holds only given the split's optimum; constraints, no level
        below, split unproven). For ``lex``, when ``incumbent`` ties the class above level
        ``level + 1``, only pairs below its score there are worth realising, and a bound
        reaching it is enough."""
        last = level + 1
        if (
            self.inst.constraints
            or last >= self.levels
            or not single.proven
            or round(scores[level], DIGITS) != round(single.bound, DIGITS)
            or self.out_of_time()
        ):
            return 0.0, None
        from topoopt.placement.split_blocks import Frontier, realise_blocks
        from topoopt.placement.whole_side import WholeSide, conditional_floor

        caps = self.tree.capacity[last]
        children = [[c for c in self.children[level][k] if caps[c] > 0] for k in kids]
        key = tuple(tuple(int(caps[c]) for c in cs) for cs in children)
        if key not in self.sides:  # the second pass meets the same classes again
            self.sides[key] = (
                WholeSide([list(k) for k in key], self.inst.rows, self.inst.cols, self.inst.alpha),
                Frontier(key),
            )
        whole, frontier = self.sides[key]
        below = tuple(int(caps[c]) for cs in children for c in cs)
        start = max(single.bound, self.cheap(below))
        ceiling = scores[last]
        if (
            incumbent is not None
            and self.inst.objective.mode != "weighted"
            and all(
                round(x, DIGITS) == round(y, DIGITS)
                for x, y in zip(incumbent.scores[:last], scores[:last], strict=True)
            )
        ):
            ceiling = min(ceiling, incumbent.scores[last])
        floor = conditional_floor(
            whole,
            single.bound,
            start,
            ceiling,
            self.seconds_left,
            math.inf if rivals is None else round(rivals[last], DIGITS),
        )
        ids = np.asarray([c for cs in children for c in cs], dtype=np.int64)
        offsets = np.cumsum([0] + [len(cs) for cs in children])[:-1]
        bound = 0.0 if floor is None else floor.bound
        better = None
        local = [] if floor is None or floor.grid is None else [floor.grid]
        reach = scores[last] if floor is None else min(scores[last], floor.score)
        if round(max(bound, start), DIGITS) < round(reach, DIGITS) and not self.out_of_time():
            memo = (key, round(single.bound, DIGITS), round(max(bound, start), DIGITS))
            known = self.blocks.get(memo)
            if known is not None and (known[1] is not None or reach <= known[0]):
                blocks = known[1]  # the second pass: the least the blocks reach is known
            else:
                blocks = realise_blocks(
                    frontier,
                    self.inst.rows,
                    self.inst.cols,
                    self.inst.alpha,
                    single.bound,
                    max(bound, start),
                    reach,
                    self.seconds_left,
                    whole_sides=floor is None,
                )
                if not self.out_of_time():  # a search the clock stopped is not kept
                    self.blocks[memo] = (reach, blocks)
            if blocks is not None and round(blocks.score, DIGITS) < round(reach, DIGITS):
                local.append(blocks.grid)
        for found_grid in local:
            grid = ids[offsets[found_grid[..., 0]] + found_grid[..., 1]]
            leaves = self.walk(last, grid)
            found = tuple(s.score for s in scores_of_leaves(self.inst, self.tree, leaves))
            if self.key(found) < self.key(better[1] if better is not None else scores):
                better = (leaves, found)
        if self.inst.objective.mode == "weighted":
            bound = 0.0  # a weighted bound holds for every placement, not only these
        return bound, better

    def unit_at(self, level: int) -> _Unit | None:
        """The coarse cells the walk places at ``level`` (see :class:`_Units`)."""
        return None if self.units is None else self.units.at(level)

    def walk(self, level: int, grid: np.ndarray, unit: _Unit | None = None) -> np.ndarray:
        """From the switches of ``level`` of every cell (of every coarse cell of ``unit``)
        down to the leaves, one level at a time: each switch's cells on its children
        (:func:`assign_leaves`); at a slice layer's level its coarse cells become those of
        the next layer (or cells)."""
        for lv in range(level, self.levels - 1):
            if unit is not None and lv == unit.level:
                finer = self.unit_at(lv + 1)
                grid, unit = unit.expand(grid, finer), finer
            grid = self.step(lv, grid, unit)
        if unit is not None:
            grid = unit.expand(grid, None)
        return grid

    def step(self, level: int, grid: np.ndarray, unit: _Unit | None = None) -> np.ndarray:
        """Each level-``level`` switch's cells on its children with room (for coarse cells:
        room for whole slices)."""
        inst = self.inst
        size = unit.size if unit is not None else 1
        used = sorted(set(grid.ravel().tolist()))
        index = {s: i for i, s in enumerate(used)}
        kids = [
            [c for c in self.children[level][s] if self.room[level + 1][c] >= size] for s in used
        ]
        pods = tuple(
            Minipod.from_leaves(
                f"s{s}",
                [
                    Leaf(
                        f"k{c}",
                        tuple(f"{c}:{i}" for i in range(int(self.room[level + 1][c]) // size)),
                    )
                    for c in kids[i]
                ],
            )
            for i, s in enumerate(used)
        )
        rows, cols = grid.shape
        step = PlacementInstance("step", pods, rows, 1, cols, inst.alpha, gpus_per_node=1)
        matrix = np.vectorize(index.__getitem__, otypes=[np.int64])(grid)
        found = assign_leaves(
            step, Placement(tuple(map(tuple, matrix.tolist()))), self.share(LEAVES_SHARE)
        )
        local = np.asarray(found.leaves, dtype=np.int64)
        out = np.empty_like(grid)
        for r in range(rows):
            for c in range(cols):
                out[r, c] = kids[matrix[r, c]][local[r, c]]
        return out


@dataclass(frozen=True)
class _Unit:
    """One slice rule as coarse cells, for the walk at and above its level: ``size`` ranks of
    one slice go together into one switch of ``level``. Two shapes keep the coarse job a
    matrix whose spreads are the job's: a slice inside a column (``size`` divides ``rows``:
    coarse cell ``(r // size, c)``, ``down = size``), or a run of whole columns (``size = m *
    rows`` with ``m`` dividing ``cols``: coarse cell ``(0, c // m)``, ``across = m``)."""

    size: int
    level: int
    rows: int
    cols: int
    down: int
    across: int

    def expand(self, grid: np.ndarray, finer: _Unit | None) -> np.ndarray:
        """The coarse cells of ``finer`` (cells when ``None``) from these: each coarse cell's
        parts with it (a finer slice lies inside one of these, see :class:`_Units`)."""
        down, across = (1, 1) if finer is None else (finer.down, finer.across)
        return np.repeat(np.repeat(grid, self.down // down, axis=0), self.across // across, axis=1)


@dataclass(frozen=True)
class _Units:
    """The slice rules as nested coarse cells, coarsest first: at level ``l`` the walk places
    the coarse cells of the first rule at ``l`` or below (none below the finest rule). It
    needs the rules to nest — each at a finer level than the one before and of a size that
    divides it (Kueue's multi-layer slices, or one rule) — so that a slice of a layer lies
    inside one slice of the layer before and the coarse cells split into finer ones."""

    chain: tuple[_Unit, ...]

    @staticmethod
    def of(instance: PlacementInstance) -> _Units | None:
        """The coarse cells of the instance's slice rules, ``None`` without one.

        Raises
        ------
        ValueError
            When the walk cannot keep the slices whole (rules that do not nest, as a Kueue
            slice and a Slurm segment of sizes that do not divide, or a slice across
            columns that are not whole): :class:`LevelsSolver` then falls back.
        """
        rules = sorted(slice_rules(instance), key=lambda rule: (rule[1], -rule[0]))
        if not rules:
            return None
        rows, cols = instance.rows, instance.cols
        chain: list[_Unit] = []
        for size, level, field in rules:
            if chain and (level <= chain[-1].level or chain[-1].size % size):
                raise ValueError(f"slice rules that do not nest ({field} within the one above)")
            if rows % size == 0:
                chain.append(_Unit(size, level, rows // size, cols, size, 1))
            elif size % rows == 0 and cols % (size // rows) == 0:
                chain.append(_Unit(size, level, 1, cols // (size // rows), rows, size // rows))
            else:
                raise ValueError(f"{field} {size} cuts columns of {rows} nodes")
        return _Units(tuple(chain))

    def at(self, level: int) -> _Unit | None:
        """The coarsest unit whose level is ``level`` or below, ``None`` below them all."""
        return next((unit for unit in self.chain if unit.level >= level), None)


def _slices_in_order(instance: PlacementInstance, tree: Tree) -> Placement | None:
    """The job's slices in rank order, each on the leaf with the least room that holds it
    whole (best fit), when every slice rule is at the leaves or coarser: a leaf holds a slice
    of any rule. ``None`` when the leaves cannot hold them that way."""
    rules = slice_rules(instance)
    size = max((s for s, _, _ in rules), default=1)
    free = tree.leaf_free.copy()
    level = job_level(instance, tree)
    candidates = np.arange(tree.n_leaves)
    if level is not None:
        best = int(np.argmax(room(instance, tree, level)))
        candidates = candidates[tree.switch[level] == best]
    cells = []
    for _ in range(instance.n_nodes // size):
        fit = [k for k in candidates.tolist() if free[k] >= size]
        if not fit:
            return None
        k = min(fit, key=lambda k: (free[k], k))
        free[k] -= size
        cells += [k] * size
    rows = instance.rows
    grid = np.zeros((rows, instance.cols), dtype=np.int64)
    for rank, k in enumerate(cells):
        grid[rank % rows, rank // rows] = k
    placement = placement_from_leaves(instance, tree, grid)
    return None if check(instance, placement) else placement


def _fill(caps: Sequence[int], rows: int, cols: int) -> list[list[int]]:
    """Cells in rank order (column by column) on the switches in order."""
    out = [[0] * cols for _ in range(rows)]
    j, left = 0, caps[0]
    for c in range(cols):
        for r in range(rows):
            while left == 0:
                j += 1
                left = caps[j]
            out[r][c] = j
            left -= 1
    return out
