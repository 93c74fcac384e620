"""The MIP backends topoopt knows, one :class:`Backend` record each.

A record says everything the driver :mod:`topoopt.core.mip` needs to run a backend: the Python
package it needs, which Pyomo interface constructs it, how that interface's termination
conditions map to :class:`~topoopt.core.status.TerminationReason`, the backend's own names for
the seed, thread and absolute-gap options, whether it accepts (partial) MIP starts, how a
too-small licence shows up and how to check user options. The driver has no branch on a
backend's name; adding a backend is adding a record to :data:`BACKENDS`.

Nothing here imports Pyomo or a backend package at import time: whether a backend is installed
is answered with :func:`importlib.util.find_spec`, so listing solvers or validating a call stays
cheap. The facts behind the records are in ``spec/backends.md`` (checked with Pyomo 6.10.1,
highspy 1.15.1, pyscipopt 6.3.0, gurobipy 13.0.3) and ``docs/mip.md``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from topoopt.core.errors import BackendUnavailableError, InvalidOptionError
from topoopt.core.status import TerminationReason as R

Interface = Literal["appsi", "contrib"]
"""Pyomo's two solver APIs: ``"appsi"`` (``pyomo.contrib.appsi.solvers``, the one with HiGHS
MIP starts) and ``"contrib"`` (``pyomo.contrib.solver``, its new ``SolverFactory``)."""

APPSI_TERMINATION: Mapping[str, R] = MappingProxyType(
    {
        "optimal": R.OPTIMAL,
        "maxTimeLimit": R.TIME_LIMIT,
        "maxIterations": R.ITERATION_LIMIT,
        "objectiveLimit": R.OBJECTIVE_LIMIT,
        "infeasible": R.INFEASIBLE,
        "unbounded": R.UNBOUNDED,
        "infeasibleOrUnbounded": R.INFEASIBLE_OR_UNBOUNDED,
        "interrupted": R.INTERRUPTED,
        "licensingProblems": R.LICENSE,
    }
)
"""Names of ``pyomo.contrib.appsi.base.TerminationCondition`` members; others are ``ERROR``."""

CONTRIB_TERMINATION: Mapping[str, R] = MappingProxyType(
    {
        "convergenceCriteriaSatisfied": R.OPTIMAL,
        "maxTimeLimit": R.TIME_LIMIT,
        "iterationLimit": R.ITERATION_LIMIT,
        "objectiveLimit": R.OBJECTIVE_LIMIT,
        "provenInfeasible": R.INFEASIBLE,
        "locallyInfeasible": R.INFEASIBLE,
        "unbounded": R.UNBOUNDED,
        "infeasibleOrUnbounded": R.INFEASIBLE_OR_UNBOUNDED,
        "interrupted": R.INTERRUPTED,
        "licensingProblems": R.LICENSE,
    }
)
"""Names of ``pyomo.contrib.solver.common.results.TerminationCondition`` members; others
(``unknown``, ``error``, ...) are ``ERROR``."""


HIGHS_ENUMERATION_RULE = 65536
"""HiGHS' ``presolve_rule_off`` bit of the ``enumerateSolutions`` reduction, switched off by
default: in HiGHS 1.13-1.16 it drops an equality clique whose other variables it fixed, so the
postsolved solution violates a row (ERGO-Code/HiGHS#3216; "untransformed violations", then
"Solve error" or a wrong answer). Measured here: a lex stage of ``placement/levels``'
whole-tree model on a 6-node tree (``alpha = 0``) ended in "Solve error" with it and is
proven optimal without it."""


@dataclass(frozen=True)
class Backend:
    """How topoopt drives one MIP backend through Pyomo.

    Attributes
    ----------
    name
        topoopt's name (``backend="..."``).
    label
        Display name used in messages.
    package
        The Python package the backend needs (checked without importing it).
    interface
        The Pyomo API that constructs the solver (:data:`Interface`).
    solver
        For ``"appsi"`` the class in ``pyomo.contrib.appsi.solvers``; for ``"contrib"`` the name
        in ``pyomo.contrib.solver.common.factory.SolverFactory``.
    options_attribute
        ``"appsi"`` only: the solver attribute that holds backend options (``highs_options``).
    termination
        Name of the interface's termination condition -> :class:`TerminationReason` (names
        missing here become ``ERROR``).
    seed_option, threads_option
        The backend's option names for the random seed and the thread count.
    abs_gap_option
        The backend's absolute-gap option, set to :data:`PROOF_ABS_GAP` when topoopt asks for a
        proven optimum (``rel_gap=0``); ``None`` when the backend's default is already exact.
    warm_start
        Whether the backend takes a MIP start from the variables' current values.
    partial_warm_start
        Whether the start may leave integer variables unset (otherwise the driver skips it,
        with a note in the message).
    license_error
        ``(exception class name, message fragment)`` of the error a too-small licence raises;
        the driver turns it into a ``LICENSE`` termination.
    option_errors
        Checks user ``backend_options`` against the backend: returns one message per rejected
        option (imports the package only when called).
    before_threads
        Called before a solve that sets the thread count.
    default_options
        Backend options topoopt always sets (before its own settings and the user's
        ``backend_options``, which win), e.g. to avoid a known backend bug.
    nogil_optimize
        ``"contrib"`` only: the name of the solver model's method that optimises with the GIL
        released, called instead of ``optimize`` (see :func:`topoopt.core.mip.solve_model`).
    install_hint
        Appended to the "not installed" error.
    """

    name: str
    label: str
    package: str
    interface: Interface
    solver: str
    termination: Mapping[str, R]
    options_attribute: str | None
    seed_option: str | None
    threads_option: str | None
    abs_gap_option: str | None
    warm_start: bool
    partial_warm_start: bool
    license_error: tuple[str, str] | None = None
    option_errors: Callable[[Mapping[str, Any]], list[str]] | None = None
    before_threads: Callable[[], None] | None = None
    nogil_optimize: str | None = None
    default_options: tuple[tuple[str, Any], ...] = ()
    install_hint: str = ""

    @property
    def installed(self) -> bool:
        """Whether :attr:`package` is importable here (found without importing it)."""
        return importlib.util.find_spec(self.package) is not None


PROOF_ABS_GAP = 1e-9
"""Absolute gap topoopt sets (where the backend has an option for it) when ``rel_gap=0``."""

MAX_SEED = 2_147_483_647
"""Seeds are reduced modulo this (the backends take a C ``int``)."""


def quiet_highs() -> Any:
    """A new ``highspy.Highs`` with its output off, made with the process's standard output
    closed: HiGHS prints its banner to it when the first one is constructed, which would
    corrupt ``topoopt solve --json``."""
    import highspy

    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    return highs


@functools.cache
def _highs_option_checker() -> Any:
    """One quiet ``highspy.Highs`` per process for checking option names and values."""
    return quiet_highs()


def _highs_option_errors(options: Mapping[str, Any]) -> list[str]:
    import highspy

    highs = _highs_option_checker()
    highs.resetOptions()
    highs.setOptionValue("output_flag", False)  # unknown names would be printed otherwise
    errors = []
    for name, value in options.items():
        status, _ = highs.getOptionType(name)
        if status != highspy.HighsStatus.kOk:
            errors.append(f"{name!r}: unknown HiGHS option")
        elif highs.setOptionValue(name, value) != highspy.HighsStatus.kOk:
            errors.append(f"{name!r}: HiGHS rejects the value {value!r}")
    return errors


def _highs_reset_scheduler() -> None:
    # HiGHS keeps one global task scheduler per process; changing the thread count without
    # resetting it fails ("global scheduler has already been initialized").
    import highspy

    highspy.Highs.resetGlobalScheduler(True)


def _scip_option_errors(options: Mapping[str, Any]) -> list[str]:
    import pyscipopt

    model = pyscipopt.Model()
    model.hideOutput()
    errors = []
    for name, value in options.items():
        try:
            model.setParam(name, value)
        except KeyError:
            errors.append(f"{name!r}: unknown SCIP parameter")
        except Exception as exc:  # pyscipopt raises ValueError, TypeError or a bare Exception
            errors.append(f"{name!r}: SCIP rejects the value {value!r} ({exc})")
    return errors


def _gurobi_option_errors(options: Mapping[str, Any]) -> list[str]:
    import gurobipy

    env = gurobipy.Env(empty=True)  # not started: no licence check, no banner
    env.setParam("OutputFlag", 0)
    errors = []
    for name, value in options.items():
        try:
            env.setParam(name, value)
        except Exception as exc:  # GurobiError (unknown name, out of range) or TypeError
            if "unknown parameter" in str(exc).lower():
                errors.append(f"{name!r}: unknown Gurobi parameter")
            else:
                errors.append(f"{name!r}: Gurobi rejects the value {value!r} ({exc})")
    env.dispose()
    return errors


BACKENDS: Mapping[str, Backend] = MappingProxyType(
    {
        b.name: b
        for b in (
            Backend(
                name="highs",
                label="HiGHS",
                package="highspy",
                interface="appsi",  # the HiGHS interface with MIP starts
                solver="Highs",
                options_attribute="highs_options",
                termination=APPSI_TERMINATION,
                seed_option="random_seed",
                threads_option="threads",
                abs_gap_option="mip_abs_gap",
                warm_start=True,
                partial_warm_start=True,
                option_errors=_highs_option_errors,
                before_threads=_highs_reset_scheduler,
                default_options=(("presolve_rule_off", HIGHS_ENUMERATION_RULE),),
            ),
            Backend(
                name="scip",
                label="SCIP",
                package="pyscipopt",
                interface="contrib",  # scip_direct: pyscipopt, no ``scip`` executable needed
                solver="scip_direct",
                options_attribute=None,  # contrib: the ``solver_options`` argument
                termination=CONTRIB_TERMINATION,
                seed_option="randomization/randomseedshift",
                threads_option="lp/threads",
                abs_gap_option=None,  # limits/absgap defaults to 0
                warm_start=True,
                partial_warm_start=False,
                option_errors=_scip_option_errors,
                nogil_optimize="optimizeNogil",
            ),
            Backend(
                name="gurobi",
                label="Gurobi",
                package="gurobipy",
                interface="contrib",
                solver="gurobi_direct",
                options_attribute=None,
                termination=CONTRIB_TERMINATION,
                seed_option="Seed",
                threads_option="Threads",
                abs_gap_option="MIPGapAbs",
                warm_start=True,
                partial_warm_start=False,
                license_error=("GurobiError", "size-limited"),
                option_errors=_gurobi_option_errors,
                install_hint=" (pip install 'topoopt[gurobi]')",
            ),
        )
    }
)
"""Every backend topoopt knows, by name."""

BACKEND_PACKAGES: Mapping[str, str] = MappingProxyType(
    {name: b.package for name, b in BACKENDS.items()}
)
"""Each backend and the Python package it needs."""

DEFAULT_BACKEND = "highs"


def available_backends() -> list[str]:
    """Backends whose package is installed here (checked without importing it)."""
    return [name for name, b in BACKENDS.items() if b.installed]


def get_backend(backend: str | None) -> Backend:
    """The record of an installed backend (``None`` means :data:`DEFAULT_BACKEND`).

    Raises
    ------
    BackendUnavailableError
        For an unknown name, or a backend whose package is not installed (naming the package).
    """
    name = DEFAULT_BACKEND if backend is None else backend
    record = BACKENDS.get(name) if isinstance(name, str) else None
    if record is None:
        known = ", ".join(BACKENDS)
        raise BackendUnavailableError(f"backend: unknown MIP backend {name!r}; known: {known}")
    if not record.installed:
        raise BackendUnavailableError(
            f"backend: {name!r} needs the Python package {record.package!r}, which is not "
            f"installed{record.install_hint}"
        )
    return record


def resolve_backend(backend: str | None) -> str:
    """Validate a backend name and return it (``None`` means :data:`DEFAULT_BACKEND`).

    Raises
    ------
    BackendUnavailableError
        As :func:`get_backend`.
    """
    return get_backend(backend).name


def check_backend_options(backend: str | None, options: Mapping[str, Any] | None) -> None:
    """Validate ``backend_options`` for ``backend``: a mapping from option names (strings) to
    values that the backend accepts.

    Checking a non-empty mapping imports the backend's package.

    Raises
    ------
    InvalidOptionError
        Naming every rejected option and why.
    """
    if options is None:
        return
    if not isinstance(options, Mapping):
        raise InvalidOptionError(
            f"backend_options: must be a mapping of option names to values, got "
            f"{type(options).__name__}"
        )
    bad_keys = [k for k in options if not isinstance(k, str)]
    if bad_keys:
        raise InvalidOptionError(f"backend_options: option names must be strings, got {bad_keys}")
    record = get_backend(backend)
    if not options or record.option_errors is None:
        return
    errors = record.option_errors(options)
    if errors:
        raise InvalidOptionError(f"backend_options for {record.name}: " + "; ".join(errors))
