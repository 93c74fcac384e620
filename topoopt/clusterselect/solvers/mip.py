"""``clusterselect/mip``: the exact MIP of :mod:`topoopt.clusterselect.formulations.select_mip`.

Two solves of one model (lexicographic, hierarchical): first the fewest clusters and the best
bottleneck rank with gap 0 (an integer objective), then, with that value kept, the smallest
total latency with the call's gap (skipped when the links carry no latency). Both solves start
from SpinSearch's selection. The bound is the family's scalar objective of the stage reached:
``v_bound / (q + 1)`` after a first stage that did not finish, ``(v* + λ_b / (1 + λ_b)) / (q + 1)``
after the second.
"""

from __future__ import annotations

import time

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.clusterselect.solution import Selection, key
from topoopt.clusterselect.solvers.spinsearch import spinsearch
from topoopt.core.deadline import TimeUp, interrupt_at
from topoopt.core.formulation import MipSolver
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import TerminationReason

MAX_CLUSTERS = 400
"""Largest instance the MIP builds (it has a variable per pair of clusters)."""


@register_solver
class SelectMipSolver(MipSolver):
    """Exact MIP: used clusters, GPUs taken, the group that bounds the bottleneck, pair
    products for latency; minimise (K, bottleneck rank), then latency."""

    name = "clusterselect/mip"
    family = "clusterselect"
    exact = True
    gives_bound = True
    formulation = "topoopt.clusterselect.formulations.select_mip"

    @classmethod
    def unsupported_reason(cls, instance: ClusterSelectInstance) -> str | None:
        """Why the MIP refuses ``instance`` (more than :data:`MAX_CLUSTERS` clusters), or
        ``None``."""
        if instance.n_clusters > MAX_CLUSTERS:
            return (
                f"{instance.n_clusters} clusters exceed the MIP's {MAX_CLUSTERS} (a variable "
                "per pair); use clusterselect/spinsearch"
            )
        return None

    def start(self, instance: ClusterSelectInstance, **opts: object) -> Selection:
        """SpinSearch's selection."""
        return Selection.from_counts(instance, spinsearch(instance)[0])

    def _solve(self, instance: ClusterSelectInstance, ctx: SolveContext) -> Attempt:
        from topoopt.clusterselect.formulations import select_mip as formulation

        t0 = time.perf_counter()
        start = self.start(instance)
        try:  # the build of a large model is stopped by the time limit: the start is kept
            with interrupt_at(ctx.deadline):
                model = formulation.build(instance)
                formulation.warm_start(model, start)
        except TimeUp:
            model = None
        build_s = time.perf_counter() - t0
        scale = len(instance.graph.levels) + 1
        if model is None or ctx.expired():
            return Attempt(
                start, TerminationReason.TIME_LIMIT, build_s=build_s, message="no time to solve"
            )
        first = ctx.solve_model(model, warmstart=True, rel_gap=0.0)
        solve_s = first.solve_s
        if not first.has_solution or first.termination is not TerminationReason.OPTIMAL:
            solution = formulation.extract(model, instance) if first.has_solution else start
            return Attempt(
                solution,
                first.termination,
                bound=None if first.bound is None else first.bound / scale,
                build_s=build_s,
                solve_s=solve_s,
                message=f"stage 1 (clusters, bottleneck): {first.message}".rstrip(": "),
            )
        solution = formulation.extract(model, instance)
        # v* from the solution's exact key, not from the backend's objective value: HiGHS 1.16.0
        # reported a MIP start's objective in its presolved space (1 instead of 3; the run kept
        # the right x), and stage 2 then became infeasible
        parts = key(instance, solution.chosen())
        value = (parts.levels + 1) * parts.clusters + parts.rank
        if not instance.graph.has_latency:
            return Attempt(
                solution,
                TerminationReason.OPTIMAL,
                proven_optimal=True,
                bound=value / scale,
                build_s=build_s,
                solve_s=solve_s,
            )
        formulation.fix_rank(model, value)
        second = ctx.solve_model(model, warmstart=True)
        if second.has_solution:
            solution = formulation.extract(model, instance)
        latency_bound = 0.0 if second.bound is None else max(second.bound, 0.0)
        return Attempt(
            solution,
            second.termination,
            proven_optimal=second.termination is TerminationReason.OPTIMAL and ctx.rel_gap == 0,
            bound=(value + latency_bound / (1.0 + latency_bound)) / scale,
            build_s=build_s,
            solve_s=solve_s + second.solve_s,
            message=second.message,
        )
