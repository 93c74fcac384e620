"""The MIP backend driver: one place that solves a Pyomo model with HiGHS, SCIP or Gurobi.

:func:`solve_model` applies the time limit, relative gap, threads and seed, optionally warm
starts from the values already set on the model's variables, maps the backend's termination
to :class:`~topoopt.core.status.TerminationReason`, loads an incumbent after a time limit when
one exists, and reports the best bound. Facts it relies on (see ``spec/backends.md``):

* HiGHS goes through Pyomo's APPSI interface, the one with MIP starts; its default
  ``mip_rel_gap`` is 1e-4, so the gap is always set explicitly. Changing ``threads`` within a
  process needs ``Highs.resetGlobalScheduler``.
* SCIP goes through ``scip_direct`` (pyscipopt; no ``scip`` executable needed).
* Gurobi goes through ``gurobi_direct``; a size-limited license raises ``GurobiError``, which
  becomes a ``LICENSE`` termination with a clear message.
* Backends disagree on statuses (e.g. the bound of an infeasible model); this module owns the
  one mapping.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import pyomo.environ as pyo

from topoopt.core.backends import DEFAULT_BACKEND, resolve_backend
from topoopt.core.status import TerminationReason

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


def solve_model(
    model: pyo.ConcreteModel,
    *,
    backend: str | None = DEFAULT_BACKEND,
    time_limit: float | None = None,
    rel_gap: float = 0.0,
    threads: int | None = None,
    seed: int | None = None,
    warmstart: bool = False,
) -> MipOutcome:
    """Solve ``model`` with ``backend`` and load the incumbent, if any, into its variables.

    Parameters
    ----------
    model
        A Pyomo model with exactly one active objective.
    backend
        ``"highs"``, ``"scip"`` or ``"gurobi"`` (``None``: the default, HiGHS).
    time_limit
        Seconds; ``None`` for none.
    rel_gap
        Relative MIP gap at which to stop (``0`` proves optimality).
    threads, seed
        Backend threads and random seed (``None`` keeps the backend default).
    warmstart
        Use the values currently set on the model's integer variables as a MIP start.
    """
    name = resolve_backend(backend)
    start = time.perf_counter()
    note = ""
    if warmstart and name != "highs" and _has_unset_discrete(model):
        warmstart = False  # scip_direct / gurobi_direct fail on a partial start
        note = "; warm start skipped (it does not set every integer variable)"
    if name == "highs":
        outcome = _solve_highs(model, time_limit, rel_gap, threads, seed, warmstart)
    else:
        outcome = _solve_contrib(model, name, time_limit, rel_gap, threads, seed, warmstart)
    return MipOutcome(
        termination=outcome.termination,
        has_solution=outcome.has_solution,
        objective=outcome.objective,
        bound=outcome.bound,
        solve_s=time.perf_counter() - start,
        message=outcome.message + note,
    )


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


def _solve_highs(
    model: pyo.ConcreteModel,
    time_limit: float | None,
    rel_gap: float,
    threads: int | None,
    seed: int | None,
    warmstart: bool,
) -> MipOutcome:
    import highspy
    from pyomo.contrib.appsi.base import TerminationCondition as TC
    from pyomo.contrib.appsi.solvers import Highs

    mapping = {
        TC.optimal: TerminationReason.OPTIMAL,
        TC.maxTimeLimit: TerminationReason.TIME_LIMIT,
        TC.maxIterations: TerminationReason.ITERATION_LIMIT,
        TC.objectiveLimit: TerminationReason.ITERATION_LIMIT,
        TC.infeasible: TerminationReason.INFEASIBLE,
        TC.unbounded: TerminationReason.UNBOUNDED,
        TC.infeasibleOrUnbounded: TerminationReason.INFEASIBLE_OR_UNBOUNDED,
        TC.interrupted: TerminationReason.INTERRUPTED,
    }
    opt = Highs()
    opt.config.stream_solver = False
    opt.config.load_solution = False
    opt.config.mip_gap = rel_gap
    opt.config.warmstart = warmstart
    if time_limit is not None:
        opt.config.time_limit = max(time_limit, 1e-3)
    options: dict[str, Any] = {"mip_abs_gap": 1e-9 if rel_gap == 0 else 1e-6}
    if threads is not None:
        highspy.Highs.resetGlobalScheduler(True)
        options["threads"] = int(threads)
    if seed is not None:
        options["random_seed"] = int(seed) % 2_147_483_647
    opt.highs_options = options
    res = opt.solve(model)
    termination = mapping.get(res.termination_condition, TerminationReason.ERROR)
    has_solution = res.best_feasible_objective is not None
    if has_solution:
        res.solution_loader.load_vars()
    bound = None if termination is TerminationReason.INFEASIBLE else res.best_objective_bound
    return MipOutcome(
        termination=termination,
        has_solution=has_solution,
        objective=_finite_or_none(res.best_feasible_objective),
        bound=_finite_or_none(bound),
        solve_s=0.0,
        message=f"HiGHS: {res.termination_condition.name}",
    )


def _solve_contrib(
    model: pyo.ConcreteModel,
    backend: str,
    time_limit: float | None,
    rel_gap: float,
    threads: int | None,
    seed: int | None,
    warmstart: bool,
) -> MipOutcome:
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import SolutionStatus as SS
    from pyomo.contrib.solver.common.results import TerminationCondition as TC

    mapping = {
        TC.convergenceCriteriaSatisfied: TerminationReason.OPTIMAL,
        TC.maxTimeLimit: TerminationReason.TIME_LIMIT,
        TC.iterationLimit: TerminationReason.ITERATION_LIMIT,
        TC.objectiveLimit: TerminationReason.ITERATION_LIMIT,
        TC.provenInfeasible: TerminationReason.INFEASIBLE,
        TC.locallyInfeasible: TerminationReason.INFEASIBLE,
        TC.unbounded: TerminationReason.UNBOUNDED,
        TC.infeasibleOrUnbounded: TerminationReason.INFEASIBLE_OR_UNBOUNDED,
        TC.interrupted: TerminationReason.INTERRUPTED,
        TC.licensingProblems: TerminationReason.LICENSE,
    }
    name = {"scip": "scip_direct", "gurobi": "gurobi_direct"}[backend]
    opt = SolverFactory(name)
    solver_options: dict[str, Any] = {}
    if seed is not None:
        key = "randomization/randomseedshift" if backend == "scip" else "Seed"
        solver_options[key] = int(seed) % 2_147_483_647
    if rel_gap == 0 and backend == "gurobi":
        solver_options["MIPGapAbs"] = 1e-9
    kwargs: dict[str, Any] = {
        "load_solutions": False,
        "raise_exception_on_nonoptimal_result": False,
        "rel_gap": rel_gap,
        "solver_options": solver_options,
        "warmstart_discrete_vars": warmstart,
    }
    if time_limit is not None:
        kwargs["time_limit"] = max(time_limit, 1e-3)
    if threads is not None:
        kwargs["threads"] = int(threads)
    try:
        res = opt.solve(model, **kwargs)
    except Exception as exc:  # gurobipy.GurobiError is not importable without gurobipy
        if type(exc).__name__ == "GurobiError" and "size-limited" in str(exc).lower():
            return MipOutcome(
                termination=TerminationReason.LICENSE,
                has_solution=False,
                objective=None,
                bound=None,
                solve_s=0.0,
                message=f"Gurobi license too small for this model: {exc}",
            )
        raise
    termination = mapping.get(res.termination_condition, TerminationReason.ERROR)
    has_solution = res.solution_status in (SS.feasible, SS.optimal)
    if has_solution:
        res.solution_loader.load_vars()
    bound = None if termination is TerminationReason.INFEASIBLE else res.objective_bound
    return MipOutcome(
        termination=termination,
        has_solution=has_solution,
        objective=_finite_or_none(res.incumbent_objective) if has_solution else None,
        bound=_finite_or_none(bound),
        solve_s=0.0,
        message=f"{backend}: {res.termination_condition.name}",
    )
