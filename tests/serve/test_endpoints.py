"""Every GET endpoint of a real server, against what the command line prints."""

from __future__ import annotations

import json

import httpx
from click.testing import CliRunner

import topoopt
from topoopt.cli import main
from topoopt.client import Client, ServiceError
from topoopt.serve.openapi import openapi_document

from .conftest import Server, metric_samples


def cli(*args: str) -> str:
    out = CliRunner().invoke(main, list(args))
    assert out.exit_code == 0, out.output
    return out.stdout


def test_health_and_readiness(client: Client) -> None:
    health = client.health()
    assert health["status"] == "ok"
    assert health["workers"]["size"] == 2
    assert client.ready()


def test_families(client: Client) -> None:
    families = client.families()
    assert [f["name"] for f in families] == topoopt.families()
    placement = next(f for f in families if f["name"] == "placement")
    assert placement["sense"] == "minimize"
    assert "placement/best-fit" in placement["solvers"]
    assert placement["schema"] == "/v1/schemas/placement"


def test_solvers_are_what_the_cli_prints(client: Client) -> None:
    for family in ("gpuselect", "ocs"):
        assert client.solvers(family) == json.loads(cli("solvers", family, "--json"))
    every = {info["name"] for info in client.solvers()}
    assert {info.name for info in topoopt.solvers_for()} <= every
    assert "placement/test-sleep" in every  # the server's plug-in


def test_unknown_family_is_400_for_solvers_and_404_for_schemas(client: Client) -> None:
    try:
        client.solvers("placemen")
    except ServiceError as exc:
        assert exc.status == 400 and exc.kind == "bad_input"
        assert "unknown family 'placemen'" in exc.message
    else:
        raise AssertionError("no error")
    try:
        client.schema("placemen")
    except ServiceError as exc:
        assert exc.status == 404 and "placemen" in exc.message
    else:
        raise AssertionError("no error")


def test_schemas_are_what_the_cli_prints(client: Client) -> None:
    for family in topoopt.families():
        assert client.schema(family) == json.loads(cli("instances", "schema", family))


def test_openapi_document_is_generated_from_the_code(client: Client) -> None:
    document = client.openapi()
    assert document == openapi_document()
    assert document["openapi"].startswith("3.1")
    paths = document["paths"]
    for path in ("/v1/solve", "/v1/check", "/v1/evaluate"):
        assert set(paths[path]) == {"post"}
        assert {"200", "400", "413", "503", "504"} <= set(paths[path]["post"]["responses"])
    for path in (
        "/v1/families",
        "/v1/solvers",
        "/v1/schemas/{family}",
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
    ):
        assert set(paths[path]) == {"get"}
    schemas = document["components"]["schemas"]
    assert {f"Instance.{f}" for f in topoopt.families()} <= set(schemas)
    # every reference resolves inside the document
    text = json.dumps(document)
    for ref in set(part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]):
        assert ref in schemas, ref


def test_unknown_route_and_method(server: Server) -> None:
    with httpx.Client(base_url=server.url) as http:
        missing = http.get("/v2/solve")
        assert missing.status_code == 404
        assert missing.json() == {
            "status": 404,
            "error": "not_found",
            "message": "no route '/v2/solve'",
        }
        wrong = http.get("/v1/solve")
        assert wrong.status_code == 405 and wrong.json()["error"] == "method_not_allowed"


def test_metrics_are_prometheus_text(server: Server, client: Client) -> None:
    client.health()
    with httpx.Client(base_url=server.url) as http:
        http.get("/nothing-here")
        response = http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    kinds = {}
    for line in response.text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            kinds[name] = kind
    # prometheus_client adds a `_created` gauge beside each counter and histogram series
    assert {k: v for k, v in kinds.items() if not k.endswith("_created")} == {
        "topoopt_http_requests_total": "counter",
        "topoopt_http_request_duration_seconds": "histogram",
        "topoopt_solver_seconds": "histogram",
        "topoopt_queue_depth": "gauge",
        "topoopt_workers": "gauge",
        "topoopt_worker_restarts_total": "counter",
    }
    samples = metric_samples(response.text)
    requests = "topoopt_http_requests_total"
    ok = frozenset({("route", "/healthz"), ("method", "GET"), ("status", "200")})
    missing = frozenset({("route", "other"), ("method", "GET"), ("status", "404")})
    assert samples[requests, ok] >= 1
    assert samples[requests, missing] >= 1
    healthz = frozenset({("route", "/healthz")})
    assert samples["topoopt_http_request_duration_seconds_count", healthz] >= 1
    assert samples["topoopt_queue_depth", frozenset()] == 0
    busy = samples["topoopt_workers", frozenset({("state", "busy")})]
    assert busy + samples["topoopt_workers", frozenset({("state", "idle")})] <= 2
