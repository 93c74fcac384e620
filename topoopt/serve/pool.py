"""The service's worker processes: a fixed number of them, a bounded queue, hard deadlines.

Each worker is a long-lived worker process of the benchmarks (``python -m
topoopt.bench.worker --serve``, :class:`topoopt.bench.pool.WorkerProcess`): it has imported
topoopt, the plugins and every family once, and answers one request at a time over a pipe
(``{"call": "topoopt.serve.work:solve", "args": ...}``, see :mod:`topoopt.serve.work`). What
differs from the benchmark pool is who waits: here the event loop of the HTTP server does,
without a thread per request, and every worker serves any solver.

* :meth:`ServicePool.call` takes an idle worker, or waits in a FIFO queue of at most
  ``queue`` requests; past that it raises :class:`QueueFull` at once (the service answers
  ``503`` with ``Retry-After``).
* A request's *hard deadline* counts from the moment a worker takes it; past it the worker's
  process group is killed (``"timeout"``, the service answers ``504``). Above
  ``memory_limit_mb`` of resident memory (sampled every :data:`MEMORY_POLL_S` s) it is
  killed too (``"memory"``). A worker that dies (``os._exit``, a segfault, the OOM killer)
  gives ``"crashed"``; a call that raised, ``"error"`` (both ``500``).
* A worker is **replaced** after any of those, and, as in the benchmarks, after a request
  that left a thread or a child process behind (``"unclean"``), after ``max_runs`` requests
  (``"recycled"``), or when its resident memory grew more than
  :data:`~topoopt.bench.pool.GROWTH_LIMIT_MB` above what it was after its first request
  (``"memory_growth"``). The replacement starts at once, in the background; the restarts are
  counted by reason (``topoopt_worker_restarts_total``).
* :meth:`ServicePool.drain` (graceful shutdown) answers every queued request with
  :class:`ShuttingDown` and lets the running ones finish; :meth:`ServicePool.close` then
  stops every process.

Everything here runs on the event loop's thread; worker processes are started in the
loop's default executor (``fork`` and ``exec`` take milliseconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil

from topoopt.bench.pool import DEFAULT_MAX_RUNS, GROWTH_LIMIT_MB, PoolKey, WorkerProcess
from topoopt.bench.supervisor import _tree_rss_mb
from topoopt.serve.zygote import ForkedProcess, Zygote

__all__ = ["Outcome", "QueueFull", "ServicePool", "ShuttingDown"]

log = logging.getLogger("topoopt.serve")

MEMORY_POLL_S = 0.1
"""Seconds between two samples of a busy worker's resident memory (with a memory limit)."""

STARTUP_TIMEOUT_S = 120.0
"""Seconds a new worker has to say it is ready and import the families."""

RESTART_BACKOFF_S = (0.0, 1.0, 2.0, 5.0, 10.0)
"""Waits before starting a worker again after that many failed starts in a row."""

WARM = "topoopt.serve.work:warm"


