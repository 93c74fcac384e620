"""``gpuselect/mip``: the exact MIP of :mod:`topoopt.gpuselect.formulations.profile_mip`."""

from __future__ import annotations

import time

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.gpuselect.formulations import profile_mip
from topoopt.gpuselect.instance import GpuSelectInstance


@register_solver
class MipSolver(Solver):
    """Exact MIP for table, bottleneck and topology models (one-hot per host, epigraph min).

    Option ``choice``: ``"count"`` (default; each host picks a count, its best subset of that
    size) or ``"subset"`` (each host picks any subset of its idle GPUs).
    """

    name = "gpuselect/mip"
    family = "gpuselect"
    exact = True
    gives_bound = True
    uses_backend = True

    def _solve(self, instance: GpuSelectInstance, ctx: SolveContext, *,
               choice: str = "count") -> Attempt:
        t0 = time.perf_counter()
        model = profile_mip.build(instance, choice)
        build_s = time.perf_counter() - t0
        out = ctx.solve_model(model)
        solution = profile_mip.extract(model, instance) if out.has_solution else None
        return ctx.exact_attempt(out, solution, build_s)
