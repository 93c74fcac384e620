"""Long-lived worker processes: many supervised runs per process (``--isolation worker``).

Starting a Python process and importing topoopt costs about a second; a heuristic solves a
benchmark instance in a millisecond. A :class:`WorkerPool` therefore keeps worker processes
(``python -m topoopt.bench.worker --serve``, see :mod:`topoopt.bench.worker`) that have
imported topoopt, the plugins and the solver once, and hands each of them many runs over a
pipe. Every run is still supervised as in ``--isolation process``
(:func:`topoopt.bench.supervisor.supervise`):

* the hard timeout counts from the moment the run is handed to a ready worker; past it the
  worker's process group is killed (record ``"timeout"``);
* the resident memory of the worker's process tree is sampled every :data:`POLL_S` seconds
  while a run lasts longer than that, and the worker is killed above the task's memory limit
  (record ``"memory"``);
* a worker that dies during a run (``os._exit``, a segfault, the OOM killer) gives a
  ``"crashed"`` record with its exit status and the last lines it printed during that run;
* a worker starts with a ready handshake, under the same hard timeout and memory limit: a
  plugin whose import hangs or kills the process makes that run's error record.

A worker serves one *kind* of run, the :func:`pool_key` (solver, backend, threads, plugins),
so the state a solver leaves in its process (imported modules, caches, a backend's global
scheduler) is only ever seen by runs of the same solver, and ``peak_memory_mb`` compares
like with like. A worker is **replaced** — killed, and a fresh one started for the next run
— after a run that

* was killed (hard timeout, memory limit) or crashed;
* raised an exception (the process's state is suspect), unless it is one of topoopt's own
  errors (a :class:`~topoopt.core.errors.TopooptError`: an instance the solver does not
  support, an instance file that cannot be read, a bad option, a missing backend);
* left a thread or a child process behind;
* was the worker's :attr:`WorkerPool.max_runs`-th (default :data:`DEFAULT_MAX_RUNS`), to
  bound slow leaks;
* left the worker's resident memory more than :data:`GROWTH_LIMIT_MB` above what it was
  after its first run (so a run never starts with much more memory in use than in a fresh
  process).

Workers are separate processes started with :mod:`subprocess` (not ``multiprocessing``), so
pools also work inside Dask workers; each worker exits by itself when its parent dies.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import psutil

from topoopt.bench.supervisor import (
    LOG_TAIL_LINES,
    POLL_S,
    WorkerExit,
    _child_env,
    _kill_group,
    _tree_rss_mb,
)
from topoopt.bench.task import Task

DEFAULT_MAX_RUNS = 500
"""Runs after which a worker process is replaced (bounds slow leaks)."""

GROWTH_LIMIT_MB = 64.0
"""A worker whose resident memory after a run exceeds its resident memory after its first run
by more than this (MiB) is replaced."""

MAX_IDLE = 32
"""Most idle workers a pool keeps (the least recently used beyond this are stopped)."""

TAIL_BYTES = 1 << 16
"""Bytes at the end of a worker's output read for the last lines of a crashed run."""

EXIT_WAIT_S = 5.0
"""Seconds to wait for a worker that closed its pipe to exit before killing it."""

PoolKey = tuple[str, str | None, int | None, tuple[str, ...]]


def pool_key(task: Task) -> PoolKey:
    """The kind of run a worker serves: ``(solver, backend, threads, plugins)``."""
    return (task.solver, task.backend, task.threads, tuple(task.plugins))


class _Cancelled(Exception):
    pass


