"""The ``topoopt instances``, ``topoopt bench`` and ``topoopt report`` commands."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import topoopt
from topoopt.bench.records import read_records
from topoopt.cli import main
from topoopt.core.registry import get_family
from topoopt.placement.generate import examples


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _one_error_line(result: Result, code: int) -> str:
    """The single line ``result`` wrote on stderr, after checking its exit status."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, result.stderr
    line = result.stderr[:-1]
    assert line.startswith("error: ") and line.isprintable(), line
    return line


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
            "unknown option(s) --bogus for random-small; known: --count, --max-cells, "
            "--max-minipods",
        ),
        (["placement", "--suite", "random-small", "--count"], "option --count needs a value"),
    ],
)
def test_generate_rejects_bad_input(tmp_path: Path, args: list[str], words: str) -> None:
    line = _one_error_line(_invoke("instances", "generate", *args, "--out", str(tmp_path)), 2)
    assert words in line


PLACEMENT_SMALL = ["placement", "--suite", "random-small"]
PROTOCOL_H100 = ["gpuselect", "--suite", "protocol-h100"]
LARGE_POOL = ["gpuselect", "--suite", "large-pool"]


@pytest.mark.parametrize(
    ("case", "args", "words"),
    [
        ("count-abc", [*PLACEMENT_SMALL, "--count", "abc"], "Invalid value for '--count': 'abc'"),
        ("count-1.5", [*PLACEMENT_SMALL, "--count", "1.5"], "'1.5' is not a valid integer"),
        (
            "count-negative",
            [*PLACEMENT_SMALL, "--count", "-3"],
            "placement random-small: --count: must be an integer in [1, 100000], got -3",
        ),
        ("count-zero", [*PLACEMENT_SMALL, "--count=0"], "--count: must be an integer in [1,"),
        ("max-cells-zero", [*PLACEMENT_SMALL, "--max-cells", "0"], "--max-cells: must be"),
        ("max-minipods-one", [*PLACEMENT_SMALL, "--max-minipods", "1"], "--max-minipods: must"),
        (
            "max-nodes-small",
            ["placement", "--suite", "random-large", "--max-nodes", "8"],
            "--max-nodes: must be an integer in [16,",
        ),
        (
            "cluster-smaller-than-job",
            ["placement", "--suite", "random-large", "--cluster-nodes", "100"],
            "--cluster-nodes: must be an integer in [512,",
        ),
        (
            "splits-negative",
            ["placement", "--suite", "arnold-paper", "--splits", "-1"],
            "--splits: must be",
        ),
        ("seed-negative", [*PLACEMENT_SMALL, "--seed", "-1"], "Invalid value for '--seed'"),
        ("seed-text", [*PLACEMENT_SMALL, "--seed", "x"], "Invalid value for '--seed'"),
        (
            "cluster-nope",
            [*PROTOCOL_H100, "--cluster", "nope"],
            "unknown option(s) --cluster for protocol-h100",
        ),
        ("ks-out-of-range", [*PROTOCOL_H100, "--ks", "8,40"], "--ks: must be a list of integers"),
        ("ks-zero", [*PROTOCOL_H100, "--ks", "0"], "in [1, 32], got 0 in it"),
        ("ks-repeated", [*PROTOCOL_H100, "--ks", "8,8"], "--ks: must not repeat"),
        ("ks-text", [*PROTOCOL_H100, "--ks", "8,x"], "Invalid value for '--ks': 'x'"),
        ("ks-empty-item", [*PROTOCOL_H100, "--ks", "8,,9"], "Invalid value for '--ks'"),
        ("scenarios-zero", [*PROTOCOL_H100, "--scenarios", "0"], "--scenarios: must be"),
        (
            "too-many-instances",
            [*PROTOCOL_H100, "--scenarios", "100000"],
            "--ks: must hold 1 to 1 request sizes, got 32",
        ),
        ("gpus-per-nic-9", [*PROTOCOL_H100, "--gpus-per-nic", "9"], "--gpus-per-nic: must be"),
        ("data-dir-missing", [*PROTOCOL_H100, "--data-dir", "/no/such/dir"], "/no/such/dir"),
        ("busy-2", [*LARGE_POOL, "--busy", "2"], "--busy: must be a probability in [0, 1)"),
        ("busy-nan", [*LARGE_POOL, "--busy", "nan"], "--busy: must be a probability"),
        ("busy-text", [*LARGE_POOL, "--busy", "lots"], "Invalid value for '--busy'"),
        ("gpus-12", [*LARGE_POOL, "--gpus", "12"], "--gpus: must be a multiple of 8"),
        ("gpus-huge", [*LARGE_POOL, "--gpus", "2000000"], "--gpus: must be an integer in [8,"),
        ("ks-above-pool", [*LARGE_POOL, "--gpus", "64", "--ks", "128"], "in [1, 64], got 128"),
        ("bare-value", [*PLACEMENT_SMALL, "5"], "expected --NAME VALUE, got '5'"),
    ],
)
def test_generate_options_have_a_type_and_a_range(
    tmp_path: Path, case: str, args: list[str], words: str
) -> None:
    out = tmp_path / "out"
    line = _one_error_line(_invoke("instances", "generate", *args, "--out", str(out)), 2)
    assert words in line
    assert not out.exists()


