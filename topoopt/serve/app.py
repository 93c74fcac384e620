"""The ASGI application of ``topoopt serve``: thin handlers over the worker pool.

A handler reads and checks the request (size, JSON rules, the request schema of
:mod:`topoopt.serve.api`), hands the work to a worker process (:mod:`topoopt.serve.pool`,
running :mod:`topoopt.serve.work`) and turns the outcome into a status:

======  =====================================================================================
status  when
======  =====================================================================================
200     answered (a solve that found no feasible solution too: its ``status`` says so)
400     bad input: the request or the instance breaks a rule (the command line's exit 2)
401     a token is configured and the request lacks it (``/healthz``, ``/readyz`` excepted)
404     no such route, or no such family for ``/v1/schemas/{family}``
413     over a size limit of ``docs/input.md``: the body's bytes (``json_file_bytes``, checked
        on ``Content-Length`` before reading) or a JSON or family limit
500     the solver raised, its process died or exceeded the memory limit (worker replaced)
503     every worker busy and the queue full, or shutting down (``Retry-After``)
504     no answer within the hard deadline ``1.2 × time_limit + grace`` (worker replaced)
======  =====================================================================================

Errors are ``{"status": ..., "error": ..., "message": ONE LINE}``. Everything on the event
loop is cheap (no instance is built in this process), so ``/healthz`` answers while every
worker is busy. :class:`Frontdoor` (plain ASGI, around the Starlette app) checks the token
and counts every request for ``/metrics``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from topoopt.bench.task import HARD_TIMEOUT_FACTOR
from topoopt.serve import api
from topoopt.serve.metrics import CONTENT_TYPE, ServiceMetrics
from topoopt.serve.pool import QueueFull, ServicePool, ShuttingDown

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["ApiError", "Frontdoor", "ServeConfig", "Service", "create_app"]

JSON = "application/json"
SERVE_MAX_RUNS = 10_000
"""Requests after which a worker is replaced (a slow leak's bound; the benchmarks' 500 would
restart a busy service's workers every second, at about 0.5 s of CPU each)."""
THREAD_PARSE_BYTES = 1 << 20
"""Request bodies larger than this are parsed in a thread, so the event loop keeps answering
(``/healthz``) meanwhile."""


@dataclass(frozen=True)
class ServeConfig:
    """How a service runs (the options of ``topoopt serve``).

    Attributes
    ----------
    workers
        Worker processes that solve (each one request at a time).
    queue
        Requests that may wait for a worker; more are answered ``503``.
    token
        When set, every request but ``/healthz`` and ``/readyz`` needs
        ``Authorization: Bearer <token>``.
    time_limit
        Solver time limit (s) of a request that gives none.
    max_time_limit
        Largest time limit a request may ask for.
    grace
        Seconds added to ``1.2 × time_limit`` for the hard deadline of a request.
    memory_limit_mb
        Resident memory of a worker above which it is killed (``None``: none).
    max_runs
        Requests after which a worker is replaced.
    plugins
        Modules imported here and in every worker (families and solvers of plug-ins).
    allow_paths
        Folders whose files instances may name (absolute paths); no other file is read.
    """

    workers: int = 2
    queue: int = 64
    token: str | None = None
    time_limit: float = 10.0
    max_time_limit: float = 60.0
    grace: float = 5.0
    memory_limit_mb: float | None = None
    max_runs: int = SERVE_MAX_RUNS
    plugins: tuple[str, ...] = ()
    allow_paths: tuple[str, ...] = ()

    def hard_timeout(self, time_limit: float) -> float:
        """Seconds after which a request with this time limit is answered ``504``."""
        return time_limit * HARD_TIMEOUT_FACTOR + self.grace


class ApiError(Exception):
    """An error answer: HTTP status, kind (:data:`topoopt.serve.api.ERROR`), one line."""

    def __init__(
        self, status: int, kind: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.headers = dict(headers or {})


def _bad(message: object) -> ApiError:
    from topoopt.serve.work import message_line

    return ApiError(400, "bad_input", message_line(str(message)))


def _shutting_down() -> ApiError:
    return ApiError(
        503,
        "shutting_down",
        "the server is shutting down; send the request again (to another replica)",
        {"Retry-After": "1"},
    )


def error_body(status: int, kind: str, message: str) -> bytes:
    """The JSON body of an error answer."""
    return json.dumps({"status": status, "error": kind, "message": message}).encode()


class Service:
    """One running service: its configuration, worker pool, metrics and fixed answers."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.pool = ServicePool(
            config.workers,
            config.queue,
            plugins=config.plugins,
            memory_limit_mb=config.memory_limit_mb,
            max_runs=config.max_runs,
        )
        self.token = None if config.token is None else b"Bearer " + config.token.encode()
        self.metrics = ServiceMetrics(self.pool)
        self._fixed: dict[str, bytes] = {}
        self.routes = {e.path: e for e in ENDPOINTS}

    # -- fixed answers (the registry does not change while the service runs) --------------

    def prepare(self) -> None:
        """Compute the answers of the GET endpoints once (registry, schemas, OpenAPI)."""
        import topoopt
        from topoopt.cli.instances import schema_json
        from topoopt.cli.solve import solvers_json
        from topoopt.core.registry import get_family, solver_names
        from topoopt.serve.openapi import openapi_document

        names = topoopt.families()
        self._fixed["solvers"] = solvers_json(topoopt.solvers_for()).encode()
        families = []
        for name in names:
            self._fixed[f"solvers/{name}"] = solvers_json(topoopt.solvers_for(name)).encode()
            with contextlib.suppress(Exception):
                self._fixed[f"schema/{name}"] = schema_json(name).encode()
            families.append(
                {
                    "name": name,
                    "sense": get_family(name).sense.value,
                    "solvers": solver_names(name),
                    "schema": f"/v1/schemas/{name}",
                }
            )
        self._fixed["families"] = json.dumps({"families": families}).encode()
        self._fixed["openapi"] = json.dumps(openapi_document()).encode()

    # -- the route label of a path (bounded: templates only) --------------------------------

    def route_of(self, path: str) -> str:
        """The route template of ``path`` for metrics (``"other"`` for unknown paths)."""
        if path in self.routes:
            return path
        if path.startswith("/v1/schemas/"):
            return "/v1/schemas/{family}"
        return "other"

    def authorized(self, scope: Mapping[str, Any]) -> bool:
        """Whether the request carries the token (always, when none is configured)."""
        if self.token is None:
            return True
        for key, value in scope["headers"]:
            if key == b"authorization":
                return hmac.compare_digest(value, self.token)
        return False

    # -- reading requests --------------------------------------------------------------------

    async def _body(self, request: Request) -> bytes:
        from topoopt.core import limits

        cap = limits.value("json_file_bytes")
        declared = request.headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                raise _bad(f"Content-Length: not a number of bytes, got {declared[:40]!r}")
            if int(declared) > cap:
                raise ApiError(
                    413,
                    "too_large",
                    "request: " + limits.exceeded("json_file_bytes", f"its {declared} bytes"),
                )
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise ApiError(
                    413,
                    "too_large",
                    "request: " + limits.exceeded("json_file_bytes", "its bytes"),
                )
            chunks.append(chunk)
        return b"".join(chunks)

    async def _request(self, request: Request, schema: Mapping[str, Any]) -> dict[str, Any]:
        """The request's JSON object, checked against ``schema``."""
        from topoopt.core.errors import TopooptError
        from topoopt.core.schema import validate
        from topoopt.serve.work import refusal

        if self.pool.draining:  # refuse before reading (and holding) the body
            raise _shutting_down()
        if self.pool.full:
            retry = self.pool.retry_after()
            raise ApiError(503, "overloaded", str(QueueFull(retry)), {"Retry-After": str(retry)})
        body = await self._body(request)
        try:
            if len(body) > THREAD_PARSE_BYTES:
                data = await asyncio.to_thread(_parse, body)
            else:
                data = _parse(body)
            if not isinstance(data, dict):
                raise _bad("request: must be a JSON object")
            validate(schema, data)
        except TopooptError as exc:
            refused = refusal(exc)
            status = refused["status"]
            kind = "too_large" if status == 413 else "bad_input"
            raise ApiError(status, kind, refused["message"]) from None
        return data

    # -- running work -------------------------------------------------------------------------

    async def _run(self, function: str, args: dict[str, Any], time_limit: float) -> dict[str, Any]:
        hard = self.config.hard_timeout(time_limit)
        try:
            outcome = await self.pool.call(f"topoopt.serve.work:{function}", args, hard)
        except QueueFull as exc:
            raise ApiError(
                503, "overloaded", str(exc), {"Retry-After": str(exc.retry_after)}
            ) from None
        except ShuttingDown:
            raise _shutting_down() from None
        if outcome.kind == "timeout":
            raise ApiError(504, "timeout", outcome.message)
        if outcome.kind == "error":
            raise ApiError(500, "internal", f"internal error: {outcome.message}")
        if outcome.kind != "answer" or outcome.answer is None:
            raise ApiError(500, "internal", outcome.message)
        answer = outcome.answer
        status = answer.get("status")
        if status == 200:
            return answer
        kind = "too_large" if status == 413 else "bad_input"
        raise ApiError(int(status or 500), kind, str(answer.get("message", "")))

    # -- handlers ----------------------------------------------------------------------------

    async def solve(self, request: Request) -> Response:
        """Solve an instance with one solver.

        The answer is exactly what `topoopt solve --json` prints for the same instance,
        solver, backend, time limit, seed and options (timings aside); a solve that ends
        without a feasible solution is still `200`, with its `status` (`no_solution`, ...).
        Bad input is `400` with the line `topoopt solve` prints after `error:`.
        """
        from starlette.responses import Response

        data = await self._request(request, api.SOLVE_REQUEST)
        time_limit = self._time_limit(data.get("time_limit"))
        options = data.get("options") or {}
        self._check_options(options)
        args = {
            "instance": data["instance"],
            "solver": data["solver"],
            "backend": data.get("backend"),
            "time_limit": time_limit,
            "seed": data.get("seed"),
            "options": options,
            "allow_paths": list(self.config.allow_paths),
        }
        answer = await self._run("solve", args, time_limit)
        if "solver" in answer:
            self.metrics.solved(str(answer["solver"]), float(answer.get("solve_s", 0.0)))
        return Response(answer["body"], media_type=JSON)

    def _time_limit(self, value: Any) -> float:
        if value is None:
            return self.config.time_limit
        limit = float(value)
        if not limit > 0:
            raise _bad(f"time_limit: must be > 0 seconds, got {value!r}")
        if limit > self.config.max_time_limit:
            raise _bad(
                f"time_limit: must be at most {self.config.max_time_limit:g} s on this server "
                f"(topoopt serve --max-time-limit), got {value!r}"
            )
        return limit

    @staticmethod
    def _check_options(options: Mapping[str, Any]) -> None:
        from topoopt.core.errors import TopooptError
        from topoopt.core.safejson import check_json

        for key in api.REFUSED_OPTIONS:
            if key in options:
                raise _bad(f"options.{key}: not accepted by the service")
        try:
            check_json(options, "options")
        except TopooptError as exc:
            from topoopt.serve.work import refusal

            refused = refusal(exc)
            kind = "too_large" if refused["status"] == 413 else "bad_input"
            raise ApiError(refused["status"], kind, refused["message"]) from None

    async def check(self, request: Request) -> Response:
        """Check a solution: the rules it breaks on the instance.

        `solution` is the `solution` member of a `POST /v1/solve` answer (or one a
        scheduler changed); the answer lists the violated rules, empty when feasible.
        """
        return await self._solution("check", request)

    async def evaluate(self, request: Request) -> Response:
        """Evaluate a solution: its exact objective and metrics.

        Computed by the family's `evaluate()`, as for every solver's result; the objective is
        `null` and `violations` lists the broken rules when the solution is infeasible.
        """
        return await self._solution("evaluate", request)

    async def _solution(self, function: str, request: Request) -> Response:
        from starlette.responses import Response

        data = await self._request(request, api.CHECK_REQUEST)
        args = {
            "instance": data["instance"],
            "solution": data["solution"],
            "allow_paths": list(self.config.allow_paths),
        }
        answer = await self._run(function, args, self.config.time_limit)
        return Response(answer["body"], media_type=JSON)

    async def families(self, request: Request) -> Response:
        """The registered problem families: sense, solvers, where their schema is."""
        from starlette.responses import Response

        return Response(self._fixed["families"], media_type=JSON)

    async def solvers(self, request: Request) -> Response:
        """The registered solvers and their capabilities, what `topoopt solvers --json` prints.

        With `?family=NAME`, those of one family (`topoopt solvers NAME --json`).
        """
        from starlette.responses import Response

        family = request.query_params.get("family")
        if family is None:
            return Response(self._fixed["solvers"], media_type=JSON)
        body = self._fixed.get(f"solvers/{family}")
        if body is None:
            raise _bad(self._unknown_family(family))
        return Response(body, media_type=JSON)

    @staticmethod
    def _unknown_family(family: str) -> str:
        from topoopt.core.errors import TopooptError
        from topoopt.core.registry import get_family

        try:
            get_family(family)
        except TopooptError as exc:
            return str(exc)
        return f"family {family!r} publishes no JSON Schema"

    async def schema(self, request: Request) -> Response:
        """The JSON Schema of a family's instances, what `topoopt instances schema FAMILY`
        prints (the schema every instance sent here is checked against)."""
        from starlette.responses import Response

        family = request.path_params["family"]
        body = self._fixed.get(f"schema/{family}")
        if body is None:
            from topoopt.serve.work import message_line

            raise ApiError(404, "not_found", message_line(self._unknown_family(family)))
        return Response(body, media_type="application/schema+json")

    async def healthz(self, request: Request) -> Response:
        """Liveness: `200` while the server's event loop runs, even when every worker is busy."""
        from starlette.responses import Response

        return Response(self._health("ok"), media_type=JSON)

    async def readyz(self, request: Request) -> Response:
        """Readiness: `200` when the service takes requests (a worker is up, not shutting
        down), else `503`."""
        from starlette.responses import Response

        pool = self.pool
        if pool.ready:
            return Response(self._health("ready"), media_type=JSON)
        state = "draining" if pool.draining else "starting"
        return Response(self._health(state), status_code=503, media_type=JSON)

    def _health(self, status: str) -> bytes:
        pool = self.pool
        workers = {
            "size": pool.size,
            "idle": pool.idle,
            "busy": pool.busy,
            "starting": pool.starting,
            "queued": pool.queued,
        }
        return json.dumps({"status": status, "workers": workers}).encode()

    async def metrics_text(self, request: Request) -> Response:
        """Prometheus metrics: requests by route, method and status, latency, solver time,
        queue depth, workers by state, worker restarts by reason."""
        from starlette.responses import Response

        return Response(self.metrics.exposition(), media_type=CONTENT_TYPE)

    async def openapi(self, request: Request) -> Response:
        """This document: the OpenAPI 3.1 description of the service."""
        from starlette.responses import Response

        return Response(self._fixed["openapi"], media_type=JSON)

    # -- life cycle --------------------------------------------------------------------------

    def begin_shutdown(self) -> None:
        """Graceful shutdown begins: queued requests are answered ``503``, running ones go on,
        ``/readyz`` says ``503``."""
        self.pool.drain()


def _parse(body: bytes) -> Any:
    from topoopt.core.safejson import parse_json

    # The instance inside is held to the JSON rules by the worker, with its own paths.
    return parse_json(body, "request", envelope=1, check=False)


ENDPOINTS: tuple[api.Endpoint, ...] = (
    api.Endpoint(
        "POST",
        "/v1/solve",
        Service.solve,
        api.SOLVE_REQUEST,
        api.RESULT,
        (400, 401, 413, 500, 503, 504),
    ),
    api.Endpoint(
        "POST",
        "/v1/check",
        Service.check,
        api.CHECK_REQUEST,
        api.CHECK_RESPONSE,
        (400, 401, 413, 500, 503, 504),
    ),
    api.Endpoint(
        "POST",
        "/v1/evaluate",
        Service.evaluate,
        api.CHECK_REQUEST,
        api.EVALUATE_RESPONSE,
        (400, 401, 413, 500, 503, 504),
    ),
    api.Endpoint(
        "GET", "/v1/families", Service.families, None, api.FAMILIES, (401,), tag="registry"
    ),
    api.Endpoint(
        "GET",
        "/v1/solvers",
        Service.solvers,
        None,
        api.SOLVERS,
        (400, 401),
        query={"family": "Only the solvers of this family."},
        tag="registry",
    ),
    api.Endpoint(
        "GET",
        "/v1/schemas/{family}",
        Service.schema,
        None,
        {"type": "object", "description": "A JSON Schema (draft 2020-12)."},
        (401, 404),
        media_type="application/schema+json",
        tag="registry",
    ),
    api.Endpoint(
        "GET", "/healthz", Service.healthz, None, api.HEALTH, (), auth=False, tag="operations"
    ),
    api.Endpoint(
        "GET", "/readyz", Service.readyz, None, api.HEALTH, (503,), auth=False, tag="operations"
    ),
    api.Endpoint(
        "GET",
        "/metrics",
        Service.metrics_text,
        None,
        None,
        (401,),
        media_type=CONTENT_TYPE,
        tag="operations",
    ),
    api.Endpoint(
        "GET",
        "/openapi.json",
        Service.openapi,
        None,
        {"type": "object", "description": "An OpenAPI 3.1 document."},
        (401,),
        tag="operations",
    ),
)
"""Every endpoint; the server routes them and the OpenAPI document describes them."""

_OPEN = frozenset(e.path for e in ENDPOINTS if not e.auth)
_METHODS = frozenset({"GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"})


class Frontdoor:
    """Plain ASGI around the application: the token check, and the request metrics."""

    def __init__(self, app: Any, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        service = self.service
        started = time.perf_counter()
        route = service.route_of(scope["path"])
        status = 500

        async def sending(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            if route in _OPEN or service.authorized(scope):
                await self.app(scope, receive, sending)
            else:
                body = error_body(
                    401, "unauthorized", "a valid 'Authorization: Bearer' token is required"
                )
                await sending(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", JSON.encode()),
                            (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b'Bearer realm="topoopt"'),
                        ],
                    }
                )
                await sending({"type": "http.response.body", "body": body})
        finally:
            method = scope["method"] if scope["method"] in _METHODS else "other"
            service.metrics.request(route, method, status, time.perf_counter() - started)


def create_app(config: ServeConfig) -> Frontdoor:
    """The ASGI application of a service with ``config``: the worker pool starts with the
    application's lifespan (and stops with it)."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.responses import Response
    from starlette.routing import Route

    from topoopt.core.registry import import_plugins

    import_plugins(config.plugins)
    service = Service(config)
    service.prepare()

    def answer(exc: ApiError) -> Response:
        return Response(
            error_body(exc.status, exc.kind, exc.message),
            status_code=exc.status,
            headers=exc.headers,
            media_type=JSON,
        )

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return answer(exc)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        kinds = {404: "not_found", 405: "method_not_allowed"}
        kind = kinds.get(exc.status_code, "bad_input")
        message = {404: f"no route {request.url.path!r}", 405: "method not allowed"}.get(
            exc.status_code, str(exc.detail)
        )
        from topoopt.serve.work import message_line

        return answer(ApiError(exc.status_code, kind, message_line(message), exc.headers))

    async def internal(request: Request, exc: Exception) -> Response:
        from topoopt.serve.work import message_line

        line = message_line(f"internal error: {type(exc).__name__}: {exc}")
        return answer(ApiError(500, "internal", line))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await service.pool.start()
        try:
            yield
        finally:
            await service.pool.close()

    routes = [
        Route(e.path, getattr(service, e.handler.__name__), methods=[e.method]) for e in ENDPOINTS
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={ApiError: api_error, HTTPException: http_error, Exception: internal},
        lifespan=lifespan,
    )
    app.state.service = service
    front = Frontdoor(app, service)
    return front
