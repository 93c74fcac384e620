"""The formulation protocol and :class:`MipSolver`, the one generic solver over a formulation.

A *formulation* is a module with three functions (:class:`Formulation`)::

    build(instance, **opts) -> pyomo.environ.ConcreteModel
    extract(model, instance) -> solution          # from the loaded variable values
    warm_start(model, solution) -> None           # set every variable from a solution

Rules every formulation follows, so that a model is plain data (and pickles, e.g. to hand it
to another process):

* instance data lives on the model as Pyomo ``Param`` and ``Set`` components, never as plain
  dicts, lists or Python objects set as model attributes (a string-valued ``Param`` with
  ``within=Any`` is fine);
* constraint and objective rules are module-level functions, never lambdas or closures;
* Pyomo is imported by the formulation module only, and solver modules import the formulation
  when they solve (:attr:`MipSolver.formulation` is a module path), so ``import topoopt`` and
  the heuristics never import Pyomo;
* the module docstring writes out the mathematics, citing the paper's equation numbers.

:class:`MipSolver` builds the model, warm starts it when :meth:`MipSolver.start` gives a
solution, solves it through :meth:`SolveContext.solve_model
<topoopt.core.solver.SolveContext.solve_model>` (backend, time limit, gap, threads, seed,
``backend_options``, ``log``), extracts the solution and returns the :class:`Attempt`: exact
(termination, bound and proof from the backend) when the solver class says ``exact = True``,
otherwise a heuristic attempt without a bound. ``docs/mip.md`` shows how to write one.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from topoopt.core.deadline import TimeUp, interrupt_at
from topoopt.core.errors import TopooptError
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason

if TYPE_CHECKING:
    import pyomo.environ as pyo

    from topoopt.core.mip import MipOutcome

PROTOCOL_FUNCTIONS = ("build", "extract", "warm_start")
"""The functions a formulation module provides."""


class Formulation(Protocol):
    """What a formulation module provides (a module satisfies this protocol structurally)."""

    def build(self, instance: Any, /, **opts: Any) -> pyo.ConcreteModel:
        """The Pyomo model of ``instance``; ``opts`` select variants (e.g. ``unit="dp"``)."""
        ...

    def extract(self, model: pyo.ConcreteModel, instance: Any, /) -> Any:
        """The family's solution encoded by the values loaded into ``model``'s variables."""
        ...

    def warm_start(self, model: pyo.ConcreteModel, solution: Any, /) -> None:
        """Set ``model``'s variables to the values of ``solution`` (a MIP start)."""
        ...


KEEP_START = (TerminationReason.TIME_LIMIT, TerminationReason.LICENSE)
"""Terminations after which a MIP solver returns its warm start when the backend gave no
solution: no time to find one, or a licence that refused the model."""


def _import_before_interrupts() -> None:
    """Import ``scipy.sparse`` before any build or translation a time limit may interrupt.

    Pyomo's standard-form writer (used by the Gurobi direct interface) sets its sparse-matrix
    classes on first use, importing ``scipy.sparse`` between two assignments; a deadline that
    interrupts that import (:func:`~topoopt.core.deadline.interrupt_at`) leaves them unset for
    the rest of the process, and every later Gurobi model fails with ``TypeError: 'NoneType'
    object is not callable``. Imported here, before any deadline is armed, it cannot be.
    """
    import scipy.sparse  # noqa: F401


def load_formulation(path: str) -> Formulation:
    """Import the formulation module ``path`` and check it provides the protocol.

    Raises
    ------
    TopooptError
        When a protocol function is missing.
    """
    module: ModuleType = importlib.import_module(path)
    missing = [f for f in PROTOCOL_FUNCTIONS if not callable(getattr(module, f, None))]
    if missing:
        raise TopooptError(
            f"formulation {path!r} does not provide {', '.join(missing)} (see "
            "topoopt.core.formulation.Formulation)"
        )
    return cast(Formulation, module)


@dataclass(frozen=True)
class MipRun:
    """One model built, solved and read back by :meth:`MipSolver.run`.

    Attributes
    ----------
    model
        The solved model (incumbent values loaded when there is one); ``None`` when the time
        limit stopped the build.
    outcome
        What the backend reported.
    solution
        The extracted solution, or ``None`` without an incumbent.
    build_s
        Build and warm-start time.
    solve_s
        Backend time plus extraction time.
    """

    model: Any
    outcome: MipOutcome
    solution: Any
    build_s: float
    solve_s: float


