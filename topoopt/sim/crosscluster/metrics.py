"""The summary of a cross-cluster run, from its job records and its timeline (pure functions).

The figures of :mod:`topoopt.sim.metrics` (so that ``topoopt report`` reads these runs as it
reads single-cluster ones) and the cross-cluster ones:

===============================  ===================================================================
figure                           definition
===============================  ===================================================================
``jct_s``, ``queue_s``           job completion time ``end - submit`` and queueing time ``start -
                                 submit`` of the finished jobs: mean, median, p95, p99
``makespan_s``                   last end minus first submit
``utilisation``                  time average over the makespan of busy GPUs / all GPUs
``fragmentation``                time average of the share of free GPUs on partly used nodes
``slowdown``                     running time / trace duration: mean over the finished jobs, over
                                 those on several nodes (``multi_node``) and over those on several
                                 clusters (``cross_cluster``)
``throughput``                   finished jobs per hour of the makespan (``jobs_per_hour``) and the
                                 mean over the finished jobs of the samples a job trains per second
                                 (``samples_per_s``, SpiderFlow Fig. 6's "samples processed per job
                                 per second")
``clusters``                     over the jobs of several GPUs: the mean clusters a job spans and
                                 the share spanning more than one
``decision_s``                   wall time of every decision (cluster selection, then planning):
                                 count, mean, median, p95, p99, max, and its parts ``select_s`` and
                                 ``partition_s`` (means)
===============================  ===================================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from topoopt.sim.crosscluster.engine import CrossTimeline, Record
from topoopt.sim.metrics import _stats, _time_average


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def summarize(
    records: Sequence[Record], timeline: CrossTimeline, total_gpus: int
) -> dict[str, Any]:
    """The run's summary (module docstring)."""
    finished = [r for r in records if r["status"] == "finished"]
    end = max((r["end_s"] for r in finished), default=None)
    makespan = None if end is None else end - min(r["submit_s"] for r in finished)
    times = np.asarray(timeline.time_s, dtype=float)
    busy = np.asarray(timeline.busy_gpus, dtype=float)
    free = total_gpus - busy
    on_idle = np.asarray(timeline.free_on_idle, dtype=float)
    fragmented = np.divide(free - on_idle, free, out=np.zeros_like(free), where=free > 0)
    multi = [r for r in finished if r["gpus"] > 1]
    decisions = [r["decision_s"] for r in finished]
    stats = _stats(decisions)
    return {
        "jobs": len(records),
        "finished": len(finished),
        "rejected": len(records) - len(finished),
        "jct_s": _stats([r["jct_s"] for r in finished]),
        "queue_s": _stats([r["queue_s"] for r in finished]),
        "makespan_s": makespan,
        "utilisation": None if end is None else _time_average(times, busy / total_gpus, end),
        "fragmentation": None if end is None else _time_average(times, fragmented, end),
        "slowdown": {
            "mean": _mean([r["slowdown"] for r in finished]),
            "multi_node": _mean([r["slowdown"] for r in finished if len(r["nodes"]) > 1]),
            "cross_cluster": _mean([r["slowdown"] for r in finished if r["k_clusters"] > 1]),
        },
        "objective": None,
        "bandwidth_ratio": {"count": 0, "mean": None, "min": None},
        "throughput": {
            "jobs_per_hour": None if not makespan else 3600.0 * len(finished) / makespan,
            "samples_per_s": _mean([r["samples_per_s"] for r in finished]),
        },
        "clusters": {
            "mean": _mean([r["k_clusters"] for r in multi]),
            "cross_share": _mean([float(r["k_clusters"] > 1) for r in multi]),
        },
        "decision_s": {
            "count": len(decisions),
            "mean": _mean(decisions),
            "median": stats["median"],
            "p95": stats["p95"],
            "p99": stats["p99"],
            "max": max(decisions, default=None),
            "select_s": _mean([r["select_s"] for r in finished]),
            "partition_s": _mean([r["partition_s"] for r in finished]),
        },
    }


__all__ = ["summarize"]
