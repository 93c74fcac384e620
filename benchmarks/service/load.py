"""Load test of ``topoopt serve`` on loopback: throughput, latency, faults, shutdown.

Starts its own server (``python -m topoopt.cli serve --port 0``, on 127.0.0.1 only) and
drives it with a small HTTP/1.1 client written on asyncio (keep-alive connections, no
client library in the way), then stops it. Every run is bounded in time and in requests, and
talks to the server it started, never to another address.

Scenarios (``--scenario``):

* ``rate``: heuristic solves (``placement/best-fit`` on the Arnold instances,
  ``gpuselect/hybrid`` on the protocol-h100 pools, alternating) sent *open-loop* at
  ``--rate`` requests/s over ``--clients`` connections for ``--duration`` s. Latency counts
  from the moment a request was due, so a server that falls behind shows it (no coordinated
  omission).
* ``max``: the same requests *closed-loop* (each connection sends its next request when the
  answer came): the most the service does per second, and its latency at that load.
* ``inprocess``: the same requests through the Python API in this process
  (``topoopt.load`` + ``topoopt.solve`` + ``Result.to_dict`` as JSON), one after another: the
  reference the service's numbers are divided by.
* ``mixed``: 10 % malformed (bad JSON, a bad field, an unknown solver), 5 % oversized (over
  ``json_file_bytes``), 5 % hanging-solver requests, the rest heuristic solves, open-loop for
  ``--duration`` s, with ``/healthz`` polled every 100 ms; then ``SIGTERM`` while requests are
  in flight. Checked: every request answered exactly once with a status its kind allows, no
  connection error, every health check ``200``, the server's counts equal the client's, the
  server's memory flat, as many worker processes at the end as at the start, none left after
  the shutdown.

Results: one JSON file per scenario in ``--out`` (default ``benchmarks/service/results``) and
``report.md`` there, from all of them. Run under ``nice`` on a shared machine::

    nice -n 10 python benchmarks/service/load.py --scenario all

See ``benchmarks/service/README.md`` for the committed numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PLACEMENT = sorted((ROOT / "instances/placement/arnold-paper").glob("*.json"))
GPUSELECT = sorted((ROOT / "instances/gpuselect/protocol-h100").glob("*.json"))
BODY_LIMIT = 256 * 1024
"""``json_file_bytes`` of the server in the mixed scenario: oversized requests exceed it."""
MAX_REQUESTS = 200_000
"""No scenario sends more requests than this, whatever its rate and duration."""
CLIENT_TIMEOUT_S = 60.0
"""A request without an answer after this long counts as lost."""

ALLOWED = {
    "solve": {200, 503},
    "malformed": {400},
    "invalid": {400, 503},
    "oversized": {413},
    "hang": {504, 503},
}
"""The statuses each kind of request may get (503: the queue was full, or shutting down)."""


# -- requests ---------------------------------------------------------------------------------


def _post(path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def solve_requests(time_limit: float = 5.0) -> list[tuple[str, bytes]]:
    """The heuristic solves: each committed instance with its family's heuristic."""
    out = []
    pairs = [(p, "placement/best-fit") for p in PLACEMENT if p.name != "README.md"]
    pairs += [(p, "gpuselect/hybrid") for p in GPUSELECT]
    for path, solver in pairs:
        body = {
            "instance": json.loads(path.read_text()),
            "solver": solver,
            "time_limit": time_limit,
        }
        out.append(("solve", _post("/v1/solve", json.dumps(body).encode())))
    # alternate the families so that every window of the run has both
    placement = [r for r, (p, _) in zip(out, pairs, strict=True) if "placement" in str(p)]
    gpuselect = [r for r, (p, _) in zip(out, pairs, strict=True) if "gpuselect" in str(p)]
    mixed = []
    for i in range(max(len(placement), len(gpuselect))):
        mixed.append(placement[i % len(placement)])
        mixed.append(gpuselect[i % len(gpuselect)])
    return mixed


