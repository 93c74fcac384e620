"""The service's metrics for ``GET /metrics``, on the official ``prometheus_client``.

:class:`ServiceMetrics` holds one :class:`prometheus_client.CollectorRegistry` per service (never
the library's global one, so several services in one process, or a host application's own
metrics, do not mix): the request counter and the two latency histograms are updated as
requests end; the worker pool's figures (queue depth, workers by state, restarts by reason) are
read when the metrics are scraped, by :class:`PoolCollector`. ``docs/service.md`` lists them.
Everything here runs on the event loop's thread only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from topoopt.serve.pool import ServicePool

__all__ = ["CONTENT_TYPE", "PoolCollector", "ServiceMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""The media type of the exposition (the Prometheus text format)."""

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
"""Upper bounds (s) of the latency histograms' buckets."""

RESTART_REASONS = (
    "timeout, crashed, memory, error, unclean, recycled, memory_growth, start_failed, cancelled"
)
"""The reasons a worker is replaced (:attr:`topoopt.serve.pool.ServicePool.restarts`)."""


class PoolCollector(Collector):
    """The worker pool's figures, read from ``pool`` each time the metrics are scraped."""

    def __init__(self, pool: ServicePool) -> None:
        self.pool = pool

    def collect(self) -> Iterator[Metric]:
        """``topoopt_queue_depth``, ``topoopt_workers{state}`` and
        ``topoopt_worker_restarts_total{reason}``."""
        pool = self.pool
        yield GaugeMetricFamily(
            "topoopt_queue_depth", "Requests waiting for a worker.", value=pool.queued
        )
        workers = GaugeMetricFamily(
            "topoopt_workers", "Worker processes, by state.", labels=["state"]
        )
        for state, count in (("busy", pool.busy), ("idle", pool.idle), ("starting", pool.starting)):
            workers.add_metric([state], count)
        yield workers
        restarts = CounterMetricFamily(
            "topoopt_worker_restarts",
            f"Worker processes replaced, by reason ({RESTART_REASONS}).",
            labels=["reason"],
        )
        for reason, count in sorted(pool.restarts.items()):
            restarts.add_metric([reason], count)
        yield restarts


class ServiceMetrics:
    """The metrics of one service in their own registry."""

    def __init__(self, pool: ServicePool) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "topoopt_http_requests",
            "HTTP requests answered, by route, method and status.",
            ("route", "method", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "topoopt_http_request_duration_seconds",
            "Seconds from a request's arrival to its answer, by route.",
            ("route",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.solver_time = Histogram(
            "topoopt_solver_seconds",
            "Seconds the solver took (the result's total_s), by solver.",
            ("solver",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(PoolCollector(pool))

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count an answered request and its latency."""
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def solved(self, solver: str, seconds: float) -> None:
        """Record the solver time of a solve."""
        self.solver_time.labels(solver).observe(seconds)

    def exposition(self) -> bytes:
        """Every metric in the Prometheus text format."""
        return generate_latest(self.registry)
