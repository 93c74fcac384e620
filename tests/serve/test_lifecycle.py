"""Servers of their own: the token, a full queue, graceful shutdown, bad configuration."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from topoopt.client import Client, ServiceError

from .conftest import ROOT, metric_samples, parent, start_server

PLACEMENT = json.loads((ROOT / "instances/placement/arnold-paper/i-even-a0.5.json").read_text())


def slow(url: str, seconds: float) -> dict[str, Any]:
    return {"instance": PLACEMENT, "solver": "placement/test-slow", "options": {"seconds": seconds}}


def test_token(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    server = start_server("serve", "--port", "0", "--workers", "1", "--token-file", str(token))
    try:
        url = server.url
        assert httpx.get(f"{url}/healthz").status_code == 200  # probes need no token
        assert httpx.get(f"{url}/readyz").status_code == 200
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": "s3cret-token"},
            {"Authorization": "Bearer s3cret-tokenx"},
        ):
            for method, path in (
                ("GET", "/v1/families"),
                ("POST", "/v1/solve"),
                ("GET", "/metrics"),
            ):
                response = httpx.request(method, f"{url}{path}", headers=headers, content=b"{}")
                assert response.status_code == 401, (headers, path)
                assert response.headers["www-authenticate"].startswith("Bearer")
                assert response.json()["error"] == "unauthorized"
        with Client(url, token="s3cret-token") as client:
            assert client.solve(PLACEMENT, "best-fit")["status"] == "feasible"
        with Client(url) as client, pytest.raises(ServiceError) as caught:
            client.families()
        assert caught.value.status == 401
    finally:
        assert server.stop() == -signal.SIGTERM


def test_full_queue_is_503_with_retry_after() -> None:
    server = start_server("serve", "--port", "0", "--workers", "1", "--queue", "1")
    try:
        codes: list[int] = []
        body = slow(server.url, 1.5)
        threads = [
            threading.Thread(
                target=lambda: codes.append(
                    httpx.post(f"{server.url}/v1/solve", json=body, timeout=30).status_code
                )
            )
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # one solving, one queued
            workers = httpx.get(f"{server.url}/healthz").json()["workers"]
            if workers["busy"] == 1 and workers["queued"] == 1:
                break
            time.sleep(0.05)
        response = httpx.post(f"{server.url}/v1/solve", json=body, timeout=30)
        assert response.status_code == 503
        assert response.json()["error"] == "overloaded"
        assert int(response.headers["retry-after"]) >= 1
        assert httpx.get(f"{server.url}/healthz").status_code == 200
        for thread in threads:
            thread.join()
        assert codes == [200, 200]
    finally:
        assert server.stop() == -signal.SIGTERM


def test_graceful_shutdown_answers_every_request() -> None:
    server = start_server("serve", "--port", "0", "--workers", "1", "--queue", "8")
    pids = {p.pid for p in server.descendants()}  # the workers and the fork server
    answers: list[int | str] = []
    lock = threading.Lock()

    def send() -> None:
        try:
            code: int | str = httpx.post(
                f"{server.url}/v1/solve", json=slow(server.url, 1.5), timeout=30
            ).status_code
        except httpx.HTTPError as exc:
            code = type(exc).__name__
        with lock:
            answers.append(code)

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # one is being solved, three are queued
        workers = httpx.get(f"{server.url}/healthz").json()["workers"]
        if workers["busy"] == 1 and workers["queued"] == 3:
            break
        time.sleep(0.05)
    status = server.stop()
    for thread in threads:
        thread.join()
    assert status == -signal.SIGTERM  # uvicorn ends by the signal, after the shutdown
    assert sorted(answers, key=str) == [200, 503, 503, 503]  # none lost
    import psutil

    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]


def test_a_plugin_that_cannot_be_imported_is_exit_2(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "topoopt.cli", "--plugin", "no_such_module", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 2
    assert out.stderr.strip().startswith("error: ") and "no_such_module" in out.stderr


def test_bad_token_file_is_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for path in (empty, tmp_path / "missing"):
        out = subprocess.run(
            [sys.executable, "-m", "topoopt.cli", "serve", "--token-file", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        assert out.returncode == 2, out.stderr
        assert out.stderr.startswith("error: --token-file: ")


def _zygote(server: Any) -> Any:
    (zygote,) = server.zygotes()
    return zygote


def test_a_request_whose_worker_ends_with_the_fork_server_is_run_again() -> None:
    """The fork server dies while one of its workers solves: the worker ends with it (it
    watches its parent) and the request is run once more on another worker, so it is
    answered 200, not 500."""
    server = start_server("serve", "--port", "0", "--workers", "1", "--grace", "5")
    try:
        zygote = _zygote(server)
        answers: list[int] = []
        body = slow(server.url, 1.5)
        thread = threading.Thread(
            target=lambda: answers.append(
                httpx.post(f"{server.url}/v1/solve", json=body, timeout=60).status_code
            )
        )
        thread.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the request is in the fork server's worker
            if httpx.get(f"{server.url}/healthz").json()["workers"]["busy"] == 1:
                break
            time.sleep(0.05)
        zygote.kill()
        thread.join()
        assert answers == [200]
        metrics = metric_samples(httpx.get(f"{server.url}/metrics").text)
        assert ("topoopt_worker_restarts_total", frozenset({("reason", "crashed")})) in metrics
    finally:
        assert server.stop() == -signal.SIGTERM


def test_workers_are_forked_by_the_fork_server_and_survive_its_death() -> None:

    server = start_server("serve", "--port", "0", "--workers", "2", "--grace", "0.2")
    try:
        zygote = _zygote(server)
        workers = server.workers()
        assert len(workers) == 2
        assert {parent(pid) for pid in workers} == {zygote.pid}
        zygote.kill()
        url = f"{server.url}/v1/solve"
        # the workers it forked end with it (they watch their parent); the pool starts
        # processes of its own meanwhile and a new fork server in the background
        deadline = time.monotonic() + 60
        codes = []
        while time.monotonic() < deadline:
            codes.append(
                httpx.post(
                    url, json={"instance": PLACEMENT, "solver": "best-fit"}, timeout=30
                ).status_code
            )
            if codes[-1] == 200 and len(server.workers()) == 2:
                try:
                    if _zygote(server).pid != zygote.pid:
                        break
                except ValueError:
                    pass
            time.sleep(0.2)
        assert set(codes) == {200}  # no request met a dead worker
        assert _zygote(server).pid != zygote.pid
        metrics = metric_samples(httpx.get(f"{server.url}/metrics").text)
        assert ("topoopt_worker_restarts_total", frozenset({("reason", "zygote")})) in metrics
        # a hang's replacement comes from the new fork server
        hang = httpx.post(
            url,
            json={"instance": PLACEMENT, "solver": "placement/test-sleep", "time_limit": 0.2},
            timeout=30,
        )
        assert hang.status_code == 504
        deadline = time.monotonic() + 30
        while len(server.workers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        new = _zygote(server)
        assert any(parent(pid) == new.pid for pid in server.workers())
    finally:
        server.stop()


def test_an_address_in_use_is_exit_2() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "topoopt.cli", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (
        f"error: --host/--port: cannot listen on 127.0.0.1:{port}: Address already in use"
    )


def test_a_worker_over_the_memory_limit_is_500_and_replaced() -> None:
    server = start_server("serve", "--port", "0", "--workers", "1", "--memory-limit", "400")
    try:
        body = {"instance": PLACEMENT, "solver": "placement/test-memory", "time_limit": 5}
        response = httpx.post(f"{server.url}/v1/solve", json=body, timeout=30)
        assert response.status_code == 500
        assert response.json()["message"] == (
            "the worker exceeded the memory limit of 400 MiB; worker replaced"
        )
        ok = httpx.post(
            f"{server.url}/v1/solve", json={"instance": PLACEMENT, "solver": "best-fit"}, timeout=30
        )
        assert ok.status_code == 200
        metrics = metric_samples(httpx.get(f"{server.url}/metrics").text)
        assert metrics["topoopt_worker_restarts_total", frozenset({("reason", "memory")})] == 1
    finally:
        server.stop()
