"""Several simulation runs in one call: policies x placements x seeds x loads.

Each combination is a :class:`RunSpec` (plain data, so it pickles to a worker process), run by
:func:`run_one` into its own folder ``OUT/<label>/`` (:mod:`topoopt.sim.run`), so a sweep
resumes run by run. :func:`run_sweep` runs them ``jobs`` at a time here or on a Dask cluster,
each in its own worker process under the benchmark supervisor (:func:`supervised`:
:func:`topoopt.bench.supervisor.supervise`, with its hard timeout and memory limit), and a run
that fails — an error, a crash, a timeout, memory — is recorded as an error summary in its
folder, never lost.
"""

from __future__ import annotations

import itertools
import json
import math
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from topoopt.core.errors import TopooptError

ERROR = "error.json"
"""What a failed run leaves in its folder."""


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: where its inputs come from and how it is scheduled.

    ``cluster_file`` or ``cluster_shape`` names the cluster; ``trace_file`` (with
    ``trace_format``) or ``synthetic_jobs`` the trace. The other fields are the arguments of
    :func:`topoopt.sim.run.run_simulation`.
    """

    out_dir: str
    policy: str = "fifo"
    placement: str = "placement/best-fit"
    seed: int = 0
    load: float = 1.0
    cluster_file: str | None = None
    cluster_shape: str | None = None
    pod_level: int | str = 0
    gpus_per_node: int = 8
    trace_file: str | None = None
    trace_format: str | None = None
    synthetic_jobs: int | None = None
    jobs_limit: int | None = None
    skip_bad: bool = False
    time_limit: float | None = 1.0
    alpha: float | None = None
    backend: str | None = None
    performance: str = "arnold"
    predictor: str = "exact"
    jct_model: str | None = None
    interval: float = 0.0
    reserve: str | None = None
    reserve_mode: str = "predicted"
    dispatch: str | None = None
    host_type: str = "H100"
    inter_gbps: float = 50.0
    pool_hosts: int = 4
    host_table: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The run's folder name: ``policy+placement+s<seed>+l<load>``."""
        short = self.placement.removeprefix("placement/")
        load = f"{self.load:g}"
        mode = "" if self.reserve is None else f"+{self.reserve_mode}"
        return f"{self.policy}+{short}{mode}+s{self.seed}+l{load}"


def plan_sweep(
    base: RunSpec,
    *,
    policies: Sequence[str],
    placements: Sequence[str],
    seeds: Sequence[int],
    loads: Sequence[float],
    reserve_modes: Sequence[str] = ("predicted",),
) -> list[RunSpec]:
    """Every combination; a single one runs into ``base.out_dir`` itself, several each into
    ``base.out_dir/<label>``."""
    combos = list(itertools.product(policies, placements, seeds, loads, reserve_modes))
    if not combos:
        raise TopooptError("a sweep needs at least one policy, placement, seed and load")
    specs = [
        replace(base, policy=p, placement=pl, seed=s, load=ld, reserve_mode=m)
        for p, pl, s, ld, m in combos
    ]
    if len(specs) == 1:
        return specs
    return [replace(spec, out_dir=str(Path(base.out_dir) / spec.label)) for spec in specs]


def run_one(spec: RunSpec) -> dict[str, Any]:
    """Run ``spec`` (in this process) and return its summary (``summary.json``'s content)."""
    from topoopt.sim.cluster import Cluster, parse_shape
    from topoopt.sim.reservation import Reservation
    from topoopt.sim.run import run_simulation
    from topoopt.sim.traces import read_trace, synthetic
    from topoopt.topology import load_topology

    (Path(spec.out_dir) / ERROR).unlink(missing_ok=True)  # an earlier failure's
    if (spec.cluster_file is None) == (spec.cluster_shape is None):
        raise TopooptError("give one of --cluster FILE or --cluster-shape SHAPE")
    if (spec.trace_file is None) == (spec.synthetic_jobs is None):
        raise TopooptError("give one of --trace FILE or --synthetic N")
    if spec.cluster_file is not None:
        cluster = Cluster(load_topology(spec.cluster_file), spec.pod_level, spec.gpus_per_node)
    else:
        cluster = parse_shape(str(spec.cluster_shape))
    if spec.synthetic_jobs is not None:
        trace = synthetic(
            jobs=spec.synthetic_jobs,
            cluster_gpus=cluster.total_gpus,
            load=spec.load,
            seed=spec.seed,
        )
        source = f"synthetic:{spec.synthetic_jobs}:seed{spec.seed}"
    else:
        trace = read_trace(str(spec.trace_file), spec.trace_format, skip_bad=spec.skip_bad)
        if spec.jobs_limit is not None:
            trace = trace.head(spec.jobs_limit)
        trace = trace.with_load(spec.load)
        source = str(spec.trace_file)
    reservation = (
        None if spec.reserve is None else Reservation.parse(spec.reserve, spec.reserve_mode)
    )
    return run_simulation(
        cluster,
        trace,
        spec.out_dir,
        policy=spec.policy,
        placement=spec.placement,
        time_limit=spec.time_limit,
        alpha=spec.alpha,
        backend=spec.backend,
        performance=spec.performance,
        predictor=spec.predictor,
        jct_model=spec.jct_model,
        interval=spec.interval,
        seed=spec.seed,
        skip_unfit=spec.skip_bad,
        reservation=reservation,
        dispatch=spec.dispatch,
        host_type=spec.host_type,
        inter_gbps=spec.inter_gbps,
        pool_hosts=spec.pool_hosts,
        host_table=spec.host_table,
        config={"trace": source, "load": spec.load, "jobs_limit": spec.jobs_limit, **spec.extra},
    )


