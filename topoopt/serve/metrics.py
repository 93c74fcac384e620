"""The service's metrics in the Prometheus text format (version 0.0.4), for ``GET /metrics``.

Three kinds, as in the Prometheus client libraries: :class:`Counter` (only goes up),
:class:`Gauge` (set, or read from a function when scraped) and :class:`Histogram`
(cumulative buckets, ``_sum`` and ``_count``); each has a fixed tuple of label names, and
:meth:`Registry.exposition` writes them all. Label values are escaped as the format says
(backslash, double quote, newline), so a value from a request cannot break a line. The
service names its metrics in :mod:`topoopt.serve.app`; ``docs/service.md`` lists them.

The official ``prometheus_client`` would do the same; this module keeps the service's
dependencies to the ASGI stack. Everything here runs on the event loop's thread only.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["Counter", "Gauge", "Histogram", "Registry"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The media type of the exposition."""

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
"""Upper bounds (s) of the latency histograms' buckets."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    pairs = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True)]
    if extra:
        pairs.append(extra)
    return "{" + ",".join(pairs) + "}" if pairs else ""


class _Metric:
    kind = ""

    def __init__(self, name: str, help: str, labels: Sequence[str] = ()) -> None:
        self.name = name
        self.help = help
        self.label_names = tuple(labels)

    def header(self) -> list[str]:
        text = self.help.replace("\\", "\\\\").replace("\n", "\\n")
        return [f"# HELP {self.name} {text}", f"# TYPE {self.name} {self.kind}"]

    def lines(self) -> list[str]:
        raise NotImplementedError


class Counter(_Metric):
    """A count that only goes up, per label values."""

    kind = "counter"

    def __init__(self, name: str, help: str, labels: Sequence[str] = ()) -> None:
        super().__init__(name, help, labels)
        self.values: dict[tuple[str, ...], float] = {}

    def inc(self, *labels: str, amount: float = 1.0) -> None:
        """Add ``amount`` to the count of these label values."""
        self.values[labels] = self.values.get(labels, 0.0) + amount

    def get(self, *labels: str) -> float:
        """The count of these label values (0 if never counted)."""
        return self.values.get(labels, 0.0)

    def lines(self) -> list[str]:
        return [
            f"{self.name}{_labels(self.label_names, k)} {_number(v)}"
            for k, v in sorted(self.values.items())
        ]


class Gauge(_Metric):
    """A value read from a function each time the metrics are scraped (one series per label
    values the function returns); ``kind="counter"`` for a count kept elsewhere."""

    kind = "gauge"

    def __init__(
        self,
        name: str,
        help: str,
        read: Callable[[], dict[tuple[str, ...], float]],
        labels: Sequence[str] = (),
        kind: str = "gauge",
    ) -> None:
        super().__init__(name, help, labels)
        self.read = read
        self.kind = kind  # "counter" for a count kept elsewhere (read when scraped)

    def lines(self) -> list[str]:
        return [
            f"{self.name}{_labels(self.label_names, k)} {_number(v)}"
            for k, v in sorted(self.read().items())
        ]


class Histogram(_Metric):
    """Observations counted in cumulative buckets, with their sum and count."""

    kind = "histogram"

    def __init__(
        self,
        name: str,
        help: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] = LATENCY_BUCKETS,
    ) -> None:
        super().__init__(name, help, labels)
        self.bounds = tuple(sorted(buckets))
        self.series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}

    def observe(self, value: float, *labels: str) -> None:
        """Count ``value`` for these label values."""
        counts, total = self.series.setdefault(labels, ([0] * (len(self.bounds) + 1), [0.0]))
        counts[bisect.bisect_left(self.bounds, value)] += 1
        total[0] += value

    def lines(self) -> list[str]:
        out = []
        for key, (counts, total) in sorted(self.series.items()):
            running = 0
            for bound, count in zip((*self.bounds, math.inf), counts, strict=True):
                running += count
                le = f'le="{_number(bound)}"'
                out.append(f"{self.name}_bucket{_labels(self.label_names, key, le)} {running}")
            out.append(f"{self.name}_sum{_labels(self.label_names, key)} {_number(total[0])}")
            out.append(f"{self.name}_count{_labels(self.label_names, key)} {running}")
        return out


M = TypeVar("M", bound=_Metric)


class Registry:
    """The metrics of one service, written in the order they were added."""

    def __init__(self) -> None:
        self.metrics: list[_Metric] = []

    def add(self, metric: M) -> M:
        """Add ``metric`` and return it."""
        self.metrics.append(metric)
        return metric

    def exposition(self) -> str:
        """Every metric in the Prometheus text format."""
        lines: list[str] = []
        for metric in self.metrics:
            lines += metric.header() + metric.lines()
        return "\n".join(lines) + "\n"
