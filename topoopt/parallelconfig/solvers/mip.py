"""The exact ILPs of the intra-cluster level: ``parallelconfig/mip`` (the segment ILP of
:mod:`topoopt.parallelconfig.formulations.segment_mip`, replicas and GPUs aggregated) and
``parallelconfig/paper-mip`` (the model as SpiderFlow describes it, a binary per replica, stage
and node: :mod:`topoopt.parallelconfig.formulations.grid_mip`). Both run the same search.

``method="split"`` (default; SpiderFlow's "ILP plus enumeration of (d, p)"). For each
admissible ``(d, p)`` with ``d >= 2``, option A (every stage inside one node) has an exact
optimum with a configuration (:func:`~topoopt.parallelconfig.bounds.columns_inside`); the best
of them over all ``(d, p)`` is the first incumbent. Option B (some stage across nodes) has a
lower bound (:func:`~topoopt.parallelconfig.bounds.split_bound`). A first pass packs the
configurations greedily (replica- and stage-major, :func:`best_packing`) by increasing bound
while the bound is below the incumbent. Then a heap of items is popped by increasing bound:
a configuration at the smaller of its two bounds, replaced when popped by its option B — for
``parallelconfig/mip`` at its first *level* of runs per replica (the fewest runs the node sizes
allow), then level after level. An item is

* *pruned* when its bound reaches the incumbent (so does every item left: they are sorted),
* *settled* when the configuration's greedy packing attains the bound (no later level is
  cheaper),
* *solved* otherwise: the ILP of that ``(d, p)`` (and level) alone with the cutoff ``cost <=
  incumbent`` (a proof that it cannot beat the incumbent is then a proof of infeasibility,
  which stops as soon as the search tree's bound passes the incumbent), warm started from its
  packing when that fits the model; then the next level is pushed.

At level ``H`` the segment ILP allows at most ``H`` runs per replica and prices ``T_pp`` at
``H - 1`` node changes (a constant), so its relaxation has no maximum over replicas to average
away; configurations with fewer runs were priced at their own, earlier level. The bound is the
smallest over the items of what is proven about each (the ILP's bound, the incumbent for an
infeasible cutoff model, the a priori bound when pruned or not reached); the result is proven
optimal when every item was pruned, settled or solved to the end with gap 0.
``method="joint"``: one ILP over all configurations whose bound is below the incumbent, with
the same cutoff (the segment ILP: option B, the run count a variable). Both check the time
limit between models and give each model the time left; the bounds are computed with a look
at the clock every :data:`CHECK_EVERY` configurations.
"""

from __future__ import annotations

import heapq
import importlib
import math
import time
from typing import Any, ClassVar

from topoopt.core.errors import InvalidOptionError
from topoopt.core.formulation import MipSolver
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import TerminationReason
from topoopt.parallelconfig.bounds import columns_inside, min_changes, split_bound
from topoopt.parallelconfig.instance import ParallelConfigInstance
from topoopt.parallelconfig.solution import (
    ParallelConfig,
    evaluate,
    from_nodes,
    micro_batches_per_replica,
    node_grid,
)
from topoopt.parallelconfig.solvers.greedy import best_packing

METHODS = ("split", "joint")
"""Values of the ``method`` option."""
MAX_GPUS = 1024
"""Largest job (GPUs) ``parallelconfig/paper-mip`` builds models for."""
MAX_CELL_NODES = 100_000
"""Most assignment variables (``r ·`` nodes) of ``parallelconfig/paper-mip``'s largest model."""
CHECK_EVERY = 16
"""Configurations between two looks at the clock while the bounds are computed."""

Config = tuple[int, int]


def check_options(method: Any, symmetry: Any) -> None:
    """Raise :class:`InvalidOptionError` unless ``method`` is one of :data:`METHODS` and
    ``symmetry`` a bool (the options of ``parallelconfig/mip``)."""
    if method not in METHODS:
        raise InvalidOptionError(f"method: must be one of {', '.join(METHODS)}, got {method!r}")
    if not isinstance(symmetry, bool):
        raise InvalidOptionError(f"symmetry: must be true or false, got {symmetry!r}")


