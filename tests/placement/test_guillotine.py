"""Guillotine constructions: within the capacities and the target spreads they were asked for,
and at least as strong as the balanced block designs on the same pair."""

from __future__ import annotations

from hypothesis import given, settings

from topoopt.placement import check
from topoopt.placement.targets import guillotine, target_pairs

from .strategies import small_instances


@settings(max_examples=200, deadline=None)
@given(small_instances(max_cells=24, max_pods=6))
def test_guillotine_respects_capacities_and_targets(instance):
    for pair in target_pairs(instance):
        a, b = pair.max_dp_use, pair.max_pp_use
        found = guillotine(instance, a, b)
        if found is None:
            continue
        assert check(instance, found) == []
        assert all(len(set(col)) <= a for col in found.columns())
        assert all(len(set(row)) <= b for row in found.matrix)


def test_guillotine_cuts_bands_unlike_a_block_design():
    """Two bands of one row each cut differently: 3 + 1 then 1 + 3 cells."""
    from topoopt.placement import PlacementInstance

    inst = PlacementInstance("g", [3, 3, 1, 1], dp=2, tp=8, pp=4, alpha=0.5)
    found = guillotine(inst, 2, 2)
    assert found is not None and check(inst, found) == []
