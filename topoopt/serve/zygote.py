"""A fork server for the service's workers: new workers in milliseconds, not 0.4 s of CPU.

Replacing a worker (after a hang, a crash, a raise) by a fresh ``python -m
topoopt.bench.worker --serve`` costs about 0.4 s of CPU for the interpreter and the imports
of topoopt, NumPy and the families; a service that meets hanging solvers often spends a core
on that. The *zygote* is a process that has made those imports once (the plug-ins and every
family, :func:`topoopt.serve.work.warm`) and forks a worker whenever the service asks: the
child starts a session of its own (so that its process group can be killed), sends its
output to a file of its own, and runs the benchmark worker's loop
(:func:`topoopt.bench.worker.serve`) on two new pipes — the same worker, started by ``fork``
instead of ``exec``.

Protocol, over a ``SOCK_SEQPACKET`` Unix socket pair (one message per packet):

* service → zygote: ``fork``;
* zygote → service: ``forked PID`` with three file descriptors (the request pipe's write end,
  the response pipe's read end, the worker's output file), passed with ``SCM_RIGHTS``;
* zygote → service: ``exit PID STATUS`` when a worker ended (the zygote is its parent and
  reaps it; ``STATUS`` as :attr:`subprocess.Popen.returncode`, negative for a signal).

The zygote is single-threaded (it forks from its only thread), exits when the service closes
the socket or dies, and its workers exit when it does. When it cannot start or dies, the pool
starts workers as fresh processes (:mod:`topoopt.serve.pool`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

__all__ = ["ForkedProcess", "Zygote"]

REAP_S = 0.05
"""Seconds between two reaps of ended workers in the zygote."""

START_TIMEOUT_S = 120.0
FORK_TIMEOUT_S = 10.0


# -- the zygote process ---------------------------------------------------------------------


def _child(control: socket.socket, requests_r: int, responses_w: int, preload: Any) -> None:
    """In the forked child: become a worker (never returns)."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        control.close()
        from topoopt.bench.worker import serve

        code = serve(requests_r, responses_w, preload)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _fork(control: socket.socket, preload: Any) -> None:
    requests_r, requests_w = os.pipe()
    responses_r, responses_w = os.pipe()
    log = tempfile.TemporaryFile(prefix="topoopt-worker-")  # noqa: SIM115
    flags = fcntl.fcntl(log.fileno(), fcntl.F_GETFL)
    fcntl.fcntl(log.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(requests_w)
        os.close(responses_r)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        log.close()
        _child(control, requests_r, responses_w, preload)
    os.close(requests_r)
    os.close(responses_w)
    try:
        socket.send_fds(
            control, [f"forked {pid}".encode()], [requests_w, responses_r, log.fileno()]
        )
    finally:
        os.close(requests_w)
        os.close(responses_r)
        log.close()


def _reap(control: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            control.send(f"exit {pid} {code}".encode())


def main(argv: list[str] | None = None) -> int:
    """``python -m topoopt.serve.zygote FD PRELOAD``: serve fork requests on the socket
    ``FD`` until it closes (or the parent dies)."""
    fd, preload_json = (sys.argv[1:] if argv is None else argv)[:2]
    control = socket.socket(fileno=int(fd))
    preload = json.loads(preload_json)
    parent = os.getppid()
    from topoopt.bench.worker import preload as import_preload
    from topoopt.serve.work import warm

    import_preload(preload)
    warm({})
    control.send(b"ready")
    while os.getppid() == parent:
        readable, _, _ = select.select([control], [], [], REAP_S)
        _reap(control)
        if not readable:
            continue
        try:
            message = control.recv(64)
        except OSError:
            return 0
        if not message:
            return 0
        if message == b"fork":
            _fork(control, preload)
    return 0


# -- the service's side ---------------------------------------------------------------------


class ForkedProcess:
    """What the pool needs of a worker's process (as of a :class:`subprocess.Popen`) when
    the zygote, not the service, is its parent: the exit status comes from the zygote."""

    def __init__(self, pid: int, zygote: Zygote) -> None:
        self.pid = pid
        self._zygote = zygote

    @property
    def returncode(self) -> int | None:
        """The exit status once the zygote reported it."""
        return self._zygote.exits.get(self.pid)

    @property
    def orphaned(self) -> bool:
        """Whether its zygote ended: the worker then ends too (it watches its parent)."""
        proc = self._zygote.proc
        return not self._zygote.alive or proc is None or proc.poll() is not None

    def poll(self) -> int | None:
        """The exit status if the worker ended (as reported, or a guess if the zygote is
        gone), else ``None``."""
        code = self.returncode
        if code is None and not self._zygote.alive and not _running(self.pid):
            return -signal.SIGKILL
        return code

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait until the worker ended (at most ``timeout`` s, default 5): blocking, for a
        thread other than the event loop's."""
        deadline = time.monotonic() + (5.0 if timeout is None else timeout)
        while time.monotonic() < deadline:
            code = self.poll()
            if code is not None:
                return code
            if not _running(self.pid):
                return self.returncode if self.returncode is not None else -signal.SIGKILL
            time.sleep(0.01)
        if timeout is not None:
            raise subprocess.TimeoutExpired(str(self.pid), timeout)
        return None


def _running(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class Zygote:
    """The service's handle on its zygote process (event loop's thread only)."""

    def __init__(self, preload: dict[str, Any]) -> None:
        self.preload = preload
        self.exits: dict[int, int] = {}
        self.alive = False
        self.proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._waiting: asyncio.Future[tuple[int, list[int]]] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Start the zygote and wait until it has made its imports.

        Raises
        ------
        RuntimeError
            When it does not say it is ready in time.
        """
        from topoopt.bench.supervisor import _child_env

        loop = asyncio.get_running_loop()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = await loop.run_in_executor(
                None,
                lambda: subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "topoopt.serve.zygote",
                        str(theirs.fileno()),
                        json.dumps(self.preload),
                    ],
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=None,
                    start_new_session=True,
                    env=_child_env(),
                ),
            )
        finally:
            theirs.close()
        mine.setblocking(False)
        self._sock = mine
        self._ready = loop.create_future()
        loop.add_reader(mine.fileno(), self._readable)
        self.alive = True
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), START_TIMEOUT_S)
        except (asyncio.TimeoutError, ConnectionError) as exc:
            self.close()
            raise RuntimeError(f"the zygote did not start: {exc or 'timed out'}") from None

    def _readable(self) -> None:
        assert self._sock is not None
        try:
            message, fds, _, _ = socket.recv_fds(self._sock, 256, 3)
        except BlockingIOError:
            return
        except OSError:
            message, fds = b"", []
        if not message:
            self._gone()
            return
        words = message.decode("ascii", "replace").split()
        if words[:1] == ["ready"] and self._ready is not None and not self._ready.done():
            self._ready.set_result(None)
        elif words[:1] == ["forked"] and len(fds) == 3:
            waiting, self._waiting = self._waiting, None
            if waiting is not None and not waiting.done():
                waiting.set_result((int(words[1]), fds))
            else:  # nobody asks any more: close them, the worker ends on its own
                for fd in fds:
                    os.close(fd)
        elif words[:1] == ["exit"] and len(words) == 3:
            self.exits[int(words[1])] = int(words[2])
            if len(self.exits) > 10_000:  # old entries nobody will ask about
                for pid in list(self.exits)[:5_000]:
                    del self.exits[pid]
        else:
            for fd in fds:
                os.close(fd)

    def _gone(self) -> None:
        self.alive = False
        if self.proc is not None:
            self.proc.poll()  # reap it, if it ended
        if self._sock is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._sock.fileno())
        for future in (self._waiting, self._ready):
            if future is not None and not future.done():
                future.set_exception(ConnectionError("the zygote ended"))

    async def fork(self) -> tuple[int, int, int, int]:
        """A new worker: ``(pid, request pipe, response pipe, output file)`` descriptors.

        Raises
        ------
        ConnectionError
            When the zygote is gone or does not answer in time (it is then stopped).
        """
        async with self._lock:
            if not self.alive or self._sock is None:
                raise ConnectionError("the zygote is not running")
            loop = asyncio.get_running_loop()
            self._waiting = loop.create_future()
            try:
                self._sock.send(b"fork")
                pid, fds = await asyncio.wait_for(asyncio.shield(self._waiting), FORK_TIMEOUT_S)
            except (OSError, asyncio.TimeoutError) as exc:
                self.close()
                raise ConnectionError(f"the zygote failed to fork: {exc}") from None
            return pid, fds[0], fds[1], fds[2]

    def close(self) -> None:
        """Stop the zygote (its workers end when their parent is gone or their pipes close)."""
        if self._sock is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None
        self.alive = False
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)


if __name__ == "__main__":
    sys.exit(main())
