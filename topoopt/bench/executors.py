"""Executors: where the runs of a benchmark execute.

An executor takes :class:`~topoopt.bench.task.Task` objects and yields their records as runs
finish, in any order. Each run is :func:`~topoopt.bench.supervisor.run_task`: a supervised
run in a worker process with a hard timeout — by default a long-lived worker of a
:class:`~topoopt.bench.pool.WorkerPool` (``isolation="worker"``), or a fresh process per run
(``isolation="process"``) — so executors only decide *where* and *how many at once*.

* :class:`LocalExecutor` — ``jobs`` runs at a time on this machine (the default);
* :class:`DaskExecutor` — the same runs on a Dask distributed cluster (optional extra
  ``topoopt[dask]``); as many at a time as the cluster has worker threads. Workers must see
  the instance files at the same paths (a shared file system) and have topoopt installed.

The runner (:mod:`topoopt.bench.runner`) writes records as they arrive, so resuming works the
same whichever executor ran them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Protocol

from topoopt.bench.pool import DEFAULT_MAX_RUNS, MAX_IDLE, WorkerPool, close_shared_pool, pool_key
from topoopt.bench.records import Record
from topoopt.bench.supervisor import DEFAULT_ISOLATION, check_isolation, run_task
from topoopt.bench.task import Task
from topoopt.core.errors import TopooptError

OnStart = Callable[[Task], None]
"""Called when a run starts (for progress displays)."""


class Executor(Protocol):
    """Runs tasks and yields their records as they finish."""

    @property
    def label(self) -> str:
        """Short description stored in every record (``local:2``, ``dask:tcp://...``)."""

    def run(self, tasks: Sequence[Task], on_start: OnStart | None = None) -> Iterator[Record]:
        """Run every task; yield each record as soon as it is ready."""


class LocalExecutor:
    """Run ``jobs`` runs at a time in worker processes on this machine.

    Threads only supervise the worker processes (launch, watch, kill); every solve runs in a
    worker process. Stopping the iteration (an interrupt, an error) kills the running
    workers, and the idle ones.

    Parameters
    ----------
    jobs
        Number of runs at a time (at least 1).
    isolation
        ``"worker"`` (default): long-lived worker processes, each serving many runs of one
        solver (one pool per :meth:`run`, stopped at its end); ``"process"``: a fresh process
        per run.
    max_runs
        Runs after which a long-lived worker is replaced.
    """

    def __init__(
        self,
        jobs: int = 1,
        *,
        isolation: str = DEFAULT_ISOLATION,
        max_runs: int = DEFAULT_MAX_RUNS,
    ) -> None:
        if jobs < 1:
            raise TopooptError(f"jobs: must be at least 1, got {jobs}")
        if max_runs < 1:
            raise TopooptError(f"max_runs: must be at least 1, got {max_runs}")
        self.jobs = jobs
        self.isolation = check_isolation(isolation)
        self.max_runs = max_runs

    @property
    def label(self) -> str:
        """``local:<jobs>``."""
        return f"local:{self.jobs}"

    def run(self, tasks: Sequence[Task], on_start: OnStart | None = None) -> Iterator[Record]:
        """Run ``tasks`` and yield their records in the order they finish."""
        cancel = threading.Event()
        workers = None
        if self.isolation == "worker":
            # One idle worker per kind of run (solver, backend, ...), so that runs of several
            # solvers taken in turn all find theirs; one more per extra job.
            kinds = len({pool_key(task) for task in tasks})
            workers = WorkerPool(
                max_runs=self.max_runs, max_idle=min(kinds + self.jobs - 1, MAX_IDLE)
            )

        def job(task: Task) -> Record | None:
            if cancel.is_set():
                return None
            if on_start is not None:
                on_start(task)
            return run_task(task, cancel, isolation=self.isolation, pool=workers)

        pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="topoopt-bench")
        try:
            futures = [pool.submit(job, task) for task in tasks]
            for future in as_completed(futures):
                record = future.result()
                if record is not None:
                    yield record
        finally:
            cancel.set()
            pool.shutdown(wait=True, cancel_futures=True)
            if workers is not None:
                workers.close()


class DaskExecutor:
    """Run the tasks on a Dask distributed cluster.

    Parameters
    ----------
    scheduler
        Address of the scheduler (``tcp://host:8786``), or a connected
        ``distributed.Client`` (which is then left open).
    isolation
        ``"worker"`` (default): each Dask worker process keeps its own pool of long-lived
        worker processes (:func:`~topoopt.bench.pool.shared_pool`), whose idle workers are
        stopped when :meth:`run` ends; ``"process"``: a fresh process per run.

    Notes
    -----
    ``on_start`` is not called: the cluster does not report when a task starts. Runs that are
    already executing when the iteration stops finish on their workers (each within its hard
    timeout); their records are not written.
    """

    def __init__(self, scheduler: Any, *, isolation: str = DEFAULT_ISOLATION) -> None:
        self.isolation = check_isolation(isolation)
        try:
            import distributed
        except ImportError:
            raise TopooptError(
                "the dask executor needs the optional extra: pip install 'topoopt[dask]'"
            ) from None
        self._owned = isinstance(scheduler, str)
        self.client = distributed.Client(scheduler) if self._owned else scheduler
        self._address = self.client.scheduler_info()["address"]

    @property
    def label(self) -> str:
        """``dask:<scheduler address>``."""
        return f"dask:{self._address}"

    def run(self, tasks: Sequence[Task], on_start: OnStart | None = None) -> Iterator[Record]:
        """Submit every task to the cluster and yield records in the order they finish."""
        import distributed

        futures = self.client.map(run_task, list(tasks), pure=False, isolation=self.isolation)
        try:
            for future in distributed.as_completed(futures):
                yield future.result()
        finally:
            self.client.cancel(futures)
            if self.isolation == "worker":
                # Stop the idle long-lived workers on every Dask worker, so that none outlives
                # the benchmark (or runs a plugin's old code in the next one). Best effort: a
                # Dask worker that is gone took its workers with it.
                with contextlib.suppress(Exception):
                    self.client.run(close_shared_pool)

    def close(self) -> None:
        """Close the client if this executor opened it."""
        if self._owned:
            self.client.close()
