"""Isolation modes: long-lived worker processes (the default) keep every guarantee of a process
per run — a killed, crashed, memory-capped or failed run is an error record and the next run
gets a fresh worker — and give the same records."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from topoopt.bench.executors import LocalExecutor
from topoopt.bench.pool import WorkerPool
from topoopt.bench.records import Record, read_records, record_key
from topoopt.bench.runner import plan, run_benchmark
from topoopt.bench.supervisor import run_task
from topoopt.cli import main
from topoopt.core.errors import TopooptError

TIMINGS = {"wall_s", "total_s", "build_s", "solve_s", "peak_memory_mb", "started_at"}

# test-by-seed (tests/bench/misbehaving.py) misbehaves as seed % 10 says: 0 solves, 1 hangs,
# 2 exits the process, 3 eats memory, 4 raises, 5 frees 256 MiB then solves, 6 leaves a thread,
# 7 refuses the instance. Each misbehaving run is followed by a good one (seed 10, 20, ...).
SEEDS = [0, 10, 1, 20, 2, 30, 3, 40, 4, 50, 5, 60, 6, 70, 7, 80]


def _by_seed(out: Path) -> dict[int, Record]:
    return {r["seed"]: r for r in read_records(out)}


def _pid(record: Record) -> str:
    assert record["status"] == "feasible", record["message"]
    return str(record["message"])


def test_each_failure_replaces_the_worker_and_the_next_run_succeeds(
    plugin: str, suite: Path, tmp_path: Path
) -> None:
    tasks = plan(
        [suite / "fig12-two-pods.json"],
        solvers=["test-by-seed"],
        seeds=SEEDS,
        time_limit=0.5,
        grace=4.0,
        memory_limit_mb=400,
        plugins=[plugin],
    )
    out = tmp_path / "r.jsonl"
    summary = run_benchmark(tasks, out, executor=LocalExecutor(jobs=1))  # in this order
    records = _by_seed(out)
    assert (summary.ran, summary.errors) == (16, 5)

    assert (records[1]["status"], records[1]["termination"]) == ("error", "timeout")
    assert "hard timeout of 4.6 s" in records[1]["message"]
    assert records[1]["wall_s"] >= 4.6
    assert (records[2]["status"], records[2]["termination"]) == ("error", "crashed")
    assert "exited with status 7" in records[2]["message"]
    assert "about to exit" in records[2]["message"]  # what that run printed is quoted
    assert (records[3]["status"], records[3]["termination"]) == ("error", "memory")
    assert "memory limit of 400 MiB" in records[3]["message"]
    assert records[3]["peak_memory_mb"] > 400
    assert (records[4]["status"], records[4]["termination"]) == ("error", "error")
    assert records[4]["message"].startswith("RuntimeError: solver bug: index out of range")

    # One worker served seeds 0 and 10; after each failure (and after a run that left a
    # thread behind) the next run had a fresh one.
    assert _pid(records[0]) == _pid(records[10])
    fresh = [_pid(records[seed]) for seed in (10, 20, 30, 40, 50, 70)]
    assert len(set(fresh)) == len(fresh)
    assert _pid(records[50]) == _pid(records[5]) == _pid(records[60]) == _pid(records[6])
    # topoopt's own refusal of a run is an error record, and the worker stays.
    assert (records[7]["status"], records[7]["termination"]) == ("error", "error")
    assert records[7]["message"].startswith("UnsupportedInstanceError: ")
    assert _pid(records[70]) == _pid(records[80])
    for seed in (20, 30, 40, 50, 60, 70, 80):
        assert records[seed]["objective"] == records[0]["objective"] == 1.0


@pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="per-run peak memory needs Linux"
)
def test_peak_memory_is_that_of_the_run_not_of_the_worker(
    plugin: str, suite: Path, tmp_path: Path
) -> None:
    tasks = plan(
        [suite / "fig12-two-pods.json"],
        solvers=["test-by-seed"],
        seeds=[5, 10],
        plugins=[plugin],
    )
    out = tmp_path / "r.jsonl"
    run_benchmark(tasks, out, executor=LocalExecutor(jobs=1))
    records = _by_seed(out)
    assert _pid(records[5]) == _pid(records[10])  # the 256 MiB were given back: one worker
    assert records[5]["peak_memory_mb"] > 256
    assert records[10]["peak_memory_mb"] < records[5]["peak_memory_mb"] - 200


def _content(records: list[Record]) -> dict[object, Record]:
    return {record_key(r): {k: v for k, v in r.items() if k not in TIMINGS} for r in records}


def test_records_are_the_same_in_both_isolation_modes(suite: Path, tmp_path: Path) -> None:
    tasks = plan([suite], solvers=["best-fit", "koordinator", "exact-mip"])
    worker, process = tmp_path / "worker.jsonl", tmp_path / "process.jsonl"
    run_benchmark(tasks, worker, executor=LocalExecutor(jobs=2))
    run_benchmark(tasks, process, executor=LocalExecutor(jobs=2, isolation="process"))
    got = _content(read_records(worker))
    assert len(got) == len(tasks) == 6
    assert got == _content(read_records(process))
    assert all(r["status"] in ("optimal", "feasible") for r in got.values())


def test_the_cli_takes_the_isolation_mode(suite: Path, tmp_path: Path) -> None:
    instance = suite / "fig12-two-pods.json"
    outs = []
    for isolation in ("process", "worker"):
        out = tmp_path / f"{isolation}.jsonl"
        args = ["bench", str(instance), "-s", "best-fit", "--out", str(out), "--no-progress"]
        result = CliRunner().invoke(main, [*args, "--isolation", isolation])
        assert result.exit_code == 0, result.output
        outs.append(_content(read_records(out)))
    assert outs[0] == outs[1]
    bad = CliRunner().invoke(main, ["bench", str(instance), "--out", "x", "--isolation", "no"])
    assert bad.exit_code == 2 and "'no' is not one of 'worker', 'process'" in bad.output


def test_an_unknown_isolation_mode_is_refused() -> None:
    with pytest.raises(TopooptError, match="isolation: must be one of worker, process"):
        LocalExecutor(isolation="thread")


def test_a_pool_reuses_workers_by_kind_and_stops_them_when_closed(
    suite: Path, tmp_path: Path
) -> None:
    tasks = plan([suite], solvers=["best-fit", "koordinator"])  # 2 instances x 2 solvers
    with WorkerPool() as pool:
        records = [run_task(task, pool=pool) for task in tasks]
        assert pool.started == 2 and pool.idle == 2  # one worker per solver
        workers = [p for p in psutil.Process().children() if "topoopt.bench.worker" in p.cmdline()]
        assert len(workers) == 2
    _gone, alive = psutil.wait_procs(workers, timeout=30)
    assert alive == [] and pool.idle == 0
    assert all(r is not None and r["status"] == "feasible" for r in records)


def test_killing_the_benchmark_stops_its_workers(suite: Path, tmp_path: Path) -> None:
    """``kill -9`` of ``topoopt bench`` gives its workers no chance to be stopped: they notice
    that their parent is gone and exit by themselves."""
    out = tmp_path / "r.jsonl"
    command = [
        sys.executable,
        "-m",
        "topoopt.cli",
        "bench",
        str(suite),
        "--solvers",
        "best-fit,exact-mip",
        "--repeat",
        "50",
        "--out",
        str(out),
        "--no-progress",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 120
        while not workers and time.monotonic() < deadline:
            time.sleep(0.05)
            if proc.poll() is not None:
                break
            workers = [
                p
                for p in psutil.Process(proc.pid).children()
                if "topoopt.bench.worker" in p.cmdline()
            ]
        assert workers, "no worker started"
    finally:
        proc.kill()
        proc.wait()
    _gone, alive = psutil.wait_procs(workers, timeout=60)
    assert alive == []
