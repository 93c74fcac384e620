"""Misbehaving solvers become error records while the other runs complete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from topoopt.bench.executors import LocalExecutor
from topoopt.bench.records import read_records
from topoopt.bench.runner import plan, run_benchmark
from topoopt.bench.schema import record_problem
from topoopt.bench.supervisor import WorkerExit, make_record
from topoopt.bench.task import Task

GOOD = ["placement/best-fit", "placement/exact-mip"]
BAD = [
    "placement/test-sleep",
    "placement/test-raise",
    "placement/test-exit",
    "placement/test-infeasible",
    "placement/test-memory",
]


@pytest.mark.parametrize("isolation", ["worker", "process"])
def test_each_failure_mode_gives_its_record_and_the_rest_completes(
    plugin: str, suite: Path, tmp_path: Path, isolation: str
) -> None:
    tasks = plan(
        [suite / "fig12-two-pods.json"],
        solvers=GOOD + BAD,
        time_limit=0.5,
        grace=6.0,
        memory_limit_mb=300,
        plugins=[plugin],
    )
    out = tmp_path / "r.jsonl"
    summary = run_benchmark(tasks, out, executor=LocalExecutor(jobs=2, isolation=isolation))
    records = {r["solver"]: r for r in read_records(out)}
    assert summary.ran == len(records) == 7
    assert summary.errors == 4

    for name in GOOD:
        assert records[name]["status"] in ("optimal", "feasible")
        assert records[name]["objective"] == 1.0
        assert records[name]["dp_spread"] is not None  # family metrics are kept

    sleep = records["placement/test-sleep"]
    assert (sleep["status"], sleep["termination"]) == ("error", "timeout")
    assert "hard timeout of 6.6 s" in sleep["message"]
    assert sleep["wall_s"] >= 6.6

    raised = records["placement/test-raise"]
    assert (raised["status"], raised["termination"]) == ("error", "error")
    assert raised["message"].startswith("RuntimeError: solver bug: index out of range")

    exited = records["placement/test-exit"]
    assert (exited["status"], exited["termination"]) == ("error", "crashed")
    assert "exited with status 7" in exited["message"]
    assert "about to exit" in exited["message"]  # the worker's last output is quoted

    infeasible = records["placement/test-infeasible"]
    assert (infeasible["status"], infeasible["termination"]) == ("infeasible", "error")
    assert infeasible["objective"] is None
    assert infeasible["violations"] and "free" in infeasible["violations"][0]

    memory = records["placement/test-memory"]
    assert (memory["status"], memory["termination"]) == ("error", "memory")
    assert memory["peak_memory_mb"] > 300

    for record in records.values():
        assert record["versions"]["topoopt"] and record["host"]["cores"]
        assert record["size"]["nodes"] == 12
        assert record["executor"] == "local:2"


def _task(**changes: object) -> Task:
    base = Task(
        path="/suite/a.json",
        instance_file="suite/a.json",
        instance="a",
        instance_hash="h",
        family="placement",
        suite="suite",
        sense="minimize",
        solver="placement/best-fit",
        backend=None,
        seed=0,
        repeat=0,
        time_limit=10.0,
        size={"nodes": 4},
        grace=2.0,
    )
    return Task(**{**base.__dict__, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("worker", "termination", "words"),
    [
        (WorkerExit(None, -11, None, 1.0, 50.0), "crashed", "killed by SIGSEGV"),
        (WorkerExit(None, -9, "timeout", 14.0, 50.0), "timeout", "hard timeout of 14 s"),
        (WorkerExit(None, -9, "memory", 3.0, 900.0), "memory", "memory limit of 512 MiB"),
        (
            WorkerExit({"error": "memory", "message": "MemoryError"}, 0, None, 1.0, 50.0),
            "memory",
            "MemoryError",
        ),
        (
            WorkerExit(None, 0, None, 1.0, 50.0, log_tail="Segfault"),
            "crashed",
            "exited with status 0 before writing a result; last output:\nSegfault",
        ),
    ],
)
def test_error_records_say_what_happened(worker: WorkerExit, termination: str, words: str) -> None:
    record = make_record(_task(memory_limit_mb=512), worker)
    assert record["status"] == "error"
    assert record["termination"] == termination
    assert words in record["message"]
    assert record["objective"] is None and record["total_s"] == worker.wall_s


def test_a_result_keeps_the_task_identity_and_the_larger_peak_memory() -> None:
    result = {
        "status": "feasible",
        "termination": "completed",
        "objective": 2.0,
        "bound": None,
        "gap": None,
        "total_s": 0.1,
        "build_s": 0.0,
        "solve_s": 0.1,
        "solver": "x/y",
        "instance": "other",
        "seed": 5,
        "backend": "scip",
        "message": "",
        "violations": [],
        "dp_spread": 2.0,
        "pp_spread": 0.0,
    }
    worker = WorkerExit({"result": result, "peak_memory_mb": 80.0}, 0, None, 1.2, 60.0)
    record = make_record(_task(), worker)
    assert (record["instance"], record["solver"], record["seed"], record["backend"]) == (
        "a",
        "placement/best-fit",
        0,
        None,
    )
    assert record["objective"] == 2.0 and record["dp_spread"] == 2.0
    assert record["peak_memory_mb"] == 80.0
    assert record["wall_s"] == 1.2 and record["hard_timeout"] == 14.0


def test_a_result_the_records_cannot_hold_becomes_an_error_record() -> None:
    """A record that broke the field table stopped the whole benchmark ("refusing to write
    an invalid record"); it is the run's error record now, and the other runs go on."""
    result = {
        "status": "feasible",
        "termination": "completed",
        "objective": 2.0,
        "total_s": 0.1,
        "message": "",
        "violations": [],
        "dp_spread": "wide",
    }
    worker = WorkerExit({"result": result, "peak_memory_mb": 80.0}, 0, None, 1.2, 60.0)
    record = make_record(_task(), worker)
    assert record["status"] == "error" and record["termination"] == "invalid"
    assert "dp_spread (a metric) must be" in record["message"]
    assert "dp_spread" not in record and record_problem(record) is None


def test_an_infinite_metric_is_written_as_inf(tmp_path: Path) -> None:
    """clusterselect's ``bottleneck_gbps`` is ``inf`` for one cluster; ``Result.to_dict``
    writes it ``"inf"``, which the record table refused: `topoopt bench` ended at the first
    such run (found on a random-small suite, seed 13). The report reads it back."""
    from topoopt.bench.report import write_report
    from topoopt.clusterselect.generate import fig2

    instance_file = tmp_path / "fig2.json"
    data = {**fig2().to_dict(), "demand": 8}  # e or g holds 8 GPUs: one cluster
    instance_file.write_text(json.dumps(data), encoding="utf-8")
    tasks = plan([instance_file], solvers=["clusterselect/single-cluster"], time_limit=5)
    out = tmp_path / "r.jsonl"
    run_benchmark(tasks, out)
    (record,) = read_records(out)
    assert record["status"] != "error", record["message"]
    assert record["clusters"] == 1 and record["bottleneck_gbps"] == "inf"
    markdown, _ = write_report(read_records(out), tmp_path / "report")
    assert "single-cluster" in markdown.read_text(encoding="utf-8")
