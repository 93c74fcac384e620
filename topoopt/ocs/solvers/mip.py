"""``ocs/tdm-ilp``: the MILP of :mod:`topoopt.ocs.formulations.tdm_mip`, warm started from
``ocs/hill-climb``'s search (which gets at most a fifth of the time left,
``MipSolver.start_share``, and :data:`START_MAX_S` seconds; run without the template's
evaluation and metrics, since the MILP's own result is evaluated and checked).

The model decides the grouping, the free PS servers, the free rings and the circuits of every
phase at once; the result carries the backend's bound. ``symmetry`` (default ``True``) puts the
first job in group 1 (the round is symmetric in the two groups).
"""

from __future__ import annotations

import gc
from dataclasses import replace
from typing import Any, cast

from topoopt.core.errors import InvalidOptionError
from topoopt.core.formulation import MipSolver
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import TerminationReason
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.solution import Schedule

MAX_BINARIES = 200_000
"""Most circuit-count binaries (``z``) the MILP agrees to build."""
START_MAX_S = 10.0
"""Most seconds the hill-climb start may take (also without a time limit; the local search
ends in about a second at 64 pods and 96 jobs, three at 128 pods and 192 jobs)."""
FREE_S_PER_BINARY = 3e-5
"""Seconds reserved within the time limit, per circuit binary, for freeing the model (about
5 µs measured alone, up to 25 µs under load)."""
RESERVE_SHARE = 0.25
"""Most of the time limit reserved for freeing the model."""
MAX_FREE_RING_PODS = 12
"""Largest free ring the MILP builds subtour constraints for."""


def circuit_binaries(instance: OcsInstance) -> int:
    """An upper bound on the ``z`` variables: ``2 · sum over loaded pairs (U_ab + 1)``, every
    pair of pods that shares a job counted."""
    pairs: set[tuple[int, int]] = set()
    for j in range(instance.n_jobs):
        pods = instance.job_pods(j)
        pairs.update((min(a, b), max(a, b)) for a in pods for b in pods if a != b)
    budget = instance.circuit_budget
    return 2 * sum(min(budget[a], budget[b]) + 1 for a, b in pairs)


@register_solver
class TdmIlpSolver(MipSolver):
    """Exact MILP: grouping, PS servers, rings and one-hot circuit counts of every phase."""

    name = "ocs/tdm-ilp"
    family = "ocs"
    exact = True
    gives_bound = True
    formulation = "topoopt.ocs.formulations.tdm_mip"

    @classmethod
    def unsupported_reason(cls, instance: OcsInstance) -> str | None:
        """Why the MILP refuses ``instance`` (more than :data:`MAX_BINARIES` circuit binaries,
        or a free ring over more than :data:`MAX_FREE_RING_PODS` pods), or ``None``."""
        if not instance.is_placed:
            return (
                f"jobs {', '.join(instance.unplaced_jobs())} are given by units; the MILP needs "
                "every job's GPUs per pod (ocs/oxc-greedy and ocs/hill-climb place units)"
            )
        count = circuit_binaries(instance)
        if count > MAX_BINARIES:
            return f"{count} circuit binaries exceed the MILP's {MAX_BINARIES}; use ocs/hill-climb"
        for spec in instance.jobs:
            if spec.type == "RAR" and spec.ring is None and len(spec.pods) > MAX_FREE_RING_PODS:
                return (
                    f"job {spec.name}: a free ring over {len(spec.pods)} pods exceeds the MILP's "
                    f"{MAX_FREE_RING_PODS}; fix its ring or use ocs/hill-climb"
                )
        return None

    def start(self, instance: OcsInstance, **opts: Any) -> Schedule | None:
        """``ocs/hill-climb``'s schedule within :data:`START_MAX_S` (``None`` when it finds
        none)."""
        return self.start_within(instance, None, **opts)

    def start_within(
        self, instance: OcsInstance, time_limit: float | None, **opts: Any
    ) -> Schedule | None:
        """:meth:`start` within ``time_limit`` too (a fifth of the call's remaining time);
        ``ocs/oxc-greedy``'s schedule when the hill climb finds none in that time."""
        from topoopt.ocs.solvers.greedy import OxcGreedySolver
        from topoopt.ocs.solvers.hill_climb import HillClimbSolver

        limit = START_MAX_S if time_limit is None else min(START_MAX_S, time_limit)
        # the solvers' own search, without the template's evaluation and metrics (the MILP's
        # result is evaluated and checked anyway)
        found = HillClimbSolver()._solve(instance, SolveContext(None, limit, 0))
        if found.solution is None and found.termination is TerminationReason.TIME_LIMIT:
            found = OxcGreedySolver()._solve(instance, SolveContext(None, limit, 0))
        return cast(Schedule | None, found.solution)

    def _solve(self, instance: OcsInstance, ctx: SolveContext, *, symmetry: bool = True) -> Attempt:
        if not isinstance(symmetry, bool):
            raise InvalidOptionError(f"symmetry: must be true or false, got {symmetry!r}")
        inner = ctx
        if ctx.time_limit is not None:  # keep time to free the model within the limit
            reserve = min(
                RESERVE_SHARE * ctx.time_limit, FREE_S_PER_BINARY * circuit_binaries(instance)
            )
            inner = replace(ctx, time_limit=ctx.time_limit - reserve)
        run = self.run(instance, inner, symmetry=symmetry)
        attempt = self.attempt(ctx, run)
        del run  # the model is a web of reference cycles: free it now, on the solver's time,
        gc.collect()  # not in the middle of evaluating the result (2 s at 640 pods x 960 jobs)
        return attempt
