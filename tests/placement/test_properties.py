"""Property tests: the trust chain evaluate -> oracle -> MIPs and heuristics."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given

import topoopt
from topoopt.core.mip import solve_model
from topoopt.core.registry import solver_names
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.placement import Placement, check, evaluate
from topoopt.placement.exact_mip.targets import (
    CountingBound,
    block_design,
    monochrome_columns,
    monochrome_rows,
    target_pairs,
)
from topoopt.placement.formulations import coarse, exact
from topoopt.placement.solution import dp_spread, pp_spread
from topoopt.placement.solvers.oracle import enumerate_naive

from .strategies import small_instances

TOL = 1e-9
HEURISTICS = [
    name for name in solver_names("placement") if not topoopt.core.registry.get_solver(name).exact
]


@given(small_instances(max_cells=6, max_pods=3))
def test_oracle_equals_brute_force(instance):
    naive_score, _ = enumerate_naive(instance)
    result = topoopt.solve(instance, "placement/enumerate")
    assert result.status is SolutionStatus.OPTIMAL
    assert math.isclose(result.objective, naive_score, abs_tol=TOL)


@pytest.mark.parametrize("method", ["decompose", "monolithic"])
@given(instance=small_instances(max_cells=12, max_pods=4))
def test_exact_mip_equals_oracle(method, instance):
    oracle = topoopt.solve(instance, "placement/enumerate")
    result = topoopt.solve(instance, "placement/exact-mip", method=method)
    assert result.status is SolutionStatus.OPTIMAL, result.message
    assert math.isclose(result.objective, oracle.objective, abs_tol=1e-6)
    assert result.bound <= oracle.objective + 1e-6


@pytest.mark.parametrize("solver", HEURISTICS)
@given(instance=small_instances(max_cells=12, max_pods=4))
def test_heuristics_feasible_and_never_beat_oracle(solver, instance):
    oracle = topoopt.solve(instance, "placement/enumerate")
    result = topoopt.solve(instance, solver)
    if not topoopt.core.registry.solver_class(solver).complete and result.solution is None:
        # a production placer may leave the job pending (Slurm's block plugin with no block
        # that holds it, Kueue with no fit): it says why
        assert result.termination.value in ("completed", "infeasible") and result.message
        return
    assert result.is_ok, result.message
    assert check(instance, result.solution) == []
    assert result.objective >= oracle.objective - TOL


@pytest.mark.parametrize("unit", ["pp", "dp", "auto"])
@given(instance=small_instances(max_cells=12, max_pods=4))
def test_coarse_mip_reports_exact_score_of_its_placement(unit, instance):
    result = topoopt.solve(instance, "placement/coarse-mip", unit=unit)
    assert result.is_ok
    assert result.objective == pytest.approx(evaluate(instance, result.solution))
    assert result.dp_spread == dp_spread(result.solution)
    assert result.pp_spread == pp_spread(result.solution)


@pytest.mark.parametrize("unit", ["pp", "dp"])
@given(instance=small_instances(max_cells=6, max_pods=3))
def test_coarse_model_with_its_cuts_finds_the_coarse_optimum(unit, instance):
    """Eq. 4–10 plus the whole-unit cut and the capacity bound, against the coarse objective
    minimised over every placement by brute force (each integral coarse solution is the
    unit-count view of some placement)."""
    best = math.inf
    for flat in itertools.product(range(instance.n_minipods), repeat=instance.n_nodes):
        placement = Placement.from_rows(np.reshape(flat, (instance.rows, instance.cols)))
        if check(instance, placement):
            continue
        units = placement.matrix if unit == "pp" else placement.columns()
        counts = [[list(u).count(j) for j in range(instance.n_minipods)] for u in units]
        _, _, w_y, w_t = coarse._shape(instance, unit)
        best = min(best, coarse._coarse_objective(counts, w_y, w_t))
    assert coarse.lower_bound(instance, unit) <= best + TOL
    model = coarse.build(instance, unit)
    coarse.warm_start(model, instance)
    out = solve_model(model, warmstart=True)
    assert out.termination is TerminationReason.OPTIMAL
    assert out.objective == pytest.approx(best, abs=1e-6)


def _feasible_by_brute_force(instance, max_dp_use, max_pp_use):
    for flat in itertools.product(range(instance.n_minipods), repeat=instance.n_nodes):
        placement = Placement.from_rows(np.reshape(flat, (instance.rows, instance.cols)))
        if check(instance, placement):
            continue
        cols_ok = all(len(set(col)) <= max_dp_use for col in placement.columns())
        rows_ok = all(len(set(row)) <= max_pp_use for row in placement.matrix)
        if cols_ok and rows_ok:
            return True
    return False


def _within(placement, max_dp_use, max_pp_use):
    return all(len(set(col)) <= max_dp_use for col in placement.columns()) and all(
        len(set(row)) <= max_pp_use for row in placement.matrix
    )


@given(small_instances(max_cells=6, max_pods=3))
def test_feasibility_mip_agrees_with_brute_force(instance):
    """The last resort of the decomposition, on every pair it could be asked about."""
    for pair in target_pairs(instance):
        a, b = pair.max_dp_use, pair.max_pp_use
        if a == 1 or b == 1:
            continue
        model = exact.build_feasibility(instance, a, b)
        out = solve_model(model)
        assert out.has_solution == _feasible_by_brute_force(instance, a, b)
        if out.has_solution:
            placement = exact.extract(model, instance)
            assert check(instance, placement) == [] and _within(placement, a, b)
        else:
            assert out.termination is TerminationReason.INFEASIBLE


@given(small_instances(max_cells=6, max_pods=3))
def test_target_pair_deciders_agree_with_brute_force(instance):
    """Closed forms are exact, the counting bound never refutes a feasible pair, and the
    constructions respect their targets."""
    counting = CountingBound(instance)
    for pair in target_pairs(instance):
        a, b = pair.max_dp_use, pair.max_pp_use
        feasible = _feasible_by_brute_force(instance, a, b)
        if feasible:
            assert counting.allows(a, b)
        if a == 1:
            found = monochrome_columns(instance, b)
            assert (found is not None) == feasible
        if b == 1:
            found = monochrome_rows(instance, a)
            assert (found is not None) == feasible
        built = block_design(instance, a, b)
        if built is not None:
            assert check(instance, built) == [] and _within(built, a, b)
