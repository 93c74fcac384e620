"""Benchmark records: one flat JSON object per run, stored one per line (JSONL).

A record holds everything needed to read a run without the instance file or the machine:

* **identity** — ``instance``, ``instance_hash``, ``solver``, ``backend``, ``seed``, ``repeat``
  (the :func:`record_key`), plus ``family``, ``suite`` and ``instance_file``;
* **outcome** — ``status`` (a :class:`~topoopt.core.status.SolutionStatus` label, or
  ``"error"`` when the run produced no result), ``termination`` (a
  :class:`~topoopt.core.status.TerminationReason` value, or for error records ``"error"``,
  ``"timeout"``, ``"crashed"`` or ``"memory"``), ``objective``, ``bound``, ``gap``, ``sense``,
  ``message``, ``violations`` and the family's solution metrics as top-level keys (as in
  :meth:`topoopt.Result.to_dict`, without the solution itself);
* **cost** — ``build_s``, ``solve_s``, ``total_s`` (the solver's own timings), ``wall_s`` (the
  worker process from launch to exit), ``peak_memory_mb`` (peak resident memory of the worker);
* **setting** — ``time_limit``, ``hard_timeout``, ``threads``, ``executor``, ``size`` (the
  family's instance size figures), ``tags`` (the family's :attr:`~topoopt.core.family.Family.tags`
  of the instance, e.g. a setting or cluster, which the report groups by);
* **environment** — ``versions`` (topoopt, Python, Pyomo, the MIP backends, NumPy) and
  ``host`` (CPU model, cores, memory, platform), measured where the run executed.

:class:`RecordWriter` appends and flushes each record as it arrives, so an interrupted
benchmark keeps every record already written. Results files are handled as bytes with exact
offsets (:mod:`topoopt.bench.jsonl`: LF or CRLF lines, a provably torn last line is not a
record and is cut off only on resume, anything else is a :class:`ResultsFileError`), and every
record read is checked against the record table of :mod:`topoopt.bench.schema`.
:func:`drop_duplicates` keeps the first record of each :func:`record_key`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import resource
import sys
from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import psutil

import topoopt
from topoopt.bench import jsonl
from topoopt.bench.jsonl import ResultsFileError
from topoopt.bench.schema import ERROR_STATUS as ERROR_STATUS
from topoopt.bench.schema import RECORD_VERSION as RECORD_VERSION
from topoopt.bench.schema import record_problem
from topoopt.core.errors import TopooptError
from topoopt.core.family import Instance

Record = dict[str, Any]
"""One benchmark record (a JSON object)."""

RecordKey = tuple[str, str, str, str | None, int, int]
"""``(instance, instance_hash, solver, backend, seed, repeat)``."""

VERSIONED_PACKAGES = ("pyomo", "highspy", "pyscipopt", "gurobipy", "numpy", "networkx")
"""Packages whose versions go into every record (``None`` when not installed)."""


def record_key(record: Mapping[str, Any]) -> RecordKey:
    """The identity of a run; a resumed benchmark skips runs whose key is already stored.

    Examples
    --------
    >>> record_key({"instance": "i-even-a0.2", "instance_hash": "ab12", "seed": 0, "repeat": 0,
    ...             "solver": "placement/best-fit", "backend": None, "objective": 1.6})
    ('i-even-a0.2', 'ab12', 'placement/best-fit', None, 0, 0)
    """
    return (
        record["instance"],
        record["instance_hash"],
        record["solver"],
        record["backend"],
        int(record["seed"]),
        int(record["repeat"]),
    )


def instance_hash(instance: Instance) -> str:
    """A short content hash of ``instance`` (SHA-256 of its canonical JSON, 16 hex digits).

    Formatting of the file does not matter; any change of content does, except the
    instance's ``labels`` (user metadata such as ``{"setting": "iii"}``, recorded as tags):
    relabelling an instance does not make it another problem.
    """
    data = {k: v for k, v in instance.to_dict().items() if k != "labels"}
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, str | None]:
    """Versions of topoopt, Python and the solver stack in this process's environment."""
    out: dict[str, str | None] = {
        "topoopt": topoopt.__version__,
        "python": platform.python_version(),
    }
    out.update({name: _package_version(name) for name in VERSIONED_PACKAGES})
    return out


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def host_info() -> dict[str, Any]:
    """The machine: host name, CPU model, logical and physical cores, memory, platform."""
    return {
        "hostname": platform.node(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "platform": platform.platform(),
    }


def _read(stream: IO[bytes], path: str | PathLike[str]) -> tuple[jsonl.Scan, list[Record]]:
    """The scan of a results file and its records, each checked against the record table."""
    scanned = jsonl.scan(stream, path)
    records: list[Record] = []
    for line in scanned.lines:
        problem = record_problem(line.value)
        if problem is not None:
            raise ResultsFileError(path, line.number, problem)
        records.append(line.value)
    return scanned, records


def read_records(path: str | PathLike[str]) -> list[Record]:
    """All records of a JSONL results file, in file order (a missing file has none).

    The file is read by the rules of :mod:`topoopt.bench.jsonl` (LF or CRLF, a torn last line
    is not a record) and every record is checked against :data:`~topoopt.bench.schema.FIELDS`.
    Duplicates are kept (see :func:`drop_duplicates`). The file is never modified.

    Raises
    ------
    ResultsFileError
        Naming the file, the line and the problem, for anything but records and a torn last
        line.
    """
    if not os.path.lexists(path):
        return []
    fd = jsonl.open_regular(path)
    with os.fdopen(fd, "rb") as stream:
        return _read(stream, path)[1]


def read_many(paths: Iterable[str | PathLike[str]]) -> list[Record]:
    """The records of several results files, in order."""
    return [record for path in paths for record in read_records(path)]


def read_for_report(paths: Iterable[str | PathLike[str]]) -> tuple[list[Record], list[str]]:
    """The records of several results files, in order, and a warning for what was left out:
    a last line cut short by an interrupted benchmark, a file without records.

    Unlike :func:`read_many`, nothing is passed over in silence.

    Raises
    ------
    ResultsFileError
        As :func:`read_records`; and when no file holds a record, naming why for the first
        file (empty, only blank lines, or its one line cut short).
    """
    records: list[Record] = []
    notes: list[ResultsFileError] = []
    for path in paths:
        fd = jsonl.open_regular(path)
        with os.fdopen(fd, "rb") as stream:
            scanned, found = _read(stream, path)
        records += found
        if scanned.torn_line is not None:
            cut = "not a complete JSON object (the file ends inside it: a record cut short"
            problem = (
                f"{cut} by an interrupted benchmark?), left out"
                if found
                else f"{cut}?); no records"
            )
            notes.append(ResultsFileError(path, scanned.torn_line, problem))
        elif not found:
            what = "empty" if scanned.size == 0 else "only blank lines"
            notes.append(ResultsFileError(path, None, f"{what}, no records"))
    if not records and notes:
        raise notes[0]
    return records, [str(note) for note in notes]


def drop_duplicates(records: Iterable[Record]) -> tuple[list[Record], int]:
    """The records with each :func:`record_key` once — the first copy wins — and the number
    of later copies dropped.

    A run is recorded once; a second record of the same key comes from concatenated or
    copied results files. Keeping the first matches resuming, which skips a key as soon as
    one record of it is stored.

    Examples
    --------
    >>> a = {"instance": "a", "instance_hash": "h", "solver": "f/s", "backend": None,
    ...      "seed": 0, "repeat": 0, "objective": 1.0}
    >>> kept, dropped = drop_duplicates([a, {**a, "objective": 2.0}])
    >>> [r["objective"] for r in kept], dropped
    ([1.0], 1)
    """
    seen: set[RecordKey] = set()
    kept: list[Record] = []
    dropped = 0
    for record in records:
        key = record_key(record)
        if key in seen:
            dropped += 1
        else:
            seen.add(key)
            kept.append(record)
    return kept, dropped


class RecordWriter:
    """Append records to a JSONL results file, one line each, flushed and fsynced as they
    arrive.

    Opening reads and checks the whole file first (:func:`read_records`'s rules) and modifies
    nothing unless it is valid. Then, to resume it, it cuts off a provably torn last line (a
    record cut short by an interrupted writer; :attr:`repaired` counts its bytes) or
    terminates a complete last line that lacks its line ending, so that appended records start
    on a line of their own. Appended lines end like the file's last line (CRLF in a CRLF file,
    LF otherwise). :attr:`keys` holds the keys already stored; :attr:`duplicates` counts the
    records whose key an earlier record already has.

    Raises
    ------
    ResultsFileError
        For a file that is not a valid results file (unchanged), or that cannot be opened.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> record = {"family": "f", "suite": "s", "instance": "a", "instance_hash": "h",
    ...           "solver": "f/s", "backend": None, "seed": 0, "repeat": 0,
    ...           "sense": "minimize", "status": "feasible", "termination": "completed",
    ...           "objective": 1.0, "total_s": 0.1, "size": {}}
    >>> with RecordWriter(path) as w:
    ...     w.write(record)
    >>> read_records(path) == [record]
    True
    """

    def __init__(self, path: str | PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ResultsFileError(path, None, f"cannot create its folder: {exc}") from None
        self._fd = jsonl.open_regular(path, append=True)
        try:
            with os.fdopen(os.dup(self._fd), "rb") as stream:
                scanned, records = _read(stream, path)
            if scanned.keep < scanned.size:
                os.ftruncate(self._fd, scanned.keep)
                os.fsync(self._fd)
            elif scanned.pending:
                self._append(scanned.pending)
        except OSError as exc:
            os.close(self._fd)
            raise ResultsFileError(path, None, f"cannot read or repair: {exc.strerror}") from None
        except BaseException:
            os.close(self._fd)
            raise
        self.keys: set[RecordKey] = {record_key(r) for r in records}
        self.records = len(records)
        """Records in the file when it was opened."""
        self.duplicates = len(records) - len(self.keys)
        """Of those, records whose key an earlier record has."""
        self.repaired = scanned.size - scanned.keep
        """Bytes of the torn last line cut off when the file was opened (0: none)."""
        self.newline = scanned.newline
        """Line ending of appended records."""

    def _append(self, data: bytes) -> None:
        """Append ``data`` (one ``write`` call for a record of usual size) and fsync."""
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        os.fsync(self._fd)

    def write(self, record: Record) -> None:
        """Append ``record`` as one line and flush it to disk.

        Raises
        ------
        TopooptError
            When ``record`` breaks the record table or is longer than
            :data:`~topoopt.bench.jsonl.MAX_LINE_BYTES` (nothing is written: a file the
            readers would refuse is never made).
        """
        problem = record_problem(record)
        if problem is not None:
            raise TopooptError(f"{self.path}: refusing to write an invalid record: {problem}")
        try:
            line = json.dumps(record, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise TopooptError(f"{self.path}: record is not JSON: {exc}") from None
        if len(line) + len(self.newline) > jsonl.MAX_LINE_BYTES:
            raise TopooptError(
                f"{self.path}: refusing to write a record of {len(line)} bytes "
                f"(the readers' limit is {jsonl.MAX_LINE_BYTES})"
            )
        try:
            self._append(line + self.newline)
        except OSError as exc:
            raise TopooptError(f"{self.path}: cannot write: {exc.strerror}") from None
        self.keys.add(record_key(record))

    def close(self) -> None:
        """Close the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (``ru_maxrss``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return peak * scale / 2**20