class QueueFull(Exception):
    """Every worker is busy and the queue is full; try again after :attr:`retry_after` s."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"every worker is busy and the queue is full; retry after {retry_after} s")
        self.retry_after = retry_after


class ShuttingDown(Exception):
    """The service is shutting down and takes no more work."""


@dataclass(frozen=True)
class Outcome:
    """How one call ended.

    Attributes
    ----------
    kind
        ``"answer"`` (the call's value is :attr:`answer`), ``"error"`` (the call raised),
        ``"timeout"``, ``"memory"`` or ``"crashed"``.
    answer
        The JSON object the call returned (``kind == "answer"``).
    message
        What went wrong, one line (otherwise empty).
    wall_s
        Seconds from handing the call to a worker to its end.
    """

    kind: str
    answer: dict[str, Any] | None
    message: str
    wall_s: float


class _Worker(WorkerProcess):
    """One worker process, driven from the event loop (non-blocking pipes)."""

    def __init__(
        self, key: PoolKey, plugins: list[str], forked: tuple[Zygote, tuple[int, ...]] | None = None
    ) -> None:
        if forked is None:
            self._spawn(key, {"solver": "", "backend": None, "plugins": plugins})
        else:
            self._adopt(key, *forked)
        os.set_blocking(self._requests, False)
        os.set_blocking(self._responses, False)
        self._waiting: asyncio.Future[dict[str, Any] | None] | None = None
        self._reading = False
        self.on_death: Callable[[_Worker], None] | None = None
        """Called when the worker's pipe closes while no call waits (it died idle)."""
        self.started_s = time.perf_counter()

    def _adopt(self, key: PoolKey, zygote: Zygote, fds: tuple[int, ...]) -> None:
        """Take over a worker the zygote forked: ``fds`` is ``(pid, request pipe, response
        pipe, output file)``."""
        pid, self._requests, self._responses, log = fds
        self.key = key
        self.runs = 0
        self.ready = False
        self.clean = True
        self.baseline_mb = None
        self._buffer = b""
        self._released = False
        self._log = os.fdopen(log, "rb+")
        self.proc = ForkedProcess(pid, zygote)  # type: ignore[assignment]
        self.process = psutil.Process(pid)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start reading the worker's answers on ``loop``."""
        loop.add_reader(self._responses, self._readable)
        self._reading = True
        self._loop = loop

    def _stop_reading(self) -> None:
        if self._reading:
            self._reading = False
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._responses)

    def _resolve(self, message: dict[str, Any] | None) -> None:
        waiting, self._waiting = self._waiting, None
        if waiting is not None and not waiting.done():
            waiting.set_result(message)
        elif message is not None:
            self.clean = False  # something the pool did not ask for: retire this worker
        elif self.on_death is not None:
            self.on_death(self)  # it died between two calls

    def _readable(self) -> None:
        try:
            chunk = os.read(self._responses, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:  # the worker closed its end: it died
            self._stop_reading()
            self._resolve(None)
            return
        self._buffer += chunk
        while (newline := self._buffer.find(b"\n")) >= 0:
            line, self._buffer = self._buffer[:newline], self._buffer[newline + 1 :]
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if not isinstance(message, dict):  # not the worker's answer
                self._stop_reading()
                self._resolve(None)
                return
            self._resolve(message)

    async def _write(self, data: bytes) -> bool:
        """Write ``data`` to the request pipe; ``False`` when the worker is gone."""
        view = memoryview(data)
        loop = asyncio.get_running_loop()
        while view:
            try:
                view = view[os.write(self._requests, view) :]
                continue
            except BlockingIOError:
                pass
            except OSError:  # BrokenPipeError: the worker died
                return False
            writable: asyncio.Future[None] = loop.create_future()

            def ready(future: asyncio.Future[None] = writable) -> None:
                if not future.done():
                    future.set_result(None)

            loop.add_writer(self._requests, ready)
            try:
                await writable
            finally:
                loop.remove_writer(self._requests)
        return True

    async def exchange(
        self, data: bytes | None, timeout: float, memory_limit_mb: float | None
    ) -> tuple[dict[str, Any] | None, str | None]:
        """Send ``data`` (``None``: send nothing) and wait for the next message, at most
        ``timeout`` seconds, under the memory limit.

        Returns ``(message, None)``, ``(None, "timeout" | "memory")`` when the worker must
        be killed, or ``(None, None)`` when it died.
        """
        loop = asyncio.get_running_loop()
        waiting: asyncio.Future[dict[str, Any] | None] = loop.create_future()
        self._waiting = waiting
        killed: list[str] = []

        def expire(reason: str) -> None:
            if not waiting.done():
                killed.append(reason)
                waiting.set_result(None)

        timer = loop.call_later(timeout, expire, "timeout")
        sampler: asyncio.TimerHandle | None = None

        def sample() -> None:
            nonlocal sampler
            if waiting.done():
                return
            if memory_limit_mb is not None and _tree_rss_mb(self.process) > memory_limit_mb:
                expire("memory")
                return
            sampler = loop.call_later(MEMORY_POLL_S, sample)

        if memory_limit_mb is not None:
            sampler = loop.call_later(MEMORY_POLL_S, sample)
        try:
            if data is not None and not await self._write(data) and not waiting.done():
                waiting.set_result(None)  # the worker is gone
            message = await waiting
        finally:
            timer.cancel()
            if sampler is not None:
                sampler.cancel()
            if self._waiting is waiting:
                self._waiting = None
        return message, (killed[0] if killed else None)

    def resident_mb(self) -> float | None:
        """Resident memory of the worker process (MiB), ``None`` if it cannot be read."""
        try:
            return float(self.process.memory_info().rss) / 2**20
        except psutil.Error:
            return None

    def detach(self) -> None:
        """Stop reading the worker's answers (on the loop's thread, before :meth:`close`)."""
        self._stop_reading()


class ServicePool:
    """``workers`` worker processes behind a FIFO queue of at most ``queue`` waiting calls.

    Parameters
    ----------
    workers
        Worker processes (each answers one call at a time).
    queue
        Calls that may wait for a worker; one more raises :class:`QueueFull`.
    plugins
        Modules every worker imports first (they may register families and solvers).
    memory_limit_mb
        Resident memory of a worker's process tree above which it is killed (``None``: no
        limit).
    max_runs
        Calls after which a worker is replaced.
    """

    def __init__(
        self,
        workers: int,
        queue: int,
        *,
        plugins: tuple[str, ...] = (),
        memory_limit_mb: float | None = None,
        max_runs: int = DEFAULT_MAX_RUNS,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers: must be at least 1, got {workers}")
        if queue < 0:
            raise ValueError(f"queue: must be non-negative, got {queue}")
        self.size = workers
        self.queue_size = queue
        self.plugins = list(plugins)
        self.memory_limit_mb = memory_limit_mb
        self.max_runs = max_runs
        self._key: PoolKey = ("serve", None, None, tuple(plugins))
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._waiters: deque[asyncio.Future[_Worker]] = deque()
        self._starting: set[asyncio.Task[None]] = set()
        self._failed_starts = 0
        self._baseline: dict[int, float] = {}
        self._mean_s = 0.05
        self.draining = False
        self.closed = False
        self.zygote: Zygote | None = None
        self._zygote_task: asyncio.Task[None] | None = None
        self.restarts: Counter[str] = Counter()
        """Workers replaced, by reason."""
        self.started = 0
        """Worker processes started so far."""

    # -- state ----------------------------------------------------------------------------

    @property
    def queued(self) -> int:
        """Calls waiting for a worker."""
        return sum(1 for w in self._waiters if not w.done())

    @property
    def busy(self) -> int:
        """Workers running a call."""
        return len(self._busy)

    @property
    def idle(self) -> int:
        """Workers ready for a call."""
        return len(self._idle)

    @property
    def starting(self) -> int:
        """Workers being started."""
        return len(self._starting)

    @property
    def full(self) -> bool:
        """Whether a call now would be refused (:class:`QueueFull`): no idle worker and the
        queue full. The service asks before it reads a request's body."""
        return not (self._idle and not self.queued) and self.queued >= self.queue_size

    @property
    def ready(self) -> bool:
        """Whether the pool takes calls: not draining, and some worker is up."""
        return not self.draining and (self.idle + self.busy) > 0

    def pids(self) -> list[int]:
        """Process ids of the live workers (for tests and operators)."""
        return sorted(w.proc.pid for w in (*self._idle, *self._busy))

    # -- starting workers -------------------------------------------------------------------

    async def start(self) -> None:
        """Start the workers and wait until all are ready.

        Raises
        ------
        RuntimeError
            When a worker cannot start (a plugin that fails to import there, ...), with
            the last lines it printed.
        """
        await self._start_zygote()
        results = await asyncio.gather(
            *(self._new_worker() for _ in range(self.size)), return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        for result in results:
            if isinstance(result, _Worker):
                self._release(result)
        if failed:
            await self.close()
            raise RuntimeError(f"a worker process failed to start: {failed[0]}")

    async def _start_zygote(self) -> None:
        """Start the fork server; without it, workers start as fresh processes."""
        zygote = Zygote({"solver": "", "backend": None, "plugins": self.plugins})
        try:
            await zygote.start()
        except (RuntimeError, OSError) as exc:
            log.warning("topoopt serve: no fork server, workers start as processes: %s", exc)
            return
        self.zygote = zygote

    def _zygote_lost(self) -> None:
        """The fork server died: start another in the background (once at a time)."""
        self.restarts["zygote"] += 1
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None
        if self._zygote_task is None and not self.closed and not self.draining:
            task = asyncio.get_running_loop().create_task(self._start_zygote())
            self._zygote_task = task

            def done(_: asyncio.Task[None]) -> None:
                self._zygote_task = None

            task.add_done_callback(done)

    async def _new_worker(self) -> _Worker:
        loop = asyncio.get_running_loop()
        worker: _Worker | None = None
        zygote = self.zygote
        if zygote is not None and zygote.alive:
            try:
                fds = await zygote.fork()
                worker = _Worker(self._key, self.plugins, (zygote, fds))
            except (ConnectionError, OSError, psutil.Error) as exc:
                log.warning("topoopt serve: the fork server failed (%s); starting a process", exc)
                self._zygote_lost()
        elif zygote is not None:
            self._zygote_lost()
        if worker is None:
            worker = await loop.run_in_executor(None, _Worker, self._key, self.plugins)
        self.started += 1
        worker.attach(loop)
        try:
            hello, killed = await worker.exchange(None, STARTUP_TIMEOUT_S, self.memory_limit_mb)
            if hello is None or "ready" not in hello:
                raise RuntimeError(self._start_failure(worker, killed, "say it is ready"))
            spec = json.dumps({"call": WARM, "args": {}}).encode() + b"\n"
            warm, killed = await worker.exchange(spec, STARTUP_TIMEOUT_S, self.memory_limit_mb)
            if warm is None or "result" not in warm:
                detail = "" if warm is None else f": {warm.get('message', '')}"
                raise RuntimeError(self._start_failure(worker, killed, "import topoopt") + detail)
        except BaseException:
            worker.detach()
            await loop.run_in_executor(None, worker.close)
            raise
        worker.clean = True
        worker.runs = 0
        worker.on_death = self._died_idle
        return worker

    def _died_idle(self, worker: _Worker) -> None:
        """A worker died while idle (its fork server ended, the OOM killer): replace it
        before a request meets it."""
        if worker in self._idle:
            self._idle.remove(worker)
            self._replace(worker, "crashed")

    @staticmethod
    def _start_failure(worker: _Worker, killed: str | None, what: str) -> str:
        how = f"was killed ({killed})" if killed else "ended"
        tail = worker._log_tail().replace("\n", " | ")
        return f"worker {worker.proc.pid} {how} before it could {what}" + (
            f"; last output: {tail}" if tail else ""
        )

    def _replace(self, worker: _Worker, reason: str) -> None:
        """Retire ``worker`` (kill it) and start another in the background."""
        self.restarts[reason] += 1
        self._busy.discard(worker)
        self._baseline.pop(id(worker), None)
        loop = asyncio.get_running_loop()
        worker.detach()
        loop.run_in_executor(None, worker.close)
        if not self.closed and not self.draining:
            task = loop.create_task(self._refill())
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _refill(self) -> None:
        while not self.closed and not self.draining:
            wait = RESTART_BACKOFF_S[min(self._failed_starts, len(RESTART_BACKOFF_S) - 1)]
            if wait:
                await asyncio.sleep(wait)
            try:
                worker = await self._new_worker()
            except Exception as exc:
                self._failed_starts += 1
                self.restarts["start_failed"] += 1
                log.error("topoopt serve: %s", exc)
                continue
            self._failed_starts = 0
            if self.closed:
                worker.detach()
                await asyncio.get_running_loop().run_in_executor(None, worker.close)
            else:
                self._release(worker)
            return

    # -- handing out workers ----------------------------------------------------------------

    def _release(self, worker: _Worker) -> None:
        self._busy.discard(worker)
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._busy.add(worker)
                waiter.set_result(worker)
                return
        self._idle.append(worker)

    def retry_after(self) -> int:
        """Seconds after which a refused call may well find room (at least 1)."""
        backlog = (self.queued + self.busy) * self._mean_s / self.size
        return max(1, math.ceil(backlog))

    async def _acquire(self) -> _Worker:
        if self.draining or self.closed:
            raise ShuttingDown
        if self._idle and not self.queued:
            worker = self._idle.pop()
            self._busy.add(worker)
            return worker
        if self.queued >= self.queue_size:
            raise QueueFull(self.retry_after())
        waiter: asyncio.Future[_Worker] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._release(waiter.result())  # handed over as we were cancelled
            raise

    # -- calls ------------------------------------------------------------------------------

    async def call(
        self, function: str, args: dict[str, Any], hard_timeout: float, again: bool = True
    ) -> Outcome:
        """Run ``function(args)`` (``"module:function"``) in a worker, killing it after
        ``hard_timeout`` seconds. A call whose worker ended because its fork server did (the
        worker ends with it) is run once more on another worker (``again``): it failed for
        no reason of its own (measured: a request sent within the half second a worker takes
        to notice was answered ``500``).

        Raises
        ------
        QueueFull
            When every worker is busy and the queue is full.
        ShuttingDown
            When the pool drains (also for a call that was waiting in the queue).
        """
        worker = await self._acquire()
        data = json.dumps({"call": function, "args": args}).encode() + b"\n"
        started = time.perf_counter()
        try:
            message, killed = await worker.exchange(data, hard_timeout, self.memory_limit_mb)
        except BaseException:  # cancelled mid-call: the worker's state is unknown
            self._replace(worker, "cancelled")
            raise
        wall_s = time.perf_counter() - started
        self._mean_s = 0.9 * self._mean_s + 0.1 * wall_s
        if message is None:
            reason = killed or "crashed"
            code = None if killed else await self._exit_status(worker)
            text = self._failure_text(reason, hard_timeout, wall_s, code)
            self._replace(worker, reason)
            orphaned = isinstance(worker.proc, ForkedProcess) and worker.proc.orphaned
            if again and killed is None and orphaned:
                return await self.call(function, args, hard_timeout, again=False)
            return Outcome(reason, None, text, wall_s)
        worker.runs += 1
        worker.clean = bool(message.pop("clean", False)) and worker.clean
        if "result" not in message:
            text = str(message.get("message", "the call failed")).split("\n", 1)[0]
            self._replace(worker, "memory" if message.get("error") == "memory" else "error")
            return Outcome("error", None, text, wall_s)
        retire = self._retire_reason(worker)
        if retire is None:
            self._release(worker)
        else:
            self._replace(worker, retire)
        return Outcome("answer", message["result"], "", wall_s)

    @staticmethod
    async def _exit_status(worker: _Worker, timeout: float = 1.0) -> int | None:
        """The exit status of a worker that closed its pipe (``None`` if unknown in time)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            code = worker.proc.poll()
            if code is not None:
                return code
            await asyncio.sleep(0.01)
        return None

    def _failure_text(self, reason: str, hard_timeout: float, wall: float, code: int | None) -> str:
        if reason == "timeout":
            return f"no answer within the hard deadline of {hard_timeout:g} s; worker replaced"
        if reason == "memory":
            return (
                f"the worker exceeded the memory limit of {self.memory_limit_mb:g} MiB; "
                "worker replaced"
            )
        how = (
            ""
            if code is None
            else (f" (killed by signal {-code})" if code < 0 else f" (exit status {code})")
        )
        return f"the worker process ended without an answer{how} after {wall:.3g} s; replaced"

    def _retire_reason(self, worker: _Worker) -> str | None:
        if not worker.clean:
            return "unclean"
        if worker.runs >= self.max_runs:
            return "recycled"
        resident = worker.resident_mb()
        if resident is None:
            return "crashed"
        baseline = self._baseline.setdefault(id(worker), resident)
        if resident > baseline + GROWTH_LIMIT_MB:
            return "memory_growth"
        return None

    # -- shutting down ----------------------------------------------------------------------

    def drain(self) -> None:
        """Take no more calls: every queued call gets :class:`ShuttingDown`; running calls
        go on."""
        self.draining = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(ShuttingDown())

    async def close(self) -> None:
        """Stop every worker process (running calls end as ``"crashed"``)."""
        self.drain()
        self.closed = True
        for task in list(self._starting):
            task.cancel()
        if self._zygote_task is not None:
            self._zygote_task.cancel()
        workers = [*self._idle, *self._busy]
        self._idle.clear()
        loop = asyncio.get_running_loop()
        for worker in workers:
            worker.detach()
            worker._resolve(None)  # a call still running ends as "crashed"
        await asyncio.gather(*(loop.run_in_executor(None, w.close) for w in workers))
        if self.zygote is not None:
            await loop.run_in_executor(None, self.zygote.close)
