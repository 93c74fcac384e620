"""The ``topoopt instances``, ``topoopt bench`` and ``topoopt report`` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from topoopt.bench.records import read_records
from topoopt.cli import main


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_generate_writes_a_suite_and_check_accepts_it(tmp_path: Path) -> None:
    code, out = _run(
        "instances",
        "generate",
        "placement",
        "--suite",
        "random-small",
        "--seed",
        "3",
        "--out",
        str(tmp_path),
        "--count",
        "4",
        "--max-cells=6",
    )
    assert code == 0, out
    assert "wrote 4 placement instances" in out
    assert len(list(tmp_path.glob("*.json"))) == 4
    code, out = _run("instances", "check", str(tmp_path))
    assert (code, out.strip()) == (0, "4 file(s) valid")


def test_generate_is_deterministic(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        _run(
            "instances",
            "generate",
            "placement",
            "--suite",
            "arnold-paper",
            "--seed",
            "0",
            "--out",
            str(tmp_path / folder),
        )
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert len(files) == 27
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["nope", "--suite", "x"], "unknown family 'nope'"),
        (["placement", "--suite", "nope"], "placement has no generator 'nope'"),
        (
            ["placement", "--suite", "random-small", "--bogus", "1"],
            "unknown option(s) bogus for random-small; known: --count, --max-cells, --max-minipods",
        ),
        (["placement", "--suite", "random-small", "--count"], "option --count needs a value"),
    ],
)
def test_generate_rejects_bad_input(tmp_path: Path, args: list[str], words: str) -> None:
    code, out = _run("instances", "generate", *args, "--out", str(tmp_path))
    assert code == 2
    assert words in out


def test_check_prints_one_line_per_problem(suite: Path) -> None:
    (suite / "broken.json").write_text("{")
    (suite / "bad-alpha.json").write_text(
        json.dumps(
            {
                "family": "placement",
                "name": "x",
                "alpha": 3,
                "topology": {"minipods": [{"name": "a", "free_nodes": 4}]},
                "job": {"dp": 4, "tp": 8, "pp": 1},
            }
        )
    )
    code, out = _run("instances", "check", str(suite), str(suite / "fig12-two-pods.json"))
    assert code == 2
    lines = out.strip().splitlines()
    assert lines[0] == f"{suite / 'bad-alpha.json'}: alpha: must lie in [0, 1], got 3"
    assert lines[1].startswith(f"{suite / 'broken.json'}: not valid JSON")
    assert lines[2].endswith(
        "fig12-two-pods.json: instance name 'fig12-two-pods' also used by "
        f"{suite / 'fig12-two-pods.json'}"
    )
    assert lines[3] == "3 problem(s) in 5 file(s)"


def test_bench_then_report(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    code, text = _run(
        "bench",
        str(suite),
        "--solvers",
        "best-fit,placement/exact-mip",
        "--backends",
        "highs,scip",
        "--time-limit",
        "20",
        "--jobs",
        "2",
        "--out",
        str(out),
        "--no-progress",
    )
    assert code == 0, text
    assert "6 run(s) recorded" in text
    records = read_records(out)
    assert sorted((r["instance"], r["solver"], r["backend"]) for r in records) == [
        (name, solver, backend)
        for name in ("fig12-two-pods", "three-by-three")
        for solver, backend in (
            ("placement/best-fit", None),
            ("placement/exact-mip", "highs"),
            ("placement/exact-mip", "scip"),
        )
    ]
    assert {r["suite"] for r in records} == {"tiny"}

    code, text = _run("report", str(out), "--out", str(tmp_path / "rep"), "--shift", "10")
    assert code == 0, text
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## placement / tiny" in md and "time SGM (s, shift 10)" in md
    assert (tmp_path / "rep" / "report.html").exists()
    assert len(list((tmp_path / "rep" / "figures").glob("*.png"))) == 3


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--solvers", "no-such"], "solver 'no-such' matches no solver"),
        (["--solvers", "exact-mip", "--backends", "cplex"], "unknown MIP backend 'cplex'"),
        (["--seeds", "a,b"], "expected comma-separated integers"),
        (["--time-limit", "0"], "time_limit: must be positive"),
        (["--executor", "dask"], "--executor dask needs --scheduler"),
        (["--plugin", "no_such_module"], "plugin 'no_such_module' cannot be imported"),
    ],
)
def test_bench_rejects_bad_input(suite: Path, tmp_path: Path, args: list[str], words: str) -> None:
    code, out = _run("bench", str(suite), *args, "--out", str(tmp_path / "r.jsonl"))
    assert code == 2
    assert words in out
    assert not (tmp_path / "r.jsonl").exists()


def test_bench_lists_every_invalid_instance(suite: Path, tmp_path: Path) -> None:
    (suite / "broken.json").write_text("[]")
    code, out = _run("bench", str(suite), "--out", str(tmp_path / "r.jsonl"))
    assert code == 2
    assert "invalid instance files:" in out and "broken.json" in out


def test_report_of_nothing_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "r.jsonl"
    empty.write_text("")
    code, out = _run("report", str(empty), "--out", str(tmp_path / "rep"))
    assert code == 2 and "no records" in out


def test_list_shows_generators_with_their_options() -> None:
    code, out = _run("instances", "list", "placement")
    assert code == 0
    assert "arnold-paper" in out and "--splits 2" in out and "random-small" in out
    assert _run("instances", "list", "nope")[0] == 2
