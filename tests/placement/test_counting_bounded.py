"""The counting table built only for the sums a pair needs answers as the full table does."""

from __future__ import annotations

from hypothesis import given

from topoopt.placement import targets
from topoopt.placement.targets import CountingBound, target_pairs

from .strategies import small_instances


@given(small_instances(max_cells=16, max_pods=6))
def test_bounded_table_equals_the_full_table(instance):
    full = CountingBound(instance)
    assert full.best is not None
    size = full.shape[0] * full.shape[1]
    old = targets.MAX_COUNTING_CELLS
    targets.MAX_COUNTING_CELLS = size - 1  # the full table is over the limit, a pair's is not
    try:
        bounded = CountingBound(instance)
        assert bounded.best is None
        for pair in target_pairs(instance):
            a, b = pair.max_dp_use, pair.max_pp_use
            assert bounded.allows(a, b) == full.allows(a, b), (a, b)
    finally:
        targets.MAX_COUNTING_CELLS = old