class _SearchMip(MipSolver):
    """The search of the module docstring over the models of :attr:`formulation`."""

    family = "parallelconfig"
    exact = True
    gives_bound = True
    levels: ClassVar[bool] = False
    """Whether the split search visits each configuration by levels of runs per replica (the
    formulation's ``build`` takes ``runs``)."""

    def start(
        self,
        instance: ParallelConfigInstance,
        configs: list[Config] | None = None,
        cutoff: float | None = None,
        **opts: Any,
    ) -> ParallelConfig | None:
        """The cheapest greedy packing over ``configs`` (default: all), or ``None`` when it
        does not meet ``cutoff`` (it would not be a feasible start)."""
        chosen = list(instance.configurations()) if configs is None else configs
        value, grid = min((best_packing(instance, d, p) for d, p in chosen), key=lambda b: b[0])
        return None if cutoff is not None and value > cutoff else from_nodes(instance, grid)

    def _solve(
        self,
        instance: ParallelConfigInstance,
        ctx: SolveContext,
        *,
        method: str = "split",
        symmetry: bool = True,
    ) -> Attempt:
        check_options(method, symmetry)
        search = _Search(self, instance, ctx, symmetry)
        return search.joint() if method == "joint" else search.split()


@register_solver
class SegmentMipSolver(_SearchMip):
    """Exact segment ILP per (d, p) by increasing lower bound, pruned by the incumbent.

    The ILP counts replicas' runs of stages on nodes (no replica or GPU index; SpiderFlow
    §4.2's objective, docs/parallelconfig.md). Options: ``method`` — ``"split"`` (one model per
    (d, p), default) or ``"joint"`` (one model over all (d, p)); ``symmetry`` — order the nodes
    of equal GPU count by use (default ``True``).
    """

    name = "parallelconfig/mip"
    formulation = "topoopt.parallelconfig.formulations.segment_mip"
    levels = True

    def start(
        self,
        instance: ParallelConfigInstance,
        configs: list[Config] | None = None,
        cutoff: float | None = None,
        runs: int | None = None,
        **opts: Any,
    ) -> ParallelConfig | None:
        """The cheapest greedy packing (:meth:`_SearchMip.start`), ``None`` when a replica of it
        has more runs than the model allows (``runs``, or the limit under ``cutoff``)."""
        from topoopt.parallelconfig.formulations.segment_mip import run_limit, runs_of

        config = super().start(instance, configs, cutoff, **opts)
        if config is None or (cutoff is None and runs is None):
            return config
        limit = run_limit(instance, config.d, config.p, cutoff)
        if limit is not None and runs is not None:
            limit = runs
        rows = node_grid(instance, config)
        return config if limit is None or all(len(runs_of(r)) <= limit for r in rows) else None


@register_solver
class PaperMipSolver(_SearchMip):
    """SpiderFlow's intra-cluster ILP as the paper describes it (a GPU per replica and stage).

    A binary per (replica, stage, node) (§4.2: the ILP assigns GPUs to pipeline stages and
    groups them into DP replicas), per (d, p) by increasing lower bound like
    ``parallelconfig/mip``, with the same options; kept so that reports compare it with the
    segment ILP. It refuses jobs of more than 1024 GPUs.
    """

    name = "parallelconfig/paper-mip"
    formulation = "topoopt.parallelconfig.formulations.grid_mip"

    @classmethod
    def unsupported_reason(cls, instance: ParallelConfigInstance) -> str | None:
        """Why the paper's ILP refuses ``instance`` (more than :data:`MAX_GPUS` GPUs or
        :data:`MAX_CELL_NODES` assignment variables), or ``None``."""
        if instance.n_gpus > MAX_GPUS:
            return (
                f"{instance.n_gpus} GPUs exceed the paper ILP's {MAX_GPUS}; use "
                "parallelconfig/mip or parallelconfig/greedy"
            )
        if instance.n_gpus * instance.n_nodes > MAX_CELL_NODES:
            return (
                f"{instance.n_gpus} GPUs x {instance.n_nodes} nodes exceed the paper ILP's "
                f"{MAX_CELL_NODES} assignment variables; use parallelconfig/mip or "
                "parallelconfig/greedy"
            )
        return None


