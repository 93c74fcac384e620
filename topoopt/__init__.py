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
from typing import Any, TypeVar, overload

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
from topoopt.core.backends import available_backends
from topoopt.core.io import AllowPaths, load, save
from topoopt.core.limits import limits_raised, set_limits
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


R = TypeVar("R", bound=Result[Any])


@overload
def solve(
    instance: Instance[R],
    solver: str,
    *,
    backend: str | None = None,
    time_limit: float | None = None,
    seed: int | None = None,
    **options: Any,
) -> R: ...


@overload
def solve(
    instance: str | PathLike[str] | Mapping[str, Any],
    solver: str,
    *,
    backend: str | None = None,
    time_limit: float | None = None,
    seed: int | None = None,
    allow_paths: AllowPaths = False,
    **options: Any,
) -> Result[Any]: ...


def solve(
    instance: Instance[Any] | str | PathLike[str] | Mapping[str, Any],
    solver: str,
    *,
    backend: str | None = None,
    time_limit: float | None = None,
    seed: int | None = None,
    allow_paths: AllowPaths = False,
    **options: Any,
) -> Result[Any]:
    """Solve ``instance`` with the registered solver ``solver``.

    Parameters
    ----------
    instance
        An instance, or a path / JSON object that :func:`load` reads.
    solver
        Registry name such as ``"placement/coarse-mip"``, or without the family prefix
        (``"coarse-mip"``: the solver of that name of the instance's family); see
        :func:`solvers_for` and :func:`topoopt.core.registry.resolve_solver`.
    backend
        MIP backend for MIP solvers: ``"highs"`` (default), ``"scip"`` or ``"gurobi"``.
    time_limit
        Seconds, or ``None``.
    seed
        Random seed (``None`` = 0, so runs are reproducible).
    allow_paths
        When ``instance`` is a path or an object: which files outside the instance's folder
        it may name (see :func:`load`).
    **options
        Solver options (``threads``, ``rel_gap`` and the solver's own, e.g. ``unit="dp"``).

    Returns
    -------
    Result
        Of the family's result type (``PlacementResult`` for a placement instance), which
        type checkers see too.

    Raises
    ------
    UnknownSolverError
        When ``solver`` names no solver of the instance's family (one line, with the closest
        names: ``unknown solver 'exact-mpi' for placement instances; did you mean
        placement/exact-mip?``).
    """
    if not isinstance(instance, Instance):
        instance = load(instance, allow_paths=allow_paths)
    return get_solver(solver, instance.family).solve(
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
    "limits_raised",
    "load",
    "register_family",
    "register_solver",
    "save",
    "set_limits",
    "solve",
    "solvers_for",
]
