"""topoopt — topology-aware placement of distributed training jobs on GPU clusters.

One API over several problem families, each with declarative Pyomo MILPs, heuristics and an
enumeration oracle::

    import topoopt
    instance = topoopt.load("instances/placement/arnold-paper/iii-even-a0.5.json")
    result = topoopt.solve(instance, "placement/exact-mip", backend="highs", time_limit=60)
    print(result.status, result.objective, result.solution)

Every result's objective is recomputed by the family's ``evaluate()`` and its solution checked
by ``check()`` before it is returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

from topoopt.core import (
    BackendUnavailableError,
    Instance,
    InvalidInstanceError,
    InvalidOptionError,
    Result,
    SolutionStatus,
    TerminationReason,
    TopooptError,
    UnknownSolverError,
)
from topoopt.core.io import load, save
from topoopt.core.backends import available_backends
from topoopt.core.registry import (
    SolverInfo,
    families,
    get_family,
    get_solver,
    register_family,
    register_solver,
    solvers_for,
)

__version__ = "0.1.0"


def solve(
    instance: Instance | str | PathLike[str] | Mapping[str, Any],
    solver: str,
    *,
    backend: str | None = None,
    time_limit: float | None = None,
    seed: int | None = None,
    **options: Any,
) -> Result:
    """Solve ``instance`` with the registered solver ``solver``.

    Parameters
    ----------
    instance
        An instance, or a path / JSON object that :func:`load` reads.
    solver
        Registry name such as ``"placement/coarse-mip"`` (see :func:`solvers_for`).
    backend
        MIP backend for MIP solvers: ``"highs"`` (default), ``"scip"`` or ``"gurobi"``.
    time_limit
        Seconds, or ``None``.
    seed
        Random seed (``None`` = 0, so runs are reproducible).
    **options
        Solver options (``threads``, ``rel_gap`` and the solver's own, e.g. ``unit="dp"``).
    """
    if not isinstance(instance, Instance):
        instance = load(instance)
    return get_solver(solver).solve(
        instance, backend=backend, time_limit=time_limit, seed=seed, **options
    )


__all__ = [
    "BackendUnavailableError",
    "Instance",
    "InvalidInstanceError",
    "InvalidOptionError",
    "Result",
    "SolutionStatus",
    "SolverInfo",
    "TerminationReason",
    "TopooptError",
    "UnknownSolverError",
    "__version__",
    "available_backends",
    "families",
    "get_family",
    "load",
    "register_family",
    "register_solver",
    "save",
    "solve",
    "solvers_for",
]
