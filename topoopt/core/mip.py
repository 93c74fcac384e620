"""The MIP backend driver: one solve path for every backend of :mod:`topoopt.core.backends`.

:func:`solve_model` applies the time limit, relative gap, threads and seed, optionally warm
starts from the values already set on the model's variables, passes the user's
``backend_options`` through (after topoopt's own settings, so the user wins), streams or
captures the solver log, maps the backend's termination to
:class:`~topoopt.core.status.TerminationReason`, loads an incumbent whenever one exists (also
after a time limit) and reports the best bound. Everything backend-specific is data in the
backend's :class:`~topoopt.core.backends.Backend` record; the only distinction made here is
between Pyomo's two solver APIs, APPSI and ``pyomo.contrib.solver`` (one small adapter each).

Facts it relies on (see ``spec/backends.md`` and ``docs/mip.md``):

* HiGHS goes through Pyomo's APPSI interface, the one with MIP starts; its default
  ``mip_rel_gap`` is 1e-4, so the gap is always set explicitly (and ``mip_abs_gap`` for proofs).
  Changing ``threads`` within a process needs ``Highs.resetGlobalScheduler``
  (:attr:`~topoopt.core.backends.Backend.before_threads`).
* SCIP goes through ``scip_direct`` (pyscipopt; no ``scip`` executable needed); Gurobi through
  ``gurobi_direct``. Both reject a MIP start that leaves integer variables unset, so a partial
  start is skipped with a note. The new interfaces are called with
  ``raise_exception_on_nonoptimal_result=False, load_solutions=False`` and the incumbent is
  loaded explicitly (otherwise a time limit with an incumbent raises).
* A size-limited Gurobi licence raises ``GurobiError``; it becomes a ``LICENSE`` termination
  with a clear message.
* Backends disagree on statuses (e.g. the bound of an infeasible model: HiGHS -inf, SCIP and
  Gurobi +inf); the records own one mapping and an infeasible model reports no bound.

Pyomo is imported by this module, which :class:`~topoopt.core.solver.SolveContext` imports only
when a model is solved.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pyomo.environ as pyo

from topoopt.core.backends import (
    DEFAULT_BACKEND,
    MAX_SEED,
    PROOF_ABS_GAP,
    Backend,
    check_backend_options,
    get_backend,
)
from topoopt.core.deadline import TimeUp, interrupt_at
from topoopt.core.errors import InvalidOptionError
from topoopt.core.status import TerminationReason

LogTarget = bool | Callable[[str], None]
"""``False`` (quiet), ``True`` (stream the solver log to stdout) or a callable taking each line."""


@dataclass(frozen=True)
class MipOutcome:
    """What a backend run produced.

    Attributes
    ----------
    termination
        Why the backend stopped, in topoopt's terms.
    has_solution
        Whether an incumbent exists; if so its values are loaded into the model's variables.
    objective
        The backend's objective value of the incumbent (for cross-checks only; results report
        the family's ``evaluate()``).
    bound
        Best proven bound in the model's objective sense, or ``None`` when nothing is proven.
    solve_s
        Wall time of the backend call (translation included).
    message
        Backend details worth showing the user.
    """

    termination: TerminationReason
    has_solution: bool
    objective: float | None
    bound: float | None
    solve_s: float
    message: str = ""


@dataclass(frozen=True)
class _Settings:
    """What topoopt asks of one backend call (the adapters' input).

    ``deadline`` is the ``time.perf_counter()`` by which the call must return: the adapters
    stop translating the model at it (:func:`~topoopt.core.deadline.interrupt_at`) and give
    the backend the time left once the model is translated.
    """

    deadline: float | None
    rel_gap: float
    warmstart: bool
    options: dict[str, Any]
    stdout: bool
    logger: logging.Logger | None


@dataclass(frozen=True)
class _Raw:
    """What an adapter read from the interface's results."""

    condition: str
    has_solution: bool
    objective: float | None
    bound: float | None


class _LineCollector(logging.Handler):
    """Collects the solver log's lines (Pyomo hands them to a logger one line at a time)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class _TranslationStopped(Exception):
    """The time limit passed while the model was translated for the backend."""


def _time_left(deadline: float | None) -> float | None:
    """Seconds the backend may search (at least 1 ms), ``None`` without a deadline."""
    return None if deadline is None else max(deadline - time.perf_counter(), 1e-3)


def _guarded(translate: Callable[..., Any], deadline: float | None) -> Callable[..., Any]:
    """``translate`` stopped at ``deadline`` (it then raises :class:`_TranslationStopped`)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            with interrupt_at(deadline):
                return translate(*args, **kwargs)
        except TimeUp:
            raise _TranslationStopped from None

    return run


def solve_model(
    model: pyo.ConcreteModel,
    *,
    backend: str | None = DEFAULT_BACKEND,
    time_limit: float | None = None,
    deadline: float | None = None,
    rel_gap: float = 0.0,
    threads: int | None = None,
    seed: int | None = None,
    warmstart: bool = False,
    backend_options: Mapping[str, Any] | None = None,
    log: LogTarget = False,
) -> MipOutcome:
    """Solve ``model`` with ``backend`` and load the incumbent, if any, into its variables.

    Parameters
    ----------
    model
        A Pyomo model with exactly one active objective.
    backend
        A name of :data:`~topoopt.core.backends.BACKENDS` (``None``: the default, HiGHS).
    time_limit
        Seconds; ``None`` for none. The whole call honours it: translating the model for the
        backend counts, the backend gets what is left once the model is translated, and a
        translation that outlasts it is stopped (``TIME_LIMIT`` without a solution).
    deadline
        The ``time.perf_counter()`` by which to return, instead of ``time_limit`` (a caller
        that spent part of its limit building the model passes its own deadline).
    rel_gap
        Relative MIP gap at which to stop (``0`` proves optimality; then the backend's
        absolute gap is also tightened to :data:`~topoopt.core.backends.PROOF_ABS_GAP`).
    threads, seed
        Backend threads and random seed (``None`` keeps the backend default).
    warmstart
        Use the values currently set on the model's integer variables as a MIP start.
    backend_options
        Backend options by the backend's own names (e.g. ``{"mip_max_nodes": 10}`` for HiGHS,
        ``{"limits/nodes": 10}`` for SCIP), applied after topoopt's settings so they win.
    log
        ``True`` streams the solver log to stdout while it runs; a callable receives each
        line of the log once the backend returns (the log is captured at the file-descriptor
        level during the call, so the callable may print).

    Returns
    -------
    MipOutcome

    Raises
    ------
    BackendUnavailableError
        Unknown or uninstalled backend.
    InvalidOptionError
        A ``backend_options`` entry the backend does not accept, or a bad ``log``.
    """
    record = get_backend(backend)
    check_backend_options(record.name, backend_options)
    if not (isinstance(log, bool) or callable(log)):
        raise InvalidOptionError(f"log: must be a bool or a callable, got {log!r}")
    notes = []
    if warmstart and not record.warm_start:
        warmstart = False
        notes.append(f"warm start skipped ({record.label} takes none)")
    if warmstart and not record.partial_warm_start and _has_unset_discrete(model):
        warmstart = False
        notes.append("warm start skipped (it does not set every integer variable)")
    options: dict[str, Any] = dict(record.default_options)
    if seed is not None and record.seed_option:
        options[record.seed_option] = int(seed) % MAX_SEED
    if threads is not None:
        if record.before_threads is not None:
            record.before_threads()
        if record.threads_option:
            options[record.threads_option] = int(threads)
    if rel_gap == 0 and record.abs_gap_option:
        options[record.abs_gap_option] = PROOF_ABS_GAP
    options.update(backend_options or {})
    collector = _LineCollector() if callable(log) and not isinstance(log, bool) else None
    logger = None
    if collector is not None:
        logger = logging.Logger(f"topoopt.mip.{record.name}")  # unregistered: nothing leaks
        logger.addHandler(collector)
    start = time.perf_counter()
    if deadline is None and time_limit is not None:
        deadline = start + max(time_limit, 1e-3)
    settings = _Settings(
        deadline=deadline,
        rel_gap=rel_gap,
        warmstart=warmstart,
        options=options,
        stdout=log is True,
        logger=logger,
    )
    try:
        raw = _ADAPTERS[record.interface](record, model, settings)
    except _TranslationStopped:
        return MipOutcome(
            termination=TerminationReason.TIME_LIMIT,
            has_solution=False,
            objective=None,
            bound=None,
            solve_s=time.perf_counter() - start,
            message=f"{record.label}: the time limit passed while the model was translated",
        )
    except Exception as exc:
        if record.license_error is None or not _is_license_error(record, exc):
            raise
        return MipOutcome(
            termination=TerminationReason.LICENSE,
            has_solution=False,
            objective=None,
            bound=None,
            solve_s=time.perf_counter() - start,
            message=f"{record.label} license too small for this model: {exc}",
        )
    finally:
        if collector is not None:
            for line in collector.lines:
                log(line)  # type: ignore[operator]
    termination = record.termination.get(raw.condition, TerminationReason.ERROR)
    unproven = _unproven(model, raw, rel_gap) if warmstart else None
    if termination is TerminationReason.OPTIMAL and unproven is not None:
        # HiGHS 1.16 can take a MIP start's objective in its presolved space for the real one
        # and stop at the start as "optimal" with a bound below it: solve again without it
        again = solve_model(
            model,
            backend=record.name,
            deadline=deadline,
            rel_gap=rel_gap,
            backend_options=options,
            log=log,
        )
        note = (
            f"warm start dropped: {record.label} called a solution of objective {unproven:g} "
            f"optimal with bound {raw.bound:g}"
        )
        return replace(again, message=f"{again.message}; {note}")
    bound = None if termination is TerminationReason.INFEASIBLE else raw.bound
    return MipOutcome(
        termination=termination,
        has_solution=raw.has_solution,
        objective=_finite_or_none(raw.objective) if raw.has_solution else None,
        bound=_finite_or_none(bound),
        solve_s=time.perf_counter() - start,
        message="; ".join([f"{record.label}: {raw.condition}", *notes]),
    )


def _unproven(model: pyo.ConcreteModel, raw: _Raw, rel_gap: float) -> float | None:
    """The loaded incumbent's objective, evaluated on the model, when it is farther from the
    backend's bound than ``rel_gap`` allows (with a small absolute tolerance), so that the
    backend's "optimal" does not hold; else ``None``."""
    if not raw.has_solution or raw.bound is None or not math.isfinite(raw.bound):
        return None
    objective = next(model.component_data_objects(pyo.Objective, active=True))
    value = float(pyo.value(objective))
    gap = value - raw.bound if objective.sense == pyo.minimize else raw.bound - value
    allowed = rel_gap * max(abs(value), abs(raw.bound)) + 1e-6 * max(1.0, abs(value))
    return value if gap > allowed else None


def _is_license_error(record: Backend, exc: Exception) -> bool:
    assert record.license_error is not None
    name, fragment = record.license_error
    return type(exc).__name__ == name and fragment in str(exc).lower()


def _has_unset_discrete(model: pyo.ConcreteModel) -> bool:
    return any(
        var.value is None
        for var in model.component_data_objects(pyo.Var, active=True)
        if var.is_integer() or var.is_binary()
    )


def _finite_or_none(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _solve_appsi(record: Backend, model: pyo.ConcreteModel, s: _Settings) -> _Raw:
    """Pyomo's APPSI interface (``pyomo.contrib.appsi.solvers``)."""
    from pyomo.contrib.appsi import solvers

    opt = getattr(solvers, record.solver)()
    opt.config.stream_solver = s.stdout
    opt.config.load_solution = False
    opt.config.mip_gap = s.rel_gap
    opt.config.warmstart = s.warmstart
    if s.logger is not None:
        opt.config.solver_output_logger = s.logger
        opt.config.log_level = logging.INFO
    # applied after the time limit and gap: the user's options win
    assert record.options_attribute, f"{record.name}: an APPSI backend needs options_attribute"
    setattr(opt, record.options_attribute, dict(s.options))
    # Translate first (guarded inside the interface's output capture, see topoopt.core.deadline),
    # then give the backend the time left: the translation of a large model takes seconds that
    # the backend's own clock does not count. solve() then only checks for changes: none.
    opt.add_block = _guarded(opt.add_block, s.deadline)
    opt.set_instance(model)
    for check in _APPSI_UPDATE_CHECKS:
        setattr(opt.update_config, check, False)
    if s.deadline is not None:
        # on the interface object itself: SolverFactory('appsi_highs') would overwrite it
        opt.config.time_limit = _time_left(s.deadline)
    res = opt.solve(model)
    has_solution = res.best_feasible_objective is not None
    if has_solution:
        res.solution_loader.load_vars()
    return _Raw(
        condition=res.termination_condition.name,
        has_solution=has_solution,
        objective=res.best_feasible_objective,
        bound=res.best_objective_bound,
    )


class _ReleasingGil:
    """A solver model whose ``optimize`` releases the GIL (PySCIPOpt's ``optimizeNogil``).

    Pyomo's ``scip_direct`` runs ``optimize`` inside ``capture_output(capture_fd=True)``: the
    solver writes its log into a pipe that a Python thread drains, and that thread needs the
    GIL. PySCIPOpt's ``optimize`` keeps the GIL for the whole solve, so once the log fills the
    pipe (64 KiB: a few hundred display lines) the solver blocks in ``write`` and never returns,
    whatever its time limit (measured: a 20 s limit still hung after 60 s). Every other
    attribute is the model's.
    """

    def __init__(self, model: Any, nogil_optimize: str) -> None:
        self._model = model
        self._nogil_optimize = nogil_optimize

    def optimize(self) -> None:
        getattr(self._model, self._nogil_optimize)()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def _solve_contrib(record: Backend, model: pyo.ConcreteModel, s: _Settings) -> _Raw:
    """Pyomo's new solver interfaces (``pyomo.contrib.solver``)."""
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import SolutionStatus

    opt = SolverFactory(record.solver)
    tee: list[Any] = []
    if s.stdout:
        tee.append(True)
    if s.logger is not None:
        tee.append(s.logger)
    create = getattr(opt, "_create_solver_model", None)
    if create is not None:  # both direct interfaces translate here, then read the time limit

        def create_then_limit(pyomo_model: Any, config: Any) -> Any:
            out = _guarded(create, s.deadline)(pyomo_model, config)
            if s.deadline is not None:
                config.time_limit = _time_left(s.deadline)
            if record.nogil_optimize is not None:
                out = (_ReleasingGil(out[0], record.nogil_optimize), *out[1:])
            return out

        opt._create_solver_model = create_then_limit
    kwargs: dict[str, Any] = {
        "load_solutions": False,
        "raise_exception_on_nonoptimal_result": False,
        "rel_gap": s.rel_gap,
        "solver_options": dict(s.options),  # applied after the settings below: the user wins
        "warmstart_discrete_vars": s.warmstart,
        "tee": tee,
    }
    if s.deadline is not None:
        kwargs["time_limit"] = _time_left(s.deadline)
    res = opt.solve(model, **kwargs)
    has_solution = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
    if has_solution:
        res.solution_loader.load_vars()
    return _Raw(
        condition=res.termination_condition.name,
        has_solution=has_solution,
        objective=res.incumbent_objective,
        bound=res.objective_bound,
    )


_APPSI_UPDATE_CHECKS = (
    "check_for_new_or_removed_constraints",
    "check_for_new_or_removed_vars",
    "check_for_new_or_removed_params",
    "check_for_new_objective",
    "update_constraints",
    "update_vars",
    "update_params",
    "update_named_expressions",
)
"""APPSI's change checks, all off once the model is translated (nothing changed since)."""

_ADAPTERS: dict[str, Callable[[Backend, pyo.ConcreteModel, _Settings], _Raw]] = {
    "appsi": _solve_appsi,
    "contrib": _solve_contrib,
}
"""One adapter per Pyomo solver API (:data:`topoopt.core.backends.Interface`)."""