def fault_requests(hang_limit: float) -> dict[str, list[tuple[str, bytes]]]:
    """Malformed, invalid, oversized and hanging requests."""
    instance = json.loads(PLACEMENT[0].read_text())
    good = {"instance": instance, "solver": "placement/best-fit"}
    malformed = [
        b'{"instance": {"family": "placement"',  # cut short
        b'{"instance": {}, "solver": "x", "solver": "y"}',  # duplicate key
        b'{"instance": {}, "solver": "x", "seed": NaN}',
        json.dumps({**good, "solvr": "best-fit"}).encode(),
        json.dumps({**good, "time_limit": -1}).encode(),
    ]
    invalid = [
        json.dumps({**good, "instance": {**instance, "alpha": 3}}).encode(),
        json.dumps({**good, "solver": "exact-mpi"}).encode(),
        json.dumps({**good, "instance": {**instance, "job": {"dp": 6.5}}}).encode(),
    ]
    pad = "a" * (BODY_LIMIT + 1000)
    oversized = [json.dumps({**good, "instance": {**instance, "x-pad": pad}}).encode()]
    hang = [
        json.dumps(
            {"instance": instance, "solver": "placement/bench-hang", "time_limit": hang_limit}
        ).encode()
    ]
    return {
        "malformed": [("malformed", _post("/v1/solve", b)) for b in malformed],
        "invalid": [("invalid", _post("/v1/solve", b)) for b in invalid],
        "oversized": [("oversized", _post("/v1/solve", b)) for b in oversized],
        "hang": [("hang", _post("/v1/solve", b)) for b in hang],
    }


def mixed_schedule(count: int, solves: list[tuple[str, bytes]], faults: dict[str, Any]) -> list:
    """``count`` requests: per 20, 2 malformed (or invalid), 1 oversized, 1 hanging, 16
    solves, in a fixed interleaving."""
    out = []
    for i in range(count):
        slot = i % 20
        if slot in (3, 13):
            pool = faults["malformed"] if (i // 20) % 2 == 0 else faults["invalid"]
        elif slot == 7:
            pool = faults["oversized"]
        elif slot == 17:
            pool = faults["hang"]
        else:
            pool = solves
        out.append(pool[i % len(pool)])
    return out


# -- the client ---------------------------------------------------------------------------------


@dataclass
class Sample:
    kind: str
    status: int | str
    latency_s: float
    """From the moment the request was due (open loop) or sent (closed loop)."""
    service_s: float
    """From writing the request to reading the whole answer."""
    at_s: float


class Connection:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.opened = 0

    async def request(self, data: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            self.opened += 1
        assert self.reader is not None
        self.writer.write(data)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if line:
                key, _, value = line.partition(b":")
                headers[key.strip().lower()] = value.strip()
        body = await self.reader.readexactly(int(headers.get(b"content-length", b"0")))
        if headers.get(b"connection", b"").lower() == b"close":
            await self.close()
        return status, headers, body

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None


async def drive(
    url: str,
    requests: list[tuple[str, bytes]],
    *,
    clients: int,
    rate: float | None,
    duration: float,
    stop_event: asyncio.Event | None = None,
) -> tuple[list[Sample], float]:
    """Send ``requests`` (cycled) over ``clients`` connections: open loop at ``rate`` per
    second, or closed loop when ``rate`` is ``None``; for ``duration`` seconds at most, at
    most :data:`MAX_REQUESTS`. Returns the samples and the elapsed time."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    samples: list[Sample] = []
    queue: asyncio.Queue[tuple[int, float] | None] = asyncio.Queue()
    started = time.perf_counter()
    total = min(MAX_REQUESTS, int(rate * duration) if rate else MAX_REQUESTS)
    stop = stop_event or asyncio.Event()

    async def produce() -> None:
        if rate is None:
            return
        interval = 1.0 / rate
        for i in range(total):
            due = started + i * interval
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if stop.is_set():
                break
            queue.put_nowait((i, due))
        for _ in range(clients):
            queue.put_nowait(None)

    counter = iter(range(total))

    async def consume() -> None:
        connection = Connection(host, port)
        try:
            while True:
                if rate is None:
                    i = next(counter, None)
                    if i is None or stop.is_set() or time.perf_counter() - started > duration:
                        return
                    due = time.perf_counter()
                else:
                    item = await queue.get()
                    if item is None:
                        return
                    i, due = item
                kind, data = requests[i % len(requests)]
                sent = time.perf_counter()
                try:
                    status, _, _ = await asyncio.wait_for(
                        connection.request(data), CLIENT_TIMEOUT_S
                    )
                    code: int | str = status
                except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
                    code = type(exc).__name__
                    await connection.close()
                end = time.perf_counter()
                samples.append(Sample(kind, code, end - due, end - sent, end - started))
        finally:
            await connection.close()

    await asyncio.gather(produce(), *(consume() for _ in range(clients)))
    return samples, time.perf_counter() - started


# -- the server ---------------------------------------------------------------------------------


@dataclass
class Server:
    proc: subprocess.Popen[str]
    url: str
    lines: list[str] = field(default_factory=list)

    def children(self) -> list[psutil.Process]:
        """The server's live descendants: the fork server and the workers."""
        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.Error:
            return []
        out = []
        for child in children:
            with contextlib.suppress(psutil.Error):
                if child.status() != psutil.STATUS_ZOMBIE:
                    out.append(child)
        return out

    def workers(self) -> list[int]:
        """Process ids of the workers (the descendants but the fork server)."""
        out = []
        for child in self.children():  # forked workers share the fork server's command line
            with contextlib.suppress(psutil.Error):
                is_zygote = child.ppid() == self.proc.pid and "serve.zygote" in " ".join(
                    child.cmdline()
                )
                if not is_zygote:
                    out.append(child.pid)
        return sorted(out)

    def memory_mb(self) -> tuple[float, float]:
        """Resident memory of the server process and of its workers together (MiB)."""
        try:
            own = psutil.Process(self.proc.pid).memory_info().rss / 2**20
        except psutil.Error:
            own = 0.0
        workers = 0.0
        for child in self.children():
            with contextlib.suppress(psutil.Error):
                workers += child.memory_info().rss / 2**20
        return own, workers


def start_server(args: list[str], env: dict[str, str]) -> Server:
    environment = {**os.environ, **env}
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)])
    command = [
        sys.executable,
        "-m",
        "topoopt.cli",
        "--plugin",
        "hang_plugin",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        *args,
    ]
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = Server(proc, "")
    found = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            server.lines.append(line.rstrip())
            match = re.search(r"listening on (http://\S+)", line)
            if match:
                server.url = match.group(1)
                found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(120):
        proc.kill()
        raise RuntimeError("server did not start: " + " | ".join(server.lines[-5:]))
    host = urlsplit(server.url).hostname or ""
    if not ipaddress.ip_address(host).is_loopback:  # never load another address
        proc.kill()
        raise RuntimeError(f"refusing to load {server.url}: not a loopback address")
    return server


