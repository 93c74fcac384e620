"""The worked example of ``docs/ocs.md``, computed by hand.

Three pods p0, p1, p2 of 8 OXC ports (one circuit each), ``B_oxc = 100 Gb/s = 12.5e9 B/s``,
ToRs of 1600 Gb/s = 2e11 B/s, ``delta = 0.2 ms``; j0 RAR on all three pods (2 GPUs each,
F = 1 GB, 50 ms), j1 PS on p1, p2 (2 GPUs each, F = 1 GB, 40 ms, aggregation 2 ms, server
free), j2 A2A on p0, p2 (1 GPU each, F = 0.5 GB, 30 ms).

* Group 1 = {j0}: the ring p0-p1-p2 puts 2F = 2e9 bytes on each of its three pairs; each pod
  splits its 8 circuits 4 + 4, so 2e9 / (4 · 12.5e9) = 0.04 s (ToR: 4e9 / 2e11 = 0.02 s).
* Group 2 = {j1 (server p1), j2}: p1-p2 carries 2 GPUs · 1 GB = 2e9 bytes, p0-p2 carries
  1 · 1 · 0.5 GB / (2 - 1) each way = 1e9 bytes; p2 splits 8 circuits as 5 + 3:
  max(2e9 / (5 · 12.5e9), 1e9 / (3 · 12.5e9)) = max(0.032, 0.0267) = 0.032 s (6 + 2 gives
  0.04 s, 4 + 4 gives 0.04 s).
* Round: max(0.05, 0.0322) + max(0.04, 0.0402) + max(0.05, 0.0322) + max(0.03, 0.0402)
  = 0.1804 s (phase 4: group 2 computes max(t_agg 0.002, A2A 0.03)).
* No TDM: p0-p1 2e9, p0-p2 3e9, p1-p2 4e9 bytes at once; tau = 0.08 s with 2 + 3 + 4 circuits
  (p2 uses 7 of 8; 0.064 s would need 3 + 4 + 5 = 9 at p2); the round is
  max(0.05, 0) + (0.08 + 0.0002) + max(0.05, 0) + (0.08 + 0.0002) = 0.2604 s.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import topoopt
from topoopt.cli import main
from topoopt.core.status import SolutionStatus
from topoopt.ocs import FAMILY, Compute, Job, evaluate
from topoopt.ocs.generate import worked, worked_schedule
from topoopt.ocs.phases import comm_time, min_circuits
from topoopt.ocs.solution import describe, group_demand, metrics, no_tdm_round, phases, schedule

OPTIMUM = 0.1804
NO_TDM = 0.2604
PHASES = (0.05, 0.0402, 0.05, 0.0402)
CHOICES = {0: (0, 1, 2), 1: 1, 2: None}
DESCRIBE = """\
objective 0.1804 s per round = phase 1 0.05 + phase 2 0.0402 + phase 3 0.05 + phase 4 0.0402
  (paper eq. 1; lower is better); no TDM 0.2604 s, speed-up x1.443
  iterations/s: j0 11.09, j1 5.543, j2 11.09 (PS 1, RAR and A2A 2 per round)
