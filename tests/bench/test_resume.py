"""Resuming: rerunning skips recorded runs; an interrupted benchmark loses nothing written."""

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

from topoopt.bench.executors import LocalExecutor
from topoopt.bench.records import read_records, record_key
from topoopt.bench.runner import plan, run_benchmark

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


def test_killed_then_resumed_benchmark_has_every_record_exactly_once(
    suite: Path, tmp_path: Path
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
    written = read_records(out)
    assert 2 <= len(written) < 6
    with out.open("a") as f:  # a record torn by the kill, without its newline
        f.write('{"instance": "fig12-two-pods", "instance_ha')

    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert f"({len(written)} already there" in done.stdout

    lines = out.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # the torn line is gone
    counts = Counter(record_key(r) for r in records)
    assert len(counts) == 6 and set(counts.values()) == {1}
    assert records[: len(written)] == written


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