def stop_server(server: Server, timeout: float = 60.0) -> tuple[int | None, float]:
    started = time.perf_counter()
    server.proc.send_signal(signal.SIGTERM)
    try:
        code = server.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        code = None
    return code, time.perf_counter() - started


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The server's metric samples: value by (sample name, labels), read by prometheus_client."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{url}/metrics", timeout=10).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


# -- figures ------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def summary(samples: list[Sample], elapsed: float) -> dict[str, Any]:
    latencies = [s.latency_s for s in samples]
    service = [s.service_s for s in samples]
    return {
        "requests": len(samples),
        "elapsed_s": round(elapsed, 3),
        "throughput_rps": round(len(samples) / elapsed, 1) if elapsed else None,
        "statuses": dict(Counter(str(s.status) for s in samples)),
        "latency_ms": {
            "p50": round(percentile(latencies, 50) * 1000, 2),
            "p90": round(percentile(latencies, 90) * 1000, 2),
            "p99": round(percentile(latencies, 99) * 1000, 2),
            "max": round(max(latencies) * 1000, 2) if latencies else None,
            "mean": round(statistics.fmean(latencies) * 1000, 2) if latencies else None,
        },
        "service_ms": {
            "p50": round(percentile(service, 50) * 1000, 2),
            "p99": round(percentile(service, 99) * 1000, 2),
        },
    }


def environment() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }


# -- scenarios ----------------------------------------------------------------------------------


