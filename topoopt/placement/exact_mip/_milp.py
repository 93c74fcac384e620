"""Small integer programmes of the exact placement tests, handed to HiGHS through ``highspy``.

The combinatorial tests (:mod:`topoopt.placement.exact_mip.narrow`,
:mod:`topoopt.placement.exact_mip.sides`) solve many small models; building them through Pyomo would
cost more than solving them, so they are written as sparse rows here and passed to one
``highspy.Highs`` object per process.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, Literal

from topoopt.core.backends import quiet_highs

Status = Literal["feasible", "infeasible", "unknown"]


@functools.cache
def _highs() -> Any:
    """One quiet ``highspy.Highs`` per process (:func:`~topoopt.core.backends.quiet_highs`).
    No "threads" option: HiGHS refuses to run when it differs from the thread scheduler
    another Highs object of the process started."""
    return quiet_highs()


class SparseMilp:
    """A MILP assembled row by row: a feasibility model, or the least total cost when
    columns have costs (``var(..., cost=...)``).

    Examples
    --------
    >>> milp = SparseMilp()
    >>> x, y = milp.var(0, 3, integer=True), milp.var(0, 3, integer=True)
    >>> milp.row({x: 2, y: 2}, 5, 5)  # 2x + 2y = 5 has no integral point
    >>> milp.solve()[0]
    'infeasible'
    """

    def __init__(self) -> None:
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[bool] = []
        self.cost: list[float] = []
        self.rows: list[tuple[Mapping[int, float], float, float]] = []

    def var(self, lower: float, upper: float, *, integer: bool = False, cost: float = 0.0) -> int:
        """A new column with its bounds and its cost in the objective; returns its index."""
        self.lower.append(lower)
        self.upper.append(upper)
        self.integer.append(integer)
        self.cost.append(cost)
        return len(self.lower) - 1

    def row(
        self, coefs: Mapping[int, float], lower: float = -math.inf, upper: float = math.inf
    ) -> None:
        """The row ``lower <= sum coefs[i] * x_i <= upper``."""
        self.rows.append((coefs, lower, upper))

    def solve(
        self, time_limit: float = math.inf, backend: Literal["highs", "scip"] = "highs"
    ) -> tuple[Status, list[float]]:
        """``("feasible", x)``, ``("infeasible", [])`` or ``("unknown", [])`` (time limit or
        any other outcome), by HiGHS or SCIP. With costs, ``x`` is the least-cost solution
        found: optimal unless the time limit stopped the search after a first solution."""
        if backend == "scip":
            return self._solve_scip(time_limit)
        return self._solve_highs(time_limit)

    def _solve_scip(self, time_limit: float) -> tuple[Status, list[float]]:
        """The model through ``pyscipopt`` (measured faster than HiGHS on the narrow test's
        joint programme: it decides 5 of the 11 hard pairs of issue #14's class within 1 s,
        HiGHS needs up to 7.5 s for the same 5)."""
        return ScipRun(self).run(time_limit)

    def _solve_highs(self, time_limit: float) -> tuple[Status, list[float]]:
        """The model through ``highspy`` (one ``Highs`` object per process)."""
        import highspy
        import numpy as np

        n = len(self.lower)
        per_col: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        for r, (coefs, _, _) in enumerate(self.rows):
            for c, v in coefs.items():
                per_col[c].append((r, v))
        start, index, value = [0], [], []
        for entries in per_col:
            for r, v in entries:
                index.append(r)
                value.append(float(v))
            start.append(len(index))
        inf = highspy.kHighsInf
        lp = highspy.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = len(self.rows)
        lp.col_cost_ = np.array(self.cost, dtype=float)
        lp.col_lower_ = np.array(self.lower, dtype=float)
        lp.col_upper_ = np.array([min(u, inf) for u in self.upper], dtype=float)
        lp.row_lower_ = np.array([max(lo, -inf) for _, lo, _ in self.rows], dtype=float)
        lp.row_upper_ = np.array([min(up, inf) for _, _, up in self.rows], dtype=float)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.array(start, dtype=np.int32)
        lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
        lp.a_matrix_.value_ = np.array(value)
        kinds = highspy.HighsVarType
        lp.integrality_ = [kinds.kInteger if i else kinds.kContinuous for i in self.integer]
        decided = (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kInfeasible)
        limit = float(min(max(time_limit, 0.01), inf))
        h = _highs()
        h.clearModel()
        h.setOptionValue("time_limit", limit)
        h.passModel(lp)
        h.run()
        if h.getModelStatus() not in decided and h.getRunTime() < 0.9 * limit:
            # a solver left in a bad state by an interrupted run: once more, anew
            _highs.cache_clear()
            h = _highs()
            h.setOptionValue("time_limit", limit)
            h.passModel(lp)
            h.run()
        status = h.getModelStatus()
        h.setOptionValue("time_limit", inf)
        if status == highspy.HighsModelStatus.kInfeasible:
            return "infeasible", []
        found = h.getInfo().primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
        if status != highspy.HighsModelStatus.kOptimal and not found:
            return "unknown", []
        return "feasible", list(h.getSolution().col_value)


SYMMETRY_WITHOUT_ORBITAL_REDUCTION = 5
"""SCIP's ``misc/usesymmetry`` for a model that is resumed: symmetry-breaking constraints
and Schreier-Sims cuts (1 + 4), not orbital reduction (2; the default 7 has all three). With
orbital reduction, SCIP 10.0 (the one PySCIPOpt 6.3 ships) can call a feasible model
infeasible when a run interrupted at its root node is resumed (SCIP issue #207, fixed in
SCIP 10.0.3: "when solving a node is interrupted, create a node branched event for the
artificial child node"). Measured on a rack-pattern programme of the benchmark's 24 x 16
job, seed 1, feasible in 1.3 s: interrupted after 0.1-0.3 s and resumed, it was called
infeasible every time; with 5, feasible at every interruption time tried
(``tests/placement/test_paired_racks.py``)."""


SEPARATING = False
"""Whether :class:`ScipRun` lets SCIP add cutting planes (separation). Off: the rack-pattern
programmes are feasibility problems, and most of those that are feasible decide faster
without them. Measured on the 112 programmes of the benchmark's 32 x 8, 40 x 8, 48 x 8,
24 x 16 and 16 x 16 jobs (seeds 0-6), each alone, one thread: decided within 0.25 s 94 with
cuts, 102 without; the feasible ones' median 0.30 s against 0.17 s. Through the solver (the
35 solves of those jobs, 10 s limit, four runs each, alternated): proven within 1 s 12-15
(mean 13.8) with cuts, 14-18 (mean 16.3) without; proven 25-26 either way; median solve
1.43 s against 1.02 s. One programme of 40 x 8 seed 5 needs the cuts (feasible after 0.56 s
with them, undecided after 3,500 nodes without): that job took 0.9 s and takes 1.8-6.8 s
(unproven in one of four runs). Tried and not kept: a first run without cuts, then a fresh
model with them (32 x 8 seed 6 unproven in both runs), or the same model resumed with them."""


class ScipRun:
    """A :class:`SparseMilp` as a SCIP model that can be run again with more time: SCIP
    resumes a solve its time limit interrupted (the branch-and-bound tree is kept), so a
    caller can give many models a short first run and the undecided ones more, without
    repeating the first runs' work. Orbital reduction is off
    (:data:`SYMMETRY_WITHOUT_ORBITAL_REDUCTION`): with it, a resumed run can call a feasible
    model infeasible. Cutting planes are off (:data:`SEPARATING`).

    Examples
    --------
    >>> milp = SparseMilp()
    >>> x = milp.var(0, 9, integer=True)
    >>> milp.row({x: 2}, 5, 5)
    >>> ScipRun(milp).run(10)[0]
    'infeasible'
    """

    def __init__(self, milp: SparseMilp) -> None:
        from pyscipopt import SCIP_PARAMSETTING, Model, quicksum

        scip = Model()
        scip.hideOutput()
        scip.setParam("misc/usesymmetry", SYMMETRY_WITHOUT_ORBITAL_REDUCTION)
        if not SEPARATING:
            scip.setSeparating(SCIP_PARAMSETTING.OFF)
        self.xs = [
            scip.addVar(
                vtype="I" if integer else "C", lb=lo, ub=None if up == math.inf else up, obj=cost
            )
            for lo, up, integer, cost in zip(
                milp.lower, milp.upper, milp.integer, milp.cost, strict=True
            )
        ]
        for coefs, lo, up in milp.rows:
            expr = quicksum(v * self.xs[c] for c, v in coefs.items())
            if lo == up:
                scip.addCons(expr == lo)
                continue
            if lo > -math.inf:
                scip.addCons(expr >= lo)
            if up < math.inf:
                scip.addCons(expr <= up)
        self.scip = scip

    def run(self, seconds: float = math.inf) -> tuple[Status, list[float]]:
        """Solve (or resume) for at most ``seconds`` more: ``("feasible", x)``,
        ``("infeasible", [])`` or ``("unknown", [])``."""
        scip = self.scip
        if seconds < math.inf:  # SCIP's limit counts the time of every run so far
            scip.setParam("limits/time", scip.getSolvingTime() + max(seconds, 0.01))
        else:
            scip.setParam("limits/time", 1e20)
        scip.optimize()
        status = scip.getStatus()
        if status == "infeasible":
            return "infeasible", []
        if status != "optimal" and scip.getNSols() == 0:
            return "unknown", []
        return "feasible", [scip.getVal(x) for x in self.xs]
