"""Report sections and rendering, from hand-made records."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from bench.factories import rec
from topoopt.bench import analysis as an
from topoopt.bench.document import (
    Plot,
    Section,
    Table,
    Text,
    escape_markdown,
    plots,
    render_html,
    render_markdown,
)
from topoopt.bench.report import build_report, instance_tables, tag_tables, write_report
from topoopt.bench.sections import SectionContext, family_sections, family_size_figure
from topoopt.cli import main
from topoopt.gpuselect.report import cluster_tag, gbe_section
from topoopt.placement.report import spreads_section


def _placement_records() -> list[dict]:
    records = [
        rec("i-even-a0.2", "enumerate", 0.4, status="optimal", dp_spread=2.0, pp_spread=0.0),
        rec("i-even-a0.2", "best-fit", 1.6, dp_spread=2.0, pp_spread=2.0),
        rec(
            "ii-even-a0.2",
            "enumerate",
            None,
            termination="timeout",
            message="no result within the hard timeout of 82 s (time limit 60 s); worker killed",
        ),
        rec("ii-even-a0.2", "best-fit", 2.0, dp_spread=2.0, pp_spread=2.0),
        rec("ii-s1-a0.2", "best-fit", 1.0, dp_spread=1.0, pp_spread=1.0),
    ]
    for r in records:
        r["tags"] = {"setting": r["instance"].split("-")[0], "job": "4x2"}
    return records


def _gpuselect_records() -> list[dict]:
    def g(name: str, solver: str, bw: float | None, k: int, **kw: object) -> dict:
        return rec(
            name,
            solver,
            bw,
            family="gpuselect",
            suite="protocol",
            size={"k": k, "gpus": 32, "available": 20, "hosts": 4},
            tags={"cluster": name.rsplit("-", 2)[0], "model": "table"},
            **kw,
        )

    return [
        g("het-4mix-k2-s0", "enumerate", 100.0, 2, status="optimal"),
        g("het-4mix-k2-s0", "random", 50.0, 2),
        g("het-4mix-k4-s0", "enumerate", 80.0, 4, status="optimal"),
        g("het-4mix-k4-s0", "random", 60.0, 4),
        g("h100-k2-s0", "enumerate", 200.0, 2, status="optimal"),
        g("h100-k2-s0", "random", None, 2, termination="crashed"),
    ]


def _context(records: list[dict]) -> SectionContext:
    return SectionContext(best=an.best_known(records), prefix="x")


def test_placement_section_gives_score_and_spreads_per_setting() -> None:
    records = _placement_records()
    [table] = spreads_section(records, _context(records))
    assert isinstance(table, Table)
    assert table.columns == ("solver", "setting i", "setting ii")
    assert dict((row[0], row[1:]) for row in table.rows) == {
        "best-fit": ("1.6 (2 / 2)", "1.5 (1.5 / 1.5)"),
        "enumerate": ("0.4 (2 / 0)", "-"),
    }


def test_cluster_is_the_cluster_tag_() -> None:
    assert cluster_tag({"tags": {"cluster": "het-ra"}}) == "het-ra"
    assert cluster_tag({"tags": {}}) == cluster_tag({}) == "-"


def test_placement_section_groups_by_job_without_a_setting_tag() -> None:
    records = _placement_records()
    for r in records:
        del r["tags"]["setting"]
    [table] = spreads_section(records, _context(records))
    assert table.columns == ("solver", "setting 4x2")


def test_tag_tables_group_gaps_by_tag_value() -> None:
    records = _placement_records()
    records[-1]["tags"]["job"] = "8x2"  # job splits {i-even, ii-even} from {ii-s1}
    job, setting = tag_tables(records, an.best_known(records))
    assert job.columns == ("solver", "job = 4x2", "job = 8x2")
    table = setting
    assert table.columns == ("solver", "setting = i", "setting = ii")
    rows = {row[0]: row[1:] for row in table.rows}
    # best-fit: gap 0.75 on i (1.6 vs 0.4); on ii gap 0 (2.0, best) and 0 (ii-s1, 1.0, best).
    assert rows["best-fit"] == ("75.00 % (0/1)", "0.00 % (2/2)")
    assert rows["enumerate"] == ("0.00 % (1/1)", "100.00 % (0/1)")


def test_a_tag_grouping_like_an_earlier_one_gets_no_table() -> None:
    records = _placement_records()
    for r in records:
        r["tags"]["job"] = {"i": "6x2", "ii": "12x8"}[r["tags"]["setting"]]
    [table] = tag_tables(records, an.best_known(records))
    assert table.columns[1:] == ("job = 6x2", "job = 12x8")  # natural order
    assert table.caption.endswith("The 'setting' tag groups alike.")


def test_gpuselect_section_table2_and_gbe_vs_k() -> None:
    records = _gpuselect_records()
    table, note, *figures = gbe_section(records, _context(records))
    assert isinstance(table, Table) and isinstance(note, Text)
    rows = {(row[0], row[1]): row[2:] for row in table.rows}
    # random on het-4mix: GBE 50/100 and 60/80 -> 62.5 %; loss 50 and 20 -> 35 GB/s.
    assert rows[("het-4mix", "random")] == ("62.5", "35", "2", "0")
    assert rows[("het-4mix", "enumerate")] == ("100", "0", "2", "0")
    assert rows[("h100", "random")] == ("-", "-", "1", "1")
    assert [r[:2] for r in table.rows][:2] == [("h100", "enumerate"), ("h100", "random")]

    plot = {p.name: p for p in figures if isinstance(p, Plot)}["x-gbe-vs-k-het-4mix"]
    series = {s.label: (s.x, s.y) for s in plot.series}
    assert series["random"] == ((2.0, 4.0), (50.0, 75.0))
    assert series["enumerate"] == ((2.0, 4.0), (100.0, 100.0))


def test_families_declare_their_sections() -> None:
    assert family_size_figure("placement") == "nodes"
    assert family_size_figure("gpuselect") == "available"
    assert [title for title, _ in family_sections("placement")] == [
        "Placement: score and spreads per setting"
    ]
    assert family_sections("gpuselect")[0][1] is gbe_section
    assert family_sections("no-such-family") == [] and family_size_figure("nope") is None


def test_report_has_environment_main_table_family_section_and_failures() -> None:
    records = _placement_records() + _gpuselect_records()
    doc = build_report(records, sources=["r.jsonl"], out_dir="rep")
    md = render_markdown(doc)
    assert md.startswith("# topoopt solver comparison\n")
    assert "Made by `topoopt report r.jsonl --out rep`" in md
    for heading in (
        "## Environment",
        "## placement / paper",
        "### Solvers",
        "### Performance profile",
        "### Placement: score and spreads per setting",
        "## gpuselect / protocol",
        "### GPU selection: GBE (BandPilot Table 2, Fig. 6)",
        "### Per instance",
        "### Failed runs",
    ):
        assert f"\n{heading}\n" in md
    assert "| best-fit | 3 | 0 | 3 | 0 | 0 | 2 |" in md
    assert "| enumerate | 2 | 1 | 0 | 1 | 1 | 1 |" in md
    assert "| ii-even-a0.2 | 2 | 2 | - (timeout) |" in md
    assert "shift of 1 s" in md
    assert "worker killed" in md
    names = [p.name for p in plots(doc)]
    assert len(names) == len(set(names))

    page = render_html(doc, "t")
    tables = sum(line.startswith("|---") for line in md.splitlines())
    assert page.count("<table>") == tables > 5
    assert page.count("<table>\n<caption>") == md.count("*\n\n| ") > 5
    assert page.count('<figure><img src="figures/') == page.count("<figcaption>") == len(names)
    assert '<td style="text-align:right">3</td>' in page
    assert "<code>topoopt report r.jsonl --out rep</code>" in page


def test_a_family_with_several_suites_gets_its_section_over_all_of_them() -> None:
    records = _gpuselect_records()
    for r in records:
        r["suite"] = "protocol-" + cluster_tag(r)
    md = render_markdown(build_report(records))
    assert "## gpuselect / protocol-h100" in md and "## gpuselect / protocol-het-4mix" in md
    summary = md[md.index("## gpuselect: all suites") :]
    assert "| h100 | random | - | - | 1 | 1 |" in summary
    assert "| het-4mix | random | 62.5 | 35 | 2 | 0 |" in summary
    assert "(figures/gpuselect-all-suites-gbe-vs-k-het-4mix.png)" in summary
    assert "## placement: all suites" not in render_markdown(build_report(_placement_records()))


def test_markdown_tables_align_numbers_and_escape_pipes() -> None:
    doc = [Section("T", (Table(("name", "value"), (("a|b", "1.5"), ("c", "-")), "cap"),))]
    md = render_markdown(doc)
    assert "|---|---:|" in md and "a\\|b" in md and "*cap*" in md


def test_html_captions_belong_to_their_table_or_figure() -> None:
    figure = Plot("p", "P", "x", "y", ())  # no caption: the table's caption comes next
    table = Table(("a",), (("1",),), "T cap")
    captioned = Plot("q", "Q", "x", "y", (), caption="Q cap")
    page = render_html([Section("S", (figure, table, captioned))], "t")
    body = page[page.index("<h1>") : page.index("</body>")].replace("\n", "")
    assert body.startswith(
        '<h1>S</h1><figure><img src="figures/p.png" alt="P" /></figure>'
        "<table><caption>T cap</caption><thead>"
    )
    assert body.endswith(
        '</table><figure><img src="figures/q.png" alt="Q" /><figcaption>Q cap</figcaption></figure>'
    )


def test_write_report_is_reproducible(tmp_path: Path) -> None:
    records = _placement_records()
    first = write_report(records, tmp_path / "one", sources=["r.jsonl"])
    write_report(records, tmp_path / "two", sources=["r.jsonl"])
    assert [p.name for p in first] == ["report.md", "report.html"]
    pngs = sorted(p.name for p in (tmp_path / "one" / "figures").glob("*.png"))
    assert pngs == [
        "placement-paper-gaps.png",
        "placement-paper-profile.png",
        "placement-paper-time-size.png",
    ]
    for name in pngs:
        assert (tmp_path / "one/figures" / name).read_bytes() == (
            tmp_path / "two/figures" / name
        ).read_bytes()
    for report in ("report.md", "report.html"):  # the out folder is in the command line
        one = (tmp_path / "one" / report).read_text().replace(str(tmp_path / "one"), "X")
        two = (tmp_path / "two" / report).read_text().replace(str(tmp_path / "two"), "X")
        assert one == two


def test_instance_table_marks_time_limits_and_failures() -> None:
    records = [
        rec("a", "oracle", 2.5, termination="time_limit"),
        rec("a", "mip", 2.0, status="optimal"),
        rec("a", "rand", 3.0, seed=0),
        rec("a", "rand", None, seed=1, termination="crashed"),
        rec("b", "oracle", None, termination="timeout"),
    ]
    objective, times = instance_tables(records, an.best_known(records))
    assert objective.columns == ("instance", "best known", "mip", "oracle", "rand")
    assert objective.rows == (
        ("a", "2 (opt)", "2", "2.5 (time limit)", "3 (1/2 failed)"),
        ("b", "-", "", "- (timeout)", ""),
    )
    assert times.rows[1] == ("b", "", "1", "")


SCRIPT = "<script>alert(1)</script>"


def test_names_from_records_cannot_inject_markup() -> None:
    records = _placement_records()
    for r in records[2:4]:  # one failed run: the name also enters the failures table
        r["instance"] = SCRIPT
        r["tags"]["setting"] = "[x](javascript:alert(1))"
    records[2]["message"] = "<img src=x onerror=alert(1)> | *not* a column"
    records.append(rec("x", "heur", 3.0, status="optimal", backend="<b>"))
    records.append(rec("x", "mip", 2.0))  # beats heur's optimality claim: a Text naming it
    doc = build_report(records)
    md, page = render_markdown(doc), render_html(doc, "<title>")

    assert "<script" not in page.lower() and "<img src=x" not in page and "<b>" not in page
    assert 'href="javascript' not in page
    assert page.count(html.escape(SCRIPT, quote=False)) == md.count(escape_markdown(SCRIPT)) > 1
    assert "<title>&lt;title&gt;</title>" in page
    assert "<td>&lt;img src=x onerror=alert(1)&gt; | *not* a column</td>" in page
    assert "(a solver bug): x heur[&lt;b&gt;].</p>" in page
    assert SCRIPT not in md and "<b>" not in md and "[x](javascript" not in md
    assert "setting = \\[x\\](javascript:alert(1)) |" in md
    assert "| \\<img src=x onerror=alert(1)\\> \\| \\*not\\* a column |" in md


_PLAIN = st.text(
    st.one_of(
        st.sampled_from(list("\\`*_[]<>|$~&#!-+=.()1 :/\"'")),
        st.characters(exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
    ),
    min_size=1,
    max_size=40,
).map(str.strip)


def _shown(page: str, tag: str) -> list[str]:
    return [html.unescape(m) for m in re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", page, re.S)]


@given(_PLAIN.filter(bool))
def test_any_text_shows_in_the_html_as_written(text: str) -> None:
    paragraph = text.replace("`", "'")  # a pair of backticks in a paragraph is a code span
    doc = [
        Section(
            text,
            (
                Text(paragraph),
                Table(("c",), ((text,),), text),
                Plot("p", text, "x", "y", (), caption=text),
            ),
        )
    ]
    page = render_html(doc, "t")
    assert _shown(page, "h1") == [text]
    assert _shown(page, "p") == [paragraph]
    assert _shown(page, "td") == _shown(page, "caption") == _shown(page, "figcaption") == [text]
    assert [html.unescape(a) for a in re.findall(r'alt="(.*?)"', page)] == [text]


@pytest.mark.parametrize("module", ["matplotlib", "markdown_it"])
def test_report_without_the_extra_is_a_one_line_error(
    module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed: imports fail
    results = tmp_path / "r.jsonl"
    results.write_text("")
    result = CliRunner().invoke(main, ["report", str(results), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 2
    assert result.output == (
        "error: topoopt report needs the report extra: pip install 'topoopt[report]'\n"
    )
    assert not (tmp_path / "rep").exists()


MATH = r"$\frac{$"
"""A name matplotlib's mathtext cannot parse (``ValueError`` when a plot label is parsed)."""