def scenario_inprocess(args: argparse.Namespace) -> dict[str, Any]:
    import topoopt

    requests = solve_requests()
    bodies = [json.loads(data.split(b"\r\n\r\n", 1)[1]) for _, data in requests]
    for body in bodies[:20]:  # warm up: imports and caches, as the service's workers have
        topoopt.solve(topoopt.load(body["instance"]), body["solver"])
    latencies = []
    started = time.perf_counter()
    count = 0
    while time.perf_counter() - started < args.duration and count < MAX_REQUESTS:
        raw = json.dumps(bodies[count % len(bodies)])
        t0 = time.perf_counter()
        body = json.loads(raw)
        result = topoopt.solve(
            topoopt.load(body["instance"]), body["solver"], time_limit=body["time_limit"]
        )
        json.dumps(result.to_dict())
        latencies.append(time.perf_counter() - t0)
        count += 1
    elapsed = time.perf_counter() - started
    samples = [Sample("solve", 200, x, x, 0.0) for x in latencies]
    return {"scenario": "inprocess", **summary(samples, elapsed)}


def scenario_load(args: argparse.Namespace, rate: float | None) -> dict[str, Any]:
    server = start_server(["--workers", str(args.workers), "--queue", str(args.queue)], env={})
    try:
        requests = solve_requests()
        asyncio.run(drive(server.url, requests, clients=8, rate=None, duration=2.0))  # warm-up
        samples, elapsed = asyncio.run(
            drive(server.url, requests, clients=args.clients, rate=rate, duration=args.duration)
        )
        metrics = scrape(server.url)
    finally:
        code, stop_s = stop_server(server)
    name = "rate" if rate else "max"
    out = {
        "scenario": name,
        "rate_rps": rate,
        "clients": args.clients,
        "workers": args.workers,
        "queue": args.queue,
        **summary(samples, elapsed),
        "server_solve_200": metrics.get(
            'topoopt_http_requests_total{route="/v1/solve",method="POST",status="200"}'
        ),
        "exit_status": code,
        "stop_s": round(stop_s, 2),
    }
    return out