class WorkerProcess:
    """One long-lived worker process serving runs of one :func:`pool_key`.

    Not thread-safe: one run at a time, from one thread (the :class:`WorkerPool` ensures it).
    """

    def __init__(self, task: Task) -> None:
        preload = {"solver": task.solver, "backend": task.backend, "plugins": list(task.plugins)}
        self._spawn(pool_key(task), preload)

    def _spawn(self, key: PoolKey, preload: dict[str, Any]) -> None:
        """Start the worker process (``python -m topoopt.bench.worker --serve``), which
        imports what ``preload`` names before it says it is ready; a subclass that drives
        the worker differently (the HTTP service's :mod:`topoopt.serve.pool`) starts it here
        too."""
        self.key = key
        self.runs = 0
        self.ready = False
        self.clean = True
        self.baseline_mb: float | None = None
        self._buffer = b""
        self._released = False
        # The worker's output: a file without a name (nothing to clean up, even after a kill),
        # in append mode, so that the worker's writes go to the end of the file also after it
        # is emptied before a run: it holds what the current run printed. Closed by
        # _release_files.
        self._log = tempfile.TemporaryFile(prefix="topoopt-worker-")  # noqa: SIM115
        flags = fcntl.fcntl(self._log.fileno(), fcntl.F_GETFL)
        fcntl.fcntl(self._log.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
        requests_r, self._requests = os.pipe()
        self._responses, responses_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "topoopt.bench.worker",
                    "--serve",
                    str(requests_r),
                    str(responses_w),
                    json.dumps(preload),
                ],
                pass_fds=(requests_r, responses_w),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=_child_env(),
            )
        except BaseException:
            self._release_files()
            raise
        finally:
            os.close(requests_r)
            os.close(responses_w)
        self.process = psutil.Process(self.proc.pid)
        self._poll = select.poll()
        self._poll.register(self._responses, select.POLLIN)

    @property
    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.proc.poll() is None

    def _receive(
        self, started: float, task: Task, cancel: threading.Event | None
    ) -> tuple[dict[str, Any] | None, str | None, float]:
        """Wait for the worker's next message under the task's hard timeout and memory limit.

        Returns ``(message, None, peak)``, ``(None, "timeout" | "memory", peak)`` when the
        worker must be killed, or ``(None, None, peak)`` when it closed its pipe (it died).
        ``peak`` is the largest resident memory of the process tree sampled meanwhile (MiB).
        """
        peak = 0.0
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line, self._buffer = self._buffer[:newline], self._buffer[newline + 1 :]
                try:
                    return json.loads(line), None, peak
                except ValueError:  # not the worker's answer: something wrote on its pipe
                    _kill_group(self.proc)
                    return None, None, peak
            if self._poll.poll(POLL_S * 1000):
                chunk = os.read(self._responses, 1 << 16)
                if not chunk:
                    return None, None, peak
                self._buffer += chunk
                continue
            if cancel is not None and cancel.is_set():
                raise _Cancelled
            rss = _tree_rss_mb(self.process)
            peak = max(peak, rss)
            if task.memory_limit_mb is not None and rss > task.memory_limit_mb:
                return None, "memory", peak
            if time.perf_counter() - started > task.hard_timeout:
                return None, "timeout", peak

    def _failed(self, killed: str | None, started: float, peak: float) -> WorkerExit:
        """The exit of a run the worker did not answer: kill it (``killed``) or collect it."""
        if killed is not None:
            _kill_group(self.proc)
        else:
            try:
                self.proc.wait(EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                _kill_group(self.proc)
        self.clean = False
        return WorkerExit(
            outcome=None,
            returncode=self.proc.returncode,
            killed=killed,
            wall_s=time.perf_counter() - started,
            peak_memory_mb=peak,
            log_tail=self._log_tail(),
        )

    def run(self, task: Task, cancel: threading.Event | None = None) -> WorkerExit | None:
        """Run ``task`` in this worker and return how it ended (``None``: cancelled, the
        worker is then killed)."""
        try:
            if not self.ready:
                started = time.perf_counter()
                message, killed, peak = self._receive(started, task, cancel)
                if message is None or "ready" not in message:
                    if message is not None:  # not the handshake: not a topoopt worker
                        _kill_group(self.proc)
                    return self._failed(killed, started, peak)
                self.ready = True
            os.ftruncate(self._log.fileno(), 0)
            started = time.perf_counter()
            try:
                _write_all(self._requests, json.dumps(task.worker_spec()).encode() + b"\n")
            except BrokenPipeError:
                return self._failed(None, started, 0.0)
            message, killed, peak = self._receive(started, task, cancel)
            wall_s = time.perf_counter() - started
            if message is None:
                return self._failed(killed, started, peak)
        except _Cancelled:
            _kill_group(self.proc)
            self.clean = False
            return None
        self.runs += 1
        self.clean = bool(message.pop("clean", False))
        return WorkerExit(
            outcome=message, returncode=0, killed=None, wall_s=wall_s, peak_memory_mb=peak
        )

    def reusable(self, worker: WorkerExit, max_runs: int) -> bool:
        """Whether this worker may take another run after the one that ended as ``worker``
        (see the module's list of reasons to replace a worker)."""
        outcome = worker.outcome
        if outcome is None or not ("result" in outcome or outcome.get("refused") is True):
            return False
        if not self.clean or self.runs >= max_runs or not self.alive:
            return False
        try:
            resident = self.process.memory_info().rss / 2**20
        except psutil.Error:
            return False
        if self.baseline_mb is None:
            self.baseline_mb = resident
        return resident <= self.baseline_mb + GROWTH_LIMIT_MB

    def _log_tail(self) -> str:
        """The last lines the worker printed during the current run."""
        fd = self._log.fileno()
        size = os.fstat(fd).st_size
        data = os.pread(fd, min(size, TAIL_BYTES), max(0, size - TAIL_BYTES))
        lines = [ln for ln in data.decode("utf-8", errors="replace").splitlines() if ln]
        return "\n".join(lines[-LOG_TAIL_LINES:])

    def close(self) -> None:
        """Stop the worker and whatever is left of its process group (also after it died: a
        crashed solver's own child processes), and remove its files."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._release_files()

    def _release_files(self) -> None:
        if self._released:  # never close a descriptor twice: its number may be reused
            return
        self._released = True
        for fd in (self._requests, self._responses):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._log.close()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class WorkerPool:
    """Long-lived worker processes, reused by runs of the same :func:`pool_key`.

    Thread-safe: any number of threads may call :meth:`run` at once; each call gets a worker
    of its own. Use as a context manager, or call :meth:`close`, to stop the idle workers.

    Parameters
    ----------
    max_runs
        Runs after which a worker is replaced.
    max_idle
        Most idle workers kept (the least recently used beyond this are stopped).
    """

    def __init__(self, *, max_runs: int = DEFAULT_MAX_RUNS, max_idle: int = MAX_IDLE) -> None:
        if max_runs < 1:
            raise ValueError(f"max_runs: must be at least 1, got {max_runs}")
        self.max_runs = max_runs
        self.max_idle = max(1, max_idle)
        self._idle: list[WorkerProcess] = []  # least recently used first
        self._lock = threading.Lock()
        self._closed = False
        self.started = 0
        """Worker processes started so far."""

    def _take(self, key: PoolKey) -> WorkerProcess | None:
        """An idle live worker of ``key`` (the most recently used), or ``None``."""
        dead: list[WorkerProcess] = []
        found = None
        with self._lock:
            for index in range(len(self._idle) - 1, -1, -1):
                candidate = self._idle[index]
                if candidate.key != key:
                    continue
                del self._idle[index]
                if candidate.alive:
                    found = candidate
                    break
                dead.append(candidate)
        for worker in dead:
            worker.close()
        return found

    def _give_back(self, worker: WorkerProcess) -> None:
        with self._lock:
            if self._closed:
                stop = [worker]
            else:
                self._idle.append(worker)
                excess = max(0, len(self._idle) - self.max_idle)
                stop, self._idle = self._idle[:excess], self._idle[excess:]
        for idle in stop:
            idle.close()

    def run(self, task: Task, cancel: threading.Event | None = None) -> WorkerExit | None:
        """Run ``task`` in an idle worker of its kind, or a new one; ``None`` if cancelled."""
        worker = self._take(pool_key(task))
        if worker is None:
            worker = WorkerProcess(task)
            with self._lock:
                self.started += 1
        ended = None
        try:
            ended = worker.run(task, cancel)
        finally:
            if ended is not None and worker.reusable(ended, self.max_runs):
                self._give_back(worker)
            else:
                worker.close()
        return ended

    @property
    def idle(self) -> int:
        """Idle workers kept now."""
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        """Stop the idle workers; workers still running a run stop when it ends."""
        with self._lock:
            self._closed = True
            stop, self._idle = self._idle, []
        for worker in stop:
            worker.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_shared: WorkerPool | None = None
_shared_lock = threading.Lock()
_registered = False


def shared_pool() -> WorkerPool:
    """This process's pool for runs that come without one (the Dask executor's tasks)."""
    global _shared, _registered
    with _shared_lock:
        if _shared is None:
            _shared = WorkerPool()
            if not _registered:
                atexit.register(close_shared_pool)
                _registered = True
        return _shared


def close_shared_pool() -> None:
    """Stop the idle workers of :func:`shared_pool` (a later run starts a new pool)."""
    global _shared
    with _shared_lock:
        pool, _shared = _shared, None
    if pool is not None:
        pool.close()
