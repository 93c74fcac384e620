"""The min-plus convolution against its definition."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.core import convolution
from topoopt.core.convolution import min_plus

COST = st.one_of(st.integers(0, 9).map(float), st.just(math.inf))
COSTS = st.lists(COST, min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(COSTS, COSTS, st.sampled_from([convolution.WINDOW_CELLS, 0]))
def test_min_plus_is_the_least_split_of_every_size(
    left: list[float], right: list[float], window: int
) -> None:
    """``out[s]`` is the least ``left[s - r] + right[r]`` over every ``r`` (tables of any
    lengths, ``inf`` entries included): all pairs at once, or (``WINDOW_CELLS`` 0) one step
    per finite entry of either table."""
    saved = convolution.WINDOW_CELLS
    convolution.WINDOW_CELLS = window
    try:
        out = min_plus(np.array(left), np.array(right))
    finally:
        convolution.WINDOW_CELLS = saved
    assert len(out) == len(left)
    for s in range(len(left)):
        best = min(
            (left[s - r] + right[r] for r in range(min(s + 1, len(right)))), default=math.inf
        )
        assert out[s] == best