def scenario_mixed(args: argparse.Namespace) -> dict[str, Any]:
    hang_limit, grace = 0.2, 0.3
    server = start_server(
        [
            "--workers",
            str(args.mixed_workers),
            "--queue",
            str(args.queue),
            "--grace",
            str(grace),
            "--max-time-limit",
            "10",
        ],
        env={"TOPOOPT_LIMIT_JSON_FILE_BYTES": str(BODY_LIMIT)},
    )
    url = server.url
    health: list[tuple[float, int | str, float]] = []
    memory: list[tuple[float, float, float, int]] = []
    workers_before = server.workers()
    stop_health = threading.Event()

    def poll_health() -> None:
        import httpx

        with httpx.Client(base_url=url, timeout=10) as http:
            started = time.perf_counter()
            while not stop_health.is_set():
                t0 = time.perf_counter()
                try:
                    code: int | str = http.get("/healthz").status_code
                except httpx.HTTPError as exc:
                    code = type(exc).__name__
                health.append((t0 - started, code, time.perf_counter() - t0))
                own, workers = server.memory_mb()
                if not memory or t0 - started - memory[-1][0] >= 1.0:
                    memory.append(
                        (
                            round(t0 - started, 1),
                            round(own, 1),
                            round(workers, 1),
                            len(server.workers()),
                        )
                    )
                time.sleep(0.1)

    poller = threading.Thread(target=poll_health, daemon=True)
    solves = solve_requests()
    faults = fault_requests(hang_limit)
    count = min(MAX_REQUESTS, int(args.mixed_rate * args.mixed_duration))
    requests = mixed_schedule(count, solves, faults)
    try:
        poller.start()
        samples, elapsed = asyncio.run(
            drive(
                url,
                requests,
                clients=args.clients,
                rate=args.mixed_rate,
                duration=args.mixed_duration,
            )
        )
        time.sleep(1.5)  # the last replacements start
        metrics = scrape(url)
        workers_after = server.workers()
        stop_health.set()  # the health checks cover the load, not the shutdown below
        poller.join(5)
        # graceful shutdown with requests in flight: solves that take 0.5 s each
        shutdown = asyncio.run(shutdown_under_load(server, args))
    finally:
        stop_health.set()
        poller.join(5)
        if server.proc.poll() is None:
            server.proc.kill()
    wrong = [
        {"kind": s.kind, "status": s.status} for s in samples if s.status not in ALLOWED[s.kind]
    ]
    by_kind: dict[str, dict[str, int]] = {}
    for s in samples:
        by_kind.setdefault(s.kind, Counter())[str(s.status)] += 1  # type: ignore[index]
    server_counts = {
        dict(labels)["status"]: v
        for (name, labels), v in metrics.items()
        if name == "topoopt_http_requests_total" and dict(labels)["route"] == "/v1/solve"
    }
    client_counts = Counter(str(s.status) for s in samples)
    own = [m[1] for m in memory]
    quarter = max(1, len(own) // 4)
    return {
        "scenario": "mixed",
        "rate_rps": args.mixed_rate,
        "clients": args.clients,
        "workers": args.mixed_workers,
        "queue": args.queue,
        "hang_time_limit_s": hang_limit,
        "grace_s": grace,
        "body_limit_bytes": BODY_LIMIT,
        **summary(samples, elapsed),
        "by_kind": {k: dict(v) for k, v in by_kind.items()},
        "wrong_status": wrong[:20],
        "wrong_status_count": len(wrong),
        "lost": sum(1 for s in samples if isinstance(s.status, str)),
        "server_counts_equal_client_counts": {k: int(v) for k, v in server_counts.items()}
        == dict(client_counts),
        "server_counts": {k: int(v) for k, v in server_counts.items()},
        "health_checks": len(health),
        "health_not_200": sum(1 for h in health if h[1] != 200),
        "health_statuses": dict(Counter(str(h[1]) for h in health)),
        "health_p99_ms": round(percentile([h[2] for h in health], 99) * 1000, 2),
        "health_max_ms": round(max(h[2] for h in health) * 1000, 2) if health else None,
        "restarts": {
            dict(labels)["reason"]: int(v)
            for (name, labels), v in metrics.items()
            if name == "topoopt_worker_restarts_total"
        },
        "workers_before": len(workers_before),
        "workers_after": len(workers_after),
        "server_rss_mb_first_quarter_max": max(own[:quarter]) if own else None,
        "server_rss_mb_last_quarter_max": max(own[-quarter:]) if own else None,
        "workers_rss_mb_max": max(m[2] for m in memory) if memory else None,
        "memory_series": memory,
        "shutdown": shutdown,
    }


async def shutdown_under_load(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    """Graceful shutdown with requests in flight: one hanging solve per worker (each holds
    its worker until its deadline, 1.2 × 1 s + grace) and six quick solves queued behind
    them; ``SIGTERM`` half a second later; count the answers (the hangs end ``504`` at their
    deadline, the queued solves ``503``, none lost) and the worker processes left."""
    parts = urlsplit(server.url)
    instance = json.loads(PLACEMENT[0].read_text())
    slow = json.dumps(
        {"instance": instance, "solver": "placement/bench-hang", "time_limit": 1.0}
    ).encode()
    quick = json.dumps({"instance": instance, "solver": "placement/best-fit"}).encode()
    kinds = ["hang"] * args.mixed_workers + ["solve"] * 6
    results: list[int | str] = []

    async def one(kind: str) -> None:
        connection = Connection(parts.hostname or "127.0.0.1", parts.port or 80)
        data = _post("/v1/solve", slow if kind == "hang" else quick)
        try:
            status, _, _ = await asyncio.wait_for(connection.request(data), CLIENT_TIMEOUT_S)
            results.append(status)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
            results.append(type(exc).__name__)
        finally:
            await connection.close()

    pids = [c.pid for c in server.children()]  # the fork server too
    tasks = [asyncio.create_task(one(kind)) for kind in kinds]
    await asyncio.sleep(0.5)  # the hangs hold every worker, the solves wait in the queue
    loop = asyncio.get_running_loop()
    code, stop_s = await loop.run_in_executor(None, stop_server, server)
    await asyncio.gather(*tasks)
    left = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    return {
        "in_flight": len(kinds),
        "answers": dict(Counter(str(r) for r in results)),
        "lost": sum(1 for r in results if isinstance(r, str)),
        "exit_status": code,
        "stop_s": round(stop_s, 2),
        "workers_left": len(left),
    }


# -- the report ---------------------------------------------------------------------------------


def report(out: Path) -> str:
    runs = {p.stem: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}
    lines = ["# `topoopt serve` under load (loopback)", ""]
    env = next(iter(runs.values()), {}).get("environment", {})
    lines += [
        f"Machine: {env.get('cpus')} CPUs ({env.get('machine')}), Python {env.get('python')}, "
        "shared with other work (load average before each run below). Command: "
        "`nice -n 10 python benchmarks/service/load.py --scenario all`.",
        "",
        "| scenario | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | statuses "
        "| load avg before |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("inprocess", "rate", "max", "mixed"):
        run = runs.get(name)
        if run is None:
            continue
        lat = run["latency_ms"]
        label = {
            "inprocess": "in-process API (1 process, sequential)",
            "rate": f"service, open loop at {run.get('rate_rps')} req/s, "
            f"{run.get('clients')} connections",
            "max": f"service, closed loop, {run.get('clients')} connections",
            "mixed": f"service, mixed faults at {run.get('rate_rps')} req/s",
        }[name]
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(run["statuses"].items()))
        lines.append(
            f"| {label} | {run['requests']} | {run['throughput_rps']} | {lat['p50']} | "
            f"{lat['p90']} | {lat['p99']} | {lat['max']} | {statuses} | "
            f"{run.get('environment', {}).get('load_average_before')} |"
        )
    if "inprocess" in runs and "max" in runs:
        ratio = runs["max"]["throughput_rps"] / runs["inprocess"]["throughput_rps"]
        lines += ["", f"Service (closed loop) / in-process throughput: **{ratio:.2f}**."]
    mixed = runs.get("mixed")
    if mixed:
        lines += [
            "",
            "## Mixed faults",
            "",
            f"* by kind: `{json.dumps(mixed['by_kind'])}`",
            f"* wrong statuses: {mixed['wrong_status_count']}, lost: {mixed['lost']}, server "
            f"counts equal client counts: {mixed['server_counts_equal_client_counts']}",
            f"* health checks: {mixed['health_checks']}, not 200: {mixed['health_not_200']}, "
            f"p99 {mixed['health_p99_ms']} ms, max {mixed['health_max_ms']} ms",
            f"* worker restarts: `{json.dumps(mixed['restarts'])}`; workers before/after: "
            f"{mixed['workers_before']}/{mixed['workers_after']}",
            f"* server RSS (MiB), max of first/last quarter: "
            f"{mixed['server_rss_mb_first_quarter_max']}/"
            f"{mixed['server_rss_mb_last_quarter_max']}; "
            f"workers' RSS max {mixed['workers_rss_mb_max']} MiB",
            f"* graceful shutdown: `{json.dumps(mixed['shutdown'])}`",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenario", choices=["rate", "max", "inprocess", "mixed", "all"], default="all"
    )
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--queue", type=int, default=64)
    parser.add_argument("--mixed-rate", type=float, default=50.0)
    parser.add_argument("--mixed-duration", type=float, default=60.0)
    parser.add_argument("--mixed-workers", type=int, default=4)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    if args.duration > 600 or args.mixed_duration > 600:
        parser.error("durations are capped at 600 s")
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = ["inprocess", "rate", "max", "mixed"] if args.scenario == "all" else [args.scenario]
    for name in chosen:
        env = environment()
        print(f"load: {name} ...", file=sys.stderr, flush=True)
        if name == "inprocess":
            result = scenario_inprocess(args)
        elif name == "rate":
            result = scenario_load(args, args.rate)
        elif name == "max":
            result = scenario_load(args, None)
        else:
            result = scenario_mixed(args)
        result["environment"] = env
        result["command"] = " ".join(
            ["python", "benchmarks/service/load.py", *(argv or sys.argv[1:])]
        )
        (args.out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        brief = {k: result[k] for k in ("requests", "throughput_rps", "latency_ms", "statuses")}
        print(f"load: {name}: {json.dumps(brief)}", file=sys.stderr, flush=True)
    (args.out / "report.md").write_text(report(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
