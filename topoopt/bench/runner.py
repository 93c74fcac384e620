"""Plan and run a benchmark: instance files × solvers × backends × seeds × repeats.

:func:`plan` turns suite folders / instance files and a solver selection into
:class:`~topoopt.bench.task.Task` objects; :func:`run_benchmark` runs the tasks whose records
are not yet in the results file on an :mod:`executor <topoopt.bench.executors>` and appends
each record as it arrives. Rerunning the same benchmark with the same results file therefore
resumes it: runs already recorded are skipped, and an interrupted run loses nothing that was
written.

Example (placement's Arnold Table 1 suite, every placement solver, HiGHS and SCIP)::

    from topoopt.bench import LocalExecutor, plan, run_benchmark
    tasks = plan(["instances/placement/arnold-paper"], solvers="all",
                 backends=["highs", "scip"], time_limit=60)
    run_benchmark(tasks, "results.jsonl", executor=LocalExecutor(jobs=2))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from topoopt.bench.executors import Executor, LocalExecutor, OnStart
from topoopt.bench.records import ERROR_STATUS, Record, RecordWriter, instance_hash
from topoopt.bench.task import DEFAULT_GRACE, DEFAULT_TIME_LIMIT, Task
from topoopt.core.backends import resolve_backend
from topoopt.core.errors import TopooptError
from topoopt.core.family import Instance
from topoopt.core.io import load
from topoopt.core.registry import (
    SolverInfo,
    get_family,
    import_plugins,
    means_all,
    solvers_for,
)

ALL_SOLVERS = "all"
"""Solver selection meaning every registered solver of the instances' families."""


@dataclass(frozen=True)
class InstanceFile:
    """A loaded, valid instance file."""

    path: Path
    instance: Instance

    @property
    def suite(self) -> str:
        """The suite: name of the folder holding the file."""
        return self.path.resolve().parent.name

    @property
    def shown_path(self) -> str:
        """The path relative to the working directory when below it, else absolute."""
        absolute = self.path.resolve()
        try:
            return str(absolute.relative_to(Path.cwd()))
        except ValueError:
            return str(absolute)


