"""``clusterselect/mip``: the exact MIP of :mod:`topoopt.clusterselect.formulations.select_mip`.

The instance is first reduced (:func:`~topoopt.clusterselect.formulations.select_mip.reduce`):
``K* = k`` and the optimal bottleneck rank ``ρ*`` follow from the free GPUs and the Kruskal
groups, and only the clusters of the groups that can host an optimal selection stay (a proof
per step in ``docs/clusterselect.md``). Then two solves of one model over those candidates
(lexicographic, hierarchical): first the fewest clusters and the best bottleneck rank with gap 0
(an integer objective), then, with that value kept, the smallest total latency with the call's
gap (skipped when the links carry no latency).

Both solves start from the better of SpinSearch's selection and a *swap start*: the ``k``
largest candidates of a host, improved by exchanging a chosen and an unchosen candidate while
that lowers the latency and the ``k`` clusters still hold the task. The bound is the family's
scalar objective of the stage reached: ``v_bound / (q + 1)`` after a first stage that did not
finish, ``(v* + λ_b / (1 + λ_b)) / (q + 1)`` after the second.

The latency rows of SpinSearch's selection (so that evaluating it, should it be the answer,
costs no search after the limit), the reduction, the swap start and the model build run under
the time limit (:func:`~topoopt.core.deadline.interrupt_at`): when it passes there, SpinSearch's
selection (or the swap start, when it was ready) is returned with ``TIME_LIMIT``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.clusterselect.solution import Selection, key, split
from topoopt.clusterselect.solvers.spinsearch import spinsearch
from topoopt.core.deadline import TimeUp, interrupt_at
from topoopt.core.formulation import MipSolver
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import TerminationReason

if TYPE_CHECKING:
    from topoopt.clusterselect.formulations.select_mip import Reduction

MAX_CLUSTERS = 5_000
"""Largest instance with latencies the MIP takes: it computes a latency row (``n`` floats) per
candidate, and its latency stage has a variable per pair of candidates."""
MAX_CLUSTERS_WITHOUT_LATENCY = 100_000
"""Largest instance without latencies the MIP takes (its model is linear in the candidates)."""


def swap_start(
    instance: ClusterSelectInstance,
    reduction: Reduction,
    expired: Callable[[], bool] = lambda: False,
) -> Selection:
    """A selection of ``k`` candidates of the first host: its ``k`` largest clusters, then,
    with latencies, the best exchange of a chosen and an unchosen candidate while it lowers
    the total latency and keeps ``d`` GPUs (stops when ``expired()``)."""
    graph, demand = instance.graph, instance.demand
    host = np.asarray(reduction.hosts[0], dtype=np.int64)
    free = np.asarray(instance.free, dtype=np.int64)[host]
    k = reduction.clusters
    chosen = np.zeros(len(host), dtype=bool)
    chosen[np.argsort(-free, kind="stable")[:k]] = True
    if graph.has_latency and k > 1 and k < len(host):
        graph.keep_latency_rows(host.tolist())
        latency = np.array([graph.latency_row(int(i))[host] for i in host])
        to_chosen = latency[:, chosen].sum(axis=1)  # each candidate's latency to the chosen
        for _ in range(len(host) * k):  # each exchange lowers the latency: it ends
            if expired():
                break
            inside, outside = np.flatnonzero(chosen), np.flatnonzero(~chosen)
            held = free[inside].sum()
            # exchanging i (in) for j (out) changes the latency by
            # (to_chosen[j] - latency[i, j]) - to_chosen[i]
            change = (
                to_chosen[outside][None, :]
                - latency[np.ix_(inside, outside)]
                - to_chosen[inside][:, None]
            )
            change[(held - free[inside])[:, None] + free[outside][None, :] < demand] = np.inf
            a, b = np.unravel_index(int(np.argmin(change)), change.shape)
            if not change[a, b] < -1e-9:
                break
            i, j = inside[a], outside[b]
            chosen[i], chosen[j] = False, True
            to_chosen += latency[:, j] - latency[:, i]
    used = host[chosen].tolist()
    return Selection.from_counts(instance, split(instance.free, used, demand))


@register_solver
class SelectMipSolver(MipSolver):
    """Exact MIP on a safe reduction: K and the bottleneck rank first (a group hosting the
    selection), then latency over pair products of the candidates."""

    name = "clusterselect/mip"
    family = "clusterselect"
    exact = True
    gives_bound = True
    formulation = "topoopt.clusterselect.formulations.select_mip"

    @classmethod
    def unsupported_reason(cls, instance: ClusterSelectInstance) -> str | None:
        """Why the MIP refuses ``instance`` (more than :data:`MAX_CLUSTERS` clusters with
        latencies, :data:`MAX_CLUSTERS_WITHOUT_LATENCY` without), or ``None``."""
        limit = MAX_CLUSTERS if instance.graph.has_latency else MAX_CLUSTERS_WITHOUT_LATENCY
        if instance.n_clusters > limit:
            return (
                f"{instance.n_clusters} clusters exceed the MIP's {limit} (with latencies it "
                "keeps a latency row per candidate and a variable per pair of candidates); "
                "use clusterselect/spinsearch"
            )
        return None

    def start(self, instance: ClusterSelectInstance, **opts: object) -> Selection:
        """SpinSearch's selection."""
        return Selection.from_counts(instance, spinsearch(instance)[0])

    def _solve(self, instance: ClusterSelectInstance, ctx: SolveContext) -> Attempt:
        from topoopt.clusterselect.formulations import select_mip as formulation

        t0 = time.perf_counter()
        start = self.start(instance)
        model = None
        try:  # stopped by the time limit: the best start so far is kept
            with interrupt_at(ctx.deadline):
                # the start is the answer if the limit passes: its latency rows first (kept by
                # the graph, so evaluating the result reads them instead of searching again)
                instance.graph.keep_latency_rows(instance.graph.index[c] for c in start.chosen())
                reduction = formulation.reduce(instance)
                start = self._better(instance, start, swap_start(instance, reduction, ctx.expired))
                model = formulation.build(instance, reduction)
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

    @staticmethod
    def _better(instance: ClusterSelectInstance, a: Selection, b: Selection) -> Selection:
        """The selection with the better key (``a`` on a tie); latency only when ``K`` and the
        rank tie (``a`` may span many clusters whose latency costs a Dijkstra each)."""
        graph = instance.graph

        def head(s: Selection) -> tuple[int, int]:
            return len(s.chosen()), graph.rank(graph.bottleneck(s.chosen()))

        if head(a) != head(b):
            return a if head(a) < head(b) else b
        return b if key(instance, b.chosen()).objective < key(instance, a.chosen()).objective else a
