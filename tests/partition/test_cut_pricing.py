"""The pricing by branch and bound on min cuts (:mod:`topoopt.partition.cut_pricing`) against
brute force over every vertex set."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from topoopt.partition import colgen
from topoopt.partition.cut_pricing import CutNetwork, CutProblem, Frontier, price_by_cuts
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


@settings(max_examples=100, deadline=None)
@given(p=pricing_problems(), data=st.data())
def test_a_search_from_the_last_ones_leaves_finds_the_minimum(
    p: CutProblem, data: st.DataObject
) -> None:
    """A search at new prizes started from the leaves of one at other prizes (a round of the
    column generation after another) finds and bounds the new minimum, and the leaves of
    every search cover each admissible set."""
    masks, _, admissible = _values(p)
    frontier = Frontier()
    price_by_cuts(p, None, 10.0, frontier)
    for leaf in frontier.leaves:
        assert not (leaf.inside & leaf.outside).any()
    covered = np.zeros(len(masks), dtype=int)
    for leaf in frontier.leaves:
        covered += (masks | ~leaf.inside).all(axis=1) & ~(masks & leaf.outside).any(axis=1)
    assert (covered[admissible] >= 1).all()
    n = len(p.prize)
    prize = np.array(data.draw(st.lists(st.floats(-3.0, 3.0), min_size=n, max_size=n)))
    moved = replace(p, prize=prize)
    _, values, _ = _values(moved)
    lower, found, proven = price_by_cuts(moved, None, 10.0, frontier)
    if not admissible.any():
        assert (lower, found, proven) == (-math.inf, [], False)
        return
    least = float(values[admissible].min())
    assert proven and found
    assert least - _slack(p) <= lower <= least + 1e-12
    assert moved.value(found[0]) == pytest.approx(least, abs=_slack(p))


def test_a_frontier_of_another_range_is_not_used() -> None:
    """Leaves made for one size range say nothing of another (a child dropped as too large
    may fit a wider range; here the leaves of range 1..1 miss the optimum of 1..5, 0.9): the
    search starts from the root and keeps its own leaves."""
    p = CutProblem(
        heads=np.array([2, 0, 2, 1, 3, 0, 0, 1]),
        tails=np.array([3, 3, 4, 2, 4, 1, 2, 4]),
        capacity=np.array([1.3, 1.3, 0.0, 1.0, 1.5, 1.5, 1.4, 1.8]),
        gpus=np.ones(5, dtype=int),
        prize=np.array([1.5, 2.5, -0.5, -2.8, -1.9]),
        low=1,
        high=1,
    )
    frontier = Frontier()
    price_by_cuts(p, None, 10.0, frontier)
    assert frontier.range == (1, 1)
    wider = replace(p, high=5)
    lower, _, proven = price_by_cuts(wider, None, 10.0, frontier)
    _, values, admissible = _values(wider)
    assert proven and lower == pytest.approx(float(values[admissible].min()), abs=1e-6)
    assert frontier.range == (1, 5)


@settings(max_examples=100, deadline=None)
@given(p=pricing_problems(), data=st.data())
def test_the_search_finds_the_minimum_over_the_sets_that_keep_its_fixings(
    p: CutProblem, data: st.DataObject
) -> None:
    """With vertices fixed in and out (a node of the branch and price), the search's minimum
    is the brute-force one over the admissible sets that keep the fixings, every set it
    returns keeps them, and with a frontier of the unfixed problem it finds the same."""
    n = len(p.prize)
    side = np.array(data.draw(st.lists(st.sampled_from([-1, 0, 0, 1]), min_size=n, max_size=n)))
    fixed = replace(p, inside=side == 1, outside=side == -1)
    masks, values, admissible = _values(p)
    keeps = (masks | ~(side == 1)).all(axis=1) & ~(masks & (side == -1)).any(axis=1)
    frontier = Frontier()
    price_by_cuts(p, None, 10.0, frontier)
    for given_frontier in (None, frontier):
        lower, found, proven = price_by_cuts(fixed, None, 10.0, given_frontier)
        if not (admissible & keeps).any():
            assert not found and not proven
            continue
        least = float(values[admissible & keeps].min())
        assert proven and found
        assert least - _slack(p) <= lower <= least + 1e-12
        for mask in found:
            assert mask[side == 1].all() and not mask[side == -1].any()
        assert fixed.value(found[0]) == pytest.approx(least, abs=_slack(p))
