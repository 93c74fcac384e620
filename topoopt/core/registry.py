"""The registries of problem families and solvers, and the one place families are discovered.

A family is a plug-in: an installed package declares it in the entry-point group
:data:`ENTRY_POINT_GROUP` (``topoopt.families``) as ``name = "package.module:FAMILY"``, the
:class:`~topoopt.core.family.Family` object. topoopt's own families are declared the same way
in its ``pyproject.toml``. Entry points are read the first time a registry is read, so
``import topoopt`` stays cheap and ``topoopt.solve(...)`` works right after it, and a family's
package is imported only when it is first needed: loading a partition instance and solving it
with ``partition/mip`` imports the partition family alone; listing every solver imports all.

Code that is not an installed package (a test, a notebook, a scheduler's own module) registers
with :func:`register_family` and the :func:`register_solver` class decorator, both re-exported
as ``topoopt.register_family`` / ``topoopt.register_solver`` (see ``docs/extending.md``).
"""

from __future__ import annotations

import difflib
import importlib
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from topoopt.core import limits
from topoopt.core.errors import TopooptError, UnknownFamilyError, UnknownSolverError
from topoopt.core.family import Family
from topoopt.core.solver import Solver

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from topoopt.core.family import Instance

ALL_SOLVERS = "all"
"""Solver selection (``topoopt bench --solvers all``) meaning every solver of the instances'
families."""

ENTRY_POINT_GROUP = "topoopt.families"
"""Entry-point group through which installed packages declare their families."""

_FAMILIES: dict[str, Family[Any, Any]] = {}
_SOLVERS: dict[str, type[Solver]] = {}
_DECLARED: dict[str, EntryPoint] | None = None
"""The entry points of :data:`ENTRY_POINT_GROUP` by family name (read once, none loaded)."""
_TRIED: set[str] = set()
"""Declared families whose entry point was loaded (or failed to load) already."""

S = TypeVar("S", bound=type[Solver])
F = TypeVar("F", bound=Family[Any, Any])


def _declared() -> dict[str, EntryPoint]:
    """The families installed packages declare, by name, without importing any of them."""
    global _DECLARED
    if _DECLARED is None:
        from importlib.metadata import entry_points

        _DECLARED = {}
        for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
            _DECLARED.setdefault(point.name, point)
    return _DECLARED


def _load(name: str) -> None:
    """Register the declared family ``name`` if it is not registered yet (at most one try).

    Only that family's package is imported, so that reading a partition instance never
    imports the placement family. A plug-in that fails to load is reported with a warning
    and left out, so one broken package cannot make topoopt unusable.
    """
    if name in _FAMILIES or name in _TRIED:
        return
    point = _declared().get(name)
    if point is None:
        return
    _TRIED.add(name)
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
            stacklevel=3,
        )


def _discover() -> None:
    """Register every family declared in :data:`ENTRY_POINT_GROUP` (see :func:`_load`)."""
    for name in _declared():
        _load(name)


def family_names() -> list[str]:
    """Names of the registered and the declared families, sorted, without importing any.

    A declared plug-in that fails to load is named here but not by :func:`families`.
    """
    return sorted({*_FAMILIES, *(n for n in _declared() if n not in _TRIED)})


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
    """The registered family called ``name`` (only its package is imported)."""
    _load(name)
    try:
        return _FAMILIES[name]
    except KeyError:
        _discover()
        known = ", ".join(sorted(_FAMILIES)) or "none (is topoopt installed?)"
        raise UnknownFamilyError(f"unknown family {name!r}; known families: {known}") from None


def families() -> list[str]:
    """Names of all registered families, sorted (every declared family is loaded; see
    :func:`family_names` for the names alone)."""
    _discover()
    return sorted(_FAMILIES)


def solver_class(name: str, family: str | None = None) -> type[Solver]:
    """The class ``name`` resolves to (see :func:`resolve_solver`)."""
    return _SOLVERS[resolve_solver(name, family)]


def get_solver(name: str, family: str | None = None) -> Solver:
    """A fresh instance of the solver ``name`` resolves to (see :func:`resolve_solver`)."""
    return solver_class(name, family)()


MAX_SUGGESTIONS = 4
"""Most solver names an :class:`UnknownSolverError` suggests."""
MAX_LISTED = 12
"""An :class:`UnknownSolverError` without a close name lists the solvers of the instances'
families when they have at most this many (else it points to ``topoopt solvers``)."""


def _short(name: str) -> str:
    return name.split("/", 1)[-1]


def suggest_solvers(name: str, scope: Sequence[str] = ()) -> list[str]:
    """Registered full names close to ``name`` (at most :data:`MAX_SUGGESTIONS`): those of
    ``scope`` (full names) first, then any.

    Close means a :func:`difflib.get_close_matches` match of the algorithm part (``exact-mpi``
    -> ``exact-mip``), or within ``scope`` a name containing it (``mip`` -> ``coarse-mip``).
    """
    _discover()
    query = _short(name).lower()
    found: list[str] = []
    for names in (scope, sorted(_SOLVERS)):
        by_short: dict[str, list[str]] = {}
        for full in names:
            by_short.setdefault(_short(full), []).append(full)
        close = difflib.get_close_matches(query, list(by_short), n=MAX_SUGGESTIONS, cutoff=0.6)
        if names is scope:
            close += sorted(short for short in by_short if len(query) >= 3 and query in short)
        for short in close:
            found += [full for full in by_short[short] if full not in found]
        if found:
            break
    return found[:MAX_SUGGESTIONS]


