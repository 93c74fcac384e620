"""The ``topoopt solve`` and ``topoopt solvers`` commands, and the exit-status and
error-line contract every command shares (``docs/cli.md``)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from click.testing import CliRunner, Result

import topoopt
from topoopt.cli import main
from topoopt.cli.output import MAX_MESSAGE_CHARS, printable
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.gpuselect.generate import examples as gpuselect_examples
from topoopt.placement.generate import examples


def one_error_line(result: Result, code: int) -> str:
    """The single line ``result`` wrote on stderr, after checking its exit status."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, result.stderr
    line = result.stderr[:-1]
    assert line.isprintable(), line  # no control character, separator or surrogate left
    return line


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


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
    line = one_error_line(out, 2)
    assert line.startswith("error: ") and words in line


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
    line = one_error_line(out, 2)
    assert line.startswith("error: plugin 'no_such_module' cannot be imported")


# --- the error-line and exit-status contract -------------------------------------------


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\n", "\\n"),
        ("\r", "\\r"),
        ("\t", "\\t"),
        ("\x00", "\\x00"),
        ("\x1b", "\\x1b"),
        ("\x7f", "\\x7f"),
        ("\x85", "\\x85"),  # NEL, a C1 control
        ("\x9b", "\\x9b"),  # CSI, a C1 control
        ("\u2028", "\\u2028"),  # line separator
        ("\u2029", "\\u2029"),  # paragraph separator
        ("\u202e", "\\u202e"),  # right-to-left override
        ("\ud800", "\\ud800"),  # lone surrogate
    ],
)
def test_printable_escapes_every_control_character(char, shown):
    assert printable(f"a{char}b") == f"a{shown}b"


def test_printable_keeps_text_and_shortens_long_values():
    assert printable("minipod é 東 C:\\data") == "minipod é 東 C:\\data"
    line = printable("x" * 5000, MAX_MESSAGE_CHARS)
    assert line == "x" * 1000 + "... (4000 more characters)"
    assert printable("x" * 5000) == "x" * 5000


def test_every_topoopt_error_message_is_one_line():
    error = topoopt.InvalidInstanceError("hosts[0].\r", "bad type 'a\nb\x1b'")
    assert str(error) == "hosts[0].\\r: bad type 'a\\nb\\x1b'"
    assert error.field == "hosts[0].\r"  # the field itself is kept as given


@pytest.fixture()
def failing_load(monkeypatch):
    """Make ``topoopt.load`` (as the CLI calls it) raise the exception given to the returned
    function."""

    def arm(exc: BaseException) -> None:
        def load(*args: Any, **kwargs: Any) -> Any:
            raise exc

        monkeypatch.setattr(topoopt, "load", load)

    return arm


def test_host_type_with_control_characters_is_one_escaped_line(tmp_path):
    data = gpuselect_examples()[0].to_dict()
    data["hosts"][0]["type"] = "H1\n00\x1b[31m\r\u2028"
    path = tmp_path / "newline.json"
    path.write_text(json.dumps(data))
    line = one_error_line(invoke("solve", str(path), "-s", "gpuselect/greedy"), 2)
    assert line.startswith("error: ")
    assert "H1\\n00\\x1b[31m\\r\\u2028" in line


def test_error_message_with_control_characters_is_escaped(instance_file, failing_load):
    failing_load(InvalidInstanceError("hosts[0].type", "bad type 'a\nb\x1b[2J\tc\u2029'"))
    line = one_error_line(invoke("solve", instance_file, "-s", "placement/best-fit"), 2)
    assert line == "error: hosts[0].type: bad type 'a\\nb\\x1b[2J\\tc\\u2029'"


def test_long_error_message_is_shortened(instance_file, failing_load):
    failing_load(TopooptError("name: " + "n" * 50_000))
    line = one_error_line(invoke("solve", instance_file, "-s", "placement/best-fit"), 2)
    assert line.endswith("... (49006 more characters)") and len(line) < 1100


def test_internal_error_is_one_line_with_exit_3(instance_file, failing_load):
    failing_load(RuntimeError("boom\nsecond line"))
    result = invoke("solve", instance_file, "-s", "placement/best-fit")
    line = one_error_line(result, 3)
    assert line == (
        "internal error: RuntimeError: boom\\nsecond line "
        "(rerun with --debug or TOPOOPT_DEBUG=1 for details)"
    )
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "env"),
    [(["--debug"], None), ([], {"TOPOOPT_DEBUG": "1"})],
    ids=["--debug", "TOPOOPT_DEBUG"],
)
def test_internal_error_traceback_only_when_asked(instance_file, failing_load, args, env):
    failing_load(RuntimeError("boom"))
    result = invoke(*args, "solve", instance_file, "-s", "placement/best-fit", env=env)
    assert result.exit_code == 3
    assert result.stderr.startswith("Traceback (most recent call last):")
    assert result.stderr.splitlines()[-1] == "internal error: RuntimeError: boom"


