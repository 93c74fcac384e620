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

Method ``auto`` (default) walks, and when the walk is not proven and the model of the whole
tree is small (:data:`MIP_ASSIGNMENTS`) solves it from the walk's placement. An instance
without leaves has one level: ``exact-mip`` solves it. See ``docs/levels.md``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from topoopt.core.deadline import TimeUp, interrupt_at
from topoopt.core.errors import InvalidOptionError
from topoopt.core.formulation import MipSolver
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.placement.instance import Leaf, LevelObjective, Minipod, PlacementInstance
from topoopt.placement.levels import assign_leaves
from topoopt.placement.solution import Placement
from topoopt.placement.solvers._budget import deadline
from topoopt.placement.tree import (
    DIGITS,
    Tree,
    build_tree,
    d,
    level_scores,
    lex_key,
    placement_from_leaves,
    scores_of_leaves,
)

METHODS = ("auto", "walk", "mip")
"""Values of the option ``method``."""

MIP_ASSIGNMENTS = 3_000
"""``auto`` solves the model of the whole tree after an unproven walk when it has at most
this many assignment variables (``rows * cols * leaves with a free node``)."""

SINGLE_SHARE = 0.3
"""Share of the time left one single-level ``exact-mip`` call of the walk may take."""

QUICK_S = 0.05
"""Time of a single-level ``exact-mip`` call in the walk's first pass over the switches that
hold the job (see :meth:`_Planner.plan`)."""

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
    same for now).
    """

    name = "placement/levels"
    family = "placement"
    exact = True
    gives_bound = True
    formulation = "topoopt.placement.formulations.levels"

    def _solve(
        self, instance: PlacementInstance, ctx: SolveContext, *, method: str = "auto"
    ) -> Attempt:
        if method not in METHODS:
            raise InvalidOptionError(f"method: must be one of {', '.join(METHODS)}, got {method!r}")
        if method == "mip":
            return self._mip(instance, ctx)
        if instance.n_levels == 1:
            return self._flat(instance, ctx)
        return self._walk(instance, ctx, method)

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

    def _walk(self, instance: PlacementInstance, ctx: SolveContext, method: str) -> Attempt:
        """The walk down the tree (:class:`_Planner`), then the whole-tree model if it is
        unproven and small (``auto``)."""
        from topoopt.placement.formulations.levels import model_size

        t0 = time.perf_counter()
        tree = build_tree(instance)
        planner = _Planner(instance, tree, ctx)
        found = planner.run()
        placement = placement_from_leaves(instance, tree, found.leaves)
        proven = planner.proven(found)
        walk_s = time.perf_counter() - t0
        message = f"walk: {found.how}; {planner.summary()}"
        bounds = planner.bound_vector(found)
        if (
            not proven
            and method == "auto"
            and model_size(instance) <= MIP_ASSIGNMENTS
            and not ctx.expired()
        ):
            mip = self._mip(instance, ctx, start=placement)
            if mip.solution is not None:
                mip_scores = level_scores(instance, mip.solution)
                mine = planner.key(tuple(s.score for s in mip_scores))
                if mine <= planner.key(found.scores):
                    return dataclasses.replace(
                        mip,
                        solve_s=mip.solve_s + walk_s,
                        message=f"{message}; then {mip.message}",
                        metrics=_max_bounds(mip.metrics, bounds, instance.n_levels),
                    )
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


def _weight0(instance: PlacementInstance) -> float:
    """The factor of ``S_0`` in the objective (1 unless ``weighted``)."""
    if instance.objective.mode == "weighted":
        return instance.objective.weights[0]
    return 1.0


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


def _fewest(caps: Sequence[int], size: int) -> int:
    """The fewest of ``caps`` (largest first) that hold ``size`` (``len + 1`` if none)."""
    total = 0
    for i, c in enumerate(sorted(caps, reverse=True), start=1):
        total += c
        if total >= size:
            return i
    return len(caps) + 1


class _Planner:
    """The walk down the tree of ``placement/levels`` (see the module docstring)."""

    def __init__(self, instance: PlacementInstance, tree: Tree, ctx: SolveContext) -> None:
        self.inst, self.tree, self.ctx = instance, tree, ctx
        self.levels = tree.n_levels
        self.n = instance.n_nodes
        self.children = [tree.children(lv) for lv in range(self.levels - 1)]
        self.singles: dict[tuple[int, ...], _Single] = {}
        self.out_of_time = deadline(ctx, instance)
        self.calls = 0
        self.pruned = 0
        self.expired = False
        alpha = instance.alpha
        # where the job fits in one switch, spreading it over several may still pay off
        self.split_too = instance.objective.mode == "weighted" or alpha in (0.0, 1.0)

    # --- keys and bounds ------------------------------------------------------------------

    def key(self, scores: Sequence[float]) -> tuple[float, ...]:
        """The objective key of a vector of level scores."""
        if self.inst.objective.mode == "weighted":
            w = self.inst.objective.weights
            return (round(sum(a * b for a, b in zip(w, scores, strict=True)), DIGITS),)
        return lex_key(scores)

    def proven(self, found: _Candidate) -> bool:
        """Whether the bounds meet the scores (every class left out has bounds that do not
        beat the placement, so this proves it optimal)."""
        return self.key(found.bounds) >= self.key(found.scores)

    def bound_vector(self, found: _Candidate) -> list[float]:
        """Per-level bounds, rounded: for ``lex`` the least bound vector of the classes
        (level ``l``'s bound holds for the placements whose levels above score as found),
        for ``weighted`` each level's least bound over the classes."""
        values = found.bounds if self.inst.objective.mode != "weighted" else found.floor
        return [round(b, DIGITS) for b in (values or found.bounds)]

    def scalar_bound(self, found: _Candidate) -> float:
        """The bound of the objective value (``S_0``, or the weighted sum)."""
        if self.inst.objective.mode == "weighted":
            w = self.inst.objective.weights
            return float(sum(a * b for a, b in zip(w, found.bounds, strict=True)))
        return found.bounds[0]

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
        a, b = _fewest(caps, inst.rows), _fewest(caps, inst.cols)
        alpha, beta = inst.alpha, inst.beta
        if a == 1 and b == 1 and max(caps, default=0) < self.n:
            return min(alpha * 2, beta * 2)
        return alpha * d(a) + beta * d(b)

    # --- single levels --------------------------------------------------------------------

    def single(
        self, caps: tuple[int, ...], stop_at: float | None = None, quick: bool = False
    ) -> _Single:
        """``placement/exact-mip`` on switches of free nodes ``caps`` (cached by ``caps``),
        stopped once its walk over target pairs reaches ``stop_at``; ``quick`` gives it at
        most :data:`QUICK_S`."""
        cached = self.singles.get(caps)
        if cached is not None and (
            cached.proven
            or (cached.stopped and stop_at is not None and stop_at <= cached.bound)
            or (quick and not cached.stopped)
        ):
            return cached
        from topoopt.placement.solvers.mip import ExactMipSolver

        inst, ctx = self.inst, self.ctx
        level = PlacementInstance(
            "level",
            tuple(Minipod(f"s{i}", c) for i, c in enumerate(caps)),
            inst.dp,
            inst.tp,
            inst.pp,
            inst.alpha,
            gpus_per_node=inst.gpus_per_node,
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
        )
        stopped = result.termination is TerminationReason.OBJECTIVE_LIMIT
        if result.solution is None:  # no time even for a construction: fill in order
            self.expired = True
            matrix = np.asarray(_fill(caps, inst.rows, inst.cols))
            single = _Single(matrix, math.inf, 0.0, False)
        else:
            proven = result.status is SolutionStatus.OPTIMAL
            self.expired |= result.termination is TerminationReason.TIME_LIMIT
            bound = result.bound if math.isfinite(result.bound) else 0.0
            single = _Single(
                np.asarray(result.solution.matrix, dtype=np.int64).reshape(inst.rows, inst.cols),
                float(result.objective or 0.0),
                float(bound),
                proven,
                stopped,
            )
        self.singles[caps] = single
        return single

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
        self, level: int, kids: list[int], incumbent: _Candidate | None, quick: bool
    ) -> _Candidate:
        """The best placement of the whole job on the switches ``kids`` of ``level`` (the
        children of one switch, or the top level), or a cut class when none beats
        ``incumbent``: in one of them when it fits, else spanning them.

        Where several switches hold the job, a first pass gives each single-level solve
        :data:`QUICK_S` (``quick``), so that an incumbent comes early; unless ``quick``, a
        second pass solves again, without that limit, the classes left unproven whose
        bounds still beat the best placement.
        """
        caps = self.tree.capacity[level]
        fits = sorted((k for k in kids if caps[k] >= self.n), key=lambda k: (caps[k], k))
        last = self.levels - 1
        options: list[_Candidate] = []
        best = incumbent
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
                    found = self.plan(level + 1, below[i], best, rush)
                    found_by[i] = found
                    if found.how != "cut" and (
                        best is None or self.key(found.scores) < self.key(best.scores)
                    ):
                        best = found
            options.extend(found_by.values())
        if not fits or self.split_too:
            cheap_split = self._split_cheap(level, kids)
            if best is None or (self.beats(cheap_split, best) and not self.out_of_time()):
                found = self.split(level, kids, best, quick)
                options.append(found)
            else:
                self.expired |= self.beats(cheap_split, best)
                options.append(self._cut(cheap_split, best.leaves))
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
        out.append(self.cheap([int(caps[k]) for k in kids]))
        current = kids
        for lv in range(level + 1, self.levels):
            current = [c for k in current for c in self.children[lv - 1][k]]
            below = [int(self.tree.capacity[lv][c]) for c in current]
            out.append(max(out[-1], self.cheap([b for b in below if b > 0])))
        return tuple(out)

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
            total = sum(a * b for a, b in zip(w, incumbent.scores, strict=True))
            return total / rest + 1e-9
        if any(round(x, DIGITS) > 0 for x in incumbent.scores[:level]):
            return None  # the incumbent spans switches higher up: any placement here beats it
        return incumbent.scores[level] + 1e-9

    def split(
        self, level: int, kids: list[int], incumbent: _Candidate | None, quick: bool = False
    ) -> _Candidate:
        """The job spanning the switches ``kids`` of ``level``: exact there, then down (or a
        cut class when ``placement/exact-mip`` proves that level worse than ``incumbent``)."""
        caps = tuple(int(self.tree.capacity[level][k]) for k in kids)
        single = self.single(caps, self._stop_at(level, incumbent), quick)
        if single.stopped:
            cheap = list(self._split_cheap(level, kids))
            cheap[level] = max(cheap[level], single.bound)
            for lv in range(level + 1, self.levels):
                cheap[lv] = max(cheap[lv], cheap[lv - 1])
            assert incumbent is not None
            return self._cut(tuple(cheap), incumbent.leaves)
        grid = np.asarray(kids, dtype=np.int64)[single.matrix]
        leaves = self.walk(level, grid)
        scores = tuple(s.score for s in scores_of_leaves(self.inst, self.tree, leaves))
        bounds = [0.0] * level + [single.bound]
        current = kids
        proving = True
        for lv in range(level + 1, self.levels):
            current = [c for k in current for c in self.children[lv - 1][k]]
            below = tuple(
                int(self.tree.capacity[lv][c]) for c in current if self.tree.capacity[lv][c] > 0
            )
            bound = max(bounds[-1], self.cheap(below))
            if proving and round(bound, DIGITS) < round(scores[lv], DIGITS):
                if not self.out_of_time():
                    bound = max(bound, self.single(below).bound)
                # for lex a level left unproven leaves the levels below unprovable
                proving = self.inst.objective.mode == "weighted" or round(bound, DIGITS) >= round(
                    scores[lv], DIGITS
                )
            bounds.append(bound)
        name = self.tree.names[level]
        how = f"spans {len(set(grid.ravel().tolist()))} {name} switches (exact-mip"
        how += ", proven)" if single.proven else ", unproven)"
        return _Candidate(leaves, scores, tuple(bounds), how)

    def walk(self, level: int, grid: np.ndarray) -> np.ndarray:
        """From the switches of ``level`` of every cell down to the leaves, one level at a
        time: each switch's cells on its children (:func:`assign_leaves`)."""
        for lv in range(level, self.levels - 1):
            grid = self.step(lv, grid)
        return grid

    def step(self, level: int, grid: np.ndarray) -> np.ndarray:
        """Each level-``level`` switch's cells on its children with a free node."""
        inst, tree = self.inst, self.tree
        used = sorted(set(grid.ravel().tolist()))
        index = {s: i for i, s in enumerate(used)}
        kids = [
            [c for c in self.children[level][s] if tree.capacity[level + 1][c] > 0] for s in used
        ]
        pods = tuple(
            Minipod.from_leaves(
                f"s{s}",
                [
                    Leaf(
                        f"k{c}", tuple(f"{c}:{i}" for i in range(int(tree.capacity[level + 1][c])))
                    )
                    for c in kids[i]
                ],
            )
            for i, s in enumerate(used)
        )
        step = PlacementInstance(
            "step", pods, inst.dp, inst.tp, inst.pp, inst.alpha, gpus_per_node=inst.gpus_per_node
        )
        matrix = np.vectorize(index.__getitem__, otypes=[np.int64])(grid)
        found = assign_leaves(step, Placement(tuple(map(tuple, matrix.tolist()))), self.out_of_time)
        local = np.asarray(found.leaves, dtype=np.int64)
        out = np.empty_like(grid)
        for r in range(grid.shape[0]):
            for c in range(grid.shape[1]):
                out[r, c] = kids[matrix[r, c]][local[r, c]]
        return out


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
