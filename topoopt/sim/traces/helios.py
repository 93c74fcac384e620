"""Helios / Acme-style job logs (SenseTime Helios ``cluster_log.csv``, Shanghai AI Lab Acme).

One job per row; these columns are read, any others are kept out of the simulation:

=================  ============================================================================
column             use
=================  ============================================================================
``job_id``         the job id (required)
``gpu_num``        GPUs (required); ``0`` is a CPU job, recorded as rejected ("asks no GPU")
``node_num``       nodes (optional; empty: derived)
``submit_time``    submit time (required): seconds, or a date ``YYYY-MM-DD HH:MM:SS``
``duration``       running time in seconds (required)
``user``           owner (optional)
``vc``             virtual cluster, the job's queue (optional)
``cpu_num``        CPUs asked (optional)
``start_time``,    read for nothing (the trace's own schedule is not replayed)
``end_time``
=================  ============================================================================

Submit times are shifted so that the earliest job arrives at 0.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from topoopt.sim.jobs import Job, TraceError
from topoopt.sim.traces._rows import Rejected, Trace, collect, csv_rows, guarded, integer, number

REQUIRED = ("job_id", "gpu_num", "submit_time", "duration")


def _seconds(where: str, text: str) -> float:
    """A time: a number of seconds, or a date and time (seconds since the epoch, UTC)."""
    try:
        return number(where, "submit_time", text, minimum=None)
    except TraceError:
        pass
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise TraceError(
            where, "submit_time", f"expected seconds or YYYY-MM-DD HH:MM:SS, got {text!r}"
        ) from None


def read_helios(path: str | Path, *, skip_bad: bool = False) -> Trace:
    """Read a Helios/Acme job log (module docstring).

    Raises
    ------
    TraceError
        Naming the file, row and column of the first malformed row (without ``skip_bad``), a
        missing column, or a repeated job id.
    """
    file = Path(path)
    items: list[Job | Rejected] = []
    for line, row in csv_rows(file, REQUIRED, exact=False):
        where = f"{file}:{line}"
        job_id = row["job_id"].strip() or f"row-{line}"
        if row["gpu_num"].strip() in ("0", "0.0"):
            items.append(Rejected(job_id, f"{where}: gpu_num: asks no GPU (a CPU job)"))
            continue

        def row_job(where: str = where, row: dict[str, str] = row) -> Job:
            nodes = row.get("node_num", "").strip()
            user = row.get("user", "").strip()
            cpus = row.get("cpu_num", "").strip()
            return Job(
                id=row["job_id"].strip(),
                submit_s=_seconds(where, row["submit_time"]),
                gpus=integer(where, "gpu_num", row["gpu_num"]),
                duration_s=number(where, "duration", row["duration"]),
                nodes=integer(where, "node_num", nodes) if nodes else None,
                user=user or None,
                queue=row.get("vc", "").strip() or None,
                cpus=number(where, "cpu_num", cpus) if cpus else None,
                origin=where,
            )

        items.append(guarded(where, job_id, row_job, skip_bad))
    return collect(items).shifted()