def _mathtext_records() -> list[dict]:
    def g(solver: str, objective: float | None, k: int, **kw: object) -> dict:
        return rec(
            f"{MATH}-k{k}-s0",
            solver,
            objective,
            family="gpuselect",
            suite=MATH,
            size={"k": k, "gpus": 8, "available": 4 + k, "hosts": 2},
            tags={"cluster": MATH, "model": f"{MATH}{k}"},
            **kw,
        )

    return [
        g("enumerate", 10.0, 3, status="optimal"),
        g(MATH, 5.0, 3),
        g("enumerate", 12.0, 4, status="optimal"),
        g(MATH, 6.0, 4),
        g("_hidden", None, 4, termination="crashed", message=f"{MATH} crashed"),
    ]


def test_names_that_look_like_mathtext_are_drawn_as_written(tmp_path: Path) -> None:
    written = write_report(_mathtext_records(), tmp_path / "rep")
    md, page = (path.read_text() for path in written)
    assert escape_markdown(f"{MATH}-k3-s0") in md and f"{MATH}-k3-s0" in page
    pngs = sorted((tmp_path / "rep" / "figures").glob("*.png"))
    assert len(pngs) >= 4  # profile, gaps, time vs size, GBE vs k
    assert all(png.read_bytes().startswith(b"\x89PNG") for png in pngs)


