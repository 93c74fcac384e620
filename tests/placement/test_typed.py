"""The group-type programme against a complete search and the per-cell feasibility MIP, in
both orientations, and inside the decomposition."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.mip import solve_model
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.placement import check
from topoopt.placement.exact_mip.typed import decide, orientations
from topoopt.placement.formulations import exact
from topoopt.placement.generate import uneven

from .strategies import small_instances, tight_instances
from .test_narrow import _feasible_by_search, _within


@settings(max_examples=80, deadline=None)
@given(small_instances(max_cells=10, max_pods=5))
def test_both_orientations_equal_a_complete_search(instance):
    for a in range(1, min(instance.rows, instance.n_minipods) + 1):
        for b in range(1, min(instance.cols, instance.n_minipods) + 1):
            truth = _feasible_by_search(instance, a, b)
            for model in orientations(instance, a, b):
                found = model.solve()
                assert found is not None
                assert (found is not False) == truth, (a, b, model.explicit)
                if found is not False:
                    placement = model.placement(instance, *found)
                    assert placement is not None
                    assert check(instance, placement) == [] and _within(placement, a, b)


@settings(max_examples=15, deadline=None)
@given(tight_instances())
def test_decide_equals_the_feasibility_mip_on_tight_instances(instance):
    """Clusters the job fills exactly, pairs with both targets at least 2."""
    for a in range(2, min(instance.rows, instance.n_minipods) + 1):
        for b in range(2, min(instance.cols, instance.n_minipods) + 1):
            got = decide(instance, a, b)
            assert got is not None
            out = solve_model(exact.build_feasibility(instance, a, b))
            assert out.termination in (TerminationReason.OPTIMAL, TerminationReason.INFEASIBLE)
            assert (got is not False) == out.has_solution, (a, b)
            if got is not False:
                assert check(instance, got) == [] and _within(got, a, b)


def test_a_feasible_pair_no_construction_realises_is_proven():
    """Issue #14's ``uneven-9x128-r36c5-s14-7``: every minipod full, ``(3, 3)`` feasible but
    realised by no construction (its per-cell MIP takes about 20 s); the walk proves it
    optimal through the group-type programme."""
    inst = uneven(seed=14, count=8, minipods=16, min_minipods=2, small_share=0.4,
                  max_rows=64, max_cols=16, alpha=-1)[7]  # fmt: skip
    assert inst.name == "uneven-9x128-r36c5-s14-7"
    result = topoopt.solve(inst, "placement/exact-mip")
    assert result.status is SolutionStatus.OPTIMAL, result.message
    assert math.isclose(result.objective, 3.0)
    assert "group types: 1" in result.message


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        small_instances(max_cells=10, max_pods=4),
        tight_instances(max_cells=16, max_rows=6, any_alpha=True),
    )
)
def test_decomposition_deciding_by_group_types_equals_the_oracle(instance):
    """The walk with its constructions switched off and the group-type programme in place of
    the narrow test, so that every pair the counting bound and the one-sided packing leave is
    decided by it (on the tight instances, most of their pairs with a 2): same optimum as the
    enumeration."""
    from topoopt.placement.exact_mip import typed
    from topoopt.placement.exact_mip.sides import Sides
    from topoopt.placement.exact_mip.targets import Constructions
    from topoopt.placement.solvers import mip

    oracle = topoopt.solve(instance, "placement/enumerate")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Constructions, "block_design", lambda *args, **kwargs: None)
        patch.setattr(Constructions, "guillotine", lambda *args, **kwargs: None)
        patch.setattr(mip, "realise_bands", lambda *args, **kwargs: None)
        patch.setattr(Sides, "construct", lambda *args, **kwargs: None)
        patch.setattr(mip, "decide_narrow", lambda inst, a, b, *rest: typed.decide(inst, a, b))
        result = topoopt.solve(instance, "placement/exact-mip")
    assert result.status is SolutionStatus.OPTIMAL, result.message
    assert math.isclose(result.objective, oracle.objective, abs_tol=1e-6)
