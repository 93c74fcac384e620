"""Run one :class:`~topoopt.bench.task.Task` in a worker process and make its record.

Every run executes in a worker process, never in the benchmark's own, so whatever the solver
does — hang, raise, call ``os._exit``, segfault, eat all memory — stays in that process.
Two isolation modes (:data:`ISOLATIONS`):

* ``"worker"`` (the default): a long-lived worker of a :class:`~topoopt.bench.pool.WorkerPool`
  that has imported topoopt, the plugins and the solver once serves many runs, and is
  replaced after a run that was killed, crashed or raised (see :mod:`topoopt.bench.pool`);
* ``"process"``: a fresh Python process per run (``python -m topoopt.bench.worker``, started
  with :mod:`subprocess` in a new session), :func:`supervise` below.

In both modes the supervisor

* kills the process group after :attr:`Task.hard_timeout` seconds (record ``"timeout"``);
* samples the resident memory of the process tree and kills it above the task's memory
  limit (record ``"memory"``);
* turns a worker that ends without an outcome into a ``"crashed"`` record quoting the exit
  status and the last lines the worker printed (during that run);
* otherwise copies the worker's result into the record (:func:`make_record`, the same in both
  modes).

Worker processes started with :mod:`subprocess` (rather than a ``multiprocessing`` pool) also
work inside Dask workers, which are daemonic processes and may not fork ``multiprocessing``
children.
Pyomo solver calls are not thread-safe (see ``spec/backends.md``); only the supervision runs
in threads, never a solve.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import psutil

from topoopt.bench.records import ERROR_STATUS, RECORD_VERSION, Record, host_info, versions
from topoopt.bench.schema import record_problem
from topoopt.bench.task import Task
from topoopt.core.errors import TopooptError

if TYPE_CHECKING:
    from topoopt.bench.pool import WorkerPool

ISOLATIONS = ("worker", "process")
"""Isolation modes of runs: long-lived worker processes (default) or a process per run."""

DEFAULT_ISOLATION = "worker"

POLL_S = 0.05
"""Seconds between two checks of a running worker."""

LOG_TAIL_LINES = 4
"""Lines of the worker's output quoted in the message of a crash record."""


@dataclass(frozen=True)
class WorkerExit:
    """How a run in a worker process ended, as seen by the supervisor.

    Attributes
    ----------
    outcome
        What the worker wrote (see :mod:`topoopt.bench.worker`), or ``None``.
    returncode
        Exit status (negative: killed by that signal); 0 for a long-lived worker that
        answered.
    killed
        ``"timeout"`` or ``"memory"`` when the supervisor killed the worker, else ``None``.
    wall_s
        Seconds from launch to exit (``"process"`` isolation), or from handing the run to a
        ready worker to its answer or end (``"worker"`` isolation).
    peak_memory_mb
        Largest resident memory of the process tree the supervisor sampled (MiB).
    log_tail
        The last lines the worker printed.
    """

    outcome: dict[str, Any] | None
    returncode: int
    killed: str | None
    wall_s: float
    peak_memory_mb: float
    log_tail: str = ""


def _tree_rss_mb(process: psutil.Process) -> float:
    try:
        procs = [process, *process.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _tail(path: Path) -> str:
    if not path.exists():
        return ""
    lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln]
    return "\n".join(lines[-LOG_TAIL_LINES:])