def test_plot_labels_are_text_not_mathtext(tmp_path: Path) -> None:
    from topoopt.bench.document import Series
    from topoopt.bench.plots import draw

    for kind in ("step", "scatter", "line"):
        plot = Plot(
            "p",
            MATH,
            f"{MATH} x",
            "$y$",
            (Series(MATH, (1.0, 10.0), (0.5, 1.0)), Series("_under", (2.0,), (0.2,))),
            kind=kind,  # type: ignore[arg-type]
            xscale="log",
        )
        assert draw(plot, tmp_path / f"{kind}.png").stat().st_size > 0


def _write_jsonl(path: Path, records: list[dict], newline: str = "\n") -> Path:
    import json

    path.write_text("".join(json.dumps(r) + newline for r in records), newline="")
    return path


def test_report_command_with_a_mathtext_instance_name(tmp_path: Path) -> None:
    results = _write_jsonl(tmp_path / "r.jsonl", _mathtext_records(), "\r\n")
    result = CliRunner().invoke(main, ["report", str(results), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("report of 5 record(s): ")
    assert len(list((tmp_path / "rep" / "figures").glob("*.png"))) >= 4


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"seed": "x"}, "line 2: seed must be a non-negative integer, got 'x'"),
        ({"objective": "abc"}, "line 2: objective must be a finite number or null, got 'abc'"),
        ({"status": "great"}, "line 2: status must be one of 'no_solution', 'unknown'"),
        ({"family": None}, "line 2: family must be a non-empty string, got None"),
    ],
)
def test_report_command_names_a_bad_record(tmp_path: Path, change: dict, words: str) -> None:
    good = _placement_records()
    results = _write_jsonl(tmp_path / "results.jsonl", [good[0], {**good[1], **change}])
    result = CliRunner().invoke(main, ["report", str(results), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {results} {words}")
    assert result.output.count("\n") == 1 and result.output.endswith("\n")
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{}\n", "line 1: missing required field(s): family, suite, instance"),
        ('{"objective": NaN}\n', "line 1: not valid JSON (NaN is not a JSON number"),
        ("hello", "line 1: not valid JSON (Expecting value at line 1 column 1)"),
        ("\udcff\n", "line 1: not valid UTF-8: byte 0xff at column 1"),
    ],
)
def test_report_command_names_a_bad_file(tmp_path: Path, text: str, words: str) -> None:
    results = tmp_path / "results.jsonl"
    results.write_bytes(text.encode("utf-8", "surrogateescape"))
    result = CliRunner().invoke(main, ["report", str(results), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {results} {words}")
    assert result.output.count("\n") == 1 and result.output.endswith("\n")


def test_report_counts_a_duplicate_record_once_and_says_so(tmp_path: Path) -> None:
    records = _placement_records()
    first = _write_jsonl(tmp_path / "a.jsonl", records)
    again = _write_jsonl(tmp_path / "b.jsonl", [{**records[1], "objective": 99.0}, records[0]])
    result = CliRunner().invoke(
        main, ["report", str(first), str(again), "--out", str(tmp_path / "rep")]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"warning: dropped 2 duplicate record(s) (a run recorded twice in {first}, {again}); "
        "the first copy counts\n"
    )
    assert result.stdout.startswith(f"report of {len(records)} record(s): ")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| best-fit | 3 | 0 | 3 |" in md  # 3 runs, not 4
    assert "99" not in md.split("### Per instance")[1]  # the first copy counts


@pytest.mark.parametrize(
    "values",
    [(1e308, 1e-308), (8e307, 1.0), (0.0, -5.0), (1e-320, 1e-320)],
    ids=["float-range", "near-max", "non-positive-on-log", "subnormal"],
)
@pytest.mark.parametrize("kind", ["step", "scatter", "line"])
def test_any_finite_data_gives_a_png(tmp_path: Path, kind: str, values: tuple) -> None:
    from topoopt.bench.document import Series
    from topoopt.bench.plots import draw

    plot = Plot(
        "p",
        "t",
        "x",
        "y",
        (Series("a", values, values), Series("b", (), ())),
        kind=kind,  # type: ignore[arg-type]
        xscale="log",
        yscale="log",
    )
    assert draw(plot, tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")


_NAME = st.sampled_from(["a", MATH, "<b>", "_x", "名"]) | st.text(min_size=1, max_size=6)
_NUMBER = st.none() | st.floats(-1e300, 1e300) | st.integers(-(10**20), 10**20)


@st.composite
def _valid_records(draw: st.DrawFn) -> dict:
    from topoopt.bench.schema import STATUSES

    record = rec(
        draw(_NAME),
        draw(_NAME),
        draw(_NUMBER),
        status=draw(st.sampled_from(STATUSES)),
        termination=draw(st.sampled_from(["optimal", "completed", "time_limit", "timeout"])),
        total_s=draw(st.floats(0, 1e300) | st.integers(0, 10**20)),
        family=draw(st.sampled_from(["placement", "gpuselect", "plug-in"])),
        suite=draw(st.sampled_from(["p", "q"])),
        backend=draw(st.none() | _NAME),
        seed=draw(st.integers(0, 2)),
        repeat=draw(st.integers(0, 1)),
        time_limit=draw(st.floats(1e-300, 1e300)),
        size=draw(st.dictionaries(st.sampled_from(["k", "nodes", "available"]), st.integers(0))),
        tags=draw(st.dictionaries(st.sampled_from(["cluster", "setting", "job"]), _NAME)),
        dp_spread=draw(_NUMBER),
        bandwidth=draw(_NUMBER),
    )
    record["sense"] = draw(st.sampled_from(["minimize", "maximize"]))
    return record


@given(st.lists(_valid_records(), min_size=1, max_size=8))
def test_any_valid_records_give_a_report(records: list[dict]) -> None:
    from topoopt.bench.schema import record_problem

    assert [record_problem(r) for r in records] == [None] * len(records)
    doc = build_report(records)
    assert render_markdown(doc) and render_html(doc, "t")


def test_report_states_the_duplicates_dropped() -> None:
    md = render_markdown(build_report(_placement_records(), duplicates=2))
    assert "2 duplicate record(s) (a run recorded twice) were dropped" in md
    assert "duplicate" not in render_markdown(build_report(_placement_records()))
