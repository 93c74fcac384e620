"""The pricing by branch and bound on min cuts (:mod:`topoopt.partition.cut_pricing`) against
brute force over every vertex set."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from topoopt.partition import colgen
from topoopt.partition.cut_pricing import CutNetwork, CutProblem, price_by_cuts
from topoopt.partition.generate import examples


@st.composite
def pricing_problems(draw: st.DrawFn) -> CutProblem:
    """A graph of 1-10 vertices, capacities, sizes (all equal or not), prizes and a range."""
    n = draw(st.integers(1, 10))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=2 * n)) if pairs else []
    size = st.just(draw(st.integers(1, 8))) if draw(st.booleans()) else st.integers(1, 4)
    gpus = np.array(draw(st.lists(size, min_size=n, max_size=n)))
    low = draw(st.integers(0, int(gpus.sum())))
    return CutProblem(
        heads=np.array([u for u, _ in edges], dtype=np.int64),
        tails=np.array([v for _, v in edges], dtype=np.int64),
        capacity=np.array(
            draw(st.lists(st.floats(0.0, 2.0), min_size=len(edges), max_size=len(edges)))
        ),
        gpus=gpus,
        prize=np.array(draw(st.lists(st.floats(-3.0, 3.0), min_size=n, max_size=n))),
        low=low,
        high=draw(st.integers(low, int(gpus.sum()))),
    )


def _values(p: CutProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every vertex set (rows of a boolean matrix), its ``Σ capacity δ(S) − prize(S)`` and
    whether it is admissible."""
    n = len(p.prize)
    masks = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)
    crossing = masks[:, p.heads] != masks[:, p.tails]
    sizes = masks @ p.gpus
    return masks, crossing @ p.capacity - masks @ p.prize, (sizes >= p.low) & (sizes <= p.high)


def _slack(p: CutProblem) -> float:
    """The rounding the min cuts' bounds may carry, generously."""
    return 1e-6 * max(1.0, float(p.capacity.sum() + np.abs(p.prize).sum()))


@settings(max_examples=150, deadline=None)
@given(p=pricing_problems())
def test_the_search_finds_the_minimum_and_bounds_it(p: CutProblem) -> None:
    _, values, admissible = _values(p)
    lower, found, proven = price_by_cuts(p, None, 10.0)
    if not admissible.any():
        assert (lower, found, proven) == (-math.inf, [], False)  # no claim
        return
    least = float(values[admissible].min())
    assert proven and found
    assert least - _slack(p) <= lower <= least + 1e-12
    for mask in found:
        assert p.low <= p.gpus[mask].sum() <= p.high
    assert p.value(found[0]) == pytest.approx(least, abs=_slack(p))


@settings(max_examples=60, deadline=None)
@given(p=pricing_problems())
def test_a_search_stopped_at_once_still_bounds_the_minimum(p: CutProblem) -> None:
    masks, values, admissible = _values(p)
    assume(admissible.any())
    start = masks[int(np.flatnonzero(admissible)[0])]
    lower, found, _ = price_by_cuts(p, start, 0.0)
    assert lower <= float(values[admissible].min()) + 1e-12
    assert found and not math.isnan(lower)


@settings(max_examples=100, deadline=None)
@given(p=pricing_problems(), data=st.data())
def test_the_network_cut_is_least_with_vertices_fixed(p: CutProblem, data: st.DataObject) -> None:
    """``CutNetwork.minimum`` is the least ``δ(S) + weight(S)`` over the sets that keep the
    fixed vertices, its set attains it, and its bound is below it."""
    n = len(p.prize)
    side = np.array(data.draw(st.lists(st.sampled_from([-1, 0, 1]), min_size=n, max_size=n)))
    inside, outside = side == 1, side == -1
    masks, values, _ = _values(p)  # with weight = -prize
    keeps = (masks | ~inside).all(axis=1) & ~(masks & outside).any(axis=1)
    least = float(values[keeps].min())
    network = CutNetwork(p.heads, p.tails, p.capacity, n)
    mask, bound, _ = network.minimum(-p.prize, inside, outside)
    assert (mask | ~inside).all() and not (mask & outside).any()
    assert p.value(mask) <= least + _slack(p)
    assert least - _slack(p) <= bound <= least + 1e-12


def test_an_unknown_pricer_is_named() -> None:
    bounds = colgen.colgen_bounds(examples()[0], None, time.perf_counter() + 1.0, pricing="lp")
    with pytest.raises(ValueError, match="pricing must be one of"):
        next(bounds)


def test_a_network_of_subnormal_capacities_still_bounds_its_cut() -> None:
    """The scale to integers stays finite when the capacities sum to a subnormal number."""
    tiny = 4 * np.nextafter(0.0, 1.0)
    network = CutNetwork(np.array([0]), np.array([1]), np.array([tiny]), 2)
    none = np.zeros(2, dtype=bool)
    mask, bound, slack = network.minimum(np.array([-tiny, tiny]), none, none)
    assert math.isfinite(bound) and math.isfinite(slack)
    assert bound <= 0.0  # the least value, 0, of every set
    assert len(mask) == 2
