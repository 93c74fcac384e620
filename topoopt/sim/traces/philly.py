"""The CSV of several public simulators (a Philly-derived trace is distributed in it).

One job per row, a ``#``-prefixed header with exactly these columns:

=======================  =================================================================
column                   meaning
=======================  =================================================================
``job id``               unique id
``arrival time (sec)``   submit time, seconds from the trace's start (rows need not be
                         sorted)
``topology``             the network kind the job asks for (``CLOS``; kept for the record,
                         not used)
``shape``                the job's shape; for ``CLOS`` the same number as ``size``
``size``                 GPUs requested
``duration (sec)``       running time measured in the original cluster (may be 0)
=======================  =================================================================

The trace gives no nodes or parallelism; :class:`~topoopt.sim.jobs.ShapeRule` derives them.
"""

from __future__ import annotations

from pathlib import Path

from topoopt.sim.jobs import Job
from topoopt.sim.traces._rows import Trace, collect, csv_rows, guarded, integer, number

COLUMNS = ("job id", "arrival time (sec)", "topology", "shape", "size", "duration (sec)")


def read_philly(path: str | Path, *, skip_bad: bool = False) -> Trace:
    """Read a trace in the Philly-derived CSV format (module docstring).

    Parameters
    ----------
    path
        The CSV file.
    skip_bad
        Record a malformed row as a rejected job (with the reason) instead of stopping.

    Raises
    ------
    TraceError
        Naming the file, the row and the column of the first malformed row (without
        ``skip_bad``), an unknown or missing column, or a repeated job id.
    """
    file = Path(path)

    def row_job(where: str, row: dict[str, str]) -> Job:
        return Job(
            id=row["job id"].strip(),
            submit_s=number(where, "arrival time (sec)", row["arrival time (sec)"]),
            gpus=integer(where, "size", row["size"]),
            duration_s=number(where, "duration (sec)", row["duration (sec)"]),
            origin=where,
        )

    items = []
    for line, row in csv_rows(file, COLUMNS, exact=True, comment_header=True):
        where = f"{file}:{line}"
        job_id = row["job id"].strip() or f"row-{line}"
        items.append(guarded(where, job_id, lambda: row_job(where, row), skip_bad))  # noqa: B023
    return collect(items)
