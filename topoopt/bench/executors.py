"""Executors: where the runs of a benchmark execute.

An executor takes :class:`~topoopt.bench.task.Task` objects and yields their records as runs
finish, in any order. Each run is :func:`~topoopt.bench.supervisor.run_task`: a fresh worker
process with a hard timeout, so executors only decide *where* and *how many at once*.

* :class:`LocalExecutor` — ``jobs`` runs at a time on this machine (the default);
* :class:`DaskExecutor` — the same runs on a Dask distributed cluster (optional extra
  ``topoopt[dask]``); as many at a time as the cluster has worker threads. Workers must see
  the instance files at the same paths (a shared file system) and have topoopt installed.

The runner (:mod:`topoopt.bench.runner`) writes records as they arrive, so resuming works the
same whichever executor ran them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Protocol

from topoopt.bench.records import Record
from topoopt.bench.supervisor import run_task
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
    """Run ``jobs`` worker processes at a time on this machine.

    Threads only supervise the worker processes (launch, watch, kill); every solve runs in its
    own process. Stopping the iteration (an interrupt, an error) kills the running workers.

    Parameters
    ----------
    jobs
        Number of runs at a time (at least 1).
    """

    def __init__(self, jobs: int = 1) -> None:
        if jobs < 1:
            raise TopooptError(f"jobs: must be at least 1, got {jobs}")
        self.jobs = jobs

    @property
    def label(self) -> str:
        """``local:<jobs>``."""
        return f"local:{self.jobs}"

    def run(self, tasks: Sequence[Task], on_start: OnStart | None = None) -> Iterator[Record]:
        """Run ``tasks`` and yield their records in the order they finish."""
        cancel = threading.Event()

        def job(task: Task) -> Record | None:
            if cancel.is_set():
                return None
            if on_start is not None:
                on_start(task)
            return run_task(task, cancel)

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


class DaskExecutor:
    """Run the tasks on a Dask distributed cluster.

    Parameters
    ----------
    scheduler
        Address of the scheduler (``tcp://host:8786``), or a connected
        ``distributed.Client`` (which is then left open).

    Notes
    -----
    ``on_start`` is not called: the cluster does not report when a task starts. Runs that are
    already executing when the iteration stops finish on their workers (each within its hard
    timeout); their records are not written.
    """

    def __init__(self, scheduler: Any) -> None:
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

        futures = self.client.map(run_task, list(tasks), pure=False)
        try:
            for future in distributed.as_completed(futures):
                yield future.result()
        finally:
            self.client.cancel(futures)

    def close(self) -> None:
        """Close the client if this executor opened it."""
        if self._owned:
            self.client.close()
