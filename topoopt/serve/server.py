"""Run the service with uvicorn: one event loop in this process, solves in the worker pool.

A ``SIGTERM`` or ``SIGINT`` starts a graceful shutdown: the listening socket closes, queued
requests are answered ``503`` (:meth:`topoopt.serve.app.Service.begin_shutdown`), requests
being solved finish (each within its hard deadline), then the workers stop. The line
``topoopt serve: listening on http://HOST:PORT`` on stderr says that the workers are ready
and the port is open (with ``--port 0``, the port the system chose).
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

from topoopt.serve.app import ServeConfig, create_app

__all__ = ["run"]

SHUTDOWN_MARGIN_S = 5.0
"""Seconds beyond the longest hard deadline that a graceful shutdown may take."""


def run(
    config: ServeConfig, host: str = "127.0.0.1", port: int = 8080, log_level: str = "warning"
) -> None:
    """Serve until interrupted (``SIGTERM``/``SIGINT``: graceful shutdown)."""
    import uvicorn

    app = create_app(config)
    service = app.service

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            loop = getattr(self, "_topoopt_loop", None)
            if loop is not None:
                loop.call_soon_threadsafe(service.begin_shutdown)
            super().handle_exit(sig, frame)

        async def startup(self, sockets: Any = None) -> None:
            self._topoopt_loop = asyncio.get_running_loop()
            await super().startup(sockets=sockets)
            if self.started and self.servers:
                bound = self.servers[0].sockets[0].getsockname()
                shown = f"[{bound[0]}]" if ":" in str(bound[0]) else bound[0]
                print(
                    f"topoopt serve: listening on http://{shown}:{bound[1]} "
                    f"({config.workers} workers, queue {config.queue})",
                    file=sys.stderr,
                    flush=True,
                )

    uv_config = uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        access_log=False,
        log_level=log_level,
        server_header=False,
        timeout_graceful_shutdown=int(
            config.hard_timeout(config.max_time_limit) + SHUTDOWN_MARGIN_S
        ),
    )
    server = Server(uv_config)
    server.run(sockets=[listening_socket(host, port)])
    if not server.started:
        raise SystemExit(3)


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (``port`` 0: any free one), made here so that an
    address in use is one line and exit 2, like any bad option.

    Raises
    ------
    TopooptError
        When the address cannot be bound.
    """
    from topoopt.core.errors import TopooptError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise TopooptError(f"--host/--port: cannot listen on {host}:{port}: {reason}") from None
    sock.set_inheritable(True)
    return sock
