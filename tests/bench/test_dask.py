"""The Dask executor runs the same runs, with the same records, on a (local) Dask cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from topoopt.bench.records import read_records
from topoopt.bench.runner import plan, run_benchmark

distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")

from topoopt.bench.executors import DaskExecutor  # noqa: E402


def _topoopt_workers() -> int:
    """Worker processes of topoopt below this (Dask worker) process."""
    import psutil

    children = psutil.Process().children(recursive=True)
    return sum("topoopt.bench.worker" in " ".join(p.cmdline()) for p in children)


@pytest.mark.parametrize("isolation", ["worker", "process"])
def test_dask_executor_records_results_and_failures_and_resumes(
    plugin: str, suite: Path, tmp_path: Path, isolation: str
) -> None:
    tasks = plan(
        [suite / "fig12-two-pods.json"],
        solvers=["best-fit", "exact-mip", "test-exit", "test-raise"],
        time_limit=10,
        plugins=[plugin],
    )
    out = tmp_path / "r.jsonl"
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None
    ) as cluster:
        executor = DaskExecutor(cluster.scheduler_address, isolation=isolation)
        try:
            summary = run_benchmark(tasks, out, executor=executor)
            again = run_benchmark(tasks, out, executor=executor)
            # No idle worker outlives the benchmark on the Dask workers.
            assert set(executor.client.run(_topoopt_workers).values()) == {0}
        finally:
            executor.close()
    assert (summary.ran, summary.errors, again.ran, again.skipped) == (4, 2, 0, 4)
    records = {r["solver"]: r for r in read_records(out)}
    assert records["placement/best-fit"]["status"] == "feasible"
    assert records["placement/exact-mip"]["status"] == "optimal"
    assert records["placement/test-exit"]["termination"] == "crashed"
    assert records["placement/test-raise"]["termination"] == "error"
    assert all(r["executor"] == f"dask:{cluster.scheduler_address}" for r in records.values())


def test_dask_executor_uses_an_open_client_without_closing_it() -> None:
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        executor = DaskExecutor(client)
        assert list(executor.run([])) == []
        executor.close()
        assert client.status == "running"
