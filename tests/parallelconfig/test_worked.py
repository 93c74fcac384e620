"""The worked example of ``docs/parallelconfig.md``, computed by hand: two nodes of 4 GPUs,
``B_intra = 800 Gb/s = 1e11 B/s``, ``B_cross = 80 Gb/s = 1e10 B/s``, 8 layers of 10 ms and
250 MB of gradients, ``A = 100 MB`` per boundary and micro-batch, ``M = 8``, alpha = beta = 1."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import topoopt
from topoopt.cli import main
from topoopt.core.backends import available_backends
from topoopt.core.status import SolutionStatus
from topoopt.parallelconfig import ParallelConfig, evaluate
from topoopt.parallelconfig.generate import worked
from topoopt.parallelconfig.solution import breakdown, from_nodes

# (d, p), node grid, (m, T_comp, T_dp, T_pp) by hand; every stage of p holds 8 / p layers:
# c_s = 0.08 / p s, P_s = 2e9 / p bytes.
BY_HAND = [
    # d = 4 replicas of 2 stages, stage 0 on n0, stage 1 on n1 (the optimum):
    # m = 2; T_comp = (2 + 1) * 0.04 = 0.12; T_dp = 2*3/4 * 1e9 / 1e11 = 0.015 (rings in a
    # node); T_pp = 2 * 1e8 / 1e10 = 0.02 (one cross-node send per replica)
    ((4, 2), [[0, 1]] * 4, (2, 0.12, 0.015, 0.02)),
    # the same (d, p), a replica per node pair packed replica by replica (the greedy):
    # T_dp = 2*3/4 * 1e9 / 1e10 = 0.15; T_pp = 2 * 1e8 / 1e11 = 0.002
    ((4, 2), [[0, 0], [0, 0], [1, 1], [1, 1]], (2, 0.12, 0.15, 0.002)),
    # d = 2, p = 4, a replica per node: m = 4; T_comp = 7 * 0.02 = 0.14;
    # T_dp = 2*1/2 * 5e8 / 1e10 = 0.05; T_pp = 4 * 3 * 1e8 / 1e11 = 0.012
    ((2, 4), [[0, 0, 0, 0], [1, 1, 1, 1]], (4, 0.14, 0.05, 0.012)),
    # d = 2, p = 4, stages 0-1 on n0 and 2-3 on n1: T_dp = 5e8 / 1e11 = 0.005;
    # T_pp = 4 * (1e8 / 1e11 + 1e8 / 1e10 + 1e8 / 1e11) = 0.048
    ((2, 4), [[0, 0, 1, 1]] * 2, (4, 0.14, 0.005, 0.048)),
    # d = 8, p = 1: m = 1; T_comp = 0.08; T_dp = 2*7/8 * 2e9 / 1e10 = 0.35 (8 GPUs, two nodes)
    ((8, 1), [[0]] * 4 + [[1]] * 4, (1, 0.08, 0.35, 0.0)),
    # d = 1, p = 8: m = 8; T_comp = 15 * 0.01 = 0.15; T_pp = 8 * (6 * 1e8/1e11 + 1e8/1e10)
    ((1, 8), [[0, 0, 0, 0, 1, 1, 1, 1]], (8, 0.15, 0.0, 0.128)),
]
OPTIMUM = 0.155
GREEDY = 0.202  # (2, 4), a replica per node


@pytest.mark.parametrize(("config", "grid", "parts"), BY_HAND)
def test_breakdown_by_hand(config, grid, parts) -> None:
    inst = worked()
    got = breakdown(inst, *config, grid)
    m, t_comp, t_dp, t_pp = parts
    assert got.m == m
    assert got.t_comp_s == pytest.approx(t_comp, rel=1e-12)
    assert got.t_dp_s == pytest.approx(t_dp, rel=1e-12)
    assert got.t_pp_s == pytest.approx(t_pp, rel=1e-12)
    assert evaluate(inst, from_nodes(inst, grid)) == pytest.approx(t_comp + t_dp + t_pp, rel=1e-12)


@pytest.mark.parametrize(
    ("solver", "backend", "options"),
    [
        ("parallelconfig/enumerate", None, {}),
        *[
            (solver, b, {"method": m})
            for solver in ("parallelconfig/mip", "parallelconfig/paper-mip")
            for b in available_backends()
            for m in ("split", "joint")
        ],
    ],
)
def test_every_exact_solver_finds_the_hand_optimum(solver, backend, options) -> None:
    result = topoopt.solve(worked(), solver, backend=backend, **options)
    assert result.status is SolutionStatus.OPTIMAL
    assert result.objective == pytest.approx(OPTIMUM, rel=1e-12)
    assert (result.d, result.p) == (4, 2)
    assert result.t_comp_s == pytest.approx(0.12) and result.t_dp_s == pytest.approx(0.015)
    nodes = [
        {gpu.split("/")[0] for gpu in column} for column in zip(*result.solution.grid, strict=True)
    ]
    assert nodes == [{"n0"}, {"n1"}] or nodes == [{"n1"}, {"n0"}]  # each stage in one node


def test_greedy_packs_a_replica_per_node() -> None:
    result = topoopt.solve(worked(), "parallelconfig/greedy")
    assert result.objective == pytest.approx(GREEDY, rel=1e-12)
    assert result.solution == ParallelConfig.of(
        [["n0/0", "n0/1", "n0/2", "n0/3"], ["n1/0", "n1/1", "n1/2", "n1/3"]]
    )
    stage = topoopt.solve(worked(), "parallelconfig/greedy", packing="stage")
    assert stage.objective == pytest.approx(OPTIMUM, rel=1e-12)  # (4, 2) stage-major is optimal


def test_cli_solves_the_worked_example(tmp_path) -> None:
    path = topoopt.save(worked(), tmp_path / "worked.json")
    out = CliRunner().invoke(main, ["solve", str(path), "-s", "parallelconfig/mip", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["objective"] == pytest.approx(OPTIMUM)
    assert (data["d"], data["p"], data["idle_gpus"]) == (4, 2, 0)
    assert data["solution"]["d"] == 4 and len(data["solution"]["grid"]) == 4
    text = CliRunner().invoke(main, ["solve", str(path), "-s", "parallelconfig/enumerate"])
    assert text.exit_code == 0
    assert "d = 4 replicas x p = 2 stages, 8 of 8 GPUs" in text.stdout
    assert (
        "objective 0.155 s per iteration = T_comp 0.12 s + 1 x T_dp 0.015 s + 1 x T_pp 0.02 s"
        in (text.stdout)
    )


def test_fixed_parallelism_keeps_d_and_p() -> None:
    data = worked().to_dict()
    data["parallelism"] = {"d": 2, "p": 4}
    inst = topoopt.load(data)
    for solver in (
        "parallelconfig/enumerate",
        "parallelconfig/mip",
        "parallelconfig/paper-mip",
        "parallelconfig/greedy",
    ):
        result = topoopt.solve(inst, solver)
        assert (result.d, result.p) == (2, 4)
    best = topoopt.solve(inst, "parallelconfig/enumerate")
    assert best.objective == pytest.approx(
        0.193, rel=1e-12
    )  # stages 0-1 on one node, 2-3 on the other