def instance_files(paths: Iterable[str | PathLike[str]]) -> list[Path]:
    """The instance files named by ``paths``: files as given, folders by their ``*.json``
    files (recursively, sorted).

    Raises
    ------
    TopooptError
        For a path that does not exist.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(path.rglob("*.json")))
        elif path.exists():
            files.append(path)
        else:
            raise TopooptError(f"{path}: no such file or folder")
    return files


def scan(
    paths: Iterable[str | PathLike[str]], *, allow_paths: Sequence[str | PathLike[str]] = ()
) -> tuple[list[InstanceFile], list[str]]:
    """Load every instance file under ``paths`` (``allow_paths``: folders their files may
    name besides their own, see :func:`topoopt.load`).

    Returns the valid files and one line per problem: ``FILE: field: rule`` for an invalid
    file, and a line for every instance name used twice in one folder.
    """
    loaded: list[InstanceFile] = []
    problems: list[str] = []
    seen: dict[tuple[Path, str], Path] = {}
    for path in instance_files(paths):
        try:
            instance = load(path, allow_paths=allow_paths)
        except TopooptError as exc:
            message = str(exc)
            problems.append(message if message.startswith(str(path)) else f"{path}: {message}")
            continue
        where = (path.resolve().parent, instance.name)
        if where in seen:
            problems.append(f"{path}: instance name {instance.name!r} also used by {seen[where]}")
            continue
        seen[where] = path
        loaded.append(InstanceFile(path, instance))
    return loaded, problems


def select_solvers(requested: str | Sequence[str], families: Sequence[str]) -> list[SolverInfo]:
    """The registered solvers a selection names, for instances of ``families``: the rule of
    :func:`topoopt.core.registry.select_solvers` (``"all"``, full names, or short names matched
    in every family given), one line with "did you mean ...?" for a name that means none.

    Raises
    ------
    UnknownSolverError
        For a name that means no solver of those families.
    """
    from topoopt.core.registry import select_solvers as resolve

    available = {info.name: info for family in families for info in solvers_for(family)}
    return [available[name] for name in resolve(requested, families)]


def _check_backends(backends: Sequence[str]) -> list[str]:
    if not backends:
        raise TopooptError("backends: give at least one MIP backend")
    checked = [resolve_backend(b) for b in backends]
    return list(dict.fromkeys(checked))


def plan(
    paths: Iterable[str | PathLike[str]],
    *,
    solvers: str | Sequence[str] = ALL_SOLVERS,
    backends: Sequence[str] = ("highs",),
    seeds: Sequence[int] = (0,),
    repeat: int = 1,
    time_limit: float = DEFAULT_TIME_LIMIT,
    threads: int | None = None,
    memory_limit_mb: float | None = None,
    grace: float = DEFAULT_GRACE,
    plugins: Sequence[str] = (),
    allow_paths: Sequence[str | PathLike[str]] = (),
) -> list[Task]:
    """The tasks of a benchmark, one per (instance, solver, backend, seed, repeat).

    Parameters
    ----------
    paths
        Suite folders and instance files.
    solvers
        ``"all"`` or solver names (see :func:`select_solvers`). ``"all"`` runs, on each
        instance, the solvers that support it (``topoopt.solvers_for(instance)``: e.g. not
        ``partition/heuristic-ilp`` on a graph without intra-cluster data); a solver named
        on an instance it does not support gives an error record saying why.
    backends
        MIP backends; every solver that uses one runs once per backend, the others once
        (with backend ``None``).
    seeds, repeat
        Each setting runs for every seed, ``repeat`` times.
    time_limit
        Solver time limit (seconds); the worker is killed at
        :attr:`~topoopt.bench.task.Task.hard_timeout`.
    threads
        Threads for MIP backends (``None`` = backend default).
    memory_limit_mb
        Kill a worker whose resident memory exceeds this (MiB); ``None`` = no limit.
    grace
        Seconds added to the scaled time limit for the hard timeout.
    plugins
        Modules imported here and in every worker before solving (e.g. extra solvers).
    allow_paths
        Folders whose files the instances may name besides their own folder (see
        :func:`topoopt.load`), here and in every worker.

    Raises
    ------
    TopooptError
        For invalid instance files (the first problem and their number), unknown solvers,
        unavailable backends or bad settings.
    """
    if not (time_limit > 0):
        raise TopooptError(f"time_limit: must be positive, got {time_limit}")
    if repeat < 1:
        raise TopooptError(f"repeat: must be at least 1, got {repeat}")
    if not seeds or any(s < 0 for s in seeds):
        raise TopooptError(f"seeds: give one or more non-negative seeds, got {list(seeds)}")
    import_plugins(plugins)
    allowed = tuple(str(Path(p).resolve()) for p in allow_paths)
    files, problems = scan(paths, allow_paths=allowed)
    if problems:
        more = (
            f" (and {len(problems) - 1} more; see topoopt instances check)" if problems[1:] else ""
        )
        raise TopooptError(f"{len(problems)} invalid instance file(s): {problems[0]}{more}")
    if not files:
        raise TopooptError("no instance files found")
    families = sorted({f.instance.family for f in files})
    chosen = select_solvers(solvers, families)
    every = means_all(solvers)
    use_backends = _check_backends(backends) if any(s.uses_backend for s in chosen) else []
    tasks: dict[tuple[object, ...], Task] = {}
    for file in files:
        inst = file.instance
        family = get_family(inst.family)
        digest = instance_hash(inst)
        supported = {info.name for info in solvers_for(inst)} if every else None
        for info in (s for s in chosen if s.family == inst.family):
            if supported is not None and info.name not in supported:
                continue
            for backend in use_backends if info.uses_backend else [None]:
                for seed in dict.fromkeys(seeds):
                    for rep in range(repeat):
                        task = Task(
                            path=str(file.path.resolve()),
                            instance_file=file.shown_path,
                            instance=inst.name,
                            instance_hash=digest,
                            family=inst.family,
                            suite=file.suite,
                            sense=family.sense.value,
                            solver=info.name,
                            backend=backend,
                            seed=int(seed),
                            repeat=rep,
                            time_limit=float(time_limit),
                            size=dict(family.size(inst)),
                            tags=dict(family.tags(inst)),
                            threads=threads,
                            memory_limit_mb=memory_limit_mb,
                            grace=grace,
                            plugins=tuple(plugins),
                            allow_paths=allowed,
                        )
                        tasks.setdefault(task.key, task)
    return list(tasks.values())


@dataclass(frozen=True)
class BenchSummary:
    """What :func:`run_benchmark` did.

    Attributes
    ----------
    planned
        Tasks given.
    skipped
        Tasks whose record was already in the results file.
    ran
        Records written now.
    errors
        Of those, error records (timeout, crash, exception, memory).
    duplicates
        Records in the results file, when it was opened, whose key an earlier record has
        (each key is skipped once all the same; see
        :func:`~topoopt.bench.records.drop_duplicates`).
    repaired
        Bytes of a torn last line (left by an interrupted run) cut off the results file.
    """

    planned: int
    skipped: int
    ran: int
    errors: int
    duplicates: int = 0
    repaired: int = 0


def run_benchmark(
    tasks: Sequence[Task],
    out: str | PathLike[str],
    *,
    executor: Executor | None = None,
    on_start: OnStart | None = None,
    on_record: Callable[[Record], None] | None = None,
) -> BenchSummary:
    """Run the tasks not yet recorded in ``out`` and append their records.

    Parameters
    ----------
    tasks
        From :func:`plan`.
    out
        JSONL results file; created if missing, appended to (and resumed from) otherwise
        (see :class:`~topoopt.bench.records.RecordWriter`: the file is checked first and left
        unchanged when it is not a valid results file).
    executor
        Where to run (default: :class:`~topoopt.bench.executors.LocalExecutor` with one job).
    on_start, on_record
        Progress callbacks: a run started (not called by every executor), a record was written.
    """
    executor = LocalExecutor() if executor is None else executor
    ran = errors = 0
    with RecordWriter(out) as writer:
        duplicates, repaired = writer.duplicates, writer.repaired
        pending = [task for task in tasks if task.key not in writer.keys]
        for record in executor.run(pending, on_start):
            record["executor"] = executor.label
            writer.write(record)
            ran += 1
            errors += record["status"] == ERROR_STATUS
            if on_record is not None:
                on_record(record)
    return BenchSummary(
        planned=len(tasks),
        skipped=len(tasks) - len(pending),
        ran=ran,
        errors=errors,
        duplicates=duplicates,
        repaired=repaired,
    )