class MipSolver(Solver):
    """A solver that builds a formulation, solves it with the MIP backend and extracts it.

    Subclasses set :attr:`formulation` (and ``name``, ``family``, ``exact``, ``gives_bound``);
    solvers with options override :meth:`Solver._solve` with keyword-only options and call
    :meth:`run` and :meth:`attempt`; a MIP start comes from :meth:`start`.

    Attributes
    ----------
    formulation
        Module path of the formulation, imported at solve time (so registering the solver
        does not import Pyomo).

    Examples
    --------
    A minimal exact MIP solver (registration omitted)::

        class KnapsackMip(MipSolver):
            name = "knapsack/mip"
            family = "knapsack"
            exact = gives_bound = True
            formulation = "knapsack_pkg.formulation"
    """

    formulation: ClassVar[str]
    uses_backend: ClassVar[bool] = True
    backend_defaults: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    """Backend options this solver's models get by default, per backend (the call's
    ``backend_options`` override them); e.g. to avoid a known backend bug on the model."""

    def _solve(self, instance: Any, ctx: SolveContext) -> Attempt:
        return self.attempt(ctx, self.run(instance, ctx))

    @classmethod
    def load(cls) -> Formulation:
        """The formulation module (imported on first use)."""
        return load_formulation(cls.formulation)

    start_share: ClassVar[float] = 0.2
    """Share of the call's remaining time a start may spend (:meth:`start_within`)."""

    def start(self, instance: Any, **opts: Any) -> Any | None:
        """A solution to warm start the model built with ``opts`` from, or ``None`` (default)."""
        return None

    def start_within(self, instance: Any, time_limit: float | None, **opts: Any) -> Any | None:
        """:meth:`start` within ``time_limit`` seconds (``None``: the call has no limit);
        :meth:`run` gives it :attr:`start_share` of the time left. The default ignores the
        limit; a solver whose start runs a heuristic overrides this to bound it."""
        return self.start(instance, **opts)

    def run(
        self, instance: Any, ctx: SolveContext, *, rel_gap: float | None = None, **opts: Any
    ) -> MipRun:
        """Build the formulation with ``opts``, warm start it, solve it and extract a solution.

        The start (:meth:`start_within`, a share of the time) comes first, then the build,
        which the time limit stops (:func:`~topoopt.core.deadline.interrupt_at`): when the
        limit passes during the build or before the backend is called, the run ends with
        ``TIME_LIMIT``, no model (``model`` is ``None`` when the build was stopped) and the
        start as its solution (if any). The backend gets the time left after the build.

        Parameters
        ----------
        instance
            The instance.
        ctx
            The call's settings (backend, remaining time, ...).
        rel_gap
            Overrides the call's relative gap for this model (e.g. ``0`` for a feasibility
            model).
        **opts
            Passed to the formulation's ``build`` and to :meth:`start`.
        """
        t0 = time.perf_counter()
        left = ctx.time_left()
        share = None if math.isinf(left) else max(left * self.start_share, 1e-3)
        start = self.start_within(instance, share, **opts)
        return self.run_from(instance, ctx, start, started=t0, rel_gap=rel_gap, **opts)

    def run_from(
        self,
        instance: Any,
        ctx: SolveContext,
        start: Any | None,
        *,
        started: float | None = None,
        rel_gap: float | None = None,
        **opts: Any,
    ) -> MipRun:
        """:meth:`run` from a given warm start (``None``: none): build (stopped by the time
        limit), warm start, solve, extract; ``build_s`` counts from ``started`` (default:
        now)."""
        formulation = self.load()
        _import_before_interrupts()
        t0 = time.perf_counter() if started is None else started
        try:
            with interrupt_at(ctx.deadline):
                model = formulation.build(instance, **opts)
                if start is not None:
                    formulation.warm_start(model, start)
        except TimeUp:
            model = None
        build_s = time.perf_counter() - t0
        if model is None or ctx.expired():
            from topoopt.core.mip import MipOutcome

            what = "build the model" if model is None else "solve after the build"
            skipped = MipOutcome(
                termination=TerminationReason.TIME_LIMIT,
                has_solution=False,
                objective=None,
                bound=None,
                solve_s=0.0,
                message=f"no time left to {what} ({build_s:.1f} s)",
            )
            return MipRun(model, skipped, start, build_s, 0.0)
        outcome = ctx.solve_model(
            model,
            warmstart=start is not None,
            rel_gap=rel_gap,
            option_defaults=self.backend_defaults,
        )
        t1 = time.perf_counter()
        if outcome.has_solution:
            solution = formulation.extract(model, instance)
        elif start is not None and outcome.termination in KEEP_START:
            # the start is still an incumbent when the backend had no time to find one, or
            # refused the model (a size-limited licence)
            solution = start
            outcome = dataclasses.replace(
                outcome, message=f"{outcome.message}; returning the warm start"
            )
        else:
            solution = None
        return MipRun(
            model=model,
            outcome=outcome,
            solution=solution,
            build_s=build_s,
            solve_s=outcome.solve_s + (time.perf_counter() - t1),
        )

    def attempt(self, ctx: SolveContext, run: MipRun) -> Attempt:
        """The :class:`Attempt` of one run: for an exact solver the backend's termination,
        bound and proof (:meth:`SolveContext.exact_attempt`); otherwise ``COMPLETED`` when the
        backend finished (any other termination is kept), without a bound."""
        if self.exact:
            return ctx.exact_attempt(run.outcome, run.solution, run.build_s)
        termination = run.outcome.termination
        return Attempt(
            solution=run.solution,
            termination=(
                TerminationReason.COMPLETED
                if termination is TerminationReason.OPTIMAL
                else termination
            ),
            build_s=run.build_s,
            solve_s=run.solve_s,
            message=run.outcome.message,
        )


__all__ = ["PROTOCOL_FUNCTIONS", "Formulation", "MipRun", "MipSolver", "load_formulation"]