def _error_summary(spec: RunSpec, message: str) -> dict[str, Any]:
    """The summary of a run that failed, written to its folder (so the sweep shows it)."""
    out = {"config": asdict(spec), "error": message}
    folder = Path(spec.out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ERROR).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    except OSError:
        pass  # the returned summary still carries the error
    return out


def _guarded(spec: RunSpec) -> dict[str, Any]:
    """:func:`run_one`, an exception turned into an error summary (runs in the worker)."""
    try:
        return run_one(spec)
    except TopooptError as exc:
        return _error_summary(spec, str(exc))
    except Exception as exc:  # a bug: keep the run's record and the traceback's last line
        last = traceback.format_exception_only(exc)[-1].strip()
        return _error_summary(spec, f"internal error: {last}")


def run_args(args: dict[str, Any]) -> dict[str, Any]:
    """:func:`run_one` of a spec given as its JSON fields, an error turned into an error
    summary: what a supervised worker process calls (:func:`supervised`)."""
    return _guarded(RunSpec(**args))


@dataclass(frozen=True)
class SimTask:
    """A simulation run as the benchmark supervisor runs it
    (:class:`topoopt.bench.supervisor.Supervised`): in a fresh worker process, killed past
    ``timeout`` seconds or ``memory_limit_mb`` of resident memory."""

    spec: RunSpec
    timeout: float | None = None
    memory_limit_mb: float | None = None

    @property
    def hard_timeout(self) -> float:
        """Seconds after which the worker is killed (no limit: infinite)."""
        return math.inf if self.timeout is None else self.timeout

    def worker_spec(self) -> dict[str, Any]:
        """The worker calls :func:`run_args` with the spec's fields."""
        return {"call": f"{__name__}:run_args", "args": asdict(self.spec)}


def supervised(
    spec: RunSpec, timeout: float | None = None, memory_limit_mb: float | None = None
) -> dict[str, Any]:
    """Run ``spec`` in a worker process under the benchmark supervisor
    (:func:`topoopt.bench.supervisor.supervise`) and return its summary: a run killed for its
    time or memory, or whose process died, leaves an error summary, never a lost run."""
    from topoopt.bench.supervisor import supervise

    worker = supervise(SimTask(spec, timeout, memory_limit_mb))
    assert worker is not None  # no cancel event: supervise always returns
    result = None if worker.outcome is None else worker.outcome.get("result")
    if result is not None:
        return dict(result)
    if worker.killed == "timeout":
        return _error_summary(spec, f"killed after {timeout:g} s (the run timeout)")
    if worker.killed == "memory":
        return _error_summary(
            spec, f"killed past {memory_limit_mb:g} MiB (resident {worker.peak_memory_mb:.0f} MiB)"
        )
    if worker.outcome is not None:
        return _error_summary(spec, str(worker.outcome.get("message")))
    return _error_summary(
        spec, f"the run's process died (exit code {worker.returncode}): {worker.log_tail}"
    )


def run_sweep(
    specs: Sequence[RunSpec],
    *,
    jobs: int = 1,
    scheduler: str | None = None,
    run_timeout: float | None = None,
    memory_limit_mb: float | None = None,
    on_done: Callable[[RunSpec, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every spec; summaries in the order of ``specs``.

    Each run is :func:`supervised` in a fresh worker process, ``jobs`` at a time here or, with
    ``scheduler``, on that Dask cluster (the ``dask`` extra; the workers must see the same
    files), killed after ``run_timeout`` seconds or past ``memory_limit_mb`` when given. A
    finished run (its ``summary.json`` with the same configuration) is not run again.
    """
    if jobs < 1:
        raise TopooptError(f"--jobs: must be at least 1, got {jobs}")
    if run_timeout is not None and not run_timeout > 0:
        raise TopooptError(f"--run-timeout: must be > 0, got {run_timeout}")
    results: dict[int, dict[str, Any]] = {}

    def done(index: int, summary: dict[str, Any]) -> None:
        results[index] = summary
        if on_done is not None:
            on_done(specs[index], summary)

    limits = (run_timeout, memory_limit_mb)
    if scheduler is not None:
        for index, summary in _dask(specs, scheduler, limits):
            done(index, summary)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as threads:  # each watches one process
            futures = {threads.submit(supervised, spec, *limits): i for i, spec in enumerate(specs)}
            for future in as_completed(futures):
                done(futures[future], future.result())
    return [results[i] for i in range(len(specs))]


def _dask(
    specs: Sequence[RunSpec], scheduler: str, limits: tuple[float | None, float | None]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every run :func:`supervised` on a Dask worker (it starts the run's own process there)."""
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise TopooptError(
            "--scheduler needs the dask extra: pip install 'topoopt[dask]'"
        ) from None
    with Client(scheduler) as client:
        futures = {
            client.submit(supervised, spec, *limits, pure=False): i for i, spec in enumerate(specs)
        }
        for future in dask_completed(futures):
            index = futures[future]
            try:
                yield index, future.result()
            except Exception as exc:
                yield index, _error_summary(specs[index], f"worker failed: {exc!r}")
