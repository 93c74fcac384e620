"""Readers and validators of the fields of a model's JSON object (``bandwidth.<field>``),
shared by the model kinds: each normalises one field and raises
:class:`~topoopt.core.errors.InvalidInstanceError` naming its JSON path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from topoopt.core import limits
from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.safejson import FileAccess
from topoopt.gpuselect.host import Host, type_name
from topoopt.gpuselect.loaders import parse_topology, read_intra_csv
from topoopt.gpuselect.masks import MAX_GPUS_PER_HOST, format_mask, parse_mask
from topoopt.gpuselect.models.base import Matrix

IntraTable = Mapping[int, float]
"""One host type's intra-host bandwidths: GPU-subset mask -> GB/s."""

CrossTable = Mapping[tuple[int, ...], float]
"""Cross-host bandwidths: per-host GPU counts -> GB/s."""

IntraInput = (
    Mapping[int, float] | Mapping[str, float] | Sequence[Mapping[int, float] | Mapping[str, float]]
)
"""What the constructors accept as one intra table: keyed by mask or nccl-tests name
(``"0123"``), or a list of such tables (averaged entry by entry)."""

CrossInput = (
    Mapping[tuple[int, ...], float] | Sequence[Mapping[str, Any] | tuple[Sequence[int], float]]
)
"""What :class:`TableModel` accepts as a cross table: ``{counts: GB/s}``, or a list of
``{"counts": [...], "gbps": x}`` objects or ``(counts, GB/s)`` pairs."""


def _key(path: str, key: Any) -> str:
    """``path`` extended by the mapping key ``key``: ``path.key``, or ``path['key']`` (the
    key's ``repr``) when it holds a character that is not printable (a newline, a control
    character), so that an error message stays on one line.

    Examples
    --------
    >>> _key("bandwidth.intra", "H100"), _key("bandwidth.intra", "H1\\n00")
    ('bandwidth.intra.H100', "bandwidth.intra['H1\\\\n00']")
    """
    text = str(key)
    return v.join(path, text) if text.isprintable() else f"{path}[{text!r}]"


def _size(value: Any) -> int:
    """Entries of one table-like input: the length of a mapping or a list, else 0 (the
    readers refuse it with a named error)."""
    if isinstance(value, (Mapping, list, tuple)):
        return len(value)
    return 0


def _intra_entries(value: Any) -> int:
    """Entries of an ``intra`` input (every table of every type; lists of tables summed)."""
    if not isinstance(value, Mapping):
        return 0
    total = 0
    for table in value.values():
        if isinstance(table, (list, tuple)):
            total += sum(_size(part) for part in table)
        else:
            total += _size(table)
    return total


def _matrix_entries(value: Any) -> int:
    """Cells of a ``topology`` input given as rows (text is bounded by its length)."""
    if not isinstance(value, Mapping):
        return 0
    return sum(
        sum(_size(row) for row in matrix) if isinstance(matrix, (list, tuple)) else 0
        for matrix in value.values()
    )


def _links_entries(value: Any) -> int:
    """Overrides of a ``links`` input (per-type objects counted by their links)."""
    if not isinstance(value, Mapping):
        return 0
    return sum(_size(x) if isinstance(x, Mapping) else 1 for x in value.values())


def _check_entries(entries: int) -> None:
    """Refuse a model with more entries than the limit ``gpuselect_table_entries``, before its
    tables are read."""
    limits.check("gpuselect_table_entries", entries, "bandwidth", f"{entries} table entries")


def _mask(key: Any, path: str) -> int:
    """A table key: a mask (integer >= 1) or its nccl-tests name (``"0123"``, ``"0,1,12"``)."""
    if isinstance(key, str):
        try:
            return parse_mask(key)
        except ValueError as exc:
            raise InvalidInstanceError(path, str(exc)) from None
    mask = v.as_int(key, path, minimum=1)
    if mask >= 1 << MAX_GPUS_PER_HOST:
        raise InvalidInstanceError(path, f"mask {mask} names a GPU index >= {MAX_GPUS_PER_HOST}")
    return mask


