"""The hand-sized trace of ``docs/sim.md`` ("A trace by hand"): its schedule and JCTs,
derived there by hand, are reproduced exactly under FIFO and FIFO with EASY backfilling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from topoopt.cli import main
from topoopt.sim import Job, Simulation, Trace, parse_shape, records

JOBS = [
    Job("a", 0, 16, 100),
    Job("b", 10, 8, 50),
    Job("c", 20, 16, 40),
    Job("d", 30, 4, 10),
    Job("e", 40, 24, 100),
]
SLOW = 1 + 0.043 * (1 / (1 - 0.70 * (1 - 1 / 2)) - 1)  # e's PP group on two minipods
"""Arnold model slowdown of job e: ``1 + c_pp (1 / bw_pp(2) - 1)``, ``bw_pp(2) = 0.65``."""

EXPECTED = {
    # job: (start, end, nodes) under FIFO
    "fifo": {
        "a": (0, 100, ["n0000", "n0001"]),
        "b": (10, 60, ["n0002"]),
        "c": (60, 100, ["n0002", "n0003"]),
        "d": (100, 110, ["n0000"]),
        "e": (100, 100 + 100 * SLOW, ["n0001", "n0002", "n0003"]),
    },
    "fifo-backfill": {
        "a": (0, 100, ["n0000", "n0001"]),
        "b": (10, 60, ["n0002"]),
        "c": (60, 100, ["n0002", "n0003"]),
        "d": (30, 40, ["n0003"]),
        "e": (100, 100 + 100 * SLOW, ["n0000", "n0001", "n0002"]),
    },
}


@pytest.mark.parametrize("policy", sorted(EXPECTED))
def test_the_schedule_derived_by_hand(policy: str) -> None:
    done = records(Simulation(parse_shape("2x2:8"), Trace(list(JOBS)), policy=policy))
    got = {r["job"]: (r["start_s"], r["end_s"], r["nodes"]) for r in done}
    assert got.keys() == EXPECTED[policy].keys()
    for job, (start, end, nodes) in EXPECTED[policy].items():
        assert got[job][0] == start and got[job][1] == pytest.approx(end, abs=1e-9), job
        assert got[job][2] == nodes, job
    devices = {r["job"]: r["devices"] for r in done}
    assert devices["b"] == [list(range(8))] and devices["d"] == [[0, 1, 2, 3]]
    jct = {r["job"]: r["jct_s"] for r in done}
    assert jct["d"] == (80 if policy == "fifo" else 10)
    assert jct["e"] == pytest.approx(60 + 100 * SLOW)


def test_through_the_command_line(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(job) + "\n" for job in _native(JOBS)))
    out = tmp_path / "run"
    args = ["simulate", "--cluster-shape", "2x2:8", "--trace", str(trace)]
    args += ["--policy", "fifo-backfill", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (out / "jobs.jsonl").read_text().splitlines()]
    assert sorted(r["job"] for r in lines) == ["a", "b", "c", "d", "e"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["jct_s"]["mean"] == pytest.approx(
        (100 + 50 + 80 + 10 + 60 + 100 * SLOW) / 5
    )
    busy = 16 * 100 + 8 * 50 + 16 * 40 + 4 * 10 + 24 * 100 * SLOW
    assert summary["summary"]["utilisation"] == pytest.approx(busy / (32 * (100 + 100 * SLOW)))
    # a finished run with the same configuration is kept, not simulated again
    (out / "jobs.jsonl").write_text("kept\n")
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0 and (out / "jobs.jsonl").read_text() == "kept\n"


def _native(jobs: list[Job]) -> list[dict[str, object]]:
    from topoopt.sim.traces.native import job_record

    return [job_record(job) for job in jobs]
