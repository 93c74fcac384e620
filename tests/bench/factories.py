"""Hand-made benchmark records for testing the pure report functions."""

from __future__ import annotations

from typing import Any


def rec(
    instance: str,
    solver: str,
    objective: float | None,
    *,
    status: str | None = None,
    termination: str | None = None,
    total_s: float = 1.0,
    family: str = "placement",
    suite: str = "paper",
    backend: str | None = None,
    seed: int = 0,
    repeat: int = 0,
    time_limit: float = 60.0,
    size: dict[str, int] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A record; status defaults to ``feasible`` with an objective, ``error`` without one."""
    if status is None:
        status = "feasible" if objective is not None else "error"
    if termination is None:
        termination = {"optimal": "optimal", "feasible": "completed"}.get(status, "error")
    sense = "maximize" if family == "gpuselect" else "minimize"
    return {
        "record_version": 1,
        "family": family,
        "suite": suite,
        "instance": instance,
        "instance_hash": f"hash-{instance}",
        "solver": f"{family}/{solver}",
        "backend": backend,
        "seed": seed,
        "repeat": repeat,
        "sense": sense,
        "status": status,
        "termination": termination,
        "objective": objective,
        "total_s": total_s,
        "time_limit": time_limit,
        "hard_timeout": time_limit * 1.2 + 10,
        "threads": None,
        "executor": "local:1",
        "message": "" if objective is not None else f"{termination} happened",
        "peak_memory_mb": 70.0,
        "size": size if size is not None else {"nodes": 12},
        "versions": {"topoopt": "0.1.0", "python": "3.11.7"},
        "host": {"cpu": "test cpu", "cores": 2},
        **extra,
    }
