"""One cross-cluster run written to a folder, as :mod:`topoopt.sim.run` writes one: ``jobs.jsonl``
(one record per job, as it ends), ``timeline.csv`` (after every scheduling pass) and
``summary.json`` (configuration, :func:`~topoopt.sim.crosscluster.metrics.summarize`, speed;
written last: a folder with it is a finished run, and running the same configuration into it
again returns it without simulating). ``topoopt report`` reads these folders like those of
``topoopt simulate``.
"""

from __future__ import annotations

import csv
import json
import re
import time
from pathlib import Path
from typing import Any

from topoopt.core.errors import TopooptError
from topoopt.crosscluster.multicluster import MultiCluster
from topoopt.sim.crosscluster.engine import CrossSimulation, Record
from topoopt.sim.crosscluster.metrics import summarize
from topoopt.sim.crosscluster.models import MIX
from topoopt.sim.run import JOBS, RUN_VERSION, SUMMARY, TIMELINE
from topoopt.sim.traces import Trace

SETTINGS = ("sim6", "scale:N", "testbed[:SEED]")
"""The named descriptions :func:`multicluster_from_spec` knows besides files."""


def multicluster_from_spec(spec: str) -> MultiCluster:
    """A multi-cluster description: ``sim6`` (SpiderFlow §5.5), ``scale:N`` (Fig. 12, ``N``
    clusters of 7 nodes x 8 GPUs), ``testbed`` or ``testbed:SEED`` (§5.1 / Fig. 9, links drawn
    with the seed, default 0) from :mod:`topoopt.crosscluster.settings`, else a description
    file (:meth:`MultiCluster.load <topoopt.crosscluster.multicluster.MultiCluster.load>`).

    Examples
    --------
    >>> multicluster_from_spec("scale:2").free_gpus
    112
    """
    from topoopt.crosscluster import settings

    if spec == "sim6":
        return settings.spiderflow_simulated()
    scale = re.fullmatch(r"scale:(\d+)", spec)
    if scale:
        count = int(scale.group(1))
        if not 1 <= count <= 4096:
            raise TopooptError(f"--multicluster {spec}: the clusters must be 1 to 4096")
        return settings.spiderflow_scale(count)
    testbed = re.fullmatch(r"testbed(?::(\d+))?", spec)
    if testbed:
        return settings.spiderflow_testbed(int(testbed.group(1) or 0))
    path = Path(spec)
    if not path.is_file():
        raise TopooptError(
            f"--multicluster {spec}: no such file, and not one of {', '.join(SETTINGS)}"
        )
    return MultiCluster.load(path)


def run_cross_simulation(
    mc: MultiCluster,
    trace: Trace,
    out_dir: str | Path,
    *,
    policy: str = "spiderflow",
    seed: int = 0,
    model: str = MIX,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Simulate ``trace`` on ``mc`` under ``policy`` and write the run folder (module
    docstring). ``config`` adds what the caller knows of the inputs (file names, load) to the
    configuration in ``summary.json``.

    Returns
    -------
    dict
        The content of ``summary.json``.
    """
    folder = Path(out_dir)
    simulation = CrossSimulation(mc, trace, policy=policy, seed=seed, model=model)
    settings = {
        "policy": "fifo",
        "placement": policy,
        "xpolicy": policy,
        "selector": simulation.policy.selector,
        "partitioner": simulation.policy.partitioner,
        "model": model,
        "seed": seed,
        "multicluster": mc.name,
        "clusters": len(mc.clusters),
        "cluster": f"{mc.name} ({len(mc.clusters)} clusters)",
        "cluster_nodes": len(simulation.state.node_gpus),
        "cluster_gpus": simulation.state.total_gpus,
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
            summary_file.unlink()
        records: list[Record] = []
        with open(folder / JOBS, "w", encoding="utf-8") as jobs_file:

            def write(record: Record) -> None:
                records.append(record)
                jobs_file.write(json.dumps(record) + "\n")

            simulation.on_record = write
            started = time.perf_counter()
            simulation.simulate()
            wall = time.perf_counter() - started
        with open(folder / TIMELINE, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(simulation.timeline.COLUMNS)
            writer.writerows(simulation.timeline.rows())
        out = {
            "run_version": RUN_VERSION,
            "config": settings,
            "summary": summarize(records, simulation.timeline, simulation.state.total_gpus),
            "speed": {
                "wall_s": wall,
                "events": 2 * len(trace.jobs),
                "events_per_s": 2 * len(trace.jobs) / wall if wall > 0 else None,
                "decisions": simulation.decisions,
            },
        }
        summary_file.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise TopooptError(
            f"{exc.filename or folder}: cannot write the run: {exc.strerror}"
        ) from None
    return out


__all__ = ["SETTINGS", "multicluster_from_spec", "run_cross_simulation"]
