"""``POST /v1/solve``, ``/v1/check`` and ``/v1/evaluate`` of a real server: the answers equal
``topoopt solve --json``, bad input gives the command line's line, limits give 413, instances
name no file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from topoopt.cli import main
from topoopt.client import Client, ServiceError

from .conftest import BODY_LIMIT, FREE_NODES_LIMIT, ROOT, Server

TIMINGS = {"total_s", "build_s", "solve_s"}
PLACEMENT = ROOT / "instances" / "placement" / "arnold-paper" / "i-even-a0.5.json"
PLACEMENT_III = ROOT / "instances" / "placement" / "arnold-paper" / "iii-even-a0.5.json"
GPUSELECT = ROOT / "instances" / "gpuselect" / "protocol-h100" / "h100-k10-s0.json"
TABLE = ROOT / "instances" / "gpuselect" / "examples" / "table-k5.json"


def cli_solve(path: Path, solver: str, *extra: str) -> tuple[int, dict[str, Any] | None, str]:
    out = CliRunner().invoke(main, ["solve", str(path), "--solver", solver, "--json", *extra])
    answer = json.loads(out.stdout) if out.stdout.strip() else None
    return out.exit_code, answer, out.stderr.strip()


def untimed(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in TIMINGS}


@pytest.mark.parametrize(
    ("path", "solver", "extra", "body"),
    [
        (PLACEMENT, "best-fit", (), {}),
        (PLACEMENT_III, "placement/exact-mip", ("--time-limit", "5"), {"time_limit": 5}),
        (
            PLACEMENT_III,
            "placement/coarse-mip",
            ("--backend", "highs", "-o", "unit=dp", "--time-limit", "5"),
            {"backend": "highs", "unit": "dp", "time_limit": 5},
        ),
        (GPUSELECT, "gpuselect/hybrid", ("--seed", "3"), {"seed": 3}),
        (TABLE, "gpuselect/auto", (), {}),
    ],
    ids=["best-fit", "exact-mip", "coarse-mip-options", "hybrid-seed", "gpuselect-auto"],
)
def test_solve_answers_what_the_cli_prints(
    client: Client, path: Path, solver: str, extra: tuple[str, ...], body: dict[str, Any]
) -> None:
    code, expected, _ = cli_solve(path, solver, *extra)
    assert code == 0 and expected is not None
    answer = client.solve(path, solver, **body)
    assert set(answer) == set(expected)
    assert untimed(answer) == untimed(expected)


def test_solve_body_is_the_cli_line_byte_for_byte_but_timings(server: Server) -> None:
    _, expected, _ = cli_solve(PLACEMENT, "best-fit")
    request = {"instance": json.loads(PLACEMENT.read_text()), "solver": "best-fit"}
    response = httpx.post(f"{server.url}/v1/solve", json=request)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    text = response.text
    assert text.isascii()
    assert list(json.loads(text)) == list(expected or {})  # same keys, same order


def bad(
    server: Server, body: Any, *, raw: bytes | None = None, path: str = "/v1/solve"
) -> httpx.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx.post(
        f"{server.url}{path}", content=content, headers={"Content-Type": "application/json"}
    )


@pytest.mark.parametrize(
    ("change", "solver"),
    [
        (lambda d: d.update(alpha=3), "best-fit"),
        (lambda d: d["topology"].update(gpus_per_nde=8), "best-fit"),
        (lambda d: d.update(family="placemnt"), "best-fit"),
        (lambda d: d.update(format_version=1.0), "best-fit"),
        (lambda d: d["job"].update(dp=6.5), "best-fit"),
        (lambda d: None, "exact-mpi"),
        (lambda d: None, "mip"),
        (lambda d: None, "gpuselect/topo"),
    ],
    ids=[
        "alpha",
        "unknown-field",
        "family",
        "format-version",
        "dp",
        "solver",
        "ambiguous",
        "other-family",
    ],
)
def test_bad_input_is_400_with_the_cli_line(
    server: Server, tmp_path: Path, change: Any, solver: str
) -> None:
    data = json.loads(PLACEMENT.read_text())
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    code, _, stderr = cli_solve(path, solver)
    assert code == 2 and stderr.startswith("error: ")
    response = bad(server, {"instance": data, "solver": solver})
    assert response.status_code == 400
    assert response.json() == {
        "status": 400,
        "error": "bad_input",
        "message": stderr[len("error: ") :],
    }


def test_bad_option_is_400_with_the_cli_line(server: Server) -> None:
    code, _, stderr = cli_solve(PLACEMENT, "coarse-mip", "-o", "unit=nodes", "-o", "colour=1")
    assert code == 2
    instance = json.loads(PLACEMENT.read_text())
    response = bad(
        server,
        {"instance": instance, "solver": "coarse-mip", "options": {"unit": "nodes", "colour": 1}},
    )
    assert response.status_code == 400
    assert response.json()["message"] == stderr[len("error: ") :]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            b"{",
            "request: not valid JSON (Expecting property name enclosed in double quotes at line 1 "
            "column 2)",
        ),
        (b"[1]", "request: must be a JSON object"),
        (
            b'{"instance": {}, "solver": "x", "solver": "y"}',
            "request: not valid JSON (the key 'solver' appears twice in one object)",
        ),
        (
            b'{"instance": {}, "solver": "x", "seed": NaN}',
            "request: not valid JSON (NaN is not a JSON number (only finite numbers are allowed))",
        ),
        (b'{"instance": {}}', "solver: missing required field"),
        (
            b'{"instance": {}, "solver": "x"}',
            "family: missing required field; one of clusterselect, gpuselect, ocs, "
            "parallelconfig, partition, placement",
        ),
        (b'{"instance": {}, "solver": "x", "sed": 1}', "sed: unknown field; did you mean 'seed'?"),
        (b'{"instance": [], "solver": "x"}', "instance: must be a JSON object, got []"),
        (b'{"instance": {}, "solver": "x", "seed": -1}', "seed: must be non-negative, got -1"),
        (
            b'{"instance": {"family": "placement"}, "solver": "x", "time_limit": 0}',
            "time_limit: must be > 0 seconds, got 0",
        ),
        (
            b'{"instance": {"family": "placement"}, "solver": "x", "time_limit": 6}',
            "time_limit: must be at most 5 s on this server (topoopt serve --max-time-limit), "
            "got 6",
        ),
        (
            b'{"instance": {"family": "placement"}, "solver": "x", "options": {"log": true}}',
            "options.log: not accepted by the service",
        ),
        (
            b'{"instance": {"family": "placement"}, "solver": "x", '
            b'"options": {"backend_options": {}}}',
            "options.backend_options: not accepted by the service",
        ),
        (b"\xff{}", "request: not UTF-8 text (byte 0: b'\\xff')"),
    ],
    ids=[
        "truncated",
        "array",
        "duplicate",
        "nan",
        "missing",
        "no-family",
        "unknown",
        "instance-type",
        "seed",
        "time-limit-0",
        "time-limit-max",
        "log",
        "backend-options",
        "utf8",
    ],
)
def test_malformed_requests_are_400(server: Server, raw: bytes, message: str) -> None:
    response = bad(server, None, raw=raw)
    assert response.status_code == 400, response.text
    assert response.json() == {"status": 400, "error": "bad_input", "message": message}


def test_control_characters_are_escaped_in_the_line(server: Server) -> None:
    data = json.loads(PLACEMENT.read_text())
    data["topology"]["a\nb\x1b[31m"] = 1
    response = bad(server, {"instance": data, "solver": "best-fit"})
    assert response.status_code == 400
    message = response.json()["message"]
    assert "\n" not in message and "\x1b" not in message and "a\\nb\\x1b[31m" in message


def test_over_the_body_limit_is_413_before_reading(server: Server) -> None:
    body = (
        b'{"instance": {"family": "placement", "x-pad": "'
        + b"a" * BODY_LIMIT
        + b'"}, "solver": "best-fit"}'
    )
    response = bad(server, None, raw=body)
    assert response.status_code == 413
    assert response.json()["error"] == "too_large"
    assert "exceed the limit json_file_bytes=200000" in response.json()["message"]
    # the connection stays usable: the server read the rest of the body and dropped it
    with httpx.Client(base_url=server.url) as http:
        assert http.post("/v1/solve", content=body).status_code == 413
        assert http.get("/healthz").status_code == 200


def test_chunked_body_over_the_limit_is_413(server: Server) -> None:
    def chunks() -> Any:
        for _ in range(BODY_LIMIT // 10_000 + 2):
            yield b" " * 10_000

    response = httpx.post(f"{server.url}/v1/solve", content=chunks())
    assert response.status_code == 413


def test_family_and_json_limits_are_413(server: Server) -> None:
    data = json.loads(PLACEMENT.read_text())
    data["topology"]["minipods"] = [FREE_NODES_LIMIT + 1, 1]
    response = bad(server, {"instance": data, "solver": "best-fit"})
    assert response.status_code == 413
    assert "exceed the limit placement_free_nodes=5000" in response.json()["message"]
    deep: Any = 1
    for _ in range(80):
        deep = [deep]
    data = json.loads(PLACEMENT.read_text())
    data["x-deep"] = deep
    response = bad(server, {"instance": data, "solver": "best-fit"})
    assert response.status_code == 413
    assert "json_depth" in response.json()["message"]


def test_an_instance_as_deep_as_the_limit_allows_is_accepted(server: Server) -> None:
    data = json.loads(PLACEMENT.read_text())
    deep: Any = 1
    for _ in range(62):  # the instance itself is level 1: 63 levels of arrays, 64 in all
        deep = [deep]
    data["x-deep"] = deep
    response = bad(server, {"instance": data, "solver": "best-fit"})
    assert response.status_code == 200, response.text


def measured(tmp: Path, shared_data: Path, reference: str) -> dict[str, Any]:
    data = json.loads(
        (ROOT / "instances/gpuselect/protocol-measured-h100/h100-k8-s0.json").read_text()
    )
    data["bandwidth"]["intra"]["H100"] = [reference]
    return data


def test_instances_may_name_no_file_but_in_allowed_folders(
    server: Server, allowed: Path, tmp_path: Path, shared_data: Path
) -> None:
    table = shared_data / "hosts" / "H100_node26_allreduce_16MiB.csv"
    shutil.copy(table, allowed / "h100.csv")
    shutil.copy(table, tmp_path / "h100.csv")
    cases = {
        "h100.csv": 400,  # relative: the server's working directory is no instance's folder
        str(tmp_path / "h100.csv"): 400,  # absolute, outside the allowed folders
        str(allowed / ".." / tmp_path.name / "h100.csv"): 400,
        str(allowed / "h100.csv"): 200,
        "data:hosts/H100_node26_allreduce_16MiB.csv": 200,  # the operator's data folders
    }
    for reference, status in cases.items():
        body = {
            "instance": measured(tmp_path, shared_data, reference),
            "solver": "gpuselect/hybrid",
        }
        response = bad(server, body)
        assert response.status_code == status, (reference, response.text)
        if status == 400:
            message = response.json()["message"]
            assert message.startswith("bandwidth.intra.H100[0]: ")
            assert "may not name files" in message


def test_check_and_evaluate_a_solved_placement(client: Client) -> None:
    instance = json.loads(PLACEMENT_III.read_text())
    result = client.solve(instance, "placement/exact-mip", time_limit=5)
    solution = result["solution"]
    checked = client.check(instance, solution)
    assert checked == {
        "family": "placement",
        "instance": "iii-even-a0.5",
        "feasible": True,
        "violations": [],
    }
    evaluated = client.evaluate(instance, solution)
    assert evaluated["feasible"] and evaluated["objective"] == result["objective"]
    assert evaluated["sense"] == "minimize"
    assert evaluated["metrics"]["dp_spread"] == result["dp_spread"]
    crowded = dict(solution, matrix=[[0] * len(row) for row in solution["matrix"]])
    refused = client.check(instance, crowded)
    assert not refused["feasible"] and refused["violations"]
    worse = client.evaluate(instance, crowded)
    assert worse["objective"] is None and worse["violations"] == refused["violations"]


def test_check_and_evaluate_a_gpuselect_solution(client: Client) -> None:
    result = client.solve(GPUSELECT, "gpuselect/hybrid")
    evaluated = client.evaluate(GPUSELECT, result["solution"])
    assert evaluated["objective"] == result["objective"]


@pytest.mark.parametrize(
    "solution",
    [
        {},
        {"matrix": "x"},
        {"matrix": [[0]]},
        {"matrix": [[99, 99]] * 6},
        {"matrix": [[None, 1]] * 6},
        {"matrix": [[0, 1]] * 5},
        {"matrix": [[-1, 1]] * 6},
        [1, 2],
    ],
    ids=["empty", "string", "shape", "range", "null", "rows", "negative", "array"],
)
def test_malformed_solutions_are_400_or_violations(server: Server, solution: Any) -> None:
    instance = json.loads(PLACEMENT.read_text())
    for path in ("/v1/check", "/v1/evaluate"):
        response = bad(server, {"instance": instance, "solution": solution}, path=path)
        assert response.status_code in (200, 400), response.text
        if response.status_code == 200:
            assert not response.json()["feasible"]
        else:
            assert response.json()["error"] == "bad_input"


def test_client_error_carries_status_and_line(client: Client) -> None:
    with pytest.raises(ServiceError) as caught:
        client.solve(PLACEMENT, "exact-mpi")
    assert caught.value.status == 400 and caught.value.kind == "bad_input"
    assert caught.value.message == (
        "unknown solver 'exact-mpi' for placement instances; did you mean placement/exact-mip?"
    )