def test_generate_ks_takes_one_size_or_a_list(tmp_path: Path) -> None:
    for ks, folder in (("8", "one"), ("[8, 16]", "json"), ("8,16", "commas")):
        result = _invoke(
            "instances", "generate", *PROTOCOL_H100, "--scenarios", "2", "--ks", ks,
            "--out", str(tmp_path / folder),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == [
        "h100-k8-s0.json",
        "h100-k8-s1.json",
    ]
    assert len(list((tmp_path / "json").iterdir())) == 4
    assert len(list((tmp_path / "commas").iterdir())) == 4


@pytest.fixture()
def extra_generator(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Register a generator under the placement family for one test: ``arm(function)``."""

    def arm(function: Any) -> None:
        monkeypatch.setitem(get_family("placement").generators, "extra", function)

    return arm


def test_generator_type_or_value_error_names_the_options(tmp_path: Path, extra_generator) -> None:
    def extra(seed: int = 0, size: int = 1, shape: Any = None) -> list[Any]:
        raise ValueError("low >= high\nsecond line")

    extra_generator(extra)
    args = ["instances", "generate", "placement", "--suite", "extra", "--out", str(tmp_path)]
    line = _one_error_line(_invoke(*args, "--size", "3", "--shape", "[1, 2]"), 2)
    assert line == (
        "error: placement extra refused the option(s) --size 3 --shape [1, 2]: "
        "ValueError: low >= high\\nsecond line"
    )
    # Without any option the same exception is a bug of the generator: an internal error.
    result = _invoke(*args)
    assert result.exit_code == 3
    assert result.stderr.startswith("internal error: ValueError: low >= high\\nsecond line")


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", "back\\slash"])
def test_generate_refuses_names_that_are_not_file_names(
    tmp_path: Path, extra_generator, name: str
) -> None:
    instance = dataclasses.replace(examples()[0], name=name)
    extra_generator(lambda seed=0: [instance])
    out = tmp_path / "out"
    args = ["instances", "generate", "placement", "--suite", "extra", "--out", str(out)]
    line = _one_error_line(_invoke(*args), 2)
    assert "cannot be a file name" in line
    assert not (tmp_path / "escape.json").exists()


def test_generate_into_an_unwritable_place_is_bad_input(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker / "sub"  # a folder below a regular file cannot be created
    args = ["instances", "generate", *PLACEMENT_SMALL, "--count", "1", "--out", str(out)]
    line = _one_error_line(_invoke(*args), 2)
    assert "cannot write" in line


def test_check_escapes_control_characters_in_problem_lines(tmp_path: Path) -> None:
    (tmp_path / "bad\nname\x1b.json").write_text("{")
    result = _invoke("instances", "check", str(tmp_path))
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and "bad\\nname\\x1b.json: " in lines[0]
    assert result.stderr == "1 problem(s) in 1 file(s)\n"


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
        (["--solvers", "no-such"], "unknown solver 'no-such' for placement instances"),
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


def test_bench_names_the_invalid_instances(suite: Path, tmp_path: Path) -> None:
    (suite / "broken.json").write_text("[]")
    (suite / "worse.json").write_text("{")
    code, out = _run("bench", str(suite), "--out", str(tmp_path / "r.jsonl"))
    assert code == 2
    assert "2 invalid instance file(s): " in out and "broken.json" in out
    assert "(and 1 more; see topoopt instances check)" in out
    assert out.count("\n") == 1


def test_instances_schema_prints_what_load_enforces() -> None:
    code, out = _run("instances", "schema", "placement")
    assert code == 0
    assert json.loads(out) == topoopt.get_family("placement").schema
    assert _run("instances", "schema", "nope")[0] == 2


def test_allow_path_lets_bench_and_check_read_tables_outside(tmp_path: Path) -> None:
    from topoopt.gpuselect.generate import examples

    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "t.csv").write_text("GPU_num,GPU_used,Bandwidth(GB/s)\n2,01,40\n")
    suite = tmp_path / "suite"
    suite.mkdir()
    data = examples()[0].to_dict()
    host_type = data["hosts"][0]["type"]
    types = {h["type"] for h in data["hosts"]}
    data["bandwidth"] = {
        "model": "bottleneck",
        "intra": {t: "../tables/t.csv" for t in types},
        "inter_gbps": 10.0,
    }
    data["hosts"] = [h for h in data["hosts"] if h["type"] == host_type][:1]
    data["hosts"][0].update(gpus=2, available=[0, 1])
    data["k"] = 2
    (suite / "x.json").write_text(json.dumps(data))
    code, out = _run("instances", "check", str(suite))
    assert code == 2 and "outside the instance's folder" in out
    code, out = _run("--allow-path", str(tables), "instances", "check", str(suite))
    assert code == 0, out
    results = tmp_path / "r.jsonl"
    code, out = _run(
        "--allow-path",
        str(tables),
        "bench",
        str(suite),
        "--solvers",
        "eha",
        "--out",
        str(results),
        "--no-progress",
    )
    assert code == 0, out
    record = json.loads(results.read_text())
    assert record["status"] in ("optimal", "feasible"), record


def test_report_of_nothing_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "r.jsonl"
    empty.write_text("")
    line = _one_error_line(_invoke("report", str(empty), "--out", str(tmp_path / "rep")), 2)
    assert "no records" in line


def test_list_shows_generators_with_their_options() -> None:
    code, out = _run("instances", "list", "placement")
    assert code == 0
    assert "arnold-paper" in out and "--splits 2" in out and "random-small" in out
    assert "unknown family 'nope'" in _one_error_line(_invoke("instances", "list", "nope"), 2)


def test_list_shows_list_defaults_and_no_fixed_keywords() -> None:
    code, out = _run("instances", "list", "gpuselect")
    assert code == 0
    assert "--ks 8,32,64,128" in out and "--busy 0.3" in out
    assert "--cluster" not in out  # fixed by each protocol-<cluster> suite
