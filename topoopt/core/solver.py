"""The :class:`Solver` base class: one template that every algorithm plugs into.

A solver implements :meth:`Solver._solve` and returns an :class:`Attempt` (a solution and
what it knows about it). :meth:`Solver.solve` does the rest, identically for every
solver: it validates the call, times it, recomputes the objective with the family's
``evaluate()``, runs ``check()`` and turns an infeasible answer into an ``ERROR`` result,
and computes the gap. A solver therefore cannot report an objective of its own.
"""

from __future__ import annotations

import inspect
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from topoopt.core.errors import InvalidOptionError, TopooptError, UnsupportedInstanceError
from topoopt.core.family import Family, Instance, Sense
from topoopt.core.result import Result, clean, relative_gap
from topoopt.core.seeding import normalize_seed
from topoopt.core.status import SolutionStatus, TerminationReason

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from topoopt.core.mip import MipOutcome

R = TypeVar("R", bound=Result[Any])

BOUND_TOLERANCE = 1e-6
"""A bound may overshoot the recomputed objective by at most this much (absolute)."""


@dataclass(frozen=True)
class Attempt:
    """What a solver's :meth:`Solver._solve` hands back to the template.

    Attributes
    ----------
    solution
        The family's solution, or ``None`` when none was found.
    termination
        Why the algorithm stopped.
    proven_optimal
        The solver proved ``solution`` optimal (exact solvers only).
    bound
        Best proven bound on the optimum in the family's objective, if any.
    build_s, solve_s
        Model build and solve time; when both are 0 the template reports the whole call as
        ``solve_s``.
    message
        Free text for the user (backend messages, why nothing was found).
    metrics
        Figures only the solver knows (e.g. a proven bound per part of the objective),
        added to the result's metrics after the family's figures of the solution.
    """

    solution: Any
    termination: TerminationReason
    proven_optimal: bool = False
    bound: float | None = None
    build_s: float = 0.0
    solve_s: float = 0.0
    message: str = ""
    metrics: Mapping[str, float] = field(default_factory=dict)


