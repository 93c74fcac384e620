"""``topoopt serve``: the HTTP service (:mod:`topoopt.serve`, docs/service.md)."""

from __future__ import annotations

import os

import click

from topoopt.cli.output import allowed_paths, root_plugins
from topoopt.core.errors import TopooptError


def _token(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as stream:
            token = stream.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise TopooptError(f"--token-file: cannot read {path}: {exc}") from None
    if not token or any(c.isspace() for c in token):
        raise TopooptError(f"--token-file: {path} must hold one token (no spaces), got none")
    return token


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8080,
    show_default=True,
    help="Port (0: any free one, announced on stderr).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=256),
    default=None,
    help="Worker processes that solve [default: the number of CPUs].",
)
@click.option(
    "--queue",
    type=click.IntRange(min=0),
    default=64,
    show_default=True,
    help="Requests that may wait for a worker; more are answered 503 with Retry-After.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="File holding a bearer token every request but /healthz and /readyz must carry.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Solver time limit (s) of requests that give none.",
)
@click.option(
    "--max-time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Largest time limit (s) a request may ask for.",
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="A request is answered 504 and its worker replaced 1.2 x time limit + grace seconds "
    "after a worker took it.",
)
@click.option(
    "--memory-limit",
    type=click.FloatRange(min=1),
    default=None,
    metavar="MIB",
    help="Kill (and replace) a worker whose resident memory exceeds this.",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
    help="Of the server's log on stderr.",
)
def serve(
    host: str,
    port: int,
    workers: int | None,
    queue: int,
    token_file: str | None,
    time_limit: float,
    max_time_limit: float,
    grace: float,
    memory_limit: float | None,
    log_level: str,
) -> None:
    """Serve topoopt over HTTP (JSON): POST /v1/solve, /v1/check, /v1/evaluate; GET
    /v1/families, /v1/solvers, /v1/schemas/FAMILY, /healthz, /readyz, /metrics, /openapi.json.

    Solves run in worker processes with a hard deadline each; instances may name no file but
    data names and absolute paths in the --allow-path folders. SIGTERM shuts down gracefully.
    See docs/service.md.
    """
    try:
        from topoopt.serve.app import ServeConfig
        from topoopt.serve.server import run
    except ImportError as exc:
        raise TopooptError(
            f"topoopt serve needs the web stack ({exc.name} is missing): "
            "pip install 'topoopt[serve]'"
        ) from None
    if time_limit > max_time_limit:
        raise TopooptError(
            f"--time-limit: must be at most --max-time-limit ({max_time_limit:g}), "
            f"got {time_limit:g}"
        )
    config = ServeConfig(
        workers=workers or os.cpu_count() or 1,
        queue=queue,
        token=_token(token_file),
        time_limit=time_limit,
        max_time_limit=max_time_limit,
        grace=grace,
        memory_limit_mb=memory_limit,
        plugins=root_plugins(),
        allow_paths=tuple(os.path.abspath(p) for p in allowed_paths()),
    )
    run(config, host=host, port=port, log_level=log_level)
