"""One-sided packing (``topoopt.placement.exact_mip.sides``): the relaxation never refutes a
feasible pair, the packing is exact for its own question, and the construction places within the
pair; all against the naive search of ``test_narrow``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.placement import PlacementInstance, check
from topoopt.placement.exact_mip.sides import Sides, pack

from .strategies import small_instances
from .test_narrow import _feasible_by_search, _within


@settings(max_examples=150, deadline=None)
@given(small_instances(max_cells=10, max_pods=5))
def test_packing_one_side_equals_the_pair_with_the_other_side_free(instance):
    """Columns alone with at most ``A`` minipods each is the pair ``(A, M)``: the rows
    are then unconstrained. Likewise for the rows."""
    n_pods = instance.n_minipods
    caps = list(instance.capacities)
    for most in range(1, n_pods + 1):
        cols = pack(caps, instance.cols, instance.rows, most)
        assert cols is not None
        assert (cols is not False) == _feasible_by_search(instance, most, n_pods)
        if cols is not False:
            assert [len(group) for group in cols] == [instance.rows] * instance.cols
            assert all(len(set(group)) <= most for group in cols)
            assert all(sum(g.count(j) for g in cols) <= f for j, f in enumerate(caps))
        rows = pack(caps, instance.rows, instance.cols, most)
        assert (rows is not False) == _feasible_by_search(instance, n_pods, most)


@settings(max_examples=150, deadline=None)
@given(small_instances(max_cells=10, max_pods=5))
def test_relaxation_and_construction_agree_with_a_complete_search(instance):
    sides = Sides(instance)
    for a in range(1, min(instance.rows, instance.n_minipods) + 1):
        for b in range(1, min(instance.cols, instance.n_minipods) + 1):
            feasible = _feasible_by_search(instance, a, b)
            if sides.refutes(a, b):
                assert not feasible, (a, b)
            built = sides.construct(a, b)
            if built is not None:
                assert check(instance, built) == [] and _within(built, a, b), (a, b)


@given(st.integers(2, 6))
def test_a_pair_only_the_relaxation_refutes(length):
    """Two columns of ``length`` cells and minipods of ``length - 1`` free nodes: a column
    needs two minipods, so ``A = 1`` is refuted whatever the rows may do, and ``A = 2`` is
    built on the four minipods."""
    inst = PlacementInstance("x", [length - 1] * 4, dp=length, tp=8, pp=2, alpha=0.5)
    sides = Sides(inst)
    assert sides.refutes(1, 4)
    assert not sides.refutes(2, 4)
    built = sides.construct(2, 4)
    assert built is not None and check(inst, built) == [] and _within(built, 2, 4)
