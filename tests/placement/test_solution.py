"""evaluate(), check(), rank order and the solution's JSON form."""

from __future__ import annotations

import pytest

from topoopt.core.errors import InvalidSolutionError
from topoopt.placement import Minipod, Placement, PlacementInstance, check, evaluate, rank_order
from topoopt.placement.solution import from_dict, node_rank, spread, to_dict

INST = PlacementInstance("t", (Minipod("a", 3), Minipod("b", 3)), dp=3, tp=8, pp=2, alpha=0.25)


def test_spread_counts_distinct_minipods_only_from_two():
    assert [spread(g) for g in ([0], [1, 1], [0, 1], [0, 1, 2, 2])] == [0, 0, 2, 3]


def test_evaluate_weighs_dp_with_alpha_and_pp_with_beta():
    rows_in_one_pod = Placement(((0, 0), (0, 0), (1, 1)))  # DP groups span 2, PP groups 1
    assert evaluate(INST, rows_in_one_pod) == pytest.approx(0.25 * 2)
    cols_in_one_pod = Placement(((0, 1), (0, 1), (0, 1)))  # DP 1, PP 2
    assert evaluate(INST, cols_in_one_pod) == pytest.approx(0.75 * 2)


def test_check_reports_every_broken_rule():
    assert check(INST, Placement(((0, 1), (0, 1), (0, 1)))) == []
    assert "must be 3 x 2" in check(INST, Placement(((0, 1), (0, 1))))[0]
    over = check(INST, Placement(((0, 0), (0, 0), (1, 1))))
    assert over == ["minipod 'a' hosts 4 nodes but has 3 free"]
    assert "names minipod 5" in check(INST, Placement(((0, 1), (0, 1), (5, 1))))[0]


def test_rank_order_follows_megatron_and_keeps_minipod_ranks_contiguous():
    placement = Placement(((0, 1), (0, 1), (0, 1)))
    assert [node_rank(INST, r, 0) for r in range(3)] == [0, 1, 2]
    assert rank_order(INST, placement) == ["a/n0", "a/n1", "a/n2", "b/n0", "b/n1", "b/n2"]


def test_solution_json_round_trip_and_bad_input():
    placement = Placement(((0, 1), (0, 1), (0, 1)))
    data = to_dict(INST, placement)
    assert data["matrix"] == [[0, 1], [0, 1], [0, 1]]
    assert from_dict(INST, data) == placement
    with pytest.raises(InvalidSolutionError, match="matrix"):
        from_dict(INST, {"matrix": [[0, "x"]]})
