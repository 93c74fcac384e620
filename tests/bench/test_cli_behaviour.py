"""``topoopt bench`` progress and ``topoopt report`` names and errors behave the same
everywhere (issue 13): plain progress lines in logs, labels shown as written, natural order,
figure names with the family once, a file without records named."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from bench.factories import rec
from topoopt.bench import analysis as an
from topoopt.bench.document import render_markdown
from topoopt.bench.progress import BenchProgress, PlainProgress, format_duration, progress_line
from topoopt.bench.report import build_report, figure_stem, figure_stems, write_report
from topoopt.bench.task import Task
from topoopt.cli import main
from topoopt.core.text import natural_key


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


# --- 4. bench progress --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("done", "total", "errors", "elapsed", "line"),
    [
        (35, 70, 2, 65.0, "bench: 35/70 done, 2 errors, elapsed 1m05s, ETA 1m05s"),
        (1, 4, 1, 0.4, "bench: 1/4 done, 1 error, elapsed 0s, ETA 1s"),
        (0, 4, 0, 12.0, "bench: 0/4 done, 0 errors, elapsed 12s, ETA ?"),
        (10, 30, 0, 3600.0, "bench: 10/30 done, 0 errors, elapsed 1h00m00s, ETA 2h00m00s"),
    ],
)
def test_progress_line(done: int, total: int, errors: int, elapsed: float, line: str) -> None:
    assert progress_line(done, total, errors, elapsed) == line


def test_progress_final_line_has_no_eta() -> None:
    assert progress_line(7, 7, 0, 59.6, final=True) == "bench: 7/7 done, 0 errors, elapsed 1m00s"
    assert format_duration(59.4) == "59s"


def test_plain_progress_prints_a_line_per_tenth_and_a_final_line() -> None:
    out, now = io.StringIO(), [0.0]
    progress = PlainProgress(70, stream=out, heartbeat=None, clock=lambda: now[0])
    for i in range(70):
        now[0] += 1.0
        progress.advance(error=i in (3, 40))
    progress.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 10  # 7/70, 14/70, ..., 63/70, and the final line
    assert lines[4] == "bench: 35/70 done, 1 error, elapsed 35s, ETA 35s"
    assert lines[-1] == "bench: 70/70 done, 2 errors, elapsed 1m10s"


def test_plain_progress_beats_while_nothing_finishes() -> None:
    out = io.StringIO()
    progress = PlainProgress(5, stream=out, heartbeat=0.2)
    time.sleep(1.5)  # the heartbeat thread checks every 0.2 s
    progress.close()
    lines = out.getvalue().splitlines()
    assert len(lines) >= 2, lines
    assert lines[0].startswith("bench: 0/5 done, 0 errors, elapsed ")
    assert lines[-1].startswith("bench: 0/5 done") and "ETA" not in lines[-1]


def _task(**kw: Any) -> Task:
    fields: dict[str, Any] = {
        "path": "/x/fig12.json",
        "instance_file": "fig12.json",
        "instance": "fig12",
        "instance_hash": "h",
        "family": "placement",
        "suite": "s",
        "sense": "minimize",
        "solver": "placement/exact-mip",
        "backend": "highs",
        "seed": 0,
        "repeat": 0,
        "time_limit": 1.0,
    }
    fields.update(kw)
    return Task(**fields)


def test_live_bar_shows_a_backend_label_as_written() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, color_system=None, width=120)
    with BenchProgress(1, console=console) as progress:
        assert progress.live
        progress.on_start(_task(instance="[bold]x[/bold]"))
        assert progress._bar is not None
        progress._bar.refresh()
    shown = buffer.getvalue()
    assert "exact-mip[highs] seed 0" in shown
    assert "[bold]x[/bold] · exact-mip[highs]" in shown


def test_bench_in_a_log_prints_plain_progress_lines(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    args = ["bench", str(suite), "--solvers", "best-fit,gpu-packing", "--out", str(out)]
    result = _invoke(*args)  # CliRunner's stderr is not a terminal, as in CI
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[-1].startswith("bench: 4/4 done, 0 errors, elapsed ")
    assert all(line.startswith("bench: ") and "━" not in line for line in lines), lines
    assert len(lines) == 4  # at 1/4, 2/4, 3/4 (every tenth rounds up) and the final line
    # Resuming counts only the runs still to do.
    result = _invoke(*args[:3], "best-fit,gpu-packing,koordinator", *args[4:])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1].startswith("bench: 2/2 done, 0 errors")
    assert _invoke(*args, "--no-progress").stderr == ""


# --- 5. report: natural order, figure names, files without records -----------------------


def test_report_tables_sort_instances_naturally() -> None:
    names = ["small-1-10", "small-1-2", "small-10-1", "small-2-1", "small-1-1"]
    records = [rec(name, solver, 1.0) for name in names for solver in ("s10", "s2")]
    assert [key[1] for key in an.instance_cells(records)] == sorted(names, key=natural_key)
    assert an.solver_labels(records) == ["s2", "s10"]
    failed = [rec(name, "s", None) for name in names]
    assert [r["instance"] for r in an.failures(failed)] == sorted(names, key=natural_key)
    md = render_markdown(build_report(records), "figures")
    order = [md.index(f"| {name} |") for name in sorted(names, key=natural_key)]
    assert order == sorted(order)


def test_suites_and_tag_values_sort_naturally() -> None:
    records = [
        rec("a", "s", 1.0, suite=suite, tags={"k": k})
        for suite, k in (("table2-512", "16"), ("table2-128", "8"), ("table2-1024", "128"))
    ]
    assert [suite for _, suite in an.group_by_suite(records)] == [
        "table2-128",
        "table2-512",
        "table2-1024",
    ]
    assert an.tag_values(records) == {"k": ["8", "16", "128"]}


@pytest.mark.parametrize(
    ("family", "suite", "stem"),
    [
        ("placement", "placement-random-small", "placement-random-small"),
        ("placement", "random-small", "placement-random-small"),
        ("gpuselect", "gpuselect", "gpuselect"),
        ("placement", "placementx", "placement-placementx"),
    ],
)
def test_figure_stem_names_the_family_once(family: str, suite: str, stem: str) -> None:
    assert figure_stem(family, suite) == stem


def test_figure_stems_stay_distinct() -> None:
    stems = figure_stems([("placement", "placement-x"), ("placement", "x"), ("p", "all-suites")])
    assert len(set(stems.values())) == 3
    assert stems["placement", "x"] == "placement-x-2"


def test_report_figures_repeat_no_family(tmp_path: Path) -> None:
    records = [
        rec(name, solver, obj, suite="placement-random-small")
        for name in ("i1", "i2")
        for solver, obj in (("best-fit", 2.0), ("enumerate", 1.0))
    ]
    write_report(records, tmp_path)
    figures = sorted(p.name for p in (tmp_path / "figures").glob("*.png"))
    assert figures and all(name.startswith("placement-random-small-") for name in figures)
    assert not any("placement-placement" in name for name in figures), figures
    assert "figures/placement-random-small-profile.png" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", ": empty, no records"),
        (b"\n\r\n  \n", ": only blank lines, no records"),
        (b'{"family": "placement", "suite": "s"', " line 1: not a complete JSON object"),
        (b"hello world\n", " line 1: not valid JSON (Expecting value at line 1 column 1)"),
        (b"[1, 2]\n", " line 1: not a JSON object but an array"),
    ],
)
def test_report_names_why_a_file_has_no_records(tmp_path: Path, content: bytes, words: str) -> None:
    results = tmp_path / "results.jsonl"
    results.write_bytes(content)
    result = _invoke("report", str(results), "--out", str(tmp_path / "rep"))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {results}{words}"), result.stderr
    assert result.stderr.count("\n") == 1
    assert "no records in" not in result.stderr


def test_report_warns_about_what_it_leaves_out(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    record = json.dumps(rec("i1", "best-fit", 1.0))
    good.write_text(record + "\n" + record[:40])  # a record cut short by a kill
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = _invoke("report", str(good), str(empty), "--out", str(tmp_path / "rep"))
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"warning: {good} line 2: not a complete JSON object (the file ends inside it: a record "
        "cut short by an interrupted benchmark?), left out",
        f"warning: {empty}: empty, no records",
    ]
    assert "report of 1 record(s)" in result.stdout


def test_all_solvers_means_those_that_support_each_instance() -> None:
    """``--solvers all`` plans, per instance, the solvers that support it: not
    ``partition/heuristic-ilp`` on a graph without intra-cluster data (it ran and gave an
    error record on every such instance), but on the files that have that data; named,
    it is planned on every instance (and its record says why it cannot run)."""
    from topoopt.bench.runner import plan

    root = Path(__file__).resolve().parents[2] / "instances" / "partition"
    paths = [root / "small" / "small-0-0.json", root / "tpa-small" / "tpa-small-0-0.json"]
    every = {(t.instance, t.solver) for t in plan(paths, solvers="all")}
    assert ("small-0-0", "partition/heuristic-ilp") not in every
    assert ("tpa-small-0-0", "partition/heuristic-ilp") in every
    assert ("small-0-0", "partition/greedy-lowcut") in every
    named = {(t.instance, t.solver) for t in plan(paths, solvers=["heuristic-ilp"])}
    assert named == {(name, "partition/heuristic-ilp") for name in ("small-0-0", "tpa-small-0-0")}