def test_keyboard_interrupt_exits_130_with_one_line(instance_file, failing_load):
    failing_load(KeyboardInterrupt())
    result = invoke("solve", instance_file, "-s", "placement/best-fit")
    assert one_error_line(result, 130) == "interrupted"


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_no_feasible_solution_exits_1_with_one_line(instance_file, monkeypatch, as_json):
    real = topoopt.solve(topoopt.load(instance_file), "placement/best-fit")
    empty = dataclasses.replace(
        real,
        status=SolutionStatus.NO_SOLUTION,
        termination=TerminationReason.TIME_LIMIT,
        objective=None,
        solution=None,
        solution_dict=None,
        metrics={},
        message="stopped\nearly",
    )
    monkeypatch.setattr(topoopt, "solve", lambda *args, **kwargs: empty)
    args = ["solve", instance_file, "-s", "placement/best-fit"] + (["--json"] if as_json else [])
    result = invoke(*args)
    line = one_error_line(result, 1)
    assert line == "error: no feasible solution (time_limit): stopped\\nearly"
    if as_json:
        assert json.loads(result.stdout)["status"] == "no_solution"


@pytest.mark.parametrize(
    ("case", "args", "words"),
    [
        ("missing-solver", ["solve", "{file}"], "Missing option '--solver'"),
        ("missing-file-argument", ["solve"], "Missing argument 'INSTANCE_FILE'"),
        ("unknown-option", ["solve", "{file}", "-s", "x", "--bogus"], "No such option '--bogus'"),
        ("unknown-command", ["nosuch"], "No such command 'nosuch'"),
        ("time-limit-text", ["solve", "{file}", "-s", "x", "-t", "abc"], "'--time-limit'"),
        ("time-limit-zero", ["solve", "{file}", "-s", "x", "-t", "0"], "not in the range x>0"),
        ("seed-negative", ["solve", "{file}", "-s", "x", "--seed", "-1"], "'--seed'"),
        ("folder-as-file", ["solve", "{dir}", "-s", "placement/best-fit"], "is a directory"),
        ("missing-file", ["solve", "{dir}/none.json", "-s", "placement/best-fit"], "none.json"),
        ("unknown-solver", ["solve", "{file}", "-s", "x/y"], "x/y"),
        (
            "bad-solver-option",
            ["solve", "{file}", "-s", "placement/coarse-mip", "-o", "unit=NaN"],
            "unit",
        ),
        (
            "option-without-value",
            ["solve", "{file}", "-s", "placement/best-fit", "-o", "k"],
            "KEY=VALUE",
        ),
        ("unknown-family", ["solvers", "nofamily"], "nofamily"),
        ("nul-in-target", ["solvers", "a\x00b"], "a\\x00b"),
        ("unknown-plugin", ["--plugin", "no_such_module", "solvers"], "no_such_module"),
    ],
)
def test_bad_input_exits_2_with_one_line(instance_file, tmp_path, case, args, words):
    args = [a.format(file=instance_file, dir=tmp_path) for a in args]
    line = one_error_line(invoke(*args), 2)
    assert line.startswith("error: ") and words in line


@pytest.mark.parametrize(
    ("case", "content"),
    [
        ("not-utf8", b'{"family":"placement","name":"\xff"}'),
        ("binary", bytes(range(256))),
        ("deep-nesting", b"[" * 1000 + b"]" * 1000),
        ("not-json", b"{"),
    ],
)
def test_bad_instance_files_exit_2_with_one_line(tmp_path, case, content):
    path = tmp_path / f"{case}.json"
    path.write_bytes(content)
    for args in (["solve", str(path), "-s", "placement/best-fit"], ["solvers", str(path)]):
        line = one_error_line(invoke(*args), 2)
        assert line.startswith("error: ")


# --- output safe for any Unicode name ----------------------------------------------------

ODD_NAME = "\ud800-é-\u2028-\x1b[2J"
"""A lone surrogate (legal JSON), a non-ASCII letter, a line separator, an escape sequence."""


@pytest.fixture()
def odd_name_file(tmp_path) -> str:
    data = {**examples()[0].to_dict(), "name": ODD_NAME}
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(data))  # ASCII: the surrogate is written as \ud800
    return str(path)


def test_lone_surrogate_name_prints_escaped(odd_name_file):
    result = invoke("solve", odd_name_file, "-s", "placement/best-fit")
    assert result.exit_code == 0, result.output
    assert "\\ud800-é-\\u2028-\\x1b[2J" in result.stdout
    assert (
        json.loads(invoke("solve", odd_name_file, "-s", "placement/best-fit", "--json").stdout)[
            "instance"
        ]
        == ODD_NAME
    )


@pytest.mark.parametrize(
    "env",
    [
        {"PYTHONIOENCODING": "ascii"},
        {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
    ],
    ids=["PYTHONIOENCODING=ascii", "C-locale"],
)
def test_unicode_names_on_an_ascii_stdout(odd_name_file, env):
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "LC_ALL")}
    result = subprocess.run(
        [sys.executable, "-m", "topoopt.cli", "solve", odd_name_file, "-s", "placement/best-fit"],
        capture_output=True,
        env={**environ, **env},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stderr == b""
    out = result.stdout.decode("ascii")  # nothing but ASCII was written
    assert "\\ud800-\\xe9-\\u2028-\\x1b[2J" in out
    assert "stage0" in out
