"""Readers for measured bandwidth tables and host topologies, and for single input values.

Tables and topologies:

* :func:`parse_intra_csv` — nccl-tests style per-subset table of one host type, the columns
  of :data:`INTRA_HEADER` (``GPU_used`` concatenates the local
  indices, e.g. ``0123``). This is the BandPilot artifact's format (paper §4.2.1, Stage 1).
* :func:`parse_cross_rows` — cross-host table, the columns of :data:`CROSS_HEADER`, where the
  mapping is a JSON list of per-node local-index lists such as ``[[0,1,2],[0,1],[],[]]`` or
  of per-node 0/1 flags (the BandPilot artifact's ``Pune_H100_2GB_binary.csv``);
  :func:`parse_cross_csv` keys its bandwidths by per-node GPU counts.
* :func:`parse_topology` — an ``nvidia-smi topo -m`` matrix (raw terminal output or a
  Markdown table such as the paper's Appendix E).

:func:`read_intra_csv`, :func:`read_cross_csv`, :func:`read_cross_rows` and
:func:`read_topology` read them from a file.
Every malformed input raises :class:`~topoopt.core.errors.InvalidInstanceError` naming the
source and line.

Values (on top of :mod:`topoopt.core.validate`, which reads JSON values): :func:`integer`,
:func:`real`, :func:`string` and :func:`items` also accept what Python code passes — NumPy
scalars and arrays, tuples, generators — and normalise it (``int``, ``float``, ``str``,
``tuple``), refusing booleans where a number is required; :func:`within` prefixes the field
path of the errors raised by a nested constructor (``gpus`` inside ``hosts[2]``).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TypeVar

from topoopt.core import limits
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.safejson import FileAccess, parse_json
from topoopt.gpuselect.masks import parse_mask

INTRA_COLUMNS = ("GPU_num", "GPU_used", "Bandwidth(GB/s)")
INTRA_HEADER = ("OP", "GPU_num", "GPU_used", "data_size(B)", "Bandwidth(GB/s)")
"""Every column of an nccl-tests per-host table (:data:`INTRA_COLUMNS` are the ones read)."""
CROSS_COLUMNS = ("Total_GPU_Count", "GPU_Mapping_Across_Nodes", "Bandwidth(GB/s)")
CROSS_HEADER = (
    "OP",
    "Total_GPU_Count",
    "GPU_Mapping_Across_Nodes",
    "data_size(B)",
    "Bandwidth(GB/s)",
)
"""Every column of an nccl-tests cross-host table (:data:`CROSS_COLUMNS` are the ones read)."""
LINK_PATTERN = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")
"""Link tokens of ``nvidia-smi topo -m`` (``SOC`` is the pre-2017 name of ``SYS``)."""


def read_text(path: Path, field: str) -> str:
    """The UTF-8 text of the regular file ``path`` (size-capped, see
    :func:`topoopt.core.safejson.read_bytes`); any problem is an error naming ``field``."""
    return FileAccess(allow=True).read_text(str(path), field)[1]


def _rows(text: str, source: str, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """The data rows of a CSV table with their line numbers (blank rows skipped).

    At most ``gpuselect_table_entries`` rows are read (:mod:`topoopt.core.limits`); a file
    the ``csv`` module cannot read (a NUL byte, an overlong field) is an error naming the line.
    """
    reader = csv.DictReader(io.StringIO(text))
    cap = limits.value("gpuselect_table_entries")
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        header = reader.fieldnames or []
        missing = [c for c in columns if c not in header]
        if missing:
            raise InvalidInstanceError(
                source, f"CSV header must have columns {', '.join(columns)}; missing {missing}"
            )
        for line, row in enumerate(reader, start=2):
            if not any((v or "").strip() for v in row.values()):
                continue
            if None in row or any(row.get(c) is None for c in columns):
                raise InvalidInstanceError(f"{source}:{line}", "wrong number of fields")
            if len(rows) == cap:
                raise InvalidInstanceError(
                    source, limits.exceeded("gpuselect_table_entries", "its data rows")
                )
            rows.append((line, row))
    except csv.Error as exc:
        raise InvalidInstanceError(
            f"{source}:{reader.line_num}", f"not a readable CSV table ({exc})"
        ) from None
    if not rows:
        raise InvalidInstanceError(source, "CSV has no data rows")
    return rows


def _gbps(raw: str, where: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInstanceError(where, f"Bandwidth(GB/s) {raw!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise InvalidInstanceError(where, f"Bandwidth(GB/s) must be finite and >= 0, got {raw}")
    return value


K = TypeVar("K")


def _average(samples: Mapping[K, list[float]]) -> dict[K, float]:
    return {key: sum(vals) / len(vals) for key, vals in samples.items()}


def parse_intra_csv(text: str, source: str = "<csv>") -> dict[int, float]:
    """Per-subset bandwidths of one host type: ``{mask: GB/s}`` (repeated rows averaged).

    Examples
    --------
    >>> parse_intra_csv(",".join(INTRA_HEADER) + "\\nag,2,01,16777216,10.5\\n"
    ...                 "ag,2,01,16777216,11.5\\n")
    {3: 11.0}
    """
    samples: dict[int, list[float]] = {}
    for line, row in _rows(text, source, INTRA_COLUMNS):
        where = f"{source}:{line}"
        try:
            num = int(row["GPU_num"])
            mask = parse_mask(row["GPU_used"], num)
        except ValueError as exc:
            raise InvalidInstanceError(where, f"GPU_num/GPU_used: {exc}") from None
        samples.setdefault(mask, []).append(_gbps(row["Bandwidth(GB/s)"], where))
    return _average(samples)


@dataclass(frozen=True)
class CrossRow:
    """One measured placement of a cross-host table: the GPUs taken on each host and B(S).

    ``masks[j]`` is the bitmask of local GPU indices taken on host ``j`` of the mapping.
    """

    line: int
    masks: tuple[int, ...]
    gbps: float
    op: str = ""
    data_size: str = ""

    @property
    def counts(self) -> tuple[int, ...]:
        """GPUs taken on each host of the mapping."""
        return tuple(m.bit_count() for m in self.masks)


def _as_index_lists(mapping: list[list[int]], total: int) -> tuple[int, ...] | None:
    """The mapping read as lists of distinct local indices per host, if it is one of ``total``
    GPUs."""
    if sum(len(node) for node in mapping) != total:
        return None
    if any(len(set(node)) != len(node) or max(node, default=0) >= 64 for node in mapping):
        return None
    return tuple(sum(1 << i for i in node) for node in mapping)


def _as_bit_masks(mapping: list[list[int]], total: int) -> tuple[int, ...] | None:
    """The mapping read as one 0/1 flag per GPU of each host, if it is one of ``total`` GPUs."""
    widths = {len(node) for node in mapping}
    if len(widths) != 1 or not all(b in (0, 1) for node in mapping for b in node):
        return None
    if sum(sum(node) for node in mapping) != total:
        return None
    return tuple(sum(1 << i for i, b in enumerate(node) if b) for node in mapping)


def parse_cross_rows(
    text: str, source: str = "<csv>", *, exact_columns: bool = False
) -> list[CrossRow]:
    """The rows of a cross-host table, each mapping read as per-host GPU masks.

    ``GPU_Mapping_Across_Nodes`` lists, per host, either the local indices taken
    (``[[0, 1], [4], []]``) or one 0/1 flag per GPU of the host
    (``[[1, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]]``); ``Total_GPU_Count`` tells them apart.
    One file uses one form: when every row reads both ways (``[[1], [1]]``), index lists win;
    otherwise a row that does not read the way the file does is an error naming its line.
    With ``exact_columns`` a column other than :data:`CROSS_HEADER`'s is an error.

    Examples
    --------
    >>> head = ",".join(CROSS_HEADER) + "\\n"
    >>> [r.masks for r in parse_cross_rows(head + 'ag,3,"[[0,1],[3],[]]",1,40\\n')]
    [(3, 8, 0)]
    >>> [r.masks for r in parse_cross_rows(head + 'ag,3,"[[1,1,0,0],[0,0,0,1]]",1,40\\n')]
    [(3, 8)]
    """
    parsed = []
    rows_read = _rows(text, source, CROSS_COLUMNS)
    if exact_columns:
        unknown = [c for c in rows_read[0][1] if c not in CROSS_HEADER]
        if unknown:
            raise InvalidInstanceError(
                source, f"unknown column {unknown[0]!r}; the columns are {', '.join(CROSS_HEADER)}"
            )
    for line, row in rows_read:
        where = f"{source}:{line}"
        try:
            mapping = parse_json(row["GPU_Mapping_Across_Nodes"], where)
            total = int(row["Total_GPU_Count"])
        except ValueError:  # InvalidInstanceError of parse_json included
            raise InvalidInstanceError(
                where,
                "GPU_Mapping_Across_Nodes must be a JSON list of lists and "
                "Total_GPU_Count an integer",
            ) from None
        if not isinstance(mapping, list) or not all(
            isinstance(node, list)
            and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in node)
            for node in mapping
        ):
            raise InvalidInstanceError(where, "GPU_Mapping_Across_Nodes must list index lists")
        gbps = _gbps(row["Bandwidth(GB/s)"], where)
        as_lists, as_flags = _as_index_lists(mapping, total), _as_bit_masks(mapping, total)
        op, size = row.get("OP") or "", row.get("data_size(B)") or ""
        parsed.append((line, where, total, as_lists, as_flags, gbps, op, size))
    form = 3 if all(p[3] is not None for p in parsed) else 4  # index lists, else flags
    rows = []
    for line, where, total, as_lists, as_flags, gbps, op, size in parsed:
        masks = as_lists if form == 3 else as_flags
        if masks is None:
            name = "lists of distinct local indices" if form == 3 else "0/1 flags per GPU"
            raise InvalidInstanceError(
                where,
                f"GPU_Mapping_Across_Nodes must give {total} GPUs (Total_GPU_Count) as {name}, "
                f"as the file's other rows do",
            )
        rows.append(CrossRow(line, masks, gbps, op, size))
    return rows


def parse_cross_csv(text: str, source: str = "<csv>") -> dict[tuple[int, ...], float]:
    """Cross-host bandwidths keyed by the per-node GPU counts of each mapping
    (:func:`parse_cross_rows`); repeated keys are averaged.

    Returns ``{counts: GB/s}`` where ``counts[j]`` is the number of GPUs on node ``j`` of
    the mapping.

    Examples
    --------
    >>> parse_cross_csv(",".join(CROSS_HEADER) + '\\nag,3,"[[0,1],[4],[]]",16777216,40\\n')
    {(2, 1, 0): 40.0}
    """
    samples: dict[tuple[int, ...], list[float]] = {}
    for row in parse_cross_rows(text, source):
        samples.setdefault(row.counts, []).append(row.gbps)
    return _average(samples)


def parse_topology(text: str, source: str = "<topology>") -> tuple[tuple[str, ...], ...]:
    """The GPU-to-GPU link matrix of ``nvidia-smi topo -m`` output.

    Accepts the raw terminal output (tab/space separated, with NIC rows, affinity columns and
    the legend) and Markdown tables. Rows are the lines whose first cell is ``GPU<i>`` and
    that contain the self entry ``X``; the first ``n`` link cells of each are kept.

    Examples
    --------
    >>> m = parse_topology("\\tGPU0\\tGPU1\\tCPU Affinity\\nGPU0\\t X \\tNV2\\t0-7\\n"
    ...                    "GPU1\\tNV2\\t X \\t0-7\\n\\nLegend:\\n  X    = Self\\n")
    >>> m
    (('X', 'NV2'), ('NV2', 'X'))
    """
    rows: list[list[str]] = []
    for raw in text.splitlines():
        cells = [
            c.strip() for c in (raw.strip().strip("|").split("|") if "|" in raw else raw.split())
        ]
        cells = [c for c in cells if c]
        if len(cells) < 2 or not re.fullmatch(r"GPU\d+", cells[0]) or "X" not in cells[1:]:
            continue
        rows.append(cells)
    n = len(rows)
    if n == 0:
        raise InvalidInstanceError(source, "no GPU rows (lines 'GPU<i> ... X ...') found")
    matrix = []
    for i, cells in enumerate(rows):
        if cells[0] != f"GPU{i}":
            raise InvalidInstanceError(source, f"row {i} is {cells[0]}, expected GPU{i}")
        links = cells[1 : n + 1]
        bad = [c for c in links if not LINK_PATTERN.match(c)]
        if len(links) < n or bad:
            raise InvalidInstanceError(
                source,
                f"row GPU{i} must start with {n} link types (X, NV#, PIX, PXB, PHB, "
                f"NODE, SYS); got {links}",
            )
        if links[i] != "X":
            raise InvalidInstanceError(source, f"row GPU{i} must have X on the diagonal")
        matrix.append(tuple("SYS" if c == "SOC" else c for c in links))
    for i in range(n):
        for j in range(n):
            if matrix[i][j] != matrix[j][i]:
                raise InvalidInstanceError(
                    source,
                    f"matrix is not symmetric: GPU{i}-GPU{j} {matrix[i][j]} vs "
                    f"GPU{j}-GPU{i} {matrix[j][i]}",
                )
    return tuple(matrix)


def load_path(path: str, files: FileAccess | None, field: str) -> tuple[Path, str]:
    """Read the file ``path`` as ``files`` allows (errors name ``field``).

    ``files`` is the access of the instance that names the file (relative to its folder,
    nothing outside it unless allowed); ``None`` means a path given in code by the caller,
    read from anywhere (relative to the working directory). Either way only a regular,
    size-capped UTF-8 file is read.
    """
    return (files or FileAccess(allow=True)).read_text(path, field)


def read_intra_csv(
    path: str | PathLike[str], files: FileAccess | None = None, field: str | None = None
) -> dict[int, float]:
    """:func:`parse_intra_csv` of the file ``path`` (read as :func:`load_path` says; an
    unreadable file is an error naming ``field``, by default the path)."""
    file, content = load_path(str(path), files, field or str(path))
    return parse_intra_csv(content, str(file))


def read_cross_csv(
    path: str | PathLike[str], files: FileAccess | None = None, field: str | None = None
) -> dict[tuple[int, ...], float]:
    """:func:`parse_cross_csv` of the file ``path`` (paths as in :func:`read_intra_csv`)."""
    file, content = load_path(str(path), files, field or str(path))
    return parse_cross_csv(content, str(file))


def read_cross_rows(
    path: str | PathLike[str],
    files: FileAccess | None = None,
    field: str | None = None,
    *,
    exact_columns: bool = False,
) -> list[CrossRow]:
    """:func:`parse_cross_rows` of the file ``path`` (paths as in :func:`read_intra_csv`)."""
    file, content = load_path(str(path), files, field or str(path))
    return parse_cross_rows(content, str(file), exact_columns=exact_columns)


def read_topology(
    path: str | PathLike[str], files: FileAccess | None = None, field: str | None = None
) -> tuple[tuple[str, ...], ...]:
    """:func:`parse_topology` of the file ``path`` (paths as in :func:`read_intra_csv`)."""
    file, content = load_path(str(path), files, field or str(path))
    return parse_topology(content, str(file))


__all__ = [
    "CROSS_COLUMNS",
    "CROSS_HEADER",
    "INTRA_COLUMNS",
    "CrossRow",
    "load_path",
    "parse_cross_csv",
    "parse_cross_rows",
    "parse_intra_csv",
    "parse_topology",
    "read_cross_csv",
    "read_cross_rows",
    "read_intra_csv",
    "read_text",
    "read_topology",
]
