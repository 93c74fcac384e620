"""A thin Python client of the HTTP service (``topoopt serve``, docs/service.md).

Each method is one request; answers are the service's JSON (``solve`` returns exactly what
``topoopt solve --json`` prints), and an error answer raises :class:`ServiceError` with its
status, kind and one-line message. Needs ``httpx`` (``pip install 'topoopt[serve]'``).

>>> from topoopt.client import Client                      # doctest: +SKIP
>>> with Client("http://127.0.0.1:8080") as client:        # doctest: +SKIP
...     result = client.solve("instances/placement/arnold-paper/i-even-a0.5.json", "best-fit")
...     result["status"], result["objective"]
('feasible', 1.0)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from topoopt.core.errors import TopooptError
from topoopt.core.family import Instance

__all__ = ["Client", "ServiceError"]


class ServiceError(TopooptError):
    """An error answer of the service.

    Attributes
    ----------
    status
        The HTTP status (400 bad input, 401, 404, 413, 500, 503, 504).
    kind
        The ``error`` member (``"bad_input"``, ``"timeout"``, ...).
    message
        The one-line message (for bad input, what ``topoopt solve`` prints after ``error:``).
    retry_after
        Seconds from the ``Retry-After`` header of a ``503``, else ``None``.
    """

    def __init__(self, status: int, kind: str, message: str, retry_after: int | None = None):
        super().__init__(f"{status} {kind}: {message}")
        self.status = status
        self.kind = kind
        self.message = message
        self.retry_after = retry_after


def _instance(instance: Instance[Any] | Mapping[str, Any] | str | os.PathLike[str]) -> Any:
    if isinstance(instance, Instance):
        return instance.to_dict()
    if isinstance(instance, Mapping):
        return dict(instance)
    from topoopt.core.safejson import read_json_file

    return read_json_file(instance, what="instance file")


class Client:
    """Calls a service at ``url``.

    Parameters
    ----------
    url
        Base address, e.g. ``"http://127.0.0.1:8080"``.
    token
        The bearer token, when the server has one (``--token-file``).
    timeout
        Seconds to wait for an answer (``None``: no limit; the server answers a solve within
        its hard deadline anyway).
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:8080",
        *,
        token: str | None = None,
        timeout: float | None = 120.0,
    ) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=url, headers=headers, timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """One request; the answer's JSON (text for ``/metrics``).

        Raises
        ------
        ServiceError
            For an error answer.
        """
        content = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"Content-Type": "application/json"}
        response = self._http.request(
            method, path, content=content, headers=headers, params=params or None
        )
        if response.status_code >= 400:
            try:
                error = response.json()
                kind, message = str(error["error"]), str(error["message"])
            except (ValueError, KeyError, TypeError):
                kind, message = "http", response.text[:200]
            retry = response.headers.get("retry-after")
            raise ServiceError(
                response.status_code,
                kind,
                message,
                int(retry) if retry and retry.isdigit() else None,
            )
        if response.headers.get("content-type", "").startswith("text/plain"):
            return response.text
        return response.json()

    def solve(
        self,
        instance: Instance[Any] | Mapping[str, Any] | str | os.PathLike[str],
        solver: str,
        *,
        backend: str | None = None,
        time_limit: float | None = None,
        seed: int | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """``POST /v1/solve``: what ``topoopt solve --json`` prints for the same input.

        ``instance`` is an instance, its JSON object, or an instance file (read here; the
        service reads no file the instance names, see docs/service.md).
        """
        body: dict[str, Any] = {"instance": _instance(instance), "solver": solver}
        for key, value in (("backend", backend), ("time_limit", time_limit), ("seed", seed)):
            if value is not None:
                body[key] = value
        if options:
            body["options"] = options
        result: dict[str, Any] = self.request("POST", "/v1/solve", body)
        return result

    def check(self, instance: Any, solution: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /v1/check``: the rules ``solution`` breaks (``feasible`` when none)."""
        body = {"instance": _instance(instance), "solution": dict(solution)}
        answer: dict[str, Any] = self.request("POST", "/v1/check", body)
        return answer

    def evaluate(self, instance: Any, solution: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /v1/evaluate``: the exact objective and metrics of ``solution``."""
        body = {"instance": _instance(instance), "solution": dict(solution)}
        answer: dict[str, Any] = self.request("POST", "/v1/evaluate", body)
        return answer

    def families(self) -> list[dict[str, Any]]:
        """``GET /v1/families``."""
        families: list[dict[str, Any]] = self.request("GET", "/v1/families")["families"]
        return families

    def solvers(self, family: str | None = None) -> list[dict[str, Any]]:
        """``GET /v1/solvers``: what ``topoopt solvers [FAMILY] --json`` prints."""
        params = {} if family is None else {"family": family}
        solvers: list[dict[str, Any]] = self.request("GET", "/v1/solvers", **params)
        return solvers

    def schema(self, family: str) -> dict[str, Any]:
        """``GET /v1/schemas/FAMILY``: the family's instance JSON Schema."""
        schema: dict[str, Any] = self.request("GET", f"/v1/schemas/{family}")
        return schema

    def health(self) -> dict[str, Any]:
        """``GET /healthz``."""
        health: dict[str, Any] = self.request("GET", "/healthz")
        return health

    def ready(self) -> bool:
        """``GET /readyz``: whether the service takes requests."""
        return self._http.get("/readyz").status_code == 200

    def metrics(self) -> str:
        """``GET /metrics``: the Prometheus text."""
        text: str = self.request("GET", "/metrics")
        return text

    def openapi(self) -> dict[str, Any]:
        """``GET /openapi.json``."""
        document: dict[str, Any] = self.request("GET", "/openapi.json")
        return document
