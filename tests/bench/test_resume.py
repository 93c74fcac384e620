"""Resuming: rerunning skips recorded runs; an interrupted benchmark loses nothing written, in
LF and CRLF results files, wherever the kill tore the last record."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from bench.factories import rec
from topoopt.bench import records as records_module
from topoopt.bench.executors import LocalExecutor
from topoopt.bench.records import RecordWriter, read_records, record_key
from topoopt.bench.runner import plan, run_benchmark
from topoopt.cli import main

FAST = ["best-fit", "gpu-packing", "koordinator"]


def _wait_for_lines(path: Path, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} did not reach {count} records")


def test_rerun_skips_recorded_runs(suite: Path, tmp_path: Path) -> None:
    tasks = plan([suite], solvers=FAST[:2])
    out = tmp_path / "r.jsonl"
    first = run_benchmark(tasks[:1], out)
    second = run_benchmark(tasks, out)
    assert (first.ran, second.skipped, second.ran) == (1, 1, len(tasks) - 1)
    assert run_benchmark(tasks, out).ran == 0
    keys = [record_key(r) for r in read_records(out)]
    assert sorted(keys, key=str) == sorted((t.key for t in tasks), key=str)


@pytest.mark.parametrize(
    "newline",
    # CRLF resumes are covered at every byte offset in the default run (test below); the
    # real kill of a CRLF benchmark runs with the slow tests.
    [b"\n", pytest.param(b"\r\n", marks=pytest.mark.slow)],
    ids=["LF", "CRLF"],
)
def test_killed_then_resumed_benchmark_has_every_record_exactly_once(
    suite: Path, tmp_path: Path, newline: bytes
) -> None:
    out = tmp_path / "r.jsonl"
    command = [
        sys.executable,
        "-m",
        "topoopt.cli",
        "bench",
        str(suite),
        "--solvers",
        ",".join(FAST),
        "--out",
        str(out),
        "--no-progress",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_lines(out, 2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # The complete lines (the kill may have torn one), with the line ending under test, and a
    # record torn by the kill, without its line ending.
    data = out.read_bytes()
    data = data[: data.rindex(b"\n") + 1].replace(b"\n", newline)
    out.write_bytes(data + b'{"instance": "fig12-two-pods", "instance_ha')
    written = read_records(out)
    assert 2 <= len(written) < 6

    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert f"({len(written)} already there" in done.stdout
    assert "cut off a torn last line (43 bytes)" in done.stderr

    after = out.read_bytes()
    assert after.startswith(data)  # the records written before the kill are untouched
    assert after.count(b"\n") == after.count(newline) == 6  # one line ending throughout
    records = [json.loads(line) for line in after.splitlines()]  # the torn line is gone
    counts = Counter(record_key(r) for r in records)
    assert len(counts) == 6 and set(counts.values()) == {1}
    assert records == read_records(out)
    assert records[: len(written)] == written


def _records(count: int, ascii_only: bool) -> list[dict]:
    """Records of various shapes; without ``ascii_only``, names with multi-byte characters."""
    name = "ü-名-" if not ascii_only else "u-"
    records = [
        rec(f"{name}{i}", "best-fit", 1.5 * i - 2, seed=i, tags={"setting": "i"})
        for i in range(count)
    ]
    records[-1] = rec(
        f'{name}last \\ "q"',
        "exact-mip",
        None,
        backend="highs",
        termination="timeout",
        message="no result within 82 s\n  and a \u2028 tab\t",
        bound=-1.25e-7,
        gap=None,
        dp_spread=0.0,
        tags={"setting": "ii", "job": "4x2"},
    )
    return records


def _encode(record: dict, ascii_only: bool) -> bytes:
    return json.dumps(record, ensure_ascii=ascii_only).encode("utf-8")


@pytest.mark.parametrize("ascii_only", [True, False], ids=["ascii", "utf8"])
@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["LF", "CRLF"])
def test_resume_after_a_kill_at_every_byte_of_the_last_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, newline: bytes, ascii_only: bool
) -> None:
    """A writer killed while appending the last record leaves any prefix of its line; resuming
    keeps every earlier record exactly once and unchanged, then appends the new one."""
    monkeypatch.setattr(records_module.os, "fsync", lambda fd: None)  # durability not tested
    *earlier, last = _records(4, ascii_only)
    head = b"".join(_encode(r, ascii_only) + newline for r in earlier)
    line = _encode(last, ascii_only) + newline
    new, newer = rec("new", "koordinator", 3.0), rec("newer", "koordinator", None)
    out = tmp_path / "r.jsonl"
    for cut in range(len(line) + 1):
        out.write_bytes(head + line[:cut])
        complete = cut >= len(line) - len(newline)  # the JSON text is all there
        kept = [*earlier, last] if complete else earlier
        with RecordWriter(out) as writer:
            assert writer.keys == {record_key(r) for r in kept}
            assert writer.repaired == (0 if complete else cut)
            writer.write(new)
        after = out.read_bytes()
        assert after.startswith(head), cut
        assert after.count(b"\n") == after.count(newline) == len(kept) + 1, cut
        assert read_records(out) == [*kept, new], cut

        with RecordWriter(out) as writer:  # a second resume is clean
            assert (writer.repaired, writer.duplicates) == (0, 0)
            assert writer.keys == {record_key(r) for r in [*kept, new]}
            writer.write(newer)
        assert out.read_bytes() == after + json.dumps(newer).encode() + newline, cut
        assert read_records(out) == [*kept, new, newer], cut


@pytest.mark.usefixtures("plugin")
def test_interrupt_kills_running_workers_and_keeps_written_records(
    suite: Path, tmp_path: Path, plugin: str
) -> None:
    tasks = plan([suite], solvers=["best-fit", "test-sleep"], time_limit=30, plugins=[plugin])
    out = tmp_path / "r.jsonl"

    def interrupt(record: dict) -> None:
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(tasks, out, executor=LocalExecutor(jobs=2), on_record=interrupt)
    assert time.monotonic() - started < tasks[0].hard_timeout
    workers = [
        p
        for p in psutil.Process().children(recursive=True)
        if "topoopt.bench.worker" in p.cmdline()
    ]
    assert workers == []
    assert [r["solver"] for r in read_records(out)] == ["placement/best-fit"]


@pytest.mark.parametrize(
    "data",
    [b"hello", b"not json\n", b'{"seed": "x"}\n', b"\xff\xfe{\x00}\x00\n"],
    ids=["garbage", "garbage-line", "bad-record", "utf-16"],
)
def test_bench_refuses_a_bad_results_file_and_leaves_it_alone(
    suite: Path, tmp_path: Path, data: bytes
) -> None:
    out = tmp_path / "r.jsonl"
    out.write_bytes(data)
    result = CliRunner().invoke(
        main, ["bench", str(suite), "--solvers", "best-fit", "--out", str(out), "--no-progress"]
    )
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {out} line 1: ")
    assert result.output.count("\n") == 1
    assert out.read_bytes() == data


def test_bench_says_how_many_duplicates_the_results_file_holds(suite: Path, tmp_path: Path) -> None:
    instance = sorted(suite.glob("*.json"))[0]
    out = tmp_path / "r.jsonl"
    run_benchmark(plan([instance], solvers=["best-fit"]), out)
    out.write_bytes(out.read_bytes() * 3)
    args = ["bench", str(instance), "--solvers", "best-fit", "--out", str(out), "--no-progress"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"warning: {out} holds 2 duplicate record(s) (a run recorded twice); each run is "
        "skipped once, the report counts the first copy\n"
    )
    assert result.stdout == f"0 run(s) recorded in {out} (1 already there, 0 error record(s))\n"
