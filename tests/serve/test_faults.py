"""Solvers that hang, raise or crash cost their request a 504/500 and a replaced worker,
never the server; health checks keep answering meanwhile."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx

from topoopt.client import Client

from .conftest import ROOT, Server, metric_samples

PLACEMENT = json.loads((ROOT / "instances/placement/arnold-paper/i-even-a0.5.json").read_text())


def solve(server: Server, solver: str, **extra: Any) -> httpx.Response:
    body = {"instance": PLACEMENT, "solver": solver, **extra}
    return httpx.post(f"{server.url}/v1/solve", json=body, timeout=30)


def restarts(client: Client) -> dict[str, float]:
    samples = metric_samples(client.metrics())
    return {
        dict(labels)["reason"]: value
        for (name, labels), value in samples.items()
        if name == "topoopt_worker_restarts_total"
    }


def wait_for_workers(client: Client, count: int = 2, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        workers = client.health()["workers"]
        if workers["idle"] + workers["busy"] >= count and workers["starting"] == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"workers not back: {client.health()}")


def test_a_hanging_solver_is_504_at_the_deadline_and_health_answers_meanwhile(
    server: Server, client: Client
) -> None:
    wait_for_workers(client)
    before = restarts(client).get("timeout", 0)
    pids = server.workers()
    answers: list[httpx.Response] = []
    hang = threading.Thread(
        target=lambda: answers.append(solve(server, "placement/test-sleep", time_limit=0.5))
    )
    started = time.monotonic()
    hang.start()
    health = []
    while hang.is_alive():
        health.append(httpx.get(f"{server.url}/healthz", timeout=5).status_code)
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    (answer,) = answers
    assert answer.status_code == 504
    assert answer.json() == {
        "status": 504,
        "error": "timeout",
        "message": "no answer within the hard deadline of 1.1 s; worker replaced",
    }
    assert 1.0 < elapsed < 5.0
    assert health and set(health) == {200}
    wait_for_workers(client)
    assert restarts(client)["timeout"] == before + 1
    after = server.workers()
    assert len(after) == 2 and after != pids  # one worker was replaced, none leaked
    assert solve(server, "best-fit").status_code == 200


def test_a_raising_solver_is_500_with_one_line(server: Server, client: Client) -> None:
    wait_for_workers(client)
    response = solve(server, "placement/test-raise")
    assert response.status_code == 500
    assert response.json() == {
        "status": 500,
        "error": "internal",
        "message": "internal error: RuntimeError: solver bug: index out of range",
    }
    wait_for_workers(client)
    assert solve(server, "best-fit").status_code == 200


def test_a_crashing_solver_is_500_and_its_worker_replaced(server: Server, client: Client) -> None:
    wait_for_workers(client)
    before = restarts(client).get("crashed", 0)
    response = solve(server, "placement/test-exit")
    assert response.status_code == 500
    message = response.json()["message"]
    assert message.startswith("the worker process ended without an answer (exit status 7)")
    wait_for_workers(client)
    assert restarts(client)["crashed"] == before + 1
    assert len(server.workers()) == 2
    assert solve(server, "best-fit").status_code == 200


def test_every_worker_busy_health_still_answers(server: Server, client: Client) -> None:
    wait_for_workers(client)
    answers: list[int] = []
    threads = [
        threading.Thread(
            target=lambda: answers.append(
                solve(server, "placement/test-slow", options={"seconds": 1.5}).status_code
            )
        )
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        started = time.monotonic()
        workers = client.health()["workers"]
        answered = time.monotonic() - started
        if workers["busy"] == 2 and workers["queued"] == 1:
            break
        time.sleep(0.05)
    assert workers["busy"] == 2 and workers["queued"] == 1
    assert answered < 0.5
    for thread in threads:
        thread.join()
    assert answers == [200, 200, 200]
