"""The toy knapsack family, defined only under tests/, is a full topoopt family: it passes
the conformance suite, runs through ``topoopt bench`` and gets its own report section, and it
is found through the ``topoopt.families`` entry point like an installed plug-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import topoopt
from topoopt.cli import main
from topoopt.testing import Case, conformance_cases, run_check
from toy.knapsack import FAMILY, KnapsackInstance, examples, random_suite
from toy.registry import isolated_registry

TESTS = Path(__file__).resolve().parents[1]

with isolated_registry():
    CASES = list(conformance_cases(topoopt.core.registry.solver_names("knapsack")))


@pytest.mark.usefixtures("knapsack")
@pytest.mark.parametrize("case", CASES, ids=str)
def test_conformance(case: Case) -> None:
    run_check(case)


def test_conformance_covers_every_solver_and_backend() -> None:
    solvers = {(case.solver, case.backend) for case in CASES}
    backends = set(topoopt.available_backends())
    assert solvers == {("knapsack/enumerate", None), ("knapsack/greedy", None)} | {
        ("knapsack/mip", b) for b in backends
    }


@pytest.mark.usefixtures("knapsack")
def test_known_optimum_and_greedy_trap() -> None:
    four, trap = examples()
    assert topoopt.solve(four, "knapsack/enumerate").objective == 12.0  # b + d or a + b + c
    assert topoopt.solve(trap, "knapsack/mip").objective == 15.0
    assert topoopt.solve(trap, "knapsack/greedy").objective == 8.0


@pytest.mark.usefixtures("knapsack")
def test_round_trip_and_listing(tmp_path: Path) -> None:
    for instance in examples() + random_suite(seed=1):
        assert topoopt.load(instance.to_dict()) == instance
        assert topoopt.load(topoopt.save(instance, tmp_path / "x.json")) == instance
    assert [i.name for i in topoopt.solvers_for(examples()[0])] == [
        "knapsack/enumerate",
        "knapsack/greedy",
        "knapsack/mip",
    ]
    assert "knapsack" in topoopt.families()


@pytest.mark.usefixtures("knapsack")
def test_import_and_slow_instances_come_from_the_family(tmp_path: Path) -> None:
    """``instances import`` and the conformance time-limit check use the plug-in's own
    declarations; nothing in topoopt names the family."""
    from topoopt.testing.slow import slow_examples

    items = tmp_path / "items.csv"
    items.write_text("a,3,4\nb,4,5\nc,2,3\n")
    runner = CliRunner()
    listed = runner.invoke(main, ["instances", "import", "--help"])
    assert listed.exit_code == 0 and "knapsack" in listed.output
    out = tmp_path / "k.json"
    made = runner.invoke(
        main,
        ["instances", "import", "knapsack", "--items", str(items), "--capacity", "5",
         "--out", str(out)],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    assert "3 items, capacity 5" in made.output
    assert topoopt.solve(topoopt.load(out), "knapsack/enumerate").objective == 7.0  # a + c
    missing = runner.invoke(main, ["instances", "import", "knapsack", "--out", str(out)])
    assert missing.exit_code == 2 and "Missing option '--items'" in missing.output
    bad = tmp_path / "bad.csv"
    bad.write_text("a,3\n")
    refused = runner.invoke(
        main,
        ["instances", "import", "knapsack", "--items", str(bad), "--capacity", "5",
         "--out", str(out)],
    )  # fmt: skip
    assert refused.exit_code == 2 and "--items:" in refused.output
    assert [x.name for x in slow_examples("knapsack")] == ["random-7-0"]


def test_not_registered_outside_the_fixture() -> None:
    assert "knapsack" not in topoopt.families()


def test_bench_and_report_through_the_cli(tmp_path: Path) -> None:
    suite = tmp_path / "knapsack-random"
    for instance in [*random_suite(seed=3, count=2, items=6), examples()[1]]:
        topoopt.save(instance, suite / f"{instance.name}.json")
    results, report = tmp_path / "r.jsonl", tmp_path / "report"
    runner = CliRunner()
    with isolated_registry():
        _bench_and_report(runner, suite, results, report)
    # Without the plug-in the report still works, with the generic tables only.
    plain = runner.invoke(main, ["report", str(results), "--out", str(tmp_path / "plain")])
    assert plain.exit_code == 0, plain.output
    assert "Knapsack: value per size class" not in (tmp_path / "plain/report.md").read_text()


def _bench_and_report(runner: CliRunner, suite: Path, results: Path, report: Path) -> None:
    bench = runner.invoke(
        main,
        [
            "--plugin",
            "toy.plugin",
            "bench",
            str(suite),
            "--solvers",
            "all",
            "--backends",
            "highs",
            "--time-limit",
            "20",
            "--out",
            str(results),
            "--no-progress",
        ],
    )
    assert bench.exit_code == 0, bench.output
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(records) == 9 and all(r["status"] in ("optimal", "feasible") for r in records)
    assert {r["tags"]["size"] for r in records} == {"small"}
    assert {r["tags"].get("kind") for r in records} == {None, "trap"}
    done = runner.invoke(
        main, ["--plugin", "toy.plugin", "report", str(results), "--out", str(report)]
    )
    assert done.exit_code == 0, done.output
    md = (report / "report.md").read_text()
    assert "## knapsack / knapsack-random" in md
    assert "### Knapsack: value per size class" in md


def _fake_distribution(root: Path, value: str) -> None:
    info = root / "toy_knapsack-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-knapsack\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[topoopt.families]\nknapsack = {value}\n")


def _run(code: str, path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), str(TESTS)])}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True
    )


def test_found_through_the_entry_point_group(tmp_path: Path) -> None:
    """An installed package that declares the entry point is a family; no import needed."""
    _fake_distribution(tmp_path, "toy.knapsack:FAMILY")
    out = _run(
        """
        import topoopt
        from toy.knapsack import SOLVERS, examples
        for solver in SOLVERS:  # a real package would list its modules in solver_modules
            topoopt.register_solver(solver)
        print(topoopt.families(), topoopt.solve(examples()[0], "knapsack/greedy").objective)
        """,
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("]")[0] + "]" == str(sorted([*_installed_families(), "knapsack"]))


def _installed_families() -> list[str]:
    """The families topoopt's own distribution declares (the plug-ins beside the fake one)."""
    from importlib.metadata import entry_points

    return sorted(
        ep.name
        for ep in entry_points(group="topoopt.families")
        if ep.dist is not None and ep.dist.name == "topoopt"
    )


def test_a_broken_plugin_warns_and_the_rest_works(tmp_path: Path) -> None:
    _fake_distribution(tmp_path, "no_such_module:FAMILY")
    out = _run("import topoopt; print(topoopt.families())", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(_installed_families())
    assert "family plug-in 'knapsack' (no_such_module:FAMILY) failed to load" in out.stderr


def test_instance_rules_name_the_field() -> None:
    with pytest.raises(topoopt.InvalidInstanceError, match="capacity"):
        KnapsackInstance("x", -1, ())
    assert FAMILY.tags(examples()[1]) == {"size": "small", "kind": "trap"}
