"""The ``topoopt solve`` and ``topoopt solvers`` commands."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import topoopt
from topoopt.cli import main
from topoopt.placement.generate import examples


@pytest.fixture()
def instance_file(tmp_path):
    return str(topoopt.save(examples()[0], tmp_path / "fig12.json"))


def test_solve_json_prints_one_result_object(instance_file):
    out = CliRunner().invoke(
        main,
        [
            "solve",
            instance_file,
            "--solver",
            "placement/exact-mip",
            "--backend",
            "highs",
            "--time-limit",
            "20",
            "--seed",
            "1",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data == {
        **data,
        "status": "optimal",
        "termination": "optimal",
        "solver": "placement/exact-mip",
        "backend": "highs",
    }
    assert {"objective", "bound", "gap", "total_s", "solution", "dp_spread", "pp_spread"} <= set(
        data
    )


def test_solve_table_shows_the_matrix(instance_file):
    out = CliRunner().invoke(
        main, ["solve", instance_file, "-s", "placement/coarse-mip", "-o", "unit=dp"]
    )
    assert out.exit_code == 0, out.output
    assert "stage0" in out.output and "objective" in out.output


@pytest.mark.parametrize(
    ("mutation", "words"),
    [
        ({"alpha": 2}, "alpha"),
        ({"job": {"dp": 5, "tp": 4, "pp": 2}}, "job.dp"),
        ({"job": {"dp": 6, "tp": 3, "pp": 2}}, "job.tp"),
        ({"job": {"dp": 600, "tp": 8, "pp": 2}}, "free"),
    ],
)
def test_bad_instances_exit_nonzero_with_one_line(tmp_path, mutation, words):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**examples()[0].to_dict(), **mutation}))
    out = CliRunner().invoke(main, ["solve", str(path), "--solver", "placement/best-fit"])
    assert out.exit_code == 2
    assert out.output.startswith("error: ") and words in out.output
    assert out.output.count("\n") == 1


def test_unknown_solver_and_missing_file_exit_2(instance_file, tmp_path):
    assert CliRunner().invoke(main, ["solve", instance_file, "-s", "x/y"]).exit_code == 2
    missing = str(tmp_path / "none.json")
    assert CliRunner().invoke(main, ["solve", missing, "-s", "placement/best-fit"]).exit_code == 2


def test_solvers_lists_the_registry():
    out = CliRunner().invoke(main, ["solvers", "placement", "--json"])
    assert out.exit_code == 0
    names = {row["name"] for row in json.loads(out.output)}
    assert names == {info.name for info in topoopt.solvers_for("placement")}
    assert CliRunner().invoke(main, ["solvers", "nofamily"]).exit_code == 2


TIMINGS = {"total_s", "build_s", "solve_s"}


@pytest.mark.parametrize("solver", ["placement/exact-mip", "placement/best-fit"])
def test_solve_json_equals_result_to_dict(instance_file, solver):
    out = CliRunner().invoke(main, ["solve", instance_file, "-s", solver, "--json"])
    assert out.exit_code == 0, out.output
    printed = json.loads(out.output)
    expected = topoopt.solve(topoopt.load(instance_file), solver).to_dict()
    assert set(printed) == set(expected)
    assert {k: v for k, v in printed.items() if k not in TIMINGS} == {
        k: v for k, v in expected.items() if k not in TIMINGS
    }


def test_solvers_of_an_instance_file(instance_file):
    out = CliRunner().invoke(main, ["solvers", instance_file, "--json"])
    assert out.exit_code == 0, out.output
    names = {row["name"] for row in json.loads(out.output)}
    assert names == {info.name for info in topoopt.solvers_for(topoopt.load(instance_file))}
    assert "placement/exact-mip" in names


def test_plugin_that_cannot_be_imported_is_one_line(instance_file):
    out = CliRunner().invoke(main, ["--plugin", "no_such_module", "solvers"])
    assert out.exit_code == 2
    assert out.output.startswith("error: plugin 'no_such_module' cannot be imported")
