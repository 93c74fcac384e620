"""A :class:`Task`: one benchmark run to do, and the hard timeout that guards it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from topoopt.bench.records import RecordKey

DEFAULT_TIME_LIMIT = 60.0
"""Solver time limit (seconds) when the benchmark gives none."""

DEFAULT_GRACE = 10.0
"""Seconds added to the scaled time limit for process start-up, imports and clean-up."""

HARD_TIMEOUT_FACTOR = 1.2
"""The worker is killed after ``time_limit * HARD_TIMEOUT_FACTOR + grace`` seconds."""


@dataclass(frozen=True)
class Task:
    """One run: an instance file, a solver (and backend), a seed and a repeat index.

    Tasks are plain data so that any executor can ship them to a worker (they pickle).

    Attributes
    ----------
    path
        Absolute path of the instance file (what the worker process loads).
    instance_file
        The path as recorded (relative to the working directory when below it).
    instance, instance_hash, family, suite, sense, size, tags
        Identity and description of the instance (``suite`` is the file's folder name,
        ``size`` and ``tags`` the family's figures and labels of it).
    solver, backend
        Registered solver and MIP backend (``None`` for solvers without a backend).
    seed, repeat
        Random seed, and the index of this run among repeats of the same setting.
    time_limit
        Solver time limit in seconds.
    threads
        Threads for MIP backends (``None`` = the backend's default).
    memory_limit_mb
        Resident memory (MiB) above which the worker is killed (``None`` = no limit).
    grace
        Seconds of the hard timeout beyond the scaled time limit (see :attr:`hard_timeout`).
    plugins
        Modules the worker imports before solving (they may register extra solvers).
    allow_paths
        Folders whose files the instance may name besides its own folder.
    """

    path: str
    instance_file: str
    instance: str
    instance_hash: str
    family: str
    suite: str
    sense: str
    solver: str
    backend: str | None
    seed: int
    repeat: int
    time_limit: float
    size: Mapping[str, int] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    threads: int | None = None
    memory_limit_mb: float | None = None
    grace: float = DEFAULT_GRACE
    plugins: tuple[str, ...] = ()
    allow_paths: tuple[str, ...] = ()

    @property
    def key(self) -> RecordKey:
        """Key of the record this task produces (:func:`~topoopt.bench.records.record_key`)."""
        return (
            self.instance,
            self.instance_hash,
            self.solver,
            self.backend,
            self.seed,
            self.repeat,
        )

    @property
    def hard_timeout(self) -> float:
        """Seconds after the run starts at which its worker process is killed (the run
        starts when it is handed to a ready long-lived worker, or when its own process is
        launched with ``isolation="process"``).

        Examples
        --------
        >>> Task("/x.json", "x.json", "x", "h", "placement", "s", "minimize", "placement/best-fit",
        ...      None, 0, 0, time_limit=60.0, grace=10.0).hard_timeout
        82.0
        """
        return self.time_limit * HARD_TIMEOUT_FACTOR + self.grace

    @property
    def label(self) -> str:
        """Short human-readable name, e.g. ``iii-even-a0.5 · exact-mip[highs] seed 0``."""
        solver = self.solver.split("/", 1)[-1]
        backend = f"[{self.backend}]" if self.backend else ""
        repeat = f" #{self.repeat}" if self.repeat else ""
        return f"{self.instance} · {solver}{backend} seed {self.seed}{repeat}"

    def worker_spec(self) -> dict[str, Any]:
        """What the worker process needs to run the task (a JSON object)."""
        return {
            "path": self.path,
            "solver": self.solver,
            "backend": self.backend,
            "seed": self.seed,
            "time_limit": self.time_limit,
            "threads": self.threads,
            "plugins": list(self.plugins),
            "allow_paths": list(self.allow_paths),
        }
