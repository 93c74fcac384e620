"""The counting table grown lazily for the pairs asked answers as the full table does."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from topoopt.placement.exact_mip import targets
from topoopt.placement.exact_mip.targets import CountingBound, target_pairs

from .strategies import small_instances


def _expected(table, instance, a, b, limit) -> bool:
    """The pair's verdict read off the full table, or ``True`` (admitted) when even the part
    of the table the pair needs has more than ``limit`` cells."""
    sa = min(instance.rows * b, table.shape[0] - 1)
    sb = min(instance.cols * a, table.shape[1] - 1)
    if (sa + 1) * (sb + 1) > limit:
        return True
    return bool(table[sa, sb] >= instance.n_nodes)


@given(small_instances(max_cells=16, max_pods=6), st.randoms(use_true_random=False))
def test_grown_table_equals_the_full_table(instance, rng: random.Random):
    """In score order and in a random order of the pairs (the table then grows in both
    directions), with the full table over the cell limit."""
    table = CountingBound(instance).full()
    assert table is not None
    pairs = target_pairs(instance)
    old = targets.MAX_COUNTING_CELLS
    targets.MAX_COUNTING_CELLS = limit = table.size - 1  # the full table is over the limit
    try:
        for order in (pairs, rng.sample(pairs, len(pairs))):
            counting = CountingBound(instance)
            assert counting.full() is None
            for pair in order:
                a, b = pair.max_dp_use, pair.max_pp_use
                expected = counting.lagrangian.allows(a, b) and _expected(
                    table, instance, a, b, limit
                )
                assert counting.allows(a, b) == expected, (a, b)
    finally:
        targets.MAX_COUNTING_CELLS = old
