"""What the CSV trace readers share: reading rows with their line numbers, typed fields with
errors naming the file, row and column, and collecting the rows a run asked to skip."""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from topoopt.core.errors import TopooptError
from topoopt.sim.jobs import Job, TraceError

MAX_TRACE_BYTES = 2 * 1024**3
"""Largest trace file read (2 GiB)."""


@dataclass(frozen=True)
class Rejected:
    """A trace row that gives no runnable job, kept so that it is recorded, not lost."""

    id: str
    reason: str
    submit_s: float | None = None
    gpus: int | None = None


@dataclass
class Trace:
    """What a reader returns: the jobs, sorted by submit time (ties in trace order), and the
    rows it rejected (only when the caller asked to skip bad rows)."""

    jobs: list[Job]
    rejected: list[Rejected] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.jobs.sort(key=lambda job: job.submit_s)  # stable: ties keep the trace's order
        seen: dict[str, str | None] = {}
        for job in self.jobs:
            if job.id in seen:
                raise TraceError(
                    job.origin or "trace", "id", f"job id {job.id!r} repeats {seen[job.id]}"
                )
            seen[job.id] = job.origin
        for row in self.rejected:
            if row.id in seen:
                raise TraceError("trace", "id", f"job id {row.id!r} appears twice")
            seen[row.id] = None

    def with_load(self, factor: float) -> Trace:
        """The trace with arrivals ``factor`` times as frequent (submit times divided by it):
        ``factor = 2`` offers twice the load over half the time."""
        if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
            raise TopooptError(f"load: must be a number > 0, got {factor!r}")
        if factor == 1:
            return self
        jobs = [dataclasses.replace(job, submit_s=job.submit_s / factor) for job in self.jobs]
        rejected = [
            dataclasses.replace(
                row, submit_s=None if row.submit_s is None else row.submit_s / factor
            )
            for row in self.rejected
        ]
        return Trace(jobs, rejected)

    def head(self, count: int) -> Trace:
        """The first ``count`` jobs by submit time (the rejected rows are kept)."""
        return Trace(self.jobs[:count], self.rejected)

    def shifted(self) -> Trace:
        """The trace with submit times moved so that the earliest job arrives at 0 (traces
        whose times are absolute: dates, a cluster's clock)."""
        times = [job.submit_s for job in self.jobs] + [
            row.submit_s for row in self.rejected if row.submit_s is not None
        ]
        start = min(times, default=0.0)
        if start == 0:
            return self
        jobs = [dataclasses.replace(job, submit_s=job.submit_s - start) for job in self.jobs]
        return Trace(jobs, self.rejected)


def open_text(path: Path) -> io.TextIOWrapper:
    """``path`` opened for reading text (UTF-8, a BOM allowed), or a :class:`TraceError`."""
    try:
        size = path.stat().st_size
        if size > MAX_TRACE_BYTES:
            raise TraceError(str(path), None, f"{size} bytes, more than {MAX_TRACE_BYTES}")
        return open(path, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise TraceError(str(path), None, f"cannot read: {exc.strerror or exc}") from None


def csv_rows(
    path: Path, required: Sequence[str], *, exact: bool, comment_header: bool = False
) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows of a CSV trace as ``(line number, {column: text})``.

    ``required`` columns must be in the header; with ``exact`` no other column may be.
    ``comment_header`` strips a leading ``#`` from the header (the Philly-derived format).
    """
    with open_text(path) as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
            if header is None:
                raise TraceError(str(path), None, "empty file: no header row")
            if comment_header and header and header[0].startswith("#"):
                header[0] = header[0][1:]
            header = [name.strip() for name in header]
            missing = [name for name in required if name not in header]
            if missing:
                raise TraceError(f"{path}:1", missing[0], "column missing from the header")
            if exact:
                unknown = [name for name in header if name not in required]
                if unknown:
                    raise TraceError(f"{path}:1", unknown[0], "unknown column")
            for row in reader:
                line = reader.line_num
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) != len(header):
                    raise TraceError(
                        f"{path}:{line}", None, f"{len(row)} fields, the header has {len(header)}"
                    )
                yield line, dict(zip(header, row, strict=True))
        except csv.Error as exc:
            raise TraceError(f"{path}:{reader.line_num}", None, f"malformed CSV: {exc}") from None
        except UnicodeDecodeError as exc:
            raise TraceError(str(path), None, f"not UTF-8 text: {exc.reason}") from None


def number(where: str, column: str, text: str, *, minimum: float | None = 0.0) -> float:
    """A finite number (at least ``minimum``) from ``text``."""
    try:
        value = float(text)
    except ValueError:
        raise TraceError(where, column, f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise TraceError(where, column, f"must be finite, got {text!r}")
    if minimum is not None and value < minimum:
        raise TraceError(where, column, f"must be >= {minimum:g}, got {text!r}")
    return value


def integer(where: str, column: str, text: str, *, minimum: int = 1) -> int:
    """An integer (at least ``minimum``) from ``text`` (``"4"`` or ``"4.0"``)."""
    value = number(where, column, text, minimum=None)
    if value != int(value):
        raise TraceError(where, column, f"expected an integer, got {text!r}")
    if value < minimum:
        raise TraceError(where, column, f"must be >= {minimum}, got {text!r}")
    return int(value)


def collect(items: Iterable[Job | Rejected]) -> Trace:
    """A :class:`Trace` from jobs and rejected rows, in trace order."""
    jobs: list[Job] = []
    rejected: list[Rejected] = []
    for item in items:
        if isinstance(item, Job):
            jobs.append(item)
        else:
            rejected.append(item)
    return Trace(jobs, rejected)


def guarded(where: str, job_id: str, make: Callable[[], Job], skip_bad: bool) -> Job | Rejected:
    """``make()``, or with ``skip_bad`` a :class:`Rejected` row saying why it failed (without
    ``skip_bad`` the error propagates: a bad row stops the read)."""
    try:
        return make()
    except TopooptError as exc:
        if not skip_bad:
            if isinstance(exc, TraceError):
                raise
            raise TraceError(where, None, str(exc)) from None
        message = str(exc)
        return Rejected(job_id, message if message.startswith(where) else f"{where}: {message}")
