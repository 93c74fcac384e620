"""One simulation run written to a folder: ``jobs.jsonl``, ``timeline.csv``, ``summary.json``.

``jobs.jsonl`` holds one JSON object per job of the trace, written as each job ends
(``finished`` or ``rejected`` with its ``reason``; every job id exactly once).
``timeline.csv`` holds the cluster after every scheduling pass (time, busy GPUs, queued and
running jobs, idle nodes). ``summary.json`` holds the run's configuration, its summary
(:func:`topoopt.sim.metrics.summarize`) and its speed; it is written last, so a folder with it
is a finished run: running the same configuration into it again returns the summary without
simulating (a run is resumed whole, as ``topoopt bench`` resumes per run).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from topoopt.core.errors import TopooptError
from topoopt.sim.cluster import Cluster
from topoopt.sim.engine import Record, Simulation
from topoopt.sim.metrics import reservation_summary, summarize
from topoopt.sim.performance import PERFORMANCE_MODELS
from topoopt.sim.placer import Placer
from topoopt.sim.policies import Predictor
from topoopt.sim.reservation import Reservation
from topoopt.sim.traces import Trace

SUMMARY = "summary.json"
JOBS = "jobs.jsonl"
TIMELINE = "timeline.csv"
RUN_VERSION = 1
"""Version of the run folder's files."""


def _write_timeline(simulation: Simulation, path: Path) -> None:
    line = simulation.timeline
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(line.COLUMNS)
        writer.writerows(line.rows())


def _predictor(
    name: str, jct_model: str | Path | None
) -> tuple[str | Predictor, dict[str, Any] | None]:
    """The run's predictor: a registered name, or the learned model ``jct_model`` (with what
    the configuration records of it)."""
    if jct_model is None:
        if name in ("learned", "learned-static"):
            raise TopooptError(f"predictor {name!r} needs a model: --jct-model MODEL.json")
        return name, None
    if name not in ("exact", "learned", "learned-static"):
        raise TopooptError(
            f"--jct-model makes the predictor the learned model (learned, or learned-static); "
            f"it does not go with --predictor {name}"
        )
    from topoopt.learn.jct import JctModel, JctPredictor, model_digest

    model = JctModel.load(jct_model)
    record = {
        "file": str(jct_model),
        "sha256": model_digest(jct_model),
        "interval_s": model.interval_s,
        "max_intervals": model.max_intervals,
        "decoder": model.decoder,
    }
    if name == "learned-static":
        return JctPredictor(model, name, conditional=False), record
    return model.predictor(), record


def run_simulation(
    cluster: Cluster,
    trace: Trace,
    out_dir: str | Path,
    *,
    policy: str = "fifo",
    placement: str = "placement/best-fit",
    time_limit: float | None = 1.0,
    alpha: float | None = None,
    backend: str | None = None,
    performance: str = "arnold",
    predictor: str = "exact",
    jct_model: str | Path | None = None,
    interval: float = 0.0,
    seed: int = 0,
    skip_unfit: bool = False,
    reservation: Reservation | None = None,
    dispatch: str | None = None,
    host_type: str = "H100",
    inter_gbps: float = 50.0,
    pool_hosts: int = 4,
    host_table: str | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Simulate ``trace`` on ``cluster`` and write the run folder (module docstring).

    ``config`` adds what the caller knows of the inputs (file names, load factor) to the
    configuration recorded in ``summary.json``; a finished run with the same configuration
    is not simulated again.

    ``jct_model`` names a learned JCT model file (``topoopt learn jct``): the run's predictor
    is then ``learned``, that model (``predictor`` must be ``exact``, the default, or
    ``learned``), or with ``predictor="learned-static"`` that model without predicting the
    running jobs' ends anew in a reservation's plan
    (:class:`~topoopt.learn.jct.JctPredictor`); the configuration records the file and its
    SHA-256.

    Returns
    -------
    dict
        The content of ``summary.json``.
    """
    folder = Path(out_dir)
    predict, model_record = _predictor(predictor, jct_model)
    if alpha is None:
        alpha = PERFORMANCE_MODELS.get(performance).alpha()
    placer = Placer(
        cluster,
        placement,
        time_limit=time_limit,
        alpha=alpha,
        seed=seed,
        backend=backend,
        dispatch=dispatch,
        host_type=host_type,
        inter_gbps=inter_gbps,
        pool_hosts=pool_hosts,
        host_table=host_table,
    )
    settings = {
        "policy": policy,
        "placement": placer.solver,
        "dispatch": None
        if placer.dispatch is None
        else {
            "solver": placer.dispatch,
            "host_type": host_type,
            "inter_gbps": inter_gbps,
            "pool_hosts": pool_hosts,
            "host_table": host_table,
        },
        "time_limit": time_limit,
        "alpha": alpha,
        "backend": backend,
        "performance": performance,
        "predictor": ("learned" if predictor == "exact" else predictor)
        if model_record
        else predictor,
        **({"jct_model": model_record} if model_record else {}),
        "interval": interval,
        "seed": seed,
        "skip_unfit": skip_unfit,
        "reservation": None if reservation is None else dataclasses.asdict(reservation),
        "cluster": cluster.describe(),
        "cluster_nodes": cluster.n_nodes,
        "cluster_gpus": cluster.total_gpus,
        "jobs": len(trace.jobs) + len(trace.rejected),
        **(config or {}),
    }
    summary_file = folder / SUMMARY
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if summary_file.exists():
            done = json.loads(summary_file.read_text(encoding="utf-8"))
            if done.get("config") == json.loads(json.dumps(settings)):
                return dict(done)
            summary_file.unlink()  # another configuration: run anew
        records: list[Record] = []
        with open(folder / JOBS, "w", encoding="utf-8") as jobs_file:

            def write(record: Record) -> None:
                records.append(record)
                jobs_file.write(json.dumps(record) + "\n")

            simulation = Simulation(
                cluster,
                trace,
                policy=policy,
                placer=placer,
                performance=performance,
                predictor=predict,
                interval=interval,
                seed=seed,
                skip_unfit=skip_unfit,
                on_record=write,
                reservation=reservation,
            )
            started = time.perf_counter()
            simulation.simulate()
            wall = time.perf_counter() - started
        _write_timeline(simulation, folder / TIMELINE)
        summary = summarize(records, simulation.timeline, cluster)
        if reservation is not None and simulation.plan is not None:
            summary["reservation"] = reservation_summary(
                simulation.timeline,
                cluster,
                announce_s=reservation.announce_s,
                arrival_s=simulation.trace_job(reservation.job).submit_s,
                zone_nodes=len(simulation.plan.nodes),
                start_s=simulation.lpj_start_s,
            )
        out = {
            "run_version": RUN_VERSION,
            "config": settings,
            "summary": summary,
            "speed": {
                "wall_s": wall,
                "events": 2 * len(trace.jobs),
                "events_per_s": 2 * len(trace.jobs) / wall if wall > 0 else None,
                "placement_calls": simulation.placement_calls,
            },
        }
        summary_file.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise TopooptError(
            f"{exc.filename or folder}: cannot write the run: {exc.strerror}"
        ) from None
    return out
