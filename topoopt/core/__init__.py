"""topoopt's core: types, registries, the solver template and the MIP driver.

Families and solvers build on these; nothing here knows about a particular family.
"""

from topoopt.core.errors import (
    BackendUnavailableError,
    InvalidInstanceError,
    InvalidOptionError,
    InvalidSolutionError,
    TopooptError,
    UnknownFamilyError,
    UnknownSolverError,
)
from topoopt.core.family import FORMAT_VERSION, Family, Instance, Sense
from topoopt.core.result import Result, relative_gap
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import SolutionStatus, TerminationReason

__all__ = [
    "FORMAT_VERSION",
    "Attempt",
    "BackendUnavailableError",
    "Family",
    "Instance",
    "InvalidInstanceError",
    "InvalidOptionError",
    "InvalidSolutionError",
    "Result",
    "Sense",
    "SolutionStatus",
    "SolveContext",
    "Solver",
    "TerminationReason",
    "TopooptError",
    "UnknownFamilyError",
    "UnknownSolverError",
    "relative_gap",
]
