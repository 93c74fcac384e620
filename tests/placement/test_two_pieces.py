"""The combinatorial packing with two pieces per group (``topoopt.placement.exact_mip.two_pieces``)
against the packing integer programme of ``topoopt.placement.exact_mip.sides``, which it replaces
for ``most = 2``; every packing it returns is checked cell by cell."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.placement.exact_mip import sides
from topoopt.placement.exact_mip.two_pieces import pack_two


@st.composite
def packings(draw: st.DrawFn) -> tuple[list[int], int, int]:
    """Free nodes, a group count and a length; half of them tight (the groups need every
    free node), where the waste of the partition must be zero."""
    length = draw(st.integers(1, 12))
    caps = draw(st.lists(st.integers(0, 2 * length + 2), min_size=1, max_size=9))
    if draw(st.booleans()):
        caps[-1] += -sum(caps) % length
        return caps, sum(caps) // length, length
    return caps, draw(st.integers(1, sum(caps) // length + 1)), length


def _mip(caps: list[int], n_groups: int, length: int) -> object:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sides, "pack_two", lambda *args: None)
        return sides.pack(caps, n_groups, length, 2)


@settings(max_examples=100, deadline=None)
@given(packings())
def test_pack_two_equals_the_packing_programme(case):
    assert_pack_two_is_the_programme(*case)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(packings())
def test_pack_two_equals_the_packing_programme_many(case):
    assert_pack_two_is_the_programme(*case)


def assert_pack_two_is_the_programme(caps: list[int], n_groups: int, length: int) -> None:
    found = pack_two(caps, n_groups, length)
    assert found is not None
    assert (found is False) == (_mip(caps, n_groups, length) is False)
    if found is not False:
        assert [len(group) for group in found] == [length] * n_groups
        assert all(len(set(group)) <= 2 for group in found)
        assert all(sum(group.count(j) for group in found) <= f for j, f in enumerate(caps))


def test_small_minipods_need_large_ones_beside_them():
    """Groups of 10: 4 + 3 + 3 would hold one group only in three pieces, but next to a
    minipod of 20 the three small ones each take one piece of a group."""
    assert pack_two([4, 3, 3], 1, 10) is False
    groups = pack_two([20, 4, 3, 3], 3, 10)
    assert groups and all(len(set(group)) == 2 for group in groups)


def test_a_full_cluster_of_issue_14_packs_at_once():
    """``uneven-16x128-r64c12-s15-5``: the 12 columns of 64 cells fill all 16 minipods; the
    packing programme took 28.6 s in HiGHS."""
    caps = [128, 119, 102, 90, 88, 80, 44, 41, 21, 18, 14, 7, 6, 6, 2, 2]
    groups = pack_two(caps, 12, 64)
    assert groups and all(len(set(group)) <= 2 for group in groups)
    assert [sum(group.count(j) for group in groups) for j in range(16)] == caps
