"""A CLI that behaves the same everywhere (issue 13): one rule for solver names in the API and
every command, listings that fit an 80-column terminal or a pipe, docstrings shown as plain
text."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import topoopt
from topoopt.bench.runner import plan
from topoopt.cli import main
from topoopt.cli.output import WIDE_TABLE
from topoopt.core.errors import UnknownSolverError
from topoopt.core.registry import (
    families,
    get_family,
    get_solver,
    matching_solvers,
    resolve_solver,
    select_solvers,
    solver_names,
)
from topoopt.core.text import plain_text
from topoopt.gpuselect.generate import examples as gpuselect_examples
from topoopt.placement.generate import examples


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def error_line(result: Result) -> str:
    """The one ``error:`` line of a bad-input result (exit 2)."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    return result.stderr.rstrip("\n")


@pytest.fixture()
def instance_file(tmp_path: Path) -> str:
    return str(topoopt.save(examples()[0], tmp_path / "fig12.json"))


# --- 1. one rule for solver names ---------------------------------------------------------


def test_solve_accepts_the_short_name_of_the_instances_family() -> None:
    instance = examples()[0]
    short = topoopt.solve(instance, "best-fit")
    full = topoopt.solve(instance, "placement/best-fit")
    assert short.solver == full.solver == "placement/best-fit"
    assert short.objective == full.objective
    # "mip" is ambiguous without an instance, but the gpuselect instance picks gpuselect/mip.
    assert topoopt.solve(gpuselect_examples()[0], "mip").solver == "gpuselect/mip"


