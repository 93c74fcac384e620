"""Time and size budgets shared by the placement solvers.

A solver's time limit covers the whole :meth:`~topoopt.core.solver.Solver.solve` call, which
after the algorithm checks, evaluates and serialises the placement: 1–4.5 s for a job of a
million nodes (measured; the most for a random placement over many minipods). The heuristics
therefore stop :data:`WRAP_UP_S_PER_NODE` seconds per node of the job before the limit; the
MIP solvers do not build a model that is over its size limit or that would not be built and
handed to the backend in the time left.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from topoopt.core.solver import SolveContext
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance

WRAP_UP_S_PER_NODE = 4e-6
"""Seconds per node of the job kept for packaging the answer (placement, check, JSON)."""


def deadline(ctx: SolveContext, instance: PlacementInstance) -> Callable[[], bool]:
    """A callable saying whether the solver must stop now (never without a time limit)."""
    if ctx.time_limit is None:
        return lambda: False
    reserve = WRAP_UP_S_PER_NODE * instance.n_nodes
    return lambda: ctx.time_left() <= reserve


def seconds_left(ctx: SolveContext, instance: PlacementInstance) -> Callable[[], float]:
    """A callable giving the seconds the solver may still spend (``inf`` without a time
    limit), the wrap-up reserve of :func:`deadline` kept back."""
    if ctx.time_limit is None:
        return lambda: math.inf
    reserve = WRAP_UP_S_PER_NODE * instance.n_nodes
    return lambda: max(ctx.time_left() - reserve, 0.0)


def cannot_build(
    ctx: SolveContext, size: int, limit: int, s_per_unit: float, what: str, setting: str
) -> tuple[TerminationReason, str] | None:
    """Why a model of ``size`` units (pairs, variables) must not be built, or ``None``.

    Returns ``(TIME_LIMIT, why)`` when building it (``s_per_unit`` seconds a unit, measured)
    would not end in the time left, else ``(ITERATION_LIMIT, why)`` when ``size`` is over
    ``limit`` (the memory bound; the message names ``setting``, where the limit is raised).
    """
    estimate, left = size * s_per_unit, ctx.time_left()
    if estimate > left:
        return (
            TerminationReason.TIME_LIMIT,
            f"model not built: {size:,} {what} take about {estimate:.1f} s to build, "
            f"{max(left, 0.0):.1f} s left",
        )
    if size > limit:
        return (
            TerminationReason.ITERATION_LIMIT,
            f"model not built: {size:,} {what} exceed the limit of {limit:,} ({setting})",
        )
    return None