def _unknown(name: str, families: Sequence[str] | None) -> UnknownSolverError:
    """The one-line error for ``name`` meaning no solver of ``families`` (``None``: any)."""
    _discover()  # a solver of a family not loaded yet is named as such
    prefix = name.partition("/")[0] if "/" in name else None
    if families is not None:
        scope = [n for family in families for n in solver_names(family)]
    elif prefix in _FAMILIES:
        scope = solver_names(prefix)  # a full name of a known family: its solvers
    else:
        scope = solver_names()
    where = "" if families is None else f" for {', '.join(families)} instances"
    if name in _SOLVERS:
        what = f"solver {name!r} is a {_SOLVERS[name].family} solver, not one{where}"
    else:
        what = f"unknown solver {name!r}{where}"
        if prefix is not None and prefix not in _FAMILIES:
            what += f" (no family {prefix!r})"
        if prefix is None and families is not None:
            other = [n for n in sorted(_SOLVERS) if _short(n) == name and n not in scope]
            if other:
                shown = ", ".join(other[:MAX_SUGGESTIONS]) + (
                    ", ..." if other[MAX_SUGGESTIONS:] else ""
                )
                what += f" ({shown} {'is' if len(other) == 1 else 'are'} for other families)"
    close = suggest_solvers(name, scope)
    if close:
        hint = f"did you mean {', '.join(close)}?"
    elif (families is not None or prefix in _FAMILIES) and len(scope) <= MAX_LISTED:
        hint = f"known: {', '.join(scope) or 'none'}"
    else:
        hint = "see 'topoopt solvers'"
    return UnknownSolverError(f"{what}; {hint}")


def matching_solvers(name: str, families: Sequence[str] | None = None) -> list[str]:
    """The registered full names ``name`` means for instances of ``families``, sorted.

    The one rule for solver names, used by :func:`topoopt.solve`, ``topoopt solve``,
    ``topoopt solvers`` and ``topoopt bench --solvers``:

    * a full name ``family/algo`` means that solver (of one of ``families``, when given);
    * a short name ``algo`` means ``F/algo`` for every family ``F`` of ``families`` (every
      registered family when ``None``) that has it.

    ``families`` are the families of the instances to solve. Registered names are matched
    exactly (case included).

    Raises
    ------
    UnknownSolverError
        When ``name`` means no solver: one line with up to :data:`MAX_SUGGESTIONS` close names
        (``did you mean ...?``), of ``families`` first.

    Examples
    --------
    >>> matching_solvers("exact-mip", ["placement"])
    ['placement/exact-mip']
    >>> matching_solvers("mip", ["gpuselect", "partition"])
    ['gpuselect/mip', 'partition/mip']
    >>> matching_solvers("exact-mpi", ["placement"])
    Traceback (most recent call last):
    ...
    topoopt.core.errors.UnknownSolverError: unknown solver 'exact-mpi' for placement instances; did you mean placement/exact-mip?
    """  # noqa: E501
    if families is None:
        _discover()
    else:
        for family in families:
            _load(family)
    scope = sorted(_FAMILIES) if families is None else families
    if "/" in name:
        found = [name] if name in _SOLVERS and _SOLVERS[name].family in scope else []
    else:
        found = [f"{family}/{name}" for family in scope if f"{family}/{name}" in _SOLVERS]
    if not found:
        raise _unknown(name, families)
    return sorted(found)


def resolve_solver(name: str, family: str | None = None) -> str:
    """The registered full name ``name`` means for an instance of ``family``.

    :func:`matching_solvers` with the one family (every family when ``None``), which must
    give exactly one solver: a short name that several families have (``mip``) needs the
    family or the full name.

    Raises
    ------
    UnknownSolverError
        For an unknown name (with suggestions) or a short name several families have.

    Examples
    --------
    >>> resolve_solver("exact-mip", "placement"), resolve_solver("placement/best-fit")
    ('placement/exact-mip', 'placement/best-fit')
    >>> resolve_solver("mip")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topoopt.core.errors.UnknownSolverError: solver 'mip' is ambiguous: clusterselect/mip, ...
    """
    _load(family if family is not None else name.partition("/")[0])
    if name in _SOLVERS and family in (None, _SOLVERS[name].family):  # the common case
        return name
    found = matching_solvers(name, None if family is None else [family])
    if len(found) > 1:
        shown = ", ".join(found[:MAX_SUGGESTIONS]) + (", ..." if found[MAX_SUGGESTIONS:] else "")
        raise UnknownSolverError(f"solver {name!r} is ambiguous: {shown} (give the full name)")
    return found[0]


def means_all(requested: str | Sequence[str]) -> bool:
    """Whether a solver selection is ``"all"`` (the string, or a list of just it)."""
    return requested == ALL_SOLVERS or list(requested) == [ALL_SOLVERS]


def select_solvers(requested: str | Sequence[str], families: Sequence[str]) -> list[str]:
    """The full names a benchmark's solver selection means for instances of ``families``.

    ``requested`` is ``"all"`` (every solver of those families) or names, each resolved by
    :func:`matching_solvers` (a short name selects the solver of that name in every family
    given that has one).

    Raises
    ------
    UnknownSolverError
        For a name that means no solver of those families.

    Examples
    --------
    >>> select_solvers(["best-fit", "mip"], ["gpuselect", "placement"])
    ['gpuselect/mip', 'placement/best-fit']
    """
    if means_all(requested):
        return sorted(name for family in families for name in solver_names(family))
    chosen: set[str] = set()
    for name in requested:
        chosen.update(matching_solvers(name, families))
    return sorted(chosen)


def solver_names(family: str | None = None) -> list[str]:
    """Registered solver names (of one family, if given), sorted."""
    if family is None:
        _discover()
    else:
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

    ``backends`` lists the MIP backends installed on this machine for solvers that use one.

    Parameters
    ----------
    target
        A family name (its solvers), an instance (the solvers of its family that support
        it, see :meth:`Solver.unsupported_reason`), or ``None`` (every solver).
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
