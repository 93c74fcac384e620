"""``topoopt simulate`` on bad input: one ``error:`` line naming what is wrong, exit 2; with
``--skip-bad`` the bad jobs are recorded as rejected; a real Slurm topology as the cluster."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from topoopt.cli import main

ROOT = Path(__file__).resolve().parents[2]
HEADER = "#job id,arrival time (sec),topology,shape,size,duration (sec)\n"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["simulate", *args])
    return result.exit_code, result.output


def test_bad_command_lines(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "1,0,CLOS,1,1,10\n2,3,CLOS,4,4,-1\n")
    out = str(tmp_path / "run")
    cases = [
        ((["--trace", str(trace), "--out", out]), "give one of --cluster FILE or --cluster-shape"),
        (["--cluster-shape", "2x2", "--out", out], "give one of --trace FILE or --synthetic N"),
        (["--cluster-shape", "2xtwo", "--synthetic", "3", "--out", out], "cluster shape: '2xtwo'"),
        (
            ["--cluster-shape", "2x2", "--synthetic", "3", "--policy", "fofo", "--out", out],
            "unknown queue policy 'fofo'",
        ),
        (
            ["--cluster-shape", "2x2", "--trace", str(trace), "--out", out],
            f"{trace}:3: duration (sec): must be >= 0",
        ),
        (
            ["--cluster-shape", "2x2", "--synthetic", "3", "--placement", "nope", "--out", out],
            "nope",
        ),
        (
            ["--cluster-shape", "2x2", "--synthetic", "3", "--dispatch", "nope", "--out", out],
            "nope",
        ),
        (
            ["--cluster-shape", "2x2", "--synthetic", "3", "--reserve", "j0", "--out", out],
            "--reserve: 'j0': write JOB@SECONDS",
        ),
        (
            ["--cluster-shape", "2x2", "--synthetic", "3", "--reserve", "x@0", "--out", out],
            "reservation: job 'x' is not a runnable job of the trace",
        ),
    ]
    for args, words in cases:
        code, output = _run(*args)
        assert code == 2, (args, output)
        assert output.startswith("error: ") and output.count("\n") == 1, output
        assert words in output, output


def test_skip_bad_records_the_rejected_job(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "1,0,CLOS,1,1,10\n2,3,CLOS,4,4,-1\n3,4,CLOS,64,64,5\n")
    out = tmp_path / "run"
    code, output = _run(
        "--cluster-shape", "2x2", "--trace", str(trace), "--skip-bad", "--out", str(out)
    )
    assert code == 0, output
    records = {r["job"]: r for r in map(json.loads, (out / "jobs.jsonl").read_text().splitlines())}
    assert records["1"]["status"] == "finished"
    assert records["2"]["status"] == "rejected" and "must be >= 0" in records["2"]["reason"]
    assert records["3"]["status"] == "rejected" and "whole nodes" in records["3"]["reason"]


def test_a_slurm_topology_as_the_cluster(tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, output = _run(
        "--cluster", str(ROOT / "examples" / "slurm" / "topology.conf"),
        "--pod-level", "1", "--synthetic", "40", "--load", "0.9",
        "--placement", "exact-mip", "--policy", "spf-backfill", "--out", str(out),
    )  # fmt: skip
    assert code == 0, output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["finished"] == 40
    assert summary["config"]["placement"] == "placement/exact-mip"
