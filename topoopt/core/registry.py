"""The registries of problem families and solvers, and the one place built-ins are discovered.

Families register with :func:`register_family`, solvers with the :func:`register_solver`
class decorator. The built-in modules listed in :data:`BUILTIN_MODULES` are imported the first
time a registry is read, so ``topoopt.solve(...)`` works after a bare ``import topoopt``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, TypeVar

from topoopt.core.errors import TopooptError, UnknownFamilyError, UnknownSolverError
from topoopt.core.family import Family
from topoopt.core.solver import Solver

BUILTIN_MODULES: tuple[str, ...] = (
    "topoopt.placement",
    "topoopt.formulations.placement",
    "topoopt.solvers.placement",
    "topoopt.gpuselect",
    "topoopt.formulations.gpuselect",
    "topoopt.solvers.gpuselect",
)
"""Modules whose import registers the built-in families and solvers."""

_FAMILIES: dict[str, Family] = {}
_SOLVERS: dict[str, type[Solver]] = {}
_loaded = False

S = TypeVar("S", bound=type[Solver])


def _ensure_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILTIN_MODULES:
            importlib.import_module(module)


def register_family(family: Family) -> Family:
    """Add ``family`` to the registry (its name must be new)."""
    if family.name in _FAMILIES and _FAMILIES[family.name] is not family:
        raise TopooptError(f"family {family.name!r} is already registered")
    _FAMILIES[family.name] = family
    return family


def register_solver(cls: S) -> S:
    """Class decorator: register a :class:`Solver` subclass under ``cls.name``."""
    prefix = f"{cls.family}/"
    if not cls.name.startswith(prefix):
        raise TopooptError(f"solver name {cls.name!r} must start with {prefix!r}")
    if cls.name in _SOLVERS and _SOLVERS[cls.name] is not cls:
        raise TopooptError(f"solver {cls.name!r} is already registered")
    _SOLVERS[cls.name] = cls
    return cls


def get_family(name: str) -> Family:
    """The registered family called ``name``."""
    _ensure_builtins()
    try:
        return _FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(_FAMILIES))
        raise UnknownFamilyError(f"unknown family {name!r}; known families: {known}") from None


def families() -> list[str]:
    """Names of all registered families, sorted."""
    _ensure_builtins()
    return sorted(_FAMILIES)


def get_solver(name: str) -> Solver:
    """A fresh instance of the solver registered as ``name``."""
    _ensure_builtins()
    try:
        return _SOLVERS[name]()
    except KeyError:
        known = ", ".join(sorted(_SOLVERS))
        raise UnknownSolverError(f"unknown solver {name!r}; registered solvers: {known}") from None


def solver_names(family: str | None = None) -> list[str]:
    """Registered solver names (of one family, if given), sorted."""
    _ensure_builtins()
    if family is not None:
        get_family(family)
    return sorted(n for n, cls in _SOLVERS.items() if family is None or cls.family == family)


@dataclass(frozen=True)
class SolverInfo:
    """A registered solver and its capabilities (what ``topoopt solvers`` prints)."""

    name: str
    family: str
    exact: bool
    gives_bound: bool
    stochastic: bool
    uses_backend: bool
    backends: tuple[str, ...]
    options: dict[str, Any]
    description: str


def solvers_for(family: str | None = None) -> list[SolverInfo]:
    """The registered solvers of ``family`` (all families if ``None``) with their capabilities.

    ``backends`` lists the MIP backends installed on this machine for solvers that use one.
    """
    from topoopt.core.mip import available_backends

    installed = tuple(available_backends())
    infos = []
    for name in solver_names(family):
        cls = _SOLVERS[name]
        infos.append(
            SolverInfo(
                name=name,
                family=cls.family,
                exact=cls.exact,
                gives_bound=cls.gives_bound,
                stochastic=cls.stochastic,
                uses_backend=cls.uses_backend,
                backends=installed if cls.uses_backend else (),
                options=cls.option_defaults(),
                description=cls.description(),
            )
        )
    return infos