def _intra_table(value: Any, path: str) -> dict[int, float]:
    """One intra table: ``{mask or "0123": GB/s}``, or a list of tables averaged entry by entry
    (e.g. two measured hosts of one type)."""
    if isinstance(value, Mapping):
        table: dict[int, float] = {}
        for key, gbps in value.items():
            mask = _mask(key, _key(path, key))
            where = _key(path, key if isinstance(key, str) else format_mask(mask))
            if mask in table:
                raise InvalidInstanceError(
                    where, f"GPUs {format_mask(mask)!r} are listed twice in this table"
                )
            table[mask] = _gbps(gbps, where)
        return table
    if isinstance(value, (str, bytes)):
        raise InvalidInstanceError(
            path,
            f"must be a table {{GPUs: GB/s}} or a list of tables, got {value!r} (a CSV "
            "path is read by from_dict; in code use topoopt.gpuselect.loaders.read_intra_csv)",
        )
    parts = [
        _intra_table(part, v.join(path, i))
        for i, part in enumerate(v.as_tuple(value, path, min_len=1))
    ]
    keys = sorted(set().union(*parts))
    return {m: sum(p[m] for p in parts if m in p) / sum(m in p for p in parts) for m in keys}


def _intra_tables(value: Any, path: str = "bandwidth.intra") -> dict[str, dict[int, float]]:
    """Intra tables by host type (the ``intra`` field of table and bottleneck models)."""
    out: dict[str, dict[int, float]] = {}
    for raw_type, table in v.as_mapping(value, path).items():
        where = _key(path, raw_type)
        name = type_name(raw_type, where)
        if name in out:
            raise InvalidInstanceError(where, f"host type {name!r} is listed twice")
        out[name] = _intra_table(table, where)
    return out


