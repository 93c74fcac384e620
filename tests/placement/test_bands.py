"""Bands of lines cut into strips (:mod:`topoopt.placement.exact_mip.bands`): exact for the
shape against brute force, within capacities and targets, and the construction that proves
the benchmark's 16 x 8 job; ``exact-mip``'s ``bound_only`` keeps its bound."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.errors import InvalidOptionError
from topoopt.placement import PlacementInstance, check
from topoopt.placement.exact_mip import bands
from topoopt.placement.exact_mip.targets import target_pairs
from topoopt.placement.solution import Placement

from .strategies import small_instances, tight_instances


def _band_shaped(matrix: list[list[int]], groups: int, strips: int) -> bool:
    """Whether a ``length x width`` matrix is a band cut: its lines take at most ``groups``
    distinct values (a band's lines are equal: every position of the width sits on one
    minipod per band) and each line at most ``strips`` minipods."""
    return len({tuple(line) for line in matrix}) <= groups and all(
        len(set(line)) <= strips for line in matrix
    )


@settings(max_examples=150, deadline=None)
@given(
    caps=st.lists(st.integers(0, 6), min_size=1, max_size=3),
    length=st.integers(1, 3),
    width=st.integers(1, 3),
    groups=st.integers(1, 3),
    strips=st.integers(1, 3),
)
def test_cut_exists_exactly_when_some_placement_is_band_shaped(caps, length, width, groups, strips):
    """With every band size and every minipod allowed, the programme finds a cut exactly
    when brute force over every matrix within the capacities finds a band-shaped one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bands, "SIZE_SLACK", length)
        patch.setattr(bands, "MAX_MINIPODS_PER_STRIP", len(caps) + 1)
        found = bands.cut(caps, length, width, groups, strips, math.inf)
    exists = False
    for cells in itertools.product(range(len(caps)), repeat=length * width):
        if any(cells.count(j) > f for j, f in enumerate(caps)):
            continue
        matrix = [list(cells[i * width : (i + 1) * width]) for i in range(length)]
        if _band_shaped(matrix, groups, strips):
            exists = True
            break
    assert (found is not None) == exists
    if found is not None:
        assert _band_shaped(found, groups, strips)
        assert all(sum(line.count(j) for line in found) <= f for j, f in enumerate(caps))


@settings(max_examples=50, deadline=None)
@given(st.one_of(small_instances(max_cells=24, max_pods=6), tight_instances(max_cells=24)))
def test_realise_respects_capacities_and_targets(instance):
    for pair in target_pairs(instance):
        a, b = pair.max_dp_use, pair.max_pp_use
        matrix = bands.realise(instance.capacities, instance.rows, instance.cols, a, b, 10)
        if matrix is None:
            continue
        found = Placement.from_rows(matrix)
        assert check(instance, found) == []
        assert all(len(set(col)) <= a for col in found.columns())
        assert all(len(set(row)) <= b for row in found.matrix)


def test_bands_realise_what_the_greedy_guillotine_misses():
    """A group of 16 racks of the levels benchmark (16 x 8 job, seed 0): columns on at most 3
    racks and rows on at most 4 need four bands of two columns on racks of 7 + 5 + 4 and
    6 + 6 + 4 pairs of nodes; the greedy guillotine gives the first bands the largest racks
    and cannot cover the last."""
    from topoopt.placement.exact_mip.targets import guillotine

    caps = [14, 14, 13, 12, 12, 12, 11, 11, 9, 9, 9, 8, 8, 8, 6, 4]
    inst = PlacementInstance("group", caps, dp=16, tp=8, pp=8, alpha=0.5)
    assert guillotine(inst, 3, 4) is None
    matrix = bands.realise(caps, 16, 8, 3, 4, 10)
    assert matrix is not None
    found = Placement.from_rows(matrix)
    assert check(inst, found) == []
    assert topoopt.placement.evaluate(inst, found) == pytest.approx(3.5)


@settings(max_examples=60, deadline=None)
@given(tight_instances(max_cells=24))
def test_bound_only_keeps_the_bound(instance):
    """``bound_only`` skips the constructions, not the exact tests: the same optimum as the
    enumeration, proven."""
    oracle = topoopt.solve(instance, "placement/enumerate")
    result = topoopt.solve(instance, "placement/exact-mip", bound_only=True)
    assert result.status.label == "optimal", result.message
    assert result.bound == pytest.approx(oracle.objective)
    assert result.objective == pytest.approx(oracle.objective)


def test_bound_only_must_be_a_bool():
    inst = PlacementInstance("x", [4, 4], dp=2, tp=8, pp=2, alpha=0.5)
    with pytest.raises(InvalidOptionError, match="bound_only"):
        topoopt.solve(inst, "placement/exact-mip", bound_only="yes")


def test_bands_prove_the_128_node_job() -> None:
    """The benchmark's 16 x 8 job on the 16,384-node tree of seed 0: the walk stopped at rack
    score 4.0 against the bound 3.5 before the bands realised ``(3, 4)`` in a group."""
    from topoopt.placement.generate import levels_tree

    instance = levels_tree(seed=0, rows=16, cols=8)[0]
    result = topoopt.solve(instance, "placement/levels", time_limit=60, threads=1)
    assert result.metrics["leaf_score"] == result.metrics["leaf_bound"] == 3.5
    assert result.status.label == "optimal"
