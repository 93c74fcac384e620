"""Blocks in the split's switches (:mod:`topoopt.placement.split_blocks`) against the oracle
of the whole tree: every placement fits, keeps the split level at its optimum and scores what
it claims below it, never better than the oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.placement import PlacementInstance
from topoopt.placement.generate import tree_instance
from topoopt.placement.split_blocks import (
    Frontier,
    columns_balanced,
    columns_greedy,
    realise_blocks,
)

from .strategies import arnold_d, group_and_rack_spreads, racks_by_group

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def spanning(draw: st.DrawFn) -> PlacementInstance:
    """One pod of 2-4 groups of 1-3 racks (0-4 free nodes), a job of 4-9 cells with at
    least 2 rows and 2 columns that no group holds."""
    groups = draw(
        st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=3), min_size=2, max_size=4)
    )
    rows = draw(st.integers(2, 4))
    cols = draw(st.integers(2, 9 // rows))
    cells = rows * cols
    for racks in groups:
        while sum(racks) >= cells:
            racks[racks.index(max(racks))] -= 1
    assume(sum(map(sum, groups)) >= cells)
    alpha = draw(st.sampled_from([0.3, 0.5, 0.7]))
    return tree_instance("b", [groups], rows=rows, cols=cols, alpha=alpha)


@SETTINGS
@given(spanning())
def test_blocks_fit_keep_the_split_optimum_and_score_what_they_claim(
    instance: PlacementInstance,
) -> None:
    """Given the group level at its lex optimum, a placement of the blocks fits the free
    nodes, scores that optimum at the group level, has rack spreads within its target and
    is never better than the oracle at the rack level."""
    oracle = topoopt.solve(instance, "placement/enumerate")
    upper, best = oracle.metrics["level1_score"], oracle.metrics["leaf_score"]
    children = racks_by_group(instance)
    frontier = Frontier(children)
    found = realise_blocks(frontier, instance.rows, instance.cols, instance.alpha, upper, 0.0,
                           math.inf)  # fmt: skip
    if found is None:
        return
    free = frontier.children
    used = np.zeros((len(free), max(map(len, free))), dtype=int)
    for g, k in found.grid.reshape(-1, 2):
        used[g, k] += 1
    assert all(used[g, k] <= f for g, kids in enumerate(free) for k, f in enumerate(kids))
    a1, b1, a2, b2 = group_and_rack_spreads(found.grid)
    alpha = instance.alpha
    assert alpha * arnold_d(a1) + (1 - alpha) * arnold_d(b1) == pytest.approx(upper)
    assert a2 <= found.max_dp_use and b2 <= found.max_pp_use
    assert alpha * arnold_d(a2) + (1 - alpha) * arnold_d(b2) <= found.score + 1e-9
    assert found.score >= best - 1e-9


@settings(max_examples=60, deadline=None)
@given(
    caps=st.lists(st.integers(0, 9), min_size=1, max_size=8),
    h=st.integers(1, 6),
    w=st.integers(1, 4),
)
def test_columns_greedy_fits_and_counts_its_spread(caps: list[int], h: int, w: int) -> None:
    """The greedy column packing uses each child within its free nodes and reports the most
    children a column touches."""
    assume(sum(caps) >= h * w)
    most, placement = columns_greedy(caps, h, w)
    matrix = np.asarray(placement.matrix)
    assert matrix.shape == (h, w)
    counts = np.bincount(matrix.ravel(), minlength=len(caps))
    assert all(counts[j] <= caps[j] for j in range(len(caps)))
    assert most == max(len(set(matrix[:, c].tolist())) for c in range(w))


def test_two_by_two_blocks_beat_filling_the_groups() -> None:
    """Four groups of racks 2, 2 hold a 4 x 2 job as 2 x 2 blocks of 2 x 1 cells (group
    pair (2, 2)), each block a column on one rack: racks (2, 2) where a group's two racks
    both hold a column touch the same."""
    frontier = Frontier([[2, 2], [2, 2], [2, 2], [2, 2]])
    found = realise_blocks(frontier, 4, 2, 0.5, 2.0, 0.0, math.inf)
    assert found is not None and found.score == 2.0


@settings(max_examples=60, deadline=None)
@given(
    caps=st.lists(st.integers(0, 9), min_size=1, max_size=8),
    h=st.integers(1, 6),
    w=st.integers(1, 4),
    a=st.integers(1, 4),
)
def test_columns_balanced_fits_within_its_target(caps: list[int], h: int, w: int, a: int) -> None:
    """A balanced column packing uses each child within its free nodes and every column on
    at most ``a`` children."""
    placement = columns_balanced(caps, h, w, a)
    if placement is None:
        return
    matrix = np.asarray(placement.matrix)
    counts = np.bincount(matrix.ravel(), minlength=len(caps))
    assert all(counts[j] <= caps[j] for j in range(len(caps)))
    assert max(len(set(matrix[:, c].tolist())) for c in range(w)) <= a