def _cross_table(value: Any, path: str = "bandwidth.cross") -> dict[tuple[int, ...], float] | None:
    """A cross table: ``{counts: GB/s}`` or a list of ``{"counts": [...], "gbps": x}`` objects or
    ``(counts, gbps)`` pairs; repeated counts are samples of one entry and are averaged."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise InvalidInstanceError(
            path,
            f"must be a cross table, got {value!r} (a CSV path is read by from_dict; in "
            "code use topoopt.gpuselect.loaders.read_cross_csv)",
        )
    entries: list[tuple[Any, Any]] = []
    if isinstance(value, Mapping):
        entries = list(value.items())
    else:
        for i, row in enumerate(v.as_tuple(value, path)):
            where = v.join(path, i)
            if isinstance(row, Mapping):
                entries.append((v.field(row, "counts", where), v.field(row, "gbps", where)))
            elif isinstance(row, Sequence) and not isinstance(row, str) and len(row) == 2:
                entries.append((row[0], row[1]))
            else:
                raise InvalidInstanceError(
                    where, f'must be {{"counts": [...], "gbps": x}} or a pair, got {row!r}'
                )
    samples: dict[tuple[int, ...], list[float]] = {}
    for i, (counts, gbps) in enumerate(entries):
        where = v.join(path, i)
        raw = v.as_tuple(counts, v.join(where, "counts"), min_len=1)
        key = tuple(
            v.as_int(c, v.join(where, f"counts[{j}]"), minimum=0) for j, c in enumerate(raw)
        )
        samples.setdefault(key, []).append(_gbps(gbps, v.join(where, "gbps")))
    return {key: sum(vals) / len(vals) for key, vals in samples.items()}


def _matrix(value: Any, path: str) -> Matrix:
    """A link matrix: ``nvidia-smi topo -m`` text or rows of link tokens."""
    if isinstance(value, str):
        matrix = parse_topology(value, path)
        if len(matrix) > MAX_GPUS_PER_HOST:
            raise InvalidInstanceError(
                path, f"matrix has {len(matrix)} GPUs; a host has at most {MAX_GPUS_PER_HOST}"
            )
        return matrix
    rows = v.as_tuple(value, path, min_len=1)
    if len(rows) > MAX_GPUS_PER_HOST:
        raise InvalidInstanceError(
            path, f"matrix has {len(rows)} rows; a host has at most {MAX_GPUS_PER_HOST} GPUs"
        )
    lines = [
        f"GPU{i} " + " ".join(str(c) for c in v.as_tuple(row, v.join(path, i)))
        for i, row in enumerate(rows)
    ]
    matrix = parse_topology("\n".join(lines), path)
    if len(matrix) != len(rows):
        raise InvalidInstanceError(
            path,
            f"must be a square matrix of link types with X on the diagonal; "
            f"{len(rows)} rows given, {len(matrix)} read",
        )
    return matrix


def _matrices(value: Any, path: str = "bandwidth.topology") -> dict[str, Matrix]:
    """Link matrices by host type (the ``topology`` field of the topology model)."""
    out: dict[str, Matrix] = {}
    for raw_type, matrix in v.as_mapping(value, path).items():
        where = _key(path, raw_type)
        name = type_name(raw_type, where)
        if name in out:
            raise InvalidInstanceError(where, f"host type {name!r} is listed twice")
        out[name] = _matrix(matrix, where)
    return out


def _links(value: Any, path: str = "bandwidth.links") -> dict[str, float | dict[str, float]]:
    """Link bandwidth overrides: ``{link: GB/s}`` for all types, ``{type: {link: GB/s}}``."""
    out: dict[str, float | dict[str, float]] = {}
    for key, val in v.as_mapping(value, path).items():
        where = _key(path, key)
        name = v.as_str(key, where)
        if isinstance(val, Mapping):
            out[name] = {
                v.as_str(link, where): _gbps(gbps, _key(where, link)) for link, gbps in val.items()
            }
        else:
            out[name] = _gbps(val, where)
    return out


def _gbps(value: Any, path: str) -> float:
    """A bandwidth: a finite number >= 0 as a ``float`` (errors worded as the schema's)."""
    number = v.as_float(value, path)
    if number < 0:
        raise InvalidInstanceError(path, f"must be non-negative, got {value!r}")
    return number


def _inter_gbps(value: Any) -> float:
    return _gbps(value, "bandwidth.inter_gbps")


def _gpus_per_nic(value: Any) -> int | None:
    if value is None:
        return None
    number = v.as_number(value)
    integral = isinstance(number, int) or (isinstance(number, float) and number.is_integer())
    if isinstance(number, bool) or not integral:
        raise InvalidInstanceError(
            "bandwidth.gpus_per_nic", f"must be an integer or null, got {value!r}"
        )
    return v.as_int(number, "bandwidth.gpus_per_nic", minimum=1)


def _dense(table: Mapping[int, float], gpus: int) -> np.ndarray:
    out = np.full(1 << gpus, np.nan)
    for mask, value in table.items():
        if mask < len(out):
            out[mask] = value
    return out


def _max_gpus(hosts: Sequence[Host]) -> int:
    return max(h.gpus for h in hosts)


def _intra_arrays(intra: Mapping[str, IntraTable], hosts: Sequence[Host]) -> dict[str, np.ndarray]:
    """Dense intra tables of the hosts' types (an error names a type without a table)."""
    for i, h in enumerate(hosts):
        if h.type not in intra:
            known = ", ".join(repr(t) for t in sorted(intra)) or "none"
            raise InvalidInstanceError(
                "bandwidth.intra",
                f"no table for host type {h.type!r} of hosts[{i}] "
                f"({h.name!r}); tables given for: {known}",
            )
    width = _max_gpus(hosts)
    return {t: _dense(intra[t], width) for t in {h.type for h in hosts}}


def _intra_json(intra: Mapping[str, IntraTable]) -> dict[str, dict[str, float]]:
    return {t: {format_mask(m): gbps for m, gbps in table.items()} for t, table in intra.items()}


def _short(value: Any) -> str:
    """``repr`` of a field with its tables and matrices summarised (``<255 entries>``)."""
    if isinstance(value, Mapping) and value and all(isinstance(x, Mapping) for x in value.values()):
        return "{" + ", ".join(f"{k!r}: <{len(x)} entries>" for k, x in value.items()) + "}"
    if isinstance(value, Mapping) and value and all(isinstance(k, tuple) for k in value):
        return f"<{len(value)} entries>"
    if isinstance(value, Mapping) and value and all(isinstance(x, tuple) for x in value.values()):
        return "{" + ", ".join(f"{k!r}: <{len(x)}x{len(x)} matrix>" for k, x in value.items()) + "}"
    return repr(value)


def _read_intra_sources(raw: Any, files: FileAccess | None, path: str) -> Any:
    """The JSON ``intra`` object with every CSV path (alone or in a list) read into a table."""
    if not isinstance(raw, Mapping):
        return raw

    def read(source: Any, where: str) -> Any:
        if isinstance(source, str):
            return read_intra_csv(source, files or FileAccess(), where)
        if isinstance(source, list):
            return [read(s, v.join(where, i)) for i, s in enumerate(source)]
        return source

    return {t: read(src, _key(path, t)) for t, src in raw.items()}
