"""The exact test of pairs with a narrow side (``A = 2`` or ``B = 2``) against a complete
search, and the decomposition that uses it against the oracle."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings

import topoopt
from topoopt.core.mip import solve_model
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.placement import PlacementInstance, check
from topoopt.placement.exact_mip import narrow
from topoopt.placement.exact_mip.narrow import MAX_JOINT_PODS, decide, orientations
from topoopt.placement.formulations import exact
from topoopt.placement.instance import Minipod
from topoopt.placement.solution import Placement

from .strategies import small_instances, tight_instances


def _feasible_by_search(instance: PlacementInstance, max_dp_use: int, max_pp_use: int) -> bool:
    """Depth-first search over the cells in row-major order (naive, independent of the
    reduced model): is there a placement within the capacities with every column touching at
    most ``max_dp_use`` minipods and every row at most ``max_pp_use``?"""
    rows, cols, n_pods = instance.rows, instance.cols, instance.n_minipods
    left = list(instance.capacities)
    row_sets: list[dict[int, int]] = [{} for _ in range(rows)]
    col_sets: list[dict[int, int]] = [{} for _ in range(cols)]

    def go(cell: int) -> bool:
        if cell == rows * cols:
            return True
        r, c = divmod(cell, cols)
        for j in range(n_pods):
            if not left[j]:
                continue
            if j not in row_sets[r] and len(row_sets[r]) >= max_pp_use:
                continue
            if j not in col_sets[c] and len(col_sets[c]) >= max_dp_use:
                continue
            left[j] -= 1
            row_sets[r][j] = row_sets[r].get(j, 0) + 1
            col_sets[c][j] = col_sets[c].get(j, 0) + 1
            found = go(cell + 1)
            left[j] += 1
            for sets, k in ((row_sets, r), (col_sets, c)):
                sets[k][j] -= 1
                if not sets[k][j]:
                    del sets[k][j]
            if found:
                return True
        return False

    return go(0)


def _within(placement: Placement, max_dp_use: int, max_pp_use: int) -> bool:
    return all(len(set(col)) <= max_dp_use for col in placement.columns()) and all(
        len(set(row)) <= max_pp_use for row in placement.matrix
    )


@settings(max_examples=300, deadline=None)
@given(small_instances(max_cells=10, max_pods=5))
def test_narrow_pairs_equal_a_complete_search(instance):
    for a in range(1, min(instance.rows, instance.n_minipods) + 1):
        for b in range(1, min(instance.cols, instance.n_minipods) + 1):
            if 2 not in (a, b):
                continue
            got = decide(instance, a, b)
            assert got is not None
            assert (got is not False) == _feasible_by_search(instance, a, b), (a, b)
            if got is not False:
                assert check(instance, got) == []
                assert _within(got, a, b)


@settings(max_examples=100, deadline=None)
@given(small_instances(max_cells=12, max_pods=4))
def test_decomposition_with_narrow_pairs_equals_the_oracle(instance):
    oracle = topoopt.solve(instance, "placement/enumerate")
    result = topoopt.solve(instance, "placement/exact-mip")
    assert result.status is SolutionStatus.OPTIMAL, result.message
    assert math.isclose(result.objective, oracle.objective, abs_tol=1e-6)


def test_a_tight_pair_the_counting_bound_admits_is_refuted():
    """Issue #14's ``uneven-4x128-r54c11-s14-0``: every minipod full, ``A = B = 2``
    infeasible by divisibility (see docs/placement.md, "Narrow pairs")."""
    inst = PlacementInstance(
        "tight",
        [Minipod(f"mp{j}", f) for j, f in enumerate([210, 128, 128, 128])],
        dp=54, tp=8, pp=11, alpha=0.07,
    )  # fmt: skip
    assert decide(inst, 2, 2) is False


@settings(max_examples=15, deadline=None)
@given(tight_instances())
def test_narrow_pairs_equal_the_feasibility_mip(instance):
    """Larger tight instances: the narrow test against the per-cell feasibility MIP."""
    assert_narrow_is_the_feasibility_mip(instance)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(tight_instances())
def test_narrow_pairs_equal_the_feasibility_mip_many(instance):
    assert_narrow_is_the_feasibility_mip(instance)


def assert_narrow_is_the_feasibility_mip(instance) -> None:
    """Every pair with a 2 and no 1 that :func:`decide` answers agrees with the MIP."""
    for a in range(1, min(instance.rows, instance.n_minipods) + 1):
        for b in range(1, min(instance.cols, instance.n_minipods) + 1):
            if 2 not in (a, b) or 1 in (a, b):
                continue
            got = decide(instance, a, b)
            if got is None:
                continue
            out = solve_model(exact.build_feasibility(instance, a, b))
            assert out.termination in (TerminationReason.OPTIMAL, TerminationReason.INFEASIBLE)
            assert (got is not False) == out.has_solution, (a, b)
            if got is not False:
                assert check(instance, got) == [] and _within(got, a, b)


def _orientations(instance: PlacementInstance, max_dp_use: int, max_pp_use: int):
    return orientations(instance, max_dp_use, max_pp_use, max_pods=MAX_JOINT_PODS)


@settings(max_examples=150, deadline=None)
@given(small_instances(max_cells=10, max_pods=5))
def test_joint_programme_equals_a_complete_search(instance):
    """The joint integer programme over ``z`` and ``p`` decides every orientation of every
    narrow pair as the naive search does, and its points are placements within the pair."""
    for a in range(2, min(instance.rows, instance.n_minipods) + 1):
        for b in range(2, min(instance.cols, instance.n_minipods) + 1):
            truth = None
            for model in _orientations(instance, a, b):
                found = model.search_joint()
                assert found is not None
                if truth is None:
                    truth = _feasible_by_search(instance, a, b)
                assert (found is not False) == truth, (a, b, model.narrow)
                if found is not False:
                    placement = model.placement(instance, *found)
                    assert placement is not None
                    assert check(instance, placement) == [] and _within(placement, a, b)


@settings(max_examples=40, deadline=None)
@given(tight_instances())
def test_joint_programme_equals_the_enumeration_on_tight_instances(instance):
    """On clusters the job fills exactly, the joint programme and the enumeration of ``z``
    (each exact by its own argument) agree wherever the enumeration decides."""
    for a in range(2, min(instance.rows, instance.n_minipods) + 1):
        for b in range(2, min(instance.cols, instance.n_minipods) + 1):
            for model in _orientations(instance, a, b):
                enumerated = model.search()
                if enumerated is None:
                    continue
                joint = model.search_joint()
                assert joint is not None
                assert (joint is False) == (enumerated is False), (a, b, model.narrow)


def test_decide_falls_back_to_the_joint_programme(monkeypatch):
    """Beyond the enumeration's size the joint programme decides: the tight 4-minipod pair
    above is refuted, and a feasible pair of it is placed."""
    monkeypatch.setattr(narrow, "MAX_PODS", 0)
    inst = PlacementInstance("tight", [210, 128, 128, 128], dp=54, tp=8, pp=11, alpha=0.07)
    assert decide(inst, 2, 2) is False
    found = decide(inst, 3, 2)
    assert found is not None and found is not False
    assert check(inst, found) == [] and _within(found, 3, 2)
