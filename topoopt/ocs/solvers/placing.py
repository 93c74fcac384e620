"""Solving an instance whose jobs are partly given by ``units``: place them first with
Algorithm 2 (:func:`topoopt.ocs.placement.algorithm2_placement`), solve the placed instance,
and return the schedule with that placement (the heuristics share this; the exact solvers
refuse such instances)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from topoopt.core.errors import InvalidInstanceError
from topoopt.core.solver import Attempt
from topoopt.core.status import TerminationReason
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.placement import resolve


def solve_placed(instance: OcsInstance, solve: Callable[[OcsInstance], Attempt]) -> Attempt:
    """``solve`` on ``instance`` with its units placed, the placement added to the schedule."""
    try:
        view, placement = resolve(instance)
    except InvalidInstanceError as exc:
        return Attempt(
            None,
            TerminationReason.COMPLETED,
            message=f"Algorithm 2 placed the units so that a job cannot be served: {exc}",
        )
    attempt = solve(view)
    if not placement or attempt.solution is None:
        return attempt
    placed = ", ".join(placement)
    message = f"{attempt.message}; units of {placed} placed by Algorithm 2".lstrip("; ")
    return replace(
        attempt, solution=replace(attempt.solution, placement=placement), message=message
    )
