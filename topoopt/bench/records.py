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
benchmark keeps every record already written; :func:`read_records` tolerates a truncated last
line (the record being written when the process died).
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
from typing import Any

import psutil

import topoopt
from topoopt.core.errors import TopooptError
from topoopt.core.family import Instance

RECORD_VERSION = 1
"""Version of the record layout; stored in every record as ``record_version``."""

Record = dict[str, Any]
"""One benchmark record (a JSON object)."""

RecordKey = tuple[str, str, str, str | None, int, int]
"""``(instance, instance_hash, solver, backend, seed, repeat)``."""

ERROR_STATUS = "error"
"""``status`` of a record whose run produced no result (timeout, crash, exception, memory)."""

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


def _parse_lines(text: str) -> tuple[list[Record], int]:
    """Records of a JSONL text and the length of its well-formed prefix.

    A last line without a newline or that does not parse is a record cut short by an
    interrupted writer and is dropped; a bad line elsewhere is an error.
    """
    records: list[Record] = []
    good = 0
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        last = number == len(lines)
        if last and not line.endswith("\n"):
            break
        stripped = line.strip()
        if stripped:
            try:
                record = json.loads(stripped)
            except json.JSONDecodeError as exc:
                if last:
                    break
                raise TopooptError(f"line {number}: not a JSON record ({exc})") from None
            if not isinstance(record, dict):
                raise TopooptError(f"line {number}: not a JSON object")
            records.append(record)
        good += len(line.encode("utf-8"))
    return records, good


def read_records(path: str | PathLike[str]) -> list[Record]:
    """All records of a JSONL results file (a missing file has none).

    Raises
    ------
    TopooptError
        Naming the file and line of a corrupt record (other than a truncated last line).
    """
    file = Path(path)
    if not file.exists():
        return []
    try:
        return _parse_lines(file.read_text(encoding="utf-8"))[0]
    except TopooptError as exc:
        raise TopooptError(f"{file}: {exc}") from None


def read_many(paths: Iterable[str | PathLike[str]]) -> list[Record]:
    """The records of several results files, in order."""
    return [record for path in paths for record in read_records(path)]


class RecordWriter:
    """Append records to a JSONL file, one line each, flushed to disk as they arrive.

    Opening cuts off a truncated last line left by an interrupted run, so that appended
    records start on a line of their own. :attr:`keys` holds the keys already stored.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> with RecordWriter(path) as w:
    ...     w.write({"instance": "a", "instance_hash": "h", "solver": "f/s", "backend": None,
    ...              "seed": 0, "repeat": 0})
    >>> len(read_records(path))
    1
    """

    def __init__(self, path: str | PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = self.path.read_text(encoding="utf-8") if self.path.exists() else ""
        try:
            records, good = _parse_lines(text)
        except TopooptError as exc:
            raise TopooptError(f"{self.path}: {exc}") from None
        self.keys: set[RecordKey] = {record_key(r) for r in records}
        self._file = self.path.open("ab")
        if good < len(text.encode("utf-8")):
            self._file.truncate(good)

    def write(self, record: Record) -> None:
        """Append ``record`` and flush it to disk."""
        line = json.dumps(record, allow_nan=False) + "\n"
        self._file.write(line.encode("utf-8"))
        self._file.flush()
        os.fsync(self._file.fileno())
        self.keys.add(record_key(record))

    def close(self) -> None:
        """Close the file."""
        self._file.close()

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
