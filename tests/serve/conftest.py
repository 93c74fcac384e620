"""Fixtures of the service tests: real ``topoopt serve`` processes on free loopback ports.

Every server is a subprocess started like an operator would (``python -m topoopt.cli ...
serve --port 0``); the fixture waits for its ``listening on`` line, and stops it with
``SIGTERM`` (a graceful shutdown) afterwards. The session's main server loads the test
plug-in :mod:`serve.faulty` (hanging, raising, crashing and slow solvers) and has small limits
so that the ``413`` cases are cheap.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "serve.faulty"
BODY_LIMIT = 200_000
"""``json_file_bytes`` of the main server (bytes of one request)."""
FREE_NODES_LIMIT = 5_000
"""``placement_free_nodes`` of the main server."""

# Importing the plug-in registers its solvers; only servers may (not the doctest collection).
collect_ignore = ["faulty.py"]

LISTENING = re.compile(r"listening on (http://\S+)")


@dataclass
class Server:
    """A running ``topoopt serve`` process."""

    url: str
    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    def stop(self, timeout: float = 60.0) -> int:
        """Send SIGTERM and wait for the exit status (``-SIGTERM``: uvicorn ends by the signal it
        caught, after the graceful shutdown)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def workers(self) -> set[int]:
        """Process ids of the server's workers (its descendants but the fork server)."""
        everyone = self.descendants()
        return {p.pid for p in everyone} - {p.pid for p in self.zygotes(everyone)}

    def zygotes(self, everyone: list[Any] | None = None) -> list[Any]:
        """The server's fork servers among ``everyone`` (its descendants by default); a
        process that ends while it is looked at is left out."""
        everyone = self.descendants() if everyone is None else everyone
        return [p for p in everyone if parent(p) == self.proc.pid and "serve.zygote" in _cmdline(p)]

    def descendants(self) -> list[Any]:
        """The server's live descendant processes (the fork server and the workers)."""
        import psutil

        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.Error:
            return []
        out = []
        for child in children:
            try:
                if child.status() != psutil.STATUS_ZOMBIE:
                    out.append(child)
            except psutil.Error:
                continue
        return out


def parent(process: Any) -> int | None:
    """The parent id of ``process`` (a psutil process or a pid), ``None`` once it has ended
    (it may between two looks)."""
    import psutil

    try:
        return int((psutil.Process(process) if isinstance(process, int) else process).ppid())
    except psutil.Error:
        return None


def _cmdline(process: Any) -> str:
    try:
        return " ".join(process.cmdline())
    except Exception:
        return ""


def start_server(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> Server:
    """Start ``topoopt [--plugin serve.faulty] ARGS`` (``serve --port 0`` unless ARGS say
    otherwise) and wait until it listens."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    environment.update(env or {})
    command = [sys.executable, "-m", "topoopt.cli", "--plugin", PLUGIN, *args]
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    server = Server("", proc)
    found = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            server.lines.append(line.rstrip("\n"))
            match = LISTENING.search(line)
            if match:
                server.url = match.group(1)
                found.set()

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 120
    while not found.wait(0.1):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("server did not start: " + " | ".join(server.lines[-10:]))
    return server


@pytest.fixture(scope="session")
def allowed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder the main server allows instances to name files in."""
    return tmp_path_factory.mktemp("allowed")


@pytest.fixture(scope="session")
def server(allowed: Path) -> Iterator[Server]:
    """The session's server: 2 workers, the faulty plug-in, small limits, ``allowed``."""
    running = start_server(
        "--allow-path",
        str(allowed),
        "serve",
        "--port",
        "0",
        "--workers",
        "2",
        "--queue",
        "8",
        "--time-limit",
        "2",
        "--max-time-limit",
        "5",
        "--grace",
        "0.5",
        env={
            "TOPOOPT_LIMIT_JSON_FILE_BYTES": str(BODY_LIMIT),
            "TOPOOPT_LIMIT_PLACEMENT_FREE_NODES": str(FREE_NODES_LIMIT),
        },
    )
    yield running
    running.stop()


@pytest.fixture()
def client(server: Server) -> Iterator[object]:
    """A :class:`topoopt.client.Client` of the session's server."""
    from topoopt.client import Client

    with Client(server.url, timeout=30) as connected:
        yield connected


def metric_samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The samples of a ``/metrics`` answer, read by prometheus_client's own parser: value by
    ``(sample name, labels)`` (label order does not matter in the format)."""
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
