"""The counting bounds: the Lagrangian never refutes a feasible pair, is never stronger than the
table and equals its definition; the counting floor never exceeds the optimum."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import topoopt
from topoopt.placement.exact_mip import targets
from topoopt.placement.exact_mip.fractional import FractionalCounting, upper_hull
from topoopt.placement.exact_mip.targets import (
    LAGRANGE_STEPS,
    CountingBound,
    LagrangianCounting,
    counting_floor,
    target_pairs,
)
from topoopt.placement.whole_side import _level

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


def _reference_table(instance, size_a: int, size_b: int) -> np.ndarray:
    """The counting table by its definition: for every minipod, every ``(a, b)`` with its gain
    ``min(f, a b)`` (one array operation each)."""
    max_a, max_b = size_a - 1, size_b - 1
    table = np.full((size_a, size_b), -np.inf)
    table[0, 0] = 0.0
    for free in instance.capacities:
        new = table.copy()
        for b in range(1, min(instance.cols, max_b) + 1):
            for a in range(1, min(instance.rows, max_a, -(-free // b)) + 1):
                target = new[a:, b:]
                gain = min(free, a * b)
                np.maximum(target, table[: max_a + 1 - a, : max_b + 1 - b] + gain, out=target)
        table = new
    return np.maximum.accumulate(np.maximum.accumulate(table, axis=0), axis=1)


@given(small_instances(max_cells=40, max_pods=6), st.integers(1, 80), st.integers(1, 80))
def test_sliding_window_table_equals_the_definition(instance, size_a, size_b):
    """The table built with sliding-window maxima equals the one built pair by pair, for
    full and partial sizes."""
    counting = CountingBound(instance)
    full_a, full_b = counting.shape
    for shape in ((full_a, full_b), (min(size_a, full_a), min(size_b, full_b))):
        built = counting._build(*shape)
        assert built is not None
        assert np.array_equal(built, _reference_table(instance, *shape))


@given(small_instances(max_cells=40, max_pods=6))
def test_the_kept_tables_answer_like_a_fresh_build_in_both_orientations(instance):
    """The whole table kept per process equals the definition, and so does the transposed
    job's table, which the cache answers with this one transposed (or the reverse)."""
    transposed = _level(instance.capacities, instance.cols, instance.rows, instance.alpha)
    for first, second in ((instance, transposed), (transposed, instance)):
        targets._FULL_TABLES.clear()
        kept, other = CountingBound(first).full(), CountingBound(second).full()
        assert kept is not None and other is not None
        assert np.array_equal(kept, _reference_table(first, *CountingBound(first).shape))
        assert np.array_equal(other, _reference_table(second, *CountingBound(second).shape))
        assert np.array_equal(CountingBound(first).full(), kept)  # from the cache


def _reference_lagrangian(instance) -> list[tuple[float, np.ndarray]]:
    """The Lagrangian knapsack by its definition: one multiplier and one minipod at a time,
    the gain of every ``b`` recomputed for each."""
    rows, cols = instance.rows, instance.cols
    size = cols * min(rows, instance.n_minipods) + 1
    out = []
    for step in range(LAGRANGE_STEPS + 1):
        lam = cols * step / LAGRANGE_STEPS
        table = np.full(size, -np.inf)
        table[0] = 0.0
        for f in instance.capacities:
            new = table.copy()
            for b in range(1, cols + 1):
                gain = max([0.0] + [min(f, a * b) - lam * a for a in range(min(rows, f) + 1)])
                if gain > 0:
                    np.maximum(new[b:], table[: size - b] + gain, out=new[b:])
            table = new
        out.append((lam, np.maximum.accumulate(table)))
    return out


@given(small_instances(max_cells=40, max_pods=8))
def test_lagrangian_by_capacity_type_equals_the_definition(instance):
    """The knapsack over capacity types, every multiplier at once, equals the one built
    minipod by minipod and multiplier by multiplier (with every ``a`` tried)."""
    built = LagrangianCounting(instance)._tables()
    reference = _reference_lagrangian(instance)
    assert [lam for lam, _ in built] == [lam for lam, _ in reference]
    for (_, got), (_, want) in zip(built, reference, strict=True):
        assert np.array_equal(got, want)


@given(small_instances(max_cells=10, max_pods=5), st.sampled_from([math.inf, 1.0, 2.5]))
def test_counting_floor_never_above_the_optimum(instance, below):
    """The counting floor the walk of ``placement/levels`` bounds classes with is a lower
    bound: never above the oracle's optimum, whatever ``below`` (every pair under the
    first one at ``below`` refuted is a proof that the optimum is at least that pair's)."""
    optimum = topoopt.solve(instance, "placement/enumerate").objective
    assert counting_floor(instance, below) <= optimum + 1e-9


@given(small_instances(max_cells=40, max_pods=8))
def test_fractional_knapsack_is_at_least_the_integral_one(instance):
    """The relaxed knapsack (concave hulls, fractional ``b``) is at least the exact one at
    every multiplier and budget, so it refutes only pairs the Lagrangian refutes."""
    exact, relaxed = LagrangianCounting(instance), FractionalCounting(instance)
    for index, (lam, best) in enumerate(exact._tables()):
        assert relaxed.pieces[index][0] == lam
        for budget, value in enumerate(best):
            if np.isfinite(value):
                assert relaxed.knapsack(budget, index) >= value - 1e-9
    for pair in target_pairs(instance):
        if exact.allows(pair.max_dp_use, pair.max_pp_use):
            assert relaxed.allows(pair.max_dp_use, pair.max_pp_use)


@given(st.lists(st.floats(0, 50, allow_nan=False), min_size=1, max_size=9))
def test_upper_hull_is_concave_and_covers_every_point(values):
    """The hull's pieces are steepest first and pass over every point."""
    points = np.asarray([0.0, *values])
    pieces = upper_hull(points)
    slopes = [slope for slope, _ in pieces]
    assert slopes == sorted(slopes, reverse=True)
    assert sum(length for _, length in pieces) == len(points) - 1
    x, y = 0, 0.0
    heights = [0.0]
    for slope, length in pieces:
        for _ in range(length):
            x, y = x + 1, y + slope
            heights.append(y)
    assert all(h >= p - 1e-9 for h, p in zip(heights, points, strict=True))


@given(small_instances(max_cells=10, max_pods=5))
def test_relaxed_counting_floor_and_exact_mip_stay_exact(instance):
    """Decided by the linear relaxation alone (as above ``LAGRANGE_EXACT_SWITCHES``
    switches), the counting floor is at most the exact floor and the optimum, and
    ``placement/exact-mip`` still finds the optimum."""
    from topoopt.placement.exact_mip import targets

    optimum = topoopt.solve(instance, "placement/enumerate").objective
    exact = counting_floor(instance)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(targets, "LAGRANGE_EXACT_SWITCHES", 0)
        relaxed = counting_floor(instance)
        assert topoopt.solve(instance, "placement/exact-mip").objective == optimum
    assert relaxed <= exact + 1e-9
    assert relaxed <= optimum + 1e-9
