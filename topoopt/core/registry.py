"""The registries of problem families and solvers, and the one place families are discovered.

A family is a plug-in: an installed package declares it in the entry-point group
:data:`ENTRY_POINT_GROUP` (``topoopt.families``) as ``name = "package.module:FAMILY"``, the
:class:`~topoopt.core.family.Family` object. topoopt's own families are declared the same way
in its ``pyproject.toml``. Entry points are read the first time a registry is read, so
``import topoopt`` stays cheap and ``topoopt.solve(...)`` works right after it.

Code that is not an installed package (a test, a notebook, a scheduler's own module) registers
with :func:`register_family` and the :func:`register_solver` class decorator, both re-exported
as ``topoopt.register_family`` / ``topoopt.register_solver`` (see ``docs/extending.md``).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from topoopt.core import limits
from topoopt.core.errors import TopooptError, UnknownFamilyError, UnknownSolverError
from topoopt.core.family import Family
from topoopt.core.solver import Solver

if TYPE_CHECKING:
    from topoopt.core.family import Instance

ENTRY_POINT_GROUP = "topoopt.families"
"""Entry-point group through which installed packages declare their families."""

_FAMILIES: dict[str, Family[Any, Any]] = {}
_SOLVERS: dict[str, type[Solver]] = {}
_discovered = False

S = TypeVar("S", bound=type[Solver])
F = TypeVar("F", bound=Family[Any, Any])


def _discover() -> None:
    """Register every family declared in :data:`ENTRY_POINT_GROUP` (once per process).

    A plug-in that fails to load is reported with a warning and left out, so one broken
    package cannot make topoopt unusable.
    """
    global _discovered
    if _discovered:
        return
    _discovered = True
    from importlib.metadata import entry_points

    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        if point.name in _FAMILIES:
            continue
        try:
            family = point.load()
            if not isinstance(family, Family):
                raise TypeError(f"{point.value} is a {type(family).__name__}, not a Family")
            if family.name != point.name:
                raise TypeError(f"{point.value} is the family {family.name!r}")
            register_family(family)
        except Exception as exc:
            warnings.warn(
                f"topoopt: the family plug-in {point.name!r} ({point.value}) failed to load "
                f"and is left out: {type(exc).__name__}: {exc}",
                RuntimeWarning,
                stacklevel=2,
            )


def import_plugins(modules: Iterable[str]) -> None:
    """Import plugin modules, which register families and solvers when imported.

    Raises
    ------
    TopooptError
        When a module cannot be imported (naming it and why).
    """
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise TopooptError(f"plugin {module!r} cannot be imported: {exc}") from None


def register_family(family: F) -> F:
    """Add ``family`` to the registry and import its ``solver_modules``.

    Parameters
    ----------
    family
        The family; its name must be new (registering the same object twice is a no-op).

    Returns
    -------
    Family
        ``family``, so that a module can write ``FAMILY = register_family(Family(...))``.
    """
    if family.name in _FAMILIES:
        if _FAMILIES[family.name] is family:
            return family
        raise TopooptError(f"family {family.name!r} is already registered")
    if "/" in family.name or not family.name:
        raise TopooptError(f"family name {family.name!r} must be non-empty without '/'")
    _FAMILIES[family.name] = family
    limits.declare_all(family.limits)
    try:
        for module in family.solver_modules:
            importlib.import_module(module)
    except BaseException:
        del _FAMILIES[family.name]
        raise
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


def get_family(name: str) -> Family[Any, Any]:
    """The registered family called ``name``."""
    _discover()
    try:
        return _FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(_FAMILIES)) or "none (is topoopt installed?)"
        raise UnknownFamilyError(f"unknown family {name!r}; known families: {known}") from None


def families() -> list[str]:
    """Names of all registered families, sorted."""
    _discover()
    return sorted(_FAMILIES)


def solver_class(name: str) -> type[Solver]:
    """The class registered as ``name``."""
    _discover()
    try:
        return _SOLVERS[name]
    except KeyError:
        known = ", ".join(sorted(_SOLVERS))
        raise UnknownSolverError(f"unknown solver {name!r}; registered solvers: {known}") from None


def get_solver(name: str) -> Solver:
    """A fresh instance of the solver registered as ``name``."""
    return solver_class(name)()


def solver_names(family: str | None = None) -> list[str]:
    """Registered solver names (of one family, if given), sorted."""
    _discover()
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


def solvers_for(target: str | Instance[Any] | None = None) -> list[SolverInfo]:
    """The registered solvers with their capabilities.

    Parameters
    ----------
    target
        A family name (its solvers), an instance (the solvers of its family that support
        it, see :meth:`Solver.unsupported_reason`), or ``None`` (every solver).

    ``backends`` lists the MIP backends installed on this machine for solvers that use one.
    """
    from topoopt.core.backends import available_backends
    from topoopt.core.family import Instance

    instance = target if isinstance(target, Instance) else None
    family = instance.family if instance is not None else target
    installed = tuple(available_backends())
    infos = []
    for name in solver_names(family):  # type: ignore[arg-type]
        cls = _SOLVERS[name]
        if instance is not None and cls.unsupported_reason(instance) is not None:
            continue
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