group 1: j0 (RAR ring p0-p1-p2)
group 2: j1 (PS server p1), j2 (A2A)
phase 1: group 1 computes 0.05 s | group 2 communicates 0.032 s + delta 0.0002 s | 0.05 s
phase 2: group 2 computes 0.04 s | group 1 communicates 0.04 s + delta 0.0002 s | 0.0402 s
phase 3: group 1 computes 0.05 s | group 2 communicates 0.032 s + delta 0.0002 s | 0.05 s
phase 4: group 2 computes 0.03 s | group 1 communicates 0.04 s + delta 0.0002 s | 0.0402 s
circuits, phases 2 and 4: p0-p1 4, p0-p2 4, p1-p2 4
circuits, phases 1 and 3: p0-p2 3, p1-p2 5"""


def test_group_traffic_and_best_circuits_by_hand() -> None:
    inst = worked()
    assert inst.circuit_bps == 12.5e9 and inst.tor_bps == (2e11,) * 3
    ring = group_demand(inst, CHOICES, [0])
    assert ring.pairs == {(0, 1): 2e9, (1, 2): 2e9, (0, 2): 2e9}
    comm = comm_time(ring, inst.circuit_budget, inst.circuit_bps, inst.tor_bps)
    assert comm is not None
    assert comm.circuits == {(0, 1): 4, (1, 2): 4, (0, 2): 4}
    assert comm.oxc_s == pytest.approx(0.04, rel=1e-12)
    assert comm.tor_s == pytest.approx(0.02, rel=1e-12)
    two = group_demand(inst, CHOICES, [1, 2])
    assert two.pairs == {(1, 2): 2e9, (0, 2): 1e9}
    comm = comm_time(two, inst.circuit_budget, inst.circuit_bps, inst.tor_bps)
    assert comm is not None
    assert comm.circuits == {(1, 2): 5, (0, 2): 3}
    assert comm.time_s == pytest.approx(0.032, rel=1e-12)


def test_worked_schedule_phases_by_hand() -> None:
    inst, sched = worked(), worked_schedule()
    assert sched.groups == (1, 2, 2)
    assert sched.servers == {"j1": "p1"} and sched.rings == {"j0": ("p0", "p1", "p2")}
    got = phases(inst, sched)
    assert [p.duration_s for p in got] == pytest.approx(PHASES, rel=1e-12)
    assert [p.compute_s for p in got] == pytest.approx([0.05, 0.04, 0.05, 0.03], rel=1e-12)
    assert [p.comm_s for p in got] == pytest.approx([0.032, 0.04, 0.032, 0.04], rel=1e-12)
    assert evaluate(inst, sched) == pytest.approx(OPTIMUM, rel=1e-12)


def test_oracle_finds_the_hand_optimum() -> None:
    result = topoopt.solve(worked(), "ocs/enumerate")
    assert result.status is SolutionStatus.OPTIMAL
    assert result.objective == pytest.approx(OPTIMUM, rel=1e-12)
    assert result.bound == result.objective
    assert result.solution.groups == (1, 2, 2)
    assert result.solution.servers == {"j1": "p1"}
    assert result.solution == worked_schedule()
    assert result.solution.circuits == worked_schedule().circuits


@pytest.mark.parametrize(
    ("solver", "opts"),
    [
        ("ocs/hill-climb", {}),
        ("ocs/hill-climb-paper", {"routing": "best-response"}),
        ("ocs/hill-climb-paper", {"routing": "algorithm2"}),
        ("ocs/oxc-greedy", {}),
    ],
)
def test_heuristics_find_the_hand_optimum(solver: str, opts: dict) -> None:
    result = topoopt.solve(worked(), solver, **opts)
    assert result.objective == pytest.approx(OPTIMUM, rel=1e-12)
    groups = result.solution.groups
    assert groups in ((1, 2, 2), (2, 1, 1))  # the ring alone, either way round


def test_no_tdm_by_hand() -> None:
    inst = worked()
    joint = group_demand(inst, CHOICES, [0, 1, 2])
    assert joint.pairs == {(0, 1): 2e9, (0, 2): 3e9, (1, 2): 4e9}
    best = min_circuits(joint.pairs, inst.circuit_budget, inst.circuit_bps)
    assert best is not None
    tau, circuits = best
    assert tau == pytest.approx(0.08, rel=1e-12)
    assert circuits == {(0, 1): 2, (0, 2): 3, (1, 2): 4}
    assert no_tdm_round(inst, CHOICES) == pytest.approx(NO_TDM, rel=1e-12)
    alone = schedule(inst, [1, 1, 1], CHOICES)
    assert alone is not None and evaluate(inst, alone) == pytest.approx(NO_TDM, rel=1e-12)
    result = topoopt.solve(inst, "ocs/no-tdm")
    assert result.objective == pytest.approx(NO_TDM, rel=1e-12)
    assert result.solution.groups == (1, 1, 1)


def test_no_tdm_describe_by_hand() -> None:
    result = topoopt.solve(worked(), "ocs/no-tdm")
    text = describe(worked(), result.solution)
    assert text.splitlines()[1:] == [
        "  (paper eq. 1; lower is better); no TDM 0.2604 s, speed-up x1",
        "  iterations/s: j0 7.68, j1 3.84, j2 7.68 (PS 1, RAR and A2A 2 per round)",
        "group 1: j0 (RAR ring p0-p1-p2), j1 (PS server p1), j2 (A2A)",
        "group 2: no job",
        "phase 1: group 1 computes 0.05 s | group 2 has no job | 0.05 s",
        "phase 2: group 2 has no job | group 1 communicates 0.08 s + delta 0.0002 s | 0.0802 s",
        "phase 3: group 1 computes 0.05 s | group 2 has no job | 0.05 s",
        "phase 4: group 2 has no job | group 1 communicates 0.08 s + delta 0.0002 s | 0.0802 s",
        "circuits, phases 2 and 4: p0-p1 2, p0-p2 3, p1-p2 4",
        "circuits, phases 1 and 3: none",
    ]


def test_family_size_and_tags() -> None:
    assert FAMILY.size(worked()) == {"pods": 3, "jobs": 3, "gpus": 12}
    assert FAMILY.tags(worked()) == {"job_mix": "PS1/RAR1/A2A1", "suite": "worked"}


def test_metrics_and_speedup_by_hand() -> None:
    m = metrics(worked(), worked_schedule())
    assert m["round_s"] == pytest.approx(OPTIMUM, rel=1e-12)
    assert [m[f"phase_{p}_s"] for p in range(1, 5)] == pytest.approx(PHASES, rel=1e-12)
    assert m["comm_group1_s"] == pytest.approx(0.04, rel=1e-12)
    assert m["comm_group2_s"] == pytest.approx(0.032, rel=1e-12)
    assert m["group2_jobs"] == 2.0
    assert m["no_tdm_round_s"] == pytest.approx(NO_TDM, rel=1e-12)
    assert m["tdm_speedup"] == pytest.approx(NO_TDM / OPTIMUM, rel=1e-12)
    assert m["iterations_per_s.j1"] == pytest.approx(1 / OPTIMUM, rel=1e-12)


def test_describe_by_hand() -> None:
    assert describe(worked(), worked_schedule()) == DESCRIBE


def test_cli_solves_the_worked_example(tmp_path) -> None:
    path = topoopt.save(worked(), tmp_path / "worked.json")
    text = CliRunner().invoke(main, ["solve", str(path), "-s", "ocs/enumerate"])
    assert text.exit_code == 0, text.output
    assert DESCRIBE in text.stdout
    out = CliRunner().invoke(main, ["solve", str(path), "-s", "ocs/enumerate", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["status"] == "optimal"
    assert data["objective"] == pytest.approx(OPTIMUM, rel=1e-12)
    assert data["round_s"] == pytest.approx(OPTIMUM, rel=1e-12)
    assert data["no_tdm_round_s"] == pytest.approx(NO_TDM, rel=1e-12)
    assert data["tdm_speedup"] == pytest.approx(NO_TDM / OPTIMUM, rel=1e-12)
    assert data["iterations_per_s.j0"] == pytest.approx(2 / OPTIMUM, rel=1e-12)
    assert data["solution"]["groups"] == {"j0": 1, "j1": 2, "j2": 2}
    assert data["solution"]["servers"] == {"j1": "p1"}
    assert data["solution"]["circuits"][0] == [[0, 0, 3], [0, 0, 5], [3, 5, 0]]
    assert data["solution"]["circuits"][1] == [[0, 4, 4], [4, 0, 4], [4, 4, 0]]
    again = CliRunner().invoke(main, ["solve", str(path), "-s", "ocs/no-tdm", "--json"])
    assert json.loads(again.stdout)["objective"] == pytest.approx(NO_TDM, rel=1e-12)


@pytest.mark.parametrize(("recomputation", "k"), [(False, 6), (True, 8)])
def test_eq7_training_time(recomputation: bool, k: int) -> None:
    tokens, params, flops, eff = 4096.0, 1e9, 1e15, 0.4
    compute = Compute(tokens, params, flops, eff, recomputation=recomputation)
    assert compute.k == k
    assert compute.t_train_s == pytest.approx(k * tokens * params / (flops * eff), rel=1e-12)
    job = Job("j", "RAR", {"p0": 1, "p1": 1}, 1e9, compute=compute)
    assert job.t_train_s == compute.t_train_s
    data = worked().to_dict()
    data["jobs"][0].pop("t_train_s")
    data["jobs"][0]["compute"] = compute.to_dict()
    inst = topoopt.load(data)
    assert inst.jobs[0].t_train_s == pytest.approx(k * 4096 * 1e9 / 4e14, rel=1e-12)
    assert inst.jobs[0].compute == compute
    assert ("recomputation" in compute.to_dict()) == recomputation


def test_eq7_by_hand() -> None:
    assert Compute(4096, 1e9, 1e15, 0.5).t_train_s == pytest.approx(0.049152, rel=1e-12)
    assert Compute(4096, 1e9, 1e15, 0.5, True).t_train_s == pytest.approx(0.065536, rel=1e-12)
