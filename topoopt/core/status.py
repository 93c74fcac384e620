"""The two status axes of a :class:`~topoopt.core.result.Result`.

Following Pyomo's ``contrib.solver`` results, *why* a run stopped
(:class:`TerminationReason`) is kept apart from *how good* its answer is
(:class:`SolutionStatus`, ordered so that ``status >= SolutionStatus.FEASIBLE`` means
"usable").
"""

from __future__ import annotations

from enum import Enum, IntEnum


class SolutionStatus(IntEnum):
    """How good the returned solution is (ordered)."""

    NO_SOLUTION = 0
    UNKNOWN = 5
    INFEASIBLE = 10
    FEASIBLE = 20
    OPTIMAL = 30

    @property
    def label(self) -> str:
        """Lower-case name used in JSON, e.g. ``"optimal"``."""
        return self.name.lower()

    def __str__(self) -> str:
        return self.label


class TerminationReason(str, Enum):
    """Why a solver stopped."""

    OPTIMAL = "optimal"
    """Proven optimal (exact solvers) within the requested gap."""
    COMPLETED = "completed"
    """A heuristic ran to its end; no optimality claim."""
    TIME_LIMIT = "time_limit"
    ITERATION_LIMIT = "iteration_limit"
    """A node, iteration or solution-count limit stopped the backend."""
    OBJECTIVE_LIMIT = "objective_limit"
    """The backend reached an objective target or cutoff set through ``backend_options``."""
    INFEASIBLE = "infeasible"
    """The model was proven to have no feasible solution."""
    UNBOUNDED = "unbounded"
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    INTERRUPTED = "interrupted"
    LICENSE = "license"
    """The backend refused the model for licensing reasons (e.g. a size-limited Gurobi)."""
    ERROR = "error"
    """The solver failed, or returned a solution that :func:`check` rejects."""

    def __str__(self) -> str:
        return self.value
