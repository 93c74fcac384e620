"""The summary of a run, from its job records and its timeline (pure functions).

===============================  ===================================================================
figure                           definition
===============================  ===================================================================
``jct_s``                        job completion time ``end - submit`` of the finished jobs: mean,
                                 median, p95, p99
``queue_s``                      queueing time ``start - submit``: the same statistics
``makespan_s``                   last end minus first submit
``utilisation``                  time average over the makespan of busy GPUs / all GPUs
``fragmentation``                time average of the share of free GPUs on partly used nodes (free
                                 GPUs a whole-node job cannot use; 0 while no GPU is free)
``slowdown``                     running time / reference duration: mean over the finished jobs
                                 and over those on whole nodes (``multi_node``)
``objective``                    mean placement objective (Arnold eq. 2) of the whole-node jobs
``decision_s``                   wall time of the decisions a solver made (placements and
                                 dispatches): median, p95,
                                 p99, max
``bandwidth_ratio``              dispatched jobs: the chosen GPUs' bandwidth over the pool's best,
                                 mean and worst
===============================  ===================================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from topoopt.sim.cluster import Cluster
from topoopt.sim.engine import Record, Timeline


def _stats(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "median": None, "p95": None, "p99": None}
    data = np.asarray(values, dtype=float)
    return {
        "mean": float(data.mean()),
        "median": float(np.median(data)),
        "p95": float(np.percentile(data, 95)),
        "p99": float(np.percentile(data, 99)),
    }


def _time_average(times: np.ndarray, values: np.ndarray, end: float) -> float | None:
    """The average of a step function (``values[i]`` from ``times[i]`` to ``times[i + 1]``)
    over ``[times[0], end]``."""
    if len(times) == 0 or end <= times[0]:
        return None
    widths = np.diff(np.append(times, end))
    return float((values * widths).sum() / (end - times[0]))


def summarize(records: Sequence[Record], timeline: Timeline, cluster: Cluster) -> dict[str, Any]:
    """The run's summary (module docstring)."""
    finished = [r for r in records if r["status"] == "finished"]
    decided = [r["decision_s"] for r in finished if r.get("placement_solver")]
    multi = [  # whole-node jobs a placement solver placed (not the dispatched ones)
        r for r in finished if r.get("placement_solver") and r.get("bandwidth_ratio") is None
    ]
    ratios = [r["bandwidth_ratio"] for r in finished if r.get("bandwidth_ratio") is not None]
    end = max((r["end_s"] for r in finished), default=None)
    makespan = None if end is None else end - min(r["submit_s"] for r in finished)
    times = np.asarray(timeline.time_s, dtype=float)
    busy = np.asarray(timeline.busy_gpus, dtype=float)
    total = cluster.total_gpus
    free = total - busy
    on_idle = np.asarray(timeline.idle_nodes, dtype=float) * cluster.node_size
    fragmented = np.divide(free - on_idle, free, out=np.zeros_like(free), where=free > 0)
    utilisation = None if end is None else _time_average(times, busy / total, end)
    return {
        "jobs": len(records),
        "finished": len(finished),
        "rejected": len(records) - len(finished),
        "jct_s": _stats([r["jct_s"] for r in finished]),
        "queue_s": _stats([r["queue_s"] for r in finished]),
        "makespan_s": makespan,
        "utilisation": utilisation,
        "fragmentation": None if end is None else _time_average(times, fragmented, end),
        "slowdown": {
            "mean": _stats([r["slowdown"] for r in finished])["mean"],
            "multi_node": _stats([r["slowdown"] for r in multi])["mean"],
        },
        "objective": _stats([r["objective"] for r in multi])["mean"],
        "bandwidth_ratio": {
            "count": len(ratios),
            "mean": _stats(ratios)["mean"],
            "min": min(ratios, default=None),
        },
        "decision_s": {
            "count": len(decided),
            "median": _stats(decided)["median"],
            "p95": _stats(decided)["p95"],
            "p99": _stats(decided)["p99"],
            "max": max(decided, default=None),
        },
    }


def reservation_summary(
    timeline: Timeline,
    cluster: Cluster,
    *,
    announce_s: float,
    arrival_s: float,
    zone_nodes: int,
    start_s: float | None,
) -> dict[str, Any]:
    """Arnold's Appendix H figures of a reservation run: over the window from the announcement
    to the reserved job's arrival, the time-averaged *allocation rate* (nodes running a job /
    all nodes) and *retention rate* (zone nodes held by other jobs / zone nodes), the retention
    when the job arrives, and how long it waited for its zone."""
    times = np.asarray(timeline.time_s, dtype=float)
    busy = np.asarray(timeline.busy_nodes, dtype=float) / cluster.n_nodes
    held = np.asarray(timeline.zone_held, dtype=float)
    inside = (times >= announce_s) & (times < arrival_s)
    window = times[inside]
    at_arrival = held[inside][-1] / zone_nodes if window.size else None
    return {
        "zone_nodes": zone_nodes,
        "announce_s": announce_s,
        "arrival_s": arrival_s,
        "start_s": start_s,
        "wait_s": None if start_s is None else start_s - arrival_s,
        "allocation_rate": _time_average(window, busy[inside], arrival_s),
        "retention_rate": _time_average(window, held[inside] / zone_nodes, arrival_s),
        "retention_at_arrival": at_arrival,
    }