class _Search:
    """One call of a :class:`_SearchMip`: the configurations, their bounds, the incumbent.

    The bounds are computed while time is left (every :data:`CHECK_EVERY` configurations a look
    at the clock, at least one configuration); when the limit cuts this short, the
    configurations without a bound are not searched and the result's bound is 0."""

    def __init__(
        self,
        solver: _SearchMip,
        instance: ParallelConfigInstance,
        ctx: SolveContext,
        symmetry: bool,
    ) -> None:
        t0 = time.perf_counter()
        self.solver, self.instance, self.ctx, self.symmetry = solver, instance, ctx, symmetry
        self.bounds: dict[Config, float] = {}
        self.split_bounds: dict[Config, float] = {}  # option B (a stage across nodes)
        inside: dict[Config, float] = {}  # option A (every stage inside a node), exact
        stages: dict[int, tuple[tuple[float, ...], tuple[float, ...]]] = {}
        self.all_bounded = True
        for i, (d, p) in enumerate(instance.configurations()):
            if i and i % CHECK_EVERY == 0 and ctx.expired():
                self.all_bounded = False
                break
            if p not in stages:
                stages[p] = instance.model.stages(p)
            option_a = columns_inside(instance, d, p)
            option_b = split_bound(instance, d, p, stages[p]).objective
            self.split_bounds[d, p] = option_b
            inside[d, p] = math.inf if option_a is None else option_a[0].objective
            self.bounds[d, p] = min(option_b, inside[d, p])
        self.order = sorted(self.bounds, key=lambda c: (self.bounds[c], c))
        self.packed: dict[Config, tuple[float, list[list[int]]]] = {}
        self.best_value = math.inf
        self.best: ParallelConfig | None = None
        if inside and min(inside.values()) < math.inf:  # option A: the best is exact
            c = min(inside, key=lambda c: (inside[c], c))
            option_a = columns_inside(instance, *c)
            assert option_a is not None
            self.offer(option_a[0].objective, option_a[1])
        for c in self.order:  # first pass: the incumbent from the greedy packings
            if self.bounds[c] >= self.best_value or (self.best is not None and ctx.expired()):
                break
            self.packed[c] = best_packing(instance, *c)
            self.offer(*self.packed[c])
        self.build_s = time.perf_counter() - t0
        self.solve_s = 0.0

    def offer(self, value: float, grid: list[list[int]] | ParallelConfig) -> None:
        """Keep ``grid`` (a node grid or a configuration) if it beats the incumbent."""
        if value < self.best_value:
            self.best_value = value
            self.best = (
                grid if isinstance(grid, ParallelConfig) else from_nodes(self.instance, grid)
            )

    def solve(
        self, configs: list[Config], runs: int | None = None, floor: float | None = None
    ) -> tuple[TerminationReason, float]:
        """Solve the model of ``configs`` (of one level ``runs`` when given) with the cutoff at
        the incumbent; what the backend says and the lower bound proven on the best cost of
        ``configs`` (at that level; ``floor`` its a priori bound)."""
        cost_of = importlib.import_module(self.solver.formulation).cost_of
        cutoff = self.best_value
        level: dict[str, Any] = {} if not self.solver.levels else {"across": True}
        if runs is not None:
            level["runs"] = runs
        run = self.solver.run(
            self.instance,
            self.ctx,
            configs=configs,
            symmetry=self.symmetry,
            cutoff=cutoff,
            **level,
        )
        self.build_s += run.build_s
        self.solve_s += run.solve_s
        if run.solution is not None:
            self.offer(evaluate(self.instance, run.solution), run.solution)
        outcome = run.outcome
        bound = min(self.bounds[c] for c in configs) if floor is None else floor
        if outcome.termination is TerminationReason.INFEASIBLE:
            return TerminationReason.OPTIMAL, cutoff  # nothing below the cutoff
        if outcome.bound is not None:
            bound = max(bound, min(cost_of(run.model, outcome.bound), cutoff))
        if outcome.termination is TerminationReason.OPTIMAL:
            bound = min(bound, self.best_value)  # the backend's tolerance, not a weaker proof
        return outcome.termination, bound

    def attempt(self, termination: TerminationReason, bound: float, message: str) -> Attempt:
        """The attempt of the search."""
        if not self.all_bounded:
            bound = min(bound, 0.0)
            termination = TerminationReason.TIME_LIMIT
            message += (
                f"; time limit while bounding: {len(self.bounds)} of "
                f"{self.instance.n_configurations()} (d, p) considered"
            )
        return Attempt(
            self.best,
            termination,
            proven_optimal=termination is TerminationReason.OPTIMAL and self.ctx.rel_gap == 0,
            bound=min(bound, self.best_value),
            build_s=self.build_s,
            solve_s=self.solve_s,
            message=message,
        )

    def first_level(self, c: Config) -> int | None:
        """The fewest runs per replica of ``c`` (the level its bound assumes), ``None`` when the
        search does not visit ``c`` by levels (node changes cost nothing, or the formulation
        has no levels)."""
        if not self.solver.levels:
            return None
        from topoopt.parallelconfig.formulations.segment_mip import run_limit

        if run_limit(self.instance, *c, None) is None:
            return None
        return min_changes(self.instance.gpu_counts, *c) + 1

    def level_bound(self, c: Config, runs: int | None) -> float:
        """The a priori bound of ``c`` at level ``runs``: its bound plus the node changes beyond
        the fewest, each at ``β m A (1/B_cross - 1/B_intra)``."""
        first = self.first_level(c)
        if runs is None or first is None:
            return self.split_bounds[c] if self.solver.levels else self.bounds[c]
        inst = self.instance
        m = micro_batches_per_replica(inst, c[0])
        delta = 1 / inst.cross_bps - 1 / inst.intra_bps
        change = inst.beta * m * inst.model.activation_bytes * delta
        return self.split_bounds[c] + change * (runs - first)

    def split(self) -> Attempt:
        """One model per configuration, or per level of runs (module docstring)."""
        proven: list[float] = []  # what is proven about each configuration (level) examined
        # (bound, c, runs): runs -1 before c's levels are known (its bound is then the smaller
        # of options A and B), 0 for a configuration without levels, else the level
        heap: list[tuple[float, Config, int]] = [(self.bounds[c], c, -1) for c in self.order]
        solved = settled = levels = 0
        termination = TerminationReason.OPTIMAL
        stopped = False
        while heap:
            value, c, runs = heap[0]
            if value >= self.best_value:
                break
            if self.ctx.expired():
                stopped, termination = True, TerminationReason.TIME_LIMIT
                break
            heapq.heappop(heap)
            if runs == -1:  # option A is the incumbent or worse: c's option B from here on
                first = self.first_level(c)
                level = 0 if first is None else first
                heapq.heappush(heap, (self.level_bound(c, first), c, level))
                continue
            if c not in self.packed:
                self.packed[c] = best_packing(self.instance, *c)
                self.offer(*self.packed[c])
            if self.packed[c][0] <= value:  # optimal for c: no later level is cheaper
                settled += 1
                proven.append(value)
                continue
            outcome, bound = self.solve([c], runs or None, value)
            solved += 1
            proven.append(bound)
            if outcome is not TerminationReason.OPTIMAL:
                termination = outcome
            if runs and runs < c[1]:
                levels += 1
                heapq.heappush(heap, (self.level_bound(c, runs + 1), c, runs + 1))
        left = len({c for _, c, _ in heap})
        note = f"{left} not reached (time limit)" if stopped else f"{left} pruned by the incumbent"
        if termination is not TerminationReason.OPTIMAL and not stopped:
            note += f"; an ILP ended with {termination.value}"
        what = f" (one per level of runs; {levels} later levels)" if self.solver.levels else ""
        return self.attempt(
            termination,
            min([*proven, *(item[0] for item in heap)], default=self.best_value),
            f"{len(self.order)} (d, p): {solved} solved by the ILP{what}, {settled} settled by "
            f"their lower bound, {note}",
        )

    def joint(self) -> Attempt:
        """One model over every configuration that might beat the incumbent."""
        keep = [c for c in self.order if self.bounds[c] < self.best_value]
        if not keep:
            return self.attempt(
                TerminationReason.OPTIMAL,
                self.best_value,
                "the greedy packing attains every lower bound",
            )
        if self.ctx.expired():
            return self.attempt(TerminationReason.TIME_LIMIT, self.bounds[keep[0]], "no time left")
        termination, bound = self.solve(keep)
        return self.attempt(
            termination, bound, f"one model over {len(keep)} of {len(self.order)} (d, p)"
        )
