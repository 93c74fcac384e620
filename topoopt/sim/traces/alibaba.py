"""Alibaba ``cluster-trace-gpu-v2023`` pod lists (``openb_pod_list_*.csv``).

One pod per row, columns (others are refused):

==================  ===========================================================================
column              use
==================  ===========================================================================
``name``            the job id
``cpu_milli``,      CPUs (``cpu_milli / 1000``) and memory (``memory_mib / 1024`` GiB) asked: job
``memory_mib``      metadata a learned JCT predictor reads (empty: unknown)
``num_gpu``         GPUs; a pod with ``0`` is a CPU pod: recorded as rejected ("asks no GPU")
``gpu_milli``       the share of each GPU the pod asks (``< 1000``: a fraction of one GPU); the
                    simulator gives whole GPUs, so a fractional pod still takes ``num_gpu`` GPUs
``gpu_spec``        kept for the record, not used
``qos``             the pod's quality of service (``LS``, ``BE``, ...), job metadata
``pod_phase``       ``Running``, ``Succeeded``, ``Failed``, ``Pending``
``creation_time``   submit time (seconds)
``deletion_time``   end of the pod; the running time is ``deletion_time - scheduled_time``
``scheduled_time``  start in the original cluster; a pod never scheduled (empty or ``0``, or
                    no deletion time) has no running time and is recorded as rejected
==================  ===========================================================================

Submit times are shifted so that the earliest pod arrives at 0.
"""

from __future__ import annotations

from pathlib import Path

from topoopt.sim.jobs import Job
from topoopt.sim.traces._rows import Rejected, Trace, collect, csv_rows, guarded, integer, number

COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)


def _scaled(where: str, row: dict[str, str], column: str, unit: float) -> float | None:
    """The number in ``column`` divided by ``unit`` (``None`` for an empty cell)."""
    text = row[column].strip()
    return number(where, column, text) / unit if text else None


def read_alibaba(path: str | Path, *, skip_bad: bool = False) -> Trace:
    """Read an Alibaba GPU pod list (module docstring).

    Raises
    ------
    TraceError
        Naming the file, row and column of the first malformed row (without ``skip_bad``),
        an unknown or missing column, or a repeated pod name.
    """
    file = Path(path)
    items: list[Job | Rejected] = []
    for line, row in csv_rows(file, COLUMNS, exact=True):
        where = f"{file}:{line}"
        job_id = row["name"].strip() or f"row-{line}"
        gpus = row["num_gpu"].strip()
        if gpus in ("0", "0.0"):
            items.append(Rejected(job_id, f"{where}: num_gpu: asks no GPU (a CPU pod)"))
            continue
        start, end = row["scheduled_time"].strip(), row["deletion_time"].strip()
        if start in ("", "0", "0.0") or not end:
            why = (
                "scheduled_time: never ran in the trace (no running time)"
                if start in ("", "0", "0.0")
                else "deletion_time: no end in the trace (no running time)"
            )
            items.append(Rejected(job_id, f"{where}: {why}"))
            continue

        def row_job(where: str = where, row: dict[str, str] = row) -> Job:
            started = number(where, "scheduled_time", row["scheduled_time"])
            ended = number(where, "deletion_time", row["deletion_time"], minimum=started)
            return Job(
                id=row["name"].strip(),
                submit_s=number(where, "creation_time", row["creation_time"]),
                gpus=integer(where, "num_gpu", row["num_gpu"]),
                duration_s=ended - started,
                qos=row["qos"].strip() or None,
                cpus=_scaled(where, row, "cpu_milli", 1000),
                memory_gib=_scaled(where, row, "memory_mib", 1024),
                origin=where,
            )

        items.append(guarded(where, job_id, row_job, skip_bad))
    return collect(items).shifted()