def _child_env() -> dict[str, str]:
    """The environment of a worker: this one, with this interpreter's import path.

    Like ``multiprocessing``'s spawn start method, the worker sees the parent's ``sys.path``,
    so plugin modules importable here are importable there.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


class Supervised(Protocol):
    """What :func:`supervise` needs of a run: the worker's spec and the limits to enforce (a
    :class:`~topoopt.bench.task.Task`, or another kind of run, such as a simulation of
    :mod:`topoopt.sim.sweep`)."""

    @property
    def hard_timeout(self) -> float:
        """Seconds after which the worker is killed."""
        ...

    @property
    def memory_limit_mb(self) -> float | None:
        """Resident memory (MiB) above which the worker is killed."""
        ...

    def worker_spec(self) -> dict[str, Any]:
        """What the worker process runs (:func:`topoopt.bench.worker.run`)."""
        ...


def supervise(task: Supervised, cancel: threading.Event | None = None) -> WorkerExit | None:
    """Run ``task`` in a fresh worker process and watch it until it ends.

    Returns ``None`` when ``cancel`` was set meanwhile (the worker is killed, nothing is
    recorded).
    """
    with tempfile.TemporaryDirectory(prefix="topoopt-run-") as tmp:
        spec_file, outcome_file, log_file = (
            Path(tmp) / n for n in ("spec.json", "out.json", "log")
        )
        spec_file.write_text(json.dumps(task.worker_spec()), encoding="utf-8")
        started = time.perf_counter()
        with log_file.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "topoopt.bench.worker", str(spec_file), str(outcome_file)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=_child_env(),
            )
        process = psutil.Process(proc.pid)
        peak, killed = 0.0, None
        while proc.poll() is None:
            if cancel is not None and cancel.is_set():
                _kill_group(proc)
                return None
            rss = _tree_rss_mb(process)
            peak = max(peak, rss)
            if task.memory_limit_mb is not None and rss > task.memory_limit_mb:
                killed = "memory"
            elif time.perf_counter() - started > task.hard_timeout:
                killed = "timeout"
            if killed:
                _kill_group(proc)
                break
            time.sleep(POLL_S)
        wall_s = time.perf_counter() - started
        outcome = None
        if killed is None and outcome_file.exists():
            outcome = json.loads(outcome_file.read_text(encoding="utf-8"))
        return WorkerExit(
            outcome=outcome,
            returncode=proc.returncode,
            killed=killed,
            wall_s=wall_s,
            peak_memory_mb=peak,
            log_tail=_tail(log_file),
        )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _error(worker: WorkerExit, task: Task) -> tuple[str, str]:
    """``(termination, message)`` of a run that produced no result."""
    if worker.killed == "timeout":
        return "timeout", (
            f"no result within the hard timeout of {task.hard_timeout:g} s "
            f"(time limit {task.time_limit:g} s); worker killed"
        )
    if worker.killed == "memory":
        return "memory", (
            f"worker exceeded the memory limit of {task.memory_limit_mb:g} MiB "
            f"(resident {worker.peak_memory_mb:.0f} MiB); worker killed"
        )
    if worker.outcome is not None:
        message = worker.outcome["message"]
        if worker.outcome.get("traceback"):
            message += "\n" + worker.outcome["traceback"]
        return worker.outcome["error"], message
    code = worker.returncode
    how = f"killed by {_signal_name(-code)}" if code < 0 else f"exited with status {code}"
    message = f"worker {how} before writing a result"
    if worker.log_tail:
        message += f"; last output:\n{worker.log_tail}"
    return "crashed", message


def make_record(task: Task, worker: WorkerExit, started_at: str = "") -> Record:
    """The benchmark record of ``task`` from how its worker ended (a pure function).

    Identity, setting, size and tags come from the task; outcome and timings from the worker's
    result, or an error record (``status`` ``"error"``) when there is none.
    """
    record: Record = {
        "record_version": RECORD_VERSION,
        "family": task.family,
        "suite": task.suite,
        "instance": task.instance,
        "instance_hash": task.instance_hash,
        "instance_file": task.instance_file,
        "solver": task.solver,
        "backend": task.backend,
        "seed": task.seed,
        "repeat": task.repeat,
        "sense": task.sense,
        "time_limit": task.time_limit,
        "hard_timeout": task.hard_timeout,
        "threads": task.threads,
    }
    result = None if worker.outcome is None else worker.outcome.get("result")
    invalid = None
    if result is not None:
        identity = {"family", "instance", "solver", "backend", "seed", "sense"}
        outcome = {k: v for k, v in result.items() if k not in identity}
        invalid = record_problem({**record, **outcome, "size": dict(task.size)})
        if invalid is None:
            record.update(outcome)
    if result is None or invalid is not None:
        if invalid is None:
            termination, message = _error(worker, task)
        else:  # a result the results file cannot hold: the run's error, not the bench's
            termination, message = "invalid", f"the solver's result breaks the record: {invalid}"
        record.update(
            status=ERROR_STATUS,
            termination=termination,
            objective=None,
            bound=None,
            gap=None,
            total_s=worker.wall_s,
            build_s=None,
            solve_s=None,
            message=message,
            violations=[],
        )
    reported = 0.0 if worker.outcome is None else worker.outcome.get("peak_memory_mb", 0.0)
    record["wall_s"] = worker.wall_s
    record["peak_memory_mb"] = round(max(reported, worker.peak_memory_mb), 1)
    record["size"] = dict(task.size)
    record["tags"] = dict(task.tags)
    record["versions"] = dict(versions())
    record["host"] = dict(host_info())
    record["started_at"] = started_at
    return record


def check_isolation(isolation: str) -> str:
    """``isolation`` if it is one of :data:`ISOLATIONS`.

    Raises
    ------
    TopooptError
        Otherwise.
    """
    if isolation not in ISOLATIONS:
        raise TopooptError(f"isolation: must be one of {', '.join(ISOLATIONS)}, got {isolation!r}")
    return isolation


def run_task(
    task: Task,
    cancel: threading.Event | None = None,
    *,
    isolation: str = DEFAULT_ISOLATION,
    pool: WorkerPool | None = None,
) -> Record | None:
    """Run ``task`` in a worker process and return its record (``None`` if cancelled).

    ``isolation`` ``"worker"`` runs it in ``pool`` (default: this process's
    :func:`~topoopt.bench.pool.shared_pool`, whose idle workers live until
    :func:`~topoopt.bench.pool.close_shared_pool` or the end of this process), ``"process"``
    in a fresh process.
    """
    check_isolation(isolation)
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if isolation == "process":
        worker = supervise(task, cancel)
    else:
        from topoopt.bench.pool import shared_pool

        worker = (shared_pool() if pool is None else pool).run(task, cancel)
    return None if worker is None else make_record(task, worker, started_at)