def test_cli_solve_accepts_the_short_name(instance_file: str) -> None:
    result = invoke("solve", instance_file, "--solver", "exact-mip", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["solver"] == "placement/exact-mip"


@pytest.mark.parametrize(
    ("name", "words"),
    [
        (
            "exact-mpi",
            "unknown solver 'exact-mpi' for placement instances; did you mean placement/exact-mip?",
        ),
        ("placement/exact_mip", "did you mean placement/exact-mip?"),
        ("mip", "did you mean placement/coarse-mip, placement/exact-mip?"),
        (
            "gpuselect/topo",
            "solver 'gpuselect/topo' is a gpuselect solver, not one for placement "
            "instances; did you mean placement/topo-aware?",
        ),
    ],
)
def test_unknown_solver_suggests_close_names_not_the_whole_registry(
    instance_file: str, name: str, words: str
) -> None:
    with pytest.raises(UnknownSolverError) as caught:
        topoopt.solve(examples()[0], name)
    assert words in str(caught.value)
    line = error_line(invoke("solve", instance_file, "--solver", name))
    assert words in line
    assert "gpuselect/eha" not in line and "ocs/" not in line  # not the list of every solver


def test_a_short_name_of_several_families_needs_the_family() -> None:
    assert resolve_solver("exact-mip") == "placement/exact-mip"  # one family has it
    with pytest.raises(UnknownSolverError, match=r"'mip' is ambiguous: clusterselect/mip, .*full"):
        get_solver("mip")
    assert get_solver("mip", "partition").name == "partition/mip"


def test_short_and_full_names_mean_the_same_solver_everywhere() -> None:
    for name in solver_names():
        family, _, short = name.partition("/")
        assert resolve_solver(short, family) == resolve_solver(name, family) == name
        assert name in matching_solvers(short)
        assert select_solvers([short], [family]) == select_solvers([name], [family]) == [name]


def test_bench_selects_solvers_as_the_registry_does(tmp_path: Path) -> None:
    """``topoopt bench --solvers`` (the runner's plan) and
    :func:`topoopt.core.registry.select_solvers` agree: one rule for short names."""
    for instance in (examples()[0], gpuselect_examples()[0]):
        topoopt.save(instance, tmp_path / instance.family / f"{instance.name}.json")
    fams = ["gpuselect", "placement"]
    for selection in (["all"], ["mip"], ["best-fit", "mip"], ["placement/exact-mip", "eha"]):
        planned = sorted({task.solver for task in plan([tmp_path], solvers=selection)})
        assert planned == select_solvers(selection, fams), selection


def test_bench_names_an_unknown_solver_with_suggestions_from_the_suites_families(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "tiny"
    topoopt.save(examples()[0], suite / "a.json")
    out = str(tmp_path / "r.jsonl")
    line = error_line(invoke("bench", str(suite), "--solvers", "best-fit,mip", "--out", out))
    assert line == (
        "error: unknown solver 'mip' for placement instances (clusterselect/mip, gpuselect/mip, "
        "parallelconfig/mip, partition/mip are for other families); did you mean "
        "placement/coarse-mip, placement/exact-mip?"
    )
    line = error_line(invoke("bench", str(suite), "--solvers", "best-fti", "--out", out))
    assert line.endswith("did you mean placement/best-fit, placement/kueue-best-fit?")
    assert not Path(out).exists()


def test_solvers_command_takes_a_solver_name() -> None:
    result = invoke("solvers", "mip", "--json")
    assert result.exit_code == 0, result.output
    names = [info["name"] for info in json.loads(result.stdout)]
    assert names == [n for n in solver_names() if n.endswith("/mip")] and len(names) > 1
    result = invoke("solvers", "exact-mip", "--json")
    assert [info["name"] for info in json.loads(result.stdout)] == ["placement/exact-mip"]
    line = error_line(invoke("solvers", "exact-mpi"))
    assert line.endswith("did you mean placement/exact-mip?")
    assert error_line(invoke("solvers", "plcement")).endswith("did you mean placement?")


# --- 2. listings fit the terminal -----------------------------------------------------------


def _lines(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


@pytest.mark.parametrize("command", [["solvers"], ["instances", "list"]], ids=" ".join)
@pytest.mark.parametrize("columns", [80, 100, WIDE_TABLE, 200])
def test_listings_fit_the_terminal_width(command: list[str], columns: int) -> None:
    lines = _lines(invoke(*command, env={"COLUMNS": str(columns)}))
    too_long = [line for line in lines if len(line) > columns]
    assert not too_long, too_long
    text = "\n".join(lines)
    table = "┃" in text
    assert table == (columns >= WIDE_TABLE)  # a table only where it has room


def test_narrow_solver_listing_shows_every_solver_whole() -> None:
    lines = _lines(invoke("solvers", env={"COLUMNS": "80"}))
    heads = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert heads == solver_names()  # one block per solver, its name never cut or wrapped
    text = " ".join(line.strip() for line in lines)
    for info in topoopt.solvers_for():
        assert plain_text(info.description) in text
    block = lines[lines.index(next(x for x in lines if x.startswith("placement/coarse-mip"))) :]
    assert block[0] == "placement/coarse-mip  heuristic, MIP backends: " + ",".join(
        topoopt.available_backends()
    )
    assert block[1].startswith("    Arnold's coarse MIP") and "options: unit='pp'" in text


def test_solver_description_is_the_first_paragraph() -> None:
    for info in topoopt.solvers_for():
        cls = type(get_solver(info.name))
        first = (inspect.getdoc(cls) or "").split("\n\n")[0]
        assert info.description == " ".join(first.split())


# --- 3. docstrings shown as plain text --------------------------------------------------------

RST = re.compile(r"``|:[a-z]+:`|`")


def test_instances_list_shows_no_restructuredtext() -> None:
    for columns in ("80", "200"):
        text = invoke("instances", "list", env={"COLUMNS": columns}).stdout
        assert not RST.search(text), RST.search(text)
    narrow = " ".join(
        invoke("instances", "list", "gpuselect", env={"COLUMNS": "80"}).stdout.split()
    )
    # gpuselect random-small: "``count`` small random instances cycling through
    # :data:`MODEL_KINDS`."
    assert "count small random instances cycling through MODEL_KINDS." in narrow


def test_every_generator_docstring_becomes_plain_text() -> None:
    for family in families():
        for generator in get_family(family).generators.values():
            doc = inspect.getdoc(getattr(generator, "func", generator)) or ""
            assert not RST.search(plain_text(doc)), (family, plain_text(doc))


@pytest.mark.parametrize(
    ("rst", "plain"),
    [
        (":func:`~topoopt.placement.generate.fig2`", "fig2"),
        (":func:`topoopt.load`", "topoopt.load"),
        (":py:meth:`Solver.solve`", "Solver.solve"),
        (":class:`the result <topoopt.Result>`", "the result"),
        ("``a`` and ``b``", "a and b"),
        ("`x` in ``ks``", "x in ks"),
        ("no markup: 2 * 3 <= 7", "no markup: 2 * 3 <= 7"),
    ],
)
def test_plain_text(rst: str, plain: str) -> None:
    assert plain_text(rst) == plain
