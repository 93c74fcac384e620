"""topoopt's own trace format: JSON Lines (``.jsonl``) or CSV with the same field names.

Each JSON line is one job, an object whose fields :data:`JOB_SCHEMA` (JSON Schema draft
2020-12; ``topoopt simulate --trace-schema`` prints it) fixes:

===============  ========  ================================================================
field            required  meaning
===============  ========  ================================================================
``id``           yes       unique job id (string)
``submit_s``     yes       submit time, seconds from the trace's start (>= 0)
``gpus``         yes       GPUs requested (>= 1)
``duration_s``   yes       running time under the reference placement (>= 0)
``nodes``        no        nodes, when known
``dp``, ``tp``,  no        parallelism (all three or none; ``dp * tp * pp = gpus``)
``pp``
``priority``     no        integer, larger first under the priority policies (default 0)
``user``         no        owner
``queue``        no        queue (virtual cluster, partition)
``qos``          no        quality of service
``cpus``         no        CPUs requested (>= 0)
``memory_gib``   no        memory requested, GiB (>= 0)
===============  ========  ================================================================

Keys starting with ``x-`` are the writer's own and ignored. The CSV form has a header row
with these names (the four required ones at least); an empty cell is an absent field.
:func:`write_native` writes either form.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from topoopt.core import schema
from topoopt.core.errors import TopooptError
from topoopt.core.safejson import parse_json
from topoopt.sim.jobs import Job, TraceError
from topoopt.sim.traces._rows import (
    Rejected,
    Trace,
    collect,
    csv_rows,
    guarded,
    integer,
    number,
    open_text,
)

REQUIRED = ("id", "submit_s", "gpus", "duration_s")
OPTIONAL_INTS = ("nodes", "dp", "tp", "pp")
OPTIONAL_TEXTS = ("user", "queue", "qos")
OPTIONAL_NUMBERS = ("cpus", "memory_gib")
FIELDS = (*REQUIRED, *OPTIONAL_INTS, "priority", *OPTIONAL_TEXTS, *OPTIONAL_NUMBERS)

JOB_SCHEMA: dict[str, Any] = {
    "$schema": schema.DRAFT,
    "title": "topoopt trace job (one JSON line)",
    **schema.obj(
        {
            "id": {**schema.NAME, "description": "Unique job id."},
            "submit_s": schema.number(0, description="Submit time (s from the trace start)."),
            "gpus": schema.integer(1, description="GPUs requested."),
            "duration_s": schema.number(
                0, description="Running time under the reference placement (s)."
            ),
            "nodes": schema.integer(1, description="Nodes, when known."),
            "dp": schema.integer(1, description="Data-parallel degree."),
            "tp": schema.integer(1, description="Tensor-parallel degree."),
            "pp": schema.integer(1, description="Pipeline-parallel degree."),
            "priority": schema.integer(
                -(2**31), 2**31 - 1, description="Larger runs first (default 0)."
            ),
            "user": {**schema.NAME, "description": "Owner."},
            "queue": {**schema.NAME, "description": "Queue (virtual cluster, partition)."},
            "qos": {**schema.NAME, "description": "Quality of service."},
            "cpus": schema.number(0, description="CPUs requested."),
            "memory_gib": schema.number(0, description="Memory requested (GiB)."),
        },
        REQUIRED,
    ),
}


def _job(data: dict[str, Any], where: str) -> Job:
    return Job(**{key: data[key] for key in FIELDS if key in data}, origin=where)


def read_jsonl(path: str | Path, *, skip_bad: bool = False) -> Trace:
    """Read a JSON Lines trace (module docstring); blank lines are skipped.

    Raises
    ------
    TraceError
        Naming the file, the line and the field of the first bad line (without ``skip_bad``;
        with it, the line is a rejected job), or a repeated id.
    """
    file = Path(path)
    items: list[Job | Rejected] = []
    with open_text(file) as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{file}:{line_no}"
            try:
                data = parse_json(line, where)
                job_id = str(data.get("id") or f"row-{line_no}") if isinstance(data, dict) else ""
                schema.validate(JOB_SCHEMA, data)
            except TopooptError as exc:
                if not skip_bad:
                    raise TraceError(where, None, str(exc).removeprefix(f"{where}: ")) from None
                items.append(Rejected(job_id or f"row-{line_no}", f"{where}: {exc}"))
                continue
            items.append(guarded(where, job_id, lambda: _job(data, where), skip_bad))  # noqa: B023
    return collect(items)


def read_native_csv(path: str | Path, *, skip_bad: bool = False) -> Trace:
    """Read the CSV form (module docstring): a header of field names, one job per row."""
    file = Path(path)

    def row_job(where: str, row: dict[str, str]) -> Job:
        data: dict[str, Any] = {
            "id": row["id"].strip(),
            "submit_s": number(where, "submit_s", row["submit_s"]),
            "gpus": integer(where, "gpus", row["gpus"]),
            "duration_s": number(where, "duration_s", row["duration_s"]),
        }
        for key in OPTIONAL_INTS:
            if row.get(key, "").strip():
                data[key] = integer(where, key, row[key])
        if row.get("priority", "").strip():
            data["priority"] = integer(where, "priority", row["priority"], minimum=-(2**31))
        for key in OPTIONAL_TEXTS:
            if row.get(key, "").strip():
                data[key] = row[key].strip()
        for key in OPTIONAL_NUMBERS:
            if row.get(key, "").strip():
                data[key] = number(where, key, row[key])
        return _job(data, where)

    items = []
    with open_text(file) as handle:
        header = [name.strip() for name in next(csv.reader(handle), [])]
    unknown = [name for name in header if name not in FIELDS and not name.startswith("x-")]
    if unknown:
        raise TraceError(f"{file}:1", unknown[0], f"unknown column; known: {', '.join(FIELDS)}")
    for line, row in csv_rows(file, REQUIRED, exact=False):
        where = f"{file}:{line}"
        job_id = row["id"].strip() or f"row-{line}"
        items.append(guarded(where, job_id, lambda: row_job(where, row), skip_bad))  # noqa: B023
    return collect(items)


def job_record(job: Job) -> dict[str, Any]:
    """The JSON object of ``job`` in the native format (absent fields left out)."""
    out: dict[str, Any] = {key: getattr(job, key) for key in REQUIRED}
    for key in (*OPTIONAL_INTS, *OPTIONAL_TEXTS, *OPTIONAL_NUMBERS):
        if getattr(job, key) is not None:
            out[key] = getattr(job, key)
    if job.priority:
        out["priority"] = job.priority
    return out


def write_native(jobs: Iterable[Job], path: str | Path) -> Path:
    """Write ``jobs`` as a native trace: JSON Lines, or CSV when ``path`` ends in ``.csv``."""
    file = Path(path)
    records = [job_record(job) for job in jobs]
    try:
        with open(file, "w", encoding="utf-8", newline="") as handle:
            if file.suffix == ".csv":
                writer = csv.DictWriter(handle, fieldnames=FIELDS)
                writer.writeheader()
                writer.writerows(records)
            else:
                handle.writelines(json.dumps(record) + "\n" for record in records)
    except OSError as exc:
        raise TopooptError(f"cannot write {file}: {exc.strerror or exc}") from None
    return file
