"""The Lagrangian counting bound: never refutes a feasible pair, never stronger than the table."""

from __future__ import annotations

from hypothesis import given

from topoopt.placement.targets import CountingBound, LagrangianCounting, target_pairs

from .strategies import small_instances
from .test_properties import _feasible_by_brute_force


@given(small_instances(max_cells=6, max_pods=3))
def test_lagrangian_counting_never_refutes_a_feasible_pair(instance):
    lagrangian = LagrangianCounting(instance)
    for pair in target_pairs(instance):
        a, b = pair.max_dp_use, pair.max_pp_use
        if _feasible_by_brute_force(instance, a, b):
            assert lagrangian.allows(a, b)


@given(small_instances(max_cells=16, max_pods=6))
def test_lagrangian_counting_is_a_relaxation_of_the_table(instance):
    """Whatever the table (the exact counting relaxation) admits, the Lagrangian admits."""
    table, lagrangian = CountingBound(instance).full(), LagrangianCounting(instance)
    assert table is not None
    inst = instance
    for pair in target_pairs(instance):
        a, b = pair.max_dp_use, pair.max_pp_use
        sa = min(inst.rows * b, table.shape[0] - 1)
        sb = min(inst.cols * a, table.shape[1] - 1)
        if table[sa, sb] >= inst.n_nodes:
            assert lagrangian.allows(a, b)