@dataclass
class SolveContext:
    """Per-call settings handed to :meth:`Solver._solve`.

    ``backend_options`` and ``log`` go verbatim to every MIP the solver solves (see
    :func:`topoopt.core.mip.solve_model`); ``backend_options`` is checked against the backend
    when the context is made, before any model is built.
    """

    backend: str | None
    time_limit: float | None
    seed: int
    threads: int | None = None
    rel_gap: float = 0.0
    backend_options: Mapping[str, Any] | None = None
    log: bool | Callable[[str], None] = False
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        if not (isinstance(self.log, bool) or callable(self.log)):
            raise InvalidOptionError(f"log: must be a bool or a callable, got {self.log!r}")
        if self.backend is not None:
            from topoopt.core.backends import check_backend_options

            check_backend_options(self.backend, self.backend_options)

    @property
    def rng(self) -> np.random.Generator:
        """A fresh generator seeded with :attr:`seed` (same seed, same stream)."""
        import numpy as np

        return np.random.default_rng(self.seed)

    def time_left(self) -> float:
        """Seconds left before the time limit (``inf`` without one)."""
        if self.time_limit is None:
            return math.inf
        return self.time_limit - (time.perf_counter() - self.started)

    @property
    def deadline(self) -> float | None:
        """The ``time.perf_counter()`` at which the time limit passes (``None``: no limit)."""
        return None if self.time_limit is None else self.started + self.time_limit

    def expired(self) -> bool:
        """Whether the time limit has passed."""
        return self.time_left() <= 0

    def solve_model(
        self,
        model: Any,
        *,
        warmstart: bool = False,
        rel_gap: float | None = None,
        option_defaults: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> MipOutcome:
        """Solve a Pyomo model with this call's backend, remaining time, gap, threads, seed,
        backend options and log (see :func:`topoopt.core.mip.solve_model`).

        ``option_defaults`` maps a backend name to options a solver sets for its models
        (e.g. to avoid a known backend bug); the call's own ``backend_options`` override them.
        """
        from topoopt.core.mip import solve_model

        defaults = (option_defaults or {}).get(self.backend or "", {})
        options = {**defaults, **(self.backend_options or {})}

        return solve_model(
            model,
            backend=self.backend,
            deadline=self.deadline,
            rel_gap=self.rel_gap if rel_gap is None else rel_gap,
            threads=self.threads,
            seed=self.seed,
            warmstart=warmstart,
            backend_options=options or None,
            log=self.log,
        )

    def exact_attempt(self, outcome: MipOutcome, solution: Any, build_s: float) -> Attempt:
        """The :class:`Attempt` of an exact MIP: proven optimal when the backend says optimal
        and the requested gap is 0, with the backend's bound."""
        return Attempt(
            solution=solution,
            termination=outcome.termination,
            proven_optimal=outcome.termination is TerminationReason.OPTIMAL and self.rel_gap == 0,
            bound=outcome.bound,
            build_s=build_s,
            solve_s=outcome.solve_s,
            message=outcome.message,
        )


class Solver(ABC):
    """Base class of every registered solver.

    Subclasses set the class attributes below and implement :meth:`_solve`; solver-specific
    options are the keyword-only parameters of ``_solve`` (with defaults), which is also how
    :func:`topoopt.solvers_for` lists them.

    Attributes
    ----------
    name
        Registry name, ``"<family>/<algorithm>"``.
    family
        Name of the problem family.
    exact
        Whether an uninterrupted run returns a proven optimum.
    gives_bound
        Whether results carry a proven bound on the optimum.
    stochastic
        Whether the seed changes the answer.
    uses_backend
        Whether the solver drives a MIP backend (then ``backend`` picks it).
    complete
        Whether an uninterrupted run finds a solution of every feasible instance. A policy
        that may legitimately place nothing (e.g. "one cluster or wait") sets ``False`` and
        returns no solution with ``COMPLETED`` and a message saying why.
    """

    name: ClassVar[str]
    family: ClassVar[str]
    exact: ClassVar[bool] = False
    gives_bound: ClassVar[bool] = False
    stochastic: ClassVar[bool] = False
    uses_backend: ClassVar[bool] = False
    complete: ClassVar[bool] = True

    @abstractmethod
    def _solve(self, instance: Any, ctx: SolveContext) -> Attempt:
        """Run the algorithm; see :class:`Attempt` for what to return.

        Subclasses add their options as keyword-only parameters with defaults.
        """

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """The solver's options and their defaults (keyword-only parameters of ``_solve``)."""
        params = inspect.signature(cls._solve).parameters.values()
        return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}

    @classmethod
    def unsupported_reason(cls, instance: Any) -> str | None:
        """Why this solver cannot solve ``instance``, or ``None`` when it can.

        The default supports every instance of the family; solvers with narrower scope
        override it (e.g. a MIP that needs a structured bandwidth model).
        """
        return None

    @classmethod
    def description(cls) -> str:
        """First paragraph of the class docstring, as one line."""
        return " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split()) if cls.__doc__ else ""

    def solve(
        self,
        instance: Instance[R],
        *,
        backend: str | None = None,
        time_limit: float | None = None,
        seed: int | None = None,
        threads: int | None = None,
        rel_gap: float = 0.0,
        backend_options: Mapping[str, Any] | None = None,
        log: bool | Callable[[str], None] = False,
        **options: Any,
    ) -> R:
        """Solve ``instance`` and return a checked :class:`Result` (of the family's type).

        Parameters
        ----------
        instance
            An instance of this solver's family.
        backend
            MIP backend (``"highs"`` default, ``"scip"``, ``"gurobi"``) for MIP solvers;
            ignored by the others (their results carry ``backend=None``).
        time_limit
            Wall-clock limit in seconds; ``None`` for none.
        seed
            Random seed (``None`` means :data:`~topoopt.core.seeding.DEFAULT_SEED`).
        threads, rel_gap
            Passed to the MIP backend (``rel_gap=0`` asks for proven optima).
        backend_options
            Options passed verbatim to the MIP backend under its own names (e.g.
            ``{"mip_max_nodes": 100}`` for HiGHS, ``{"limits/nodes": 100}`` for SCIP), after
            topoopt's settings so they win; checked against the backend before solving
            (:class:`~topoopt.core.errors.InvalidOptionError` names a rejected option).
        log
            ``True`` streams the MIP backend's log to stdout; a callable receives each line of
            it (to capture it). Both ``backend_options`` and ``log`` are ignored by solvers
            that use no backend. See ``docs/mip.md``.
        **options
            Solver-specific options; see :meth:`option_defaults`.
        """
        from topoopt.core.backends import resolve_backend
        from topoopt.core.registry import get_family

        family = get_family(self.family)
        if not isinstance(instance, family.instance_type):
            raise TopooptError(
                f"{self.name} solves {family.instance_type.__name__} instances, "
                f"got {type(instance).__name__}"
            )
        reason = self.unsupported_reason(instance)
        if reason is not None:
            raise UnsupportedInstanceError(f"{self.name} does not support this instance: {reason}")
        if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
            raise InvalidOptionError(f"time_limit: must be a positive number, got {time_limit!r}")
        if not (isinstance(rel_gap, (int, float)) and rel_gap >= 0):
            raise InvalidOptionError(f"rel_gap: must be a non-negative number, got {rel_gap!r}")
        self._check_options(options)
        ctx = SolveContext(
            backend=resolve_backend(backend) if self.uses_backend else None,
            time_limit=None if time_limit is None else float(time_limit),
            seed=normalize_seed(seed),
            threads=threads,
            rel_gap=float(rel_gap),
            backend_options=backend_options if self.uses_backend else None,
            log=log,
        )
        attempt = self._solve(instance, ctx, **options)
        return cast(R, self._finish(family, instance, attempt, ctx))

    def _check_options(self, options: dict[str, Any]) -> None:
        known = self.option_defaults()
        unknown = sorted(set(options) - set(known))
        if unknown:
            listing = ", ".join(sorted(known)) or "none"
            raise InvalidOptionError(
                f"{self.name}: unknown option(s) {', '.join(unknown)}; known options: {listing}"
            )

    def _finish(
        self, family: Family[Any, Any], instance: Instance[Any], attempt: Attempt, ctx: SolveContext
    ) -> Result[Any]:
        """Recompute, check and package an :class:`Attempt` (the one path to a Result)."""
        sense = family.sense
        solution = attempt.solution
        termination = attempt.termination
        message = attempt.message
        objective: float | None = None
        metrics: dict[str, float] = {}
        violations: list[str] = []
        solution_dict = None
        bound = sense.worst if attempt.bound is None else clean(float(attempt.bound))
        if solution is None:
            status = SolutionStatus.NO_SOLUTION
        else:
            violations = family.check(instance, solution)
            solution_dict = family.solution_to_dict(instance, solution)
            if violations:
                status = SolutionStatus.INFEASIBLE
                termination = TerminationReason.ERROR
                message = f"solver returned an infeasible solution: {'; '.join(violations)}"
            else:
                objective = clean(float(family.evaluate(instance, solution)))
                metrics = {
                    k: clean(float(v)) for k, v in family.metrics(instance, solution).items()
                }
                status = SolutionStatus.FEASIBLE
                if attempt.proven_optimal:
                    status = SolutionStatus.OPTIMAL
                    if attempt.bound is None:
                        bound = objective
                if self._bound_contradicts(sense, bound, objective):
                    termination = TerminationReason.ERROR
                    status = SolutionStatus.UNKNOWN
                    message = (
                        f"reported bound {bound:g} contradicts the recomputed objective "
                        f"{objective:g}: the formulation disagrees with evaluate()"
                    )
        for key, value in attempt.metrics.items():
            metrics.setdefault(key, clean(float(value)))
        elapsed = time.perf_counter() - ctx.started
        build_s, solve_s = attempt.build_s, attempt.solve_s
        if build_s == 0.0 and solve_s == 0.0:
            solve_s = elapsed
        return family.result_type(
            family=self.family,
            instance=instance.name,
            solver=self.name,
            backend=ctx.backend,
            sense=sense,
            status=status,
            termination=termination,
            objective=objective,
            bound=bound,
            gap=relative_gap(objective, bound, sense),
            solution=solution,
            seed=ctx.seed,
            build_s=build_s,
            solve_s=solve_s,
            total_s=time.perf_counter() - ctx.started,
            message=message,
            metrics=metrics,
            violations=tuple(violations),
            solution_dict=solution_dict,
        )

    @staticmethod
    def _bound_contradicts(sense: Sense, bound: float, objective: float) -> bool:
        if not math.isfinite(bound):
            return False
        scale = max(1.0, abs(objective))
        if sense is Sense.MINIMIZE:
            return bound > objective + BOUND_TOLERANCE * scale
        return bound < objective - BOUND_TOLERANCE * scale
