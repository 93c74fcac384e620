"""The paper's worked examples and the arnold-paper settings."""

from __future__ import annotations

import pytest

import topoopt
from topoopt.core.status import SolutionStatus
from topoopt.placement import Minipod, Placement, PlacementInstance, evaluate, format_placement
from topoopt.placement.generate import arnold_paper, even_split, seeded_split


def _instance(alpha, free=(2, 2), dp=2, pp=2):
    pods = tuple(Minipod(f"mp{j}", f) for j, f in enumerate(free))
    return PlacementInstance("fig3", pods, dp=dp, tp=8, pp=pp, alpha=alpha)


def test_fig3_trade_off_between_dp_and_pp_alignment():
    """Arnold §3 Fig. 3: a 4-node job over two minipods is DP- or PP-aligned, not both."""
    dp_aligned = Placement(((0, 1), (0, 1)))  # each DP group (column) in one minipod
    pp_aligned = Placement(((0, 0), (1, 1)))  # each PP group (row) in one minipod
    inst = _instance(alpha=0.7)
    assert evaluate(inst, dp_aligned) == pytest.approx(0.3 * 2)
    assert evaluate(inst, pp_aligned) == pytest.approx(0.7 * 2)
    for alpha, expected in ((0.7, dp_aligned), (0.3, pp_aligned)):
        result = topoopt.solve(_instance(alpha), "placement/exact-mip")
        assert result.solution == expected
        assert result.status is SolutionStatus.OPTIMAL


def test_fig12_dp_aligned_placement_of_96_gpus():
    """Appendix F Fig. 12: 96 GPUs on 12 nodes, DP 6, PP 2 -> a 6 x 2 matrix; the DP-aligned
    placement puts each stage in its own minipod and every PP group crosses."""
    inst = _instance(alpha=1.0, free=(6, 6), dp=6, pp=2)
    assert (inst.rows, inst.cols, inst.n_nodes) == (6, 2, 12)
    result = topoopt.solve(inst, "placement/exact-mip")
    assert result.objective == 0.0
    assert result.dp_spread == 0 and result.pp_spread == 2
    assert format_placement(inst, result.solution).count("mp") == 12


def test_paper_settings_shapes():
    by_name = {inst.name: inst for inst in arnold_paper()}
    assert len(by_name) == 27
    shapes = {
        name.split("-")[0]: (i.rows, i.cols, i.n_minipods, i.total_free)
        for name, i in by_name.items()
    }
    assert shapes == {"i": (6, 2, 3, 18), "ii": (12, 8, 5, 438), "iii": (46, 8, 11, 1019)}


def test_splits_are_exact_and_deterministic():
    assert sum(even_split(1019, 11)) == 1019
    assert seeded_split(438, 5, seed=4) == seeded_split(438, 5, seed=4)
    assert sum(seeded_split(438, 5, seed=4)) == 438


@pytest.mark.parametrize("setting", ["i", "ii", pytest.param("iii", marks=pytest.mark.slow)])
def test_exact_mip_proves_paper_settings_and_beats_baselines(setting):
    for inst in arnold_paper():
        if not inst.name.startswith(f"{setting}-"):
            continue
        exact = topoopt.solve(inst, "placement/exact-mip")
        assert exact.status is SolutionStatus.OPTIMAL and exact.gap == 0
        for baseline in (
            "placement/best-fit",
            "placement/gpu-packing",
            "placement/topo-aware",
            "placement/coarse-mip",
        ):
            assert topoopt.solve(inst, baseline).objective >= exact.objective - 1e-9
