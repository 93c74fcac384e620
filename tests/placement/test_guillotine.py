"""Guillotine constructions: within the capacities and the target spreads they were asked for,
and at least as strong as the balanced block designs on the same pair."""

from __future__ import annotations

from hypothesis import given, settings

from topoopt.placement import check
from topoopt.placement.exact_mip.targets import guillotine, target_pairs

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


def test_best_fit_strips_keep_the_large_minipods_for_the_next_band():
    """Columns in two bands of two, rows in two strips per band, on free nodes 132, 131, 129
    and 124 (the scale benchmark's ``m32-f2048-128x4``, reduced to its four largest
    minipods): widest-first strips give the first band 66 + 65 rows and leave 64 + 62 < 128
    for the second; the best fit takes 66 + 62, then 65 + 64."""
    from topoopt.placement import PlacementInstance

    inst = PlacementInstance("bands", [132, 131, 129, 124], dp=128, tp=8, pp=4, alpha=0.7)
    found = guillotine(inst, 2, 2)
    assert found is not None and check(inst, found) == []
    assert all(len(set(col)) <= 2 for col in found.columns())
    assert all(len(set(row)) <= 2 for row in found.matrix)
