"""A GPU pool from a real cluster: host names, host types, measured tables or ``nvidia-smi
topo -m`` matrices, and the idle GPUs as a hostlist-like expression (issue #15).

:func:`from_cluster` builds a :class:`~topoopt.gpuselect.instance.GpuSelectInstance` from
what a scheduler or an operator has at hand:

* the hosts: a Slurm hostlist expression (``node[01-04]``), a list of names, or a mapping of
  hostlist expressions to host types (``{"node[01-04]": "H100", "node05": "V100"}``);
* the bandwidth: nccl-tests per-subset CSV tables by host type
  (:func:`~topoopt.gpuselect.loaders.read_intra_csv`), optionally a cross-host CSV table, or
  ``nvidia-smi topo -m`` matrices by host type or per host
  (:func:`~topoopt.gpuselect.loaders.read_topology`) — or any bandwidth model;
* the idle GPUs: an expression :func:`parse_idle` reads (``node[01-04]:0-7,node05:0,3``), or
  Slurm's own view, ``scontrol show node -d`` output read by :func:`parse_scontrol_nodes`
  (hosts, GPU types and counts, and the GPU indices jobs hold).

:func:`visible_devices` turns a solution back into the ``CUDA_VISIBLE_DEVICES`` value of
every host it uses, and :func:`devices_lines` into the ``host CUDA_VISIBLE_DEVICES=...`` lines
``topoopt solve --hostfile`` writes for this family.

Idle-GPU expressions
--------------------
Items are separated by commas (outside brackets), spaces or ``;``:

* ``HOSTS:GPUS`` — the GPUs ``GPUS`` of every host of the hostlist ``HOSTS`` are idle;
  ``GPUS`` lists indices and ranges (``0-3``, ``5``; brackets allowed: ``[0-3,6]``);
* a bare index or range right after a ``HOSTS:GPUS`` item continues its GPU list, so
  ``node05:0,3`` is GPUs 0 and 3 of ``node05``;
* ``HOSTS`` alone — every GPU of those hosts is idle.

Hosts the expression does not name have no idle GPU; a host named twice gets the union.
``HOSTS`` is a hostlist expression read by ClusterShell (:func:`topoopt.topology.expand`);
a host name made of digits only cannot be written (it would read as a GPU index).
``"@FILE"`` reads the expression from a file (lines joined; ``#`` starts a comment).

Every error is an :class:`~topoopt.core.errors.InvalidInstanceError` naming the parameter
(``idle``, ``hosts``, ``tables.V100``, ``topologies.node01``, ``inter_gbps``) and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.core.text import natural_key
from topoopt.gpuselect.host import Host, type_name
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.loaders import (
    parse_topology,
    read_cross_csv,
    read_intra_csv,
    read_text,
    read_topology,
)
from topoopt.gpuselect.masks import MAX_GPUS_PER_HOST
from topoopt.gpuselect.models import BandwidthModel, BottleneckModel, TableModel, TopologyModel
from topoopt.gpuselect.topologies import builtin_topology

__all__ = [
    "SlurmGpus",
    "devices_lines",
    "format_idle",
    "from_cluster",
    "parse_idle",
    "parse_scontrol_nodes",
    "visible_devices",
]

DEFAULT_GPUS = 8
"""GPUs per host when neither ``gpus``, a topology nor a table says how many."""

Matrix = tuple[tuple[str, ...], ...]
Source = str | PathLike[str]

_GPUS = re.compile(r"\[?\d+(-\d+)?(,\d+(-\d+)?)*\]?")
_SEPARATORS = " \t\r\n;"


# --------------------------------------------------------------------------- hostlists


def _expand(expression: str, field: str) -> list[str]:
    """The host names of a hostlist expression; errors name ``field``."""
    from topoopt.topology import expand

    try:
        return expand(expression)
    except TopooptError as exc:
        raise InvalidInstanceError(field, str(exc)) from None


def _fold(names: Iterable[str]) -> str:
    from topoopt.topology import fold

    return fold(names)


def _by_hostlist(value: Mapping[str, Any], field: str) -> list[tuple[str, Any]]:
    """``(host, value)`` for every host of every hostlist key of ``value`` (a host named by
    two keys is an error)."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        for name in _expand(v.as_str(key, field), v.join(field, key)):
            if name in out:
                raise InvalidInstanceError(field, f"host {name!r} is named by two keys")
            out[name] = item
    return list(out.items())


# --------------------------------------------------------------------------- idle GPUs


def _items(text: str) -> list[str]:
    """``text`` split at commas outside brackets, spaces and ``;``."""
    items, depth, current = [], 0, ""
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise InvalidInstanceError("idle", f"unbalanced ']' in {text!r}")
        if depth == 0 and (char == "," or char in _SEPARATORS):
            items.append(current)
            current = ""
        else:
            current += char
    if depth:
        raise InvalidInstanceError("idle", f"unclosed '[' in {text!r}")
    items.append(current)
    return [item for item in items if item]


def _indices(tokens: Sequence[str], item: str) -> set[int]:
    """The GPU indices of ``0-3``, ``5`` or ``[0-3,6]`` tokens."""
    out: set[int] = set()
    for token in tokens:
        if not _GPUS.fullmatch(token):
            raise InvalidInstanceError(
                "idle", f"{item!r}: GPUs must be indices and ranges (0-3,6), got {token!r}"
            )
        for part in token.strip("[]").split(","):
            low, _, high = part.partition("-")
            first, last = int(low), int(high or low)
            if first > last:
                raise InvalidInstanceError("idle", f"{item!r}: reversed GPU range {part}")
            if last >= MAX_GPUS_PER_HOST:
                raise InvalidInstanceError(
                    "idle", f"{item!r}: GPU {last} out of range (at most {MAX_GPUS_PER_HOST})"
                )
            out.update(range(first, last + 1))
    return out


def _read_spec(spec: str) -> str:
    """``spec``, or the text of the file ``@FILE`` (comments dropped, lines joined)."""
    if not spec.startswith("@"):
        return spec
    text = read_text(Path(spec[1:]), "idle")
    return " ".join(line.split("#", 1)[0] for line in text.splitlines())


def parse_idle(
    spec: str | Mapping[str, Iterable[int] | None], gpus: Mapping[str, int]
) -> dict[str, tuple[int, ...]]:
    """The idle GPUs of every host of ``gpus`` (host name -> its number of GPUs).

    Parameters
    ----------
    spec
        An idle-GPU expression (module docstring), ``"@FILE"``, or a mapping of hostlist
        expressions to GPU indices (``None``: every GPU of those hosts).
    gpus
        The hosts of the pool and their numbers of GPUs.

    Returns
    -------
    dict
        Every host of ``gpus``, in its order, with its idle indices sorted (``()`` when the
        expression does not name it).

    Raises
    ------
    InvalidInstanceError
        ``idle: ...`` for an unknown host, an index out of range, a GPU list without a host,
        a malformed item.

    Examples
    --------
    >>> hosts = {"node01": 8, "node02": 8, "node05": 4}
    >>> parse_idle("node[01-02]:4-7,node05:0,3", hosts)
    {'node01': (4, 5, 6, 7), 'node02': (4, 5, 6, 7), 'node05': (0, 3)}
    >>> parse_idle("node01 node05:[1-2]", hosts)["node01"]
    (0, 1, 2, 3, 4, 5, 6, 7)
    >>> parse_idle("node05:4", hosts)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topoopt.core.errors.InvalidInstanceError: idle: 'node05:4': GPU 4 out of range: host ...
    """
    idle: dict[str, set[int]] = {name: set() for name in gpus}
    if isinstance(spec, Mapping):
        for name, listed in _by_hostlist(spec, "idle"):
            _check_host(name, gpus, repr(name))
            where = v.join("idle", name)
            indices = range(gpus[name]) if listed is None else v.as_tuple(listed, where)
            for j, raw in enumerate(indices):
                index = v.as_int(raw, v.join(where, j), minimum=0)
                _check_index(name, index, gpus, f"{name}:{index}")
                idle[name].add(index)
        return {name: tuple(sorted(found)) for name, found in idle.items()}
    if not isinstance(spec, str):
        raise InvalidInstanceError(
            "idle", f"must be an expression or a mapping of hosts to GPUs, got {spec!r}"
        )
    entries: list[tuple[str, list[str] | None, str]] = []
    for item in _items(_read_spec(spec)):
        if ":" in item:
            hosts, _, listed = item.partition(":")
            if not hosts or not listed:
                raise InvalidInstanceError(
                    "idle", f"{item!r}: write HOSTS:GPUS (e.g. node[01-04]:0-7)"
                )
            entries.append((hosts, [listed], item))
        elif _GPUS.fullmatch(item):
            if not entries or entries[-1][1] is None:
                raise InvalidInstanceError(
                    "idle",
                    f"{item!r} is a GPU list without a host (write HOST:GPUS, e.g. n1:{item})",
                )
            entries[-1][1].append(item)
        else:
            entries.append((item, None, item))
    if not entries:
        raise InvalidInstanceError("idle", "names no host (an empty expression)")
    for hosts, listed, item in entries:
        text = item if listed is None else f"{hosts}:{','.join(listed)}"
        for name in _expand(hosts, "idle"):
            _check_host(name, gpus, repr(text))
            if listed is None:
                idle[name].update(range(gpus[name]))
                continue
            for index in sorted(_indices(listed, text)):
                _check_index(name, index, gpus, text)
                idle[name].add(index)
    return {name: tuple(sorted(found)) for name, found in idle.items()}


def _check_host(name: str, gpus: Mapping[str, int], where: str) -> None:
    if name not in gpus:
        shown = _fold(gpus) if gpus else "none"
        raise InvalidInstanceError(
            "idle", f"{where}: host {name!r} is not in the pool (hosts: {shown})"
        )


def _check_index(name: str, index: int, gpus: Mapping[str, int], where: str) -> None:
    if index >= gpus[name]:
        raise InvalidInstanceError(
            "idle",
            f"{where!r}: GPU {index} out of range: host {name!r} has GPUs 0..{gpus[name] - 1}",
        )


def _ranges(indices: Iterable[int]) -> str:
    """``0-3,6`` for ``[0, 1, 2, 3, 6]``."""
    parts: list[str] = []
    run: list[int] = []
    for i in sorted(set(indices)):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [i]
    if run:
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(parts)


def format_idle(idle: Mapping[str, Iterable[int]], gpus: Mapping[str, int] | None = None) -> str:
    """The idle-GPU expression of ``idle`` (inverse of :func:`parse_idle`).

    Hosts with the same idle GPUs are folded into one hostlist; a host whose GPUs are all idle
    (per ``gpus``) is written alone; hosts with no idle GPU are left out.

    Examples
    --------
    >>> idle = {"n1": [0, 1, 2, 3], "n2": [0, 1, 2, 3], "n3": [5, 7], "n4": [], "n5": range(8)}
    >>> format_idle(idle, {"n5": 8})
    'n[1-2]:0-3,n3:5,7,n5'
    """
    groups: dict[tuple[int, ...] | None, list[str]] = {}
    for name, listed in idle.items():
        indices = tuple(sorted(set(listed)))
        if not indices:
            continue
        whole = gpus is not None and name in gpus and indices == tuple(range(gpus[name]))
        groups.setdefault(None if whole else indices, []).append(name)
    items: list[str] = []
    for shared, names in groups.items():
        for hostlist in _items(_fold(names)):
            items.append(hostlist if shared is None else f"{hostlist}:{_ranges(shared)}")
    return ",".join(items)


# --------------------------------------------------------------------------- Slurm

_FIELD = re.compile(r"(\w+)=(\S*)")
_GRES = re.compile(r"gpu(?::([^:(\s]+))?:(\d+)(?:\(([^)]*)\))?$")
FREE_STATES = frozenset({"IDLE", "MIXED"})
"""``scontrol`` node states whose GPUs not held by a job are idle (any flag such as
``+DRAIN``, ``+RESERVED`` or a ``*`` suffix makes every GPU of the node unavailable)."""


@dataclass(frozen=True)
class SlurmGpus:
    """The GPUs of the nodes ``scontrol show node -d`` lists (see
    :func:`parse_scontrol_nodes`): per node its GPU type, count and idle indices."""

    types: dict[str, str]
    gpus: dict[str, int]
    idle: dict[str, tuple[int, ...]]


def _gres_gpu(value: str, where: str) -> tuple[str | None, int, str | None] | None:
    """``(type, count, parenthesised part)`` of the GPU entry of a ``Gres``/``GresUsed``
    value (``gpu:a100:4(S:0-1)``), ``None`` when it has none."""
    entries = [e for e in re.split(r",(?![^(]*\))", value) if e.startswith("gpu")]
    if not entries or value in ("(null)", ""):
        return None
    if len(entries) > 1:
        raise InvalidInstanceError(
            where, f"{value!r}: several GPU entries on one node (a host has one GPU type)"
        )
    match = _GRES.match(entries[0])
    if not match:
        raise InvalidInstanceError(where, f"{entries[0]!r} is not gpu[:TYPE]:COUNT[(...)]")
    return match.group(1), int(match.group(2)), match.group(3)


def parse_scontrol_nodes(
    text: str, source: str = "<scontrol>", *, host_type: str | None = None
) -> SlurmGpus:
    """The GPU nodes of ``scontrol show node -d`` output (one-line ``-o`` records or the
    default multi-line ones).

    A node's GPUs are its ``Gres=gpu[:TYPE]:COUNT`` entry; the indices jobs hold are the
    ``IDX`` list of ``GresUsed=gpu[:TYPE]:N(IDX:0-1,4)`` (printed with ``-d``); the others are
    idle when the node's ``State`` is ``IDLE`` or ``MIXED`` (:data:`FREE_STATES`), none
    otherwise. The host type is the GRES type (``a100``), or ``host_type`` when given (or
    when the GRES has no type). Nodes without GPUs are left out.

    Raises
    ------
    InvalidInstanceError
        Naming ``source:line`` and the rule (no ``IDX`` in ``GresUsed``: run ``scontrol show
        node -d``; several GPU types on one node; an index beyond the node's GPUs).

    Examples
    --------
    >>> out = parse_scontrol_nodes(
    ...     "NodeName=g1 Gres=gpu:a100:4(S:0-1) GresUsed=gpu:a100:2(IDX:0,2) State=MIXED\\n"
    ...     "NodeName=g2 Gres=gpu:a100:4(S:0-1) GresUsed=gpu:a100:0(IDX:N/A) State=IDLE+DRAIN\\n")
    >>> out.types, out.gpus, out.idle
    ({'g1': 'a100', 'g2': 'a100'}, {'g1': 4, 'g2': 4}, {'g1': (1, 3), 'g2': ()})
    """
    records: list[tuple[int, dict[str, str]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        found = dict(_FIELD.findall(line))
        if "NodeName" in found:
            records.append((number, {}))
        if not records:
            if found:
                raise InvalidInstanceError(
                    f"{source}:{number}", "expected a NodeName= record first"
                )
            continue
        for key, value in found.items():
            records[-1][1].setdefault(key, value)
    out = SlurmGpus({}, {}, {})
    declared = None if host_type is None else type_name(host_type, "host_type")
    for number, fields in records:
        where = f"{source}:{number}"
        name = fields["NodeName"]
        gres = _gres_gpu(fields.get("Gres", ""), where)
        if gres is None or gres[1] == 0:
            continue
        kind, count, _ = gres
        if count > MAX_GPUS_PER_HOST:
            raise InvalidInstanceError(
                where, f"node {name!r} has {count} GPUs (at most {MAX_GPUS_PER_HOST})"
            )
        used = _gres_gpu(fields.get("GresUsed", "gpu:0"), where)
        held: set[int] = set()
        if used is not None and used[1] > 0:
            idx = (used[2] or "").removeprefix("IDX:")
            if not used[2] or not used[2].startswith("IDX:"):
                raise InvalidInstanceError(
                    where,
                    f"GresUsed of node {name!r} does not say which GPUs are used (no IDX): "
                    "run scontrol show node -d",
                )
            held = _indices([idx], f"{name} GresUsed")
            if max(held) >= count:
                raise InvalidInstanceError(
                    where, f"node {name!r} uses GPU {max(held)} but has GPUs 0..{count - 1}"
                )
        if name in out.gpus:
            raise InvalidInstanceError(where, f"node {name!r} is listed twice")
        out.types[name] = declared or kind or "gpu"
        out.gpus[name] = count
        free = fields.get("State", "") in FREE_STATES
        out.idle[name] = tuple(i for i in range(count) if free and i not in held)
    if not out.gpus:
        raise InvalidInstanceError(source, "no node with GPUs (Gres=gpu:...) found")
    return out


# --------------------------------------------------------------------------- hosts and models


def _host_types(hosts: Any, host_type: str | None) -> dict[str, str | None]:
    """Host name -> declared type (``None``: not declared), in the order given."""
    if isinstance(hosts, Mapping):
        if host_type is not None:
            raise InvalidInstanceError(
                "host_type", "give the types in the hosts mapping or host_type, not both"
            )
        return {
            name: None if t is None else type_name(t, v.join("hosts", name))
            for name, t in _by_hostlist(hosts, "hosts")
        }
    declared = None if host_type is None else type_name(host_type, "host_type")
    if isinstance(hosts, str):
        names = _expand(hosts, "hosts")
    else:
        names = [v.as_str(n, v.join("hosts", i)) for i, n in enumerate(v.as_tuple(hosts, "hosts"))]
    out: dict[str, str | None] = {}
    for name in names:
        if name in out:
            raise InvalidInstanceError("hosts", f"host {name!r} is listed twice")
        out[name] = declared
    if not out:
        raise InvalidInstanceError("hosts", "names no host")
    return out


def _matrix(source: Any, field: str) -> Matrix:
    """A link matrix from a file path, ``nvidia-smi topo -m`` text or rows of tokens."""
    if isinstance(source, PathLike) or (isinstance(source, str) and "GPU0" not in source):
        return read_topology(source, field=field)
    if isinstance(source, str):
        return parse_topology(source, field)
    rows = v.as_tuple(source, field)
    return tuple(tuple(v.as_str(c, field) for c in v.as_tuple(row, field)) for row in rows)


def _topologies(
    topologies: Mapping[str, Any] | None, types: Mapping[str, str | None]
) -> tuple[dict[str, Matrix], dict[str, tuple[Matrix, str]]]:
    """Split ``topologies`` into matrices by declared type and by host (with the name of
    their source, used as the type of hosts declared without one)."""
    by_type: dict[str, Matrix] = {}
    by_host: dict[str, tuple[Matrix, str]] = {}
    declared = {t for t in types.values() if t is not None}
    for key, source in (topologies or {}).items():
        field = v.join("topologies", v.as_str(key, "topologies"))
        matrix = _matrix(source, field)
        if key in declared:
            by_type[key] = matrix
            continue
        if isinstance(source, (str, PathLike)) and "GPU0" not in str(source):
            label = Path(source).stem or key
        else:
            label = key
        for name in _expand(key, field):
            if name not in types:
                shown = ", ".join(repr(t) for t in sorted(declared)) or "none"
                raise InvalidInstanceError(
                    field,
                    f"host {name!r} is not in the pool and {key!r} is not a host type "
                    f"of it (types: {shown})",
                )
            if name in by_host:
                raise InvalidInstanceError("topologies", f"host {name!r} is named by two keys")
            by_host[name] = (matrix, label)
    return by_type, by_host


def _resolve_types(
    types: Mapping[str, str | None], by_host: Mapping[str, tuple[Matrix, str]]
) -> tuple[dict[str, str], dict[str, Matrix]]:
    """The type of every host and the matrix of every type that has a per-host one.

    A host with a per-host matrix and no declared type takes the type of the first host
    (in pool order) with the same matrix, named after that matrix's file. Hosts of one type
    must share their matrix.
    """
    resolved: dict[str, str] = {}
    matrices: dict[str, Matrix] = {}
    owner: dict[str, str] = {}
    by_matrix: dict[Matrix, str] = {}
    for name, declared in types.items():
        if name in by_host:
            matrix, label = by_host[name]
            if declared is None and matrix not in by_matrix:
                taken = set(by_matrix.values()) | {t for t in types.values() if t}
                unique, n = label, 1
                while unique in taken:
                    n += 1
                    unique = f"{label}-{n}"
                by_matrix[matrix] = unique
            kind = declared or by_matrix[matrix]
            if kind in matrices and matrices[kind] != matrix:
                raise InvalidInstanceError(
                    v.join("topologies", name),
                    f"hosts {owner[kind]!r} and {name!r} are both of type {kind!r} but their "
                    "topologies differ (give them different types)",
                )
            matrices.setdefault(kind, matrix)
            owner.setdefault(kind, name)
            resolved[name] = kind
        elif declared is None:
            raise InvalidInstanceError(
                "hosts",
                f"host {name!r} has no type: give host_type, a mapping of hostlists to types, "
                "or a topology file for it",
            )
        else:
            resolved[name] = declared
    return resolved, matrices


def _tables(tables: Mapping[str, Any]) -> dict[str, Any]:
    """Per host type, the intra tables read (a CSV path, a list of them, or a table)."""

    def read(source: Any, field: str) -> Any:
        if isinstance(source, (str, PathLike)):
            return read_intra_csv(source, field=field)
        if isinstance(source, (list, tuple)):
            return [read(s, v.join(field, i)) for i, s in enumerate(source)]
        return source

    return {
        type_name(t, "tables"): read(src, v.join("tables", str(t))) for t, src in tables.items()
    }


def _width(table: Any) -> int | None:
    """GPUs a per-subset table ``{mask: GB/s}`` covers (the highest index + 1)."""
    if not isinstance(table, Mapping) or not table:
        return None
    masks = [k for k in table if isinstance(k, int)]
    return max(m.bit_length() for m in masks) if masks else None


def _gpus(
    gpus: int | Mapping[str, int] | None,
    types: Mapping[str, str],
    matrices: Mapping[str, Matrix],
    intra: Mapping[str, Any],
) -> dict[str, int]:
    """GPUs of every host: ``gpus``, else its matrix, its table, else :data:`DEFAULT_GPUS`."""
    if isinstance(gpus, Mapping):
        given = dict(_by_hostlist(gpus, "gpus"))
        unknown = sorted(set(given) - set(types), key=natural_key)
        if unknown:
            raise InvalidInstanceError("gpus", f"host {unknown[0]!r} is not in the pool")
    elif gpus is not None:
        given = dict.fromkeys(types, v.as_int(gpus, "gpus", minimum=1))
    else:
        given = {}
    out = {}
    for name, kind in types.items():
        if name in given:
            out[name] = v.as_int(given[name], v.join("gpus", name), minimum=1)
            continue
        matrix = matrices.get(kind) or builtin_topology(kind)
        width = _width(intra.get(kind))
        out[name] = len(matrix) if matrix else width or DEFAULT_GPUS
    return out


def _model(
    *,
    types: Mapping[str, str],
    intra: Mapping[str, Any] | None,
    matrices: Mapping[str, Matrix],
    cross: Any,
    inter_gbps: float | None,
    gpus_per_nic: int | None,
) -> BandwidthModel:
    """The bandwidth model the inputs describe (see :func:`from_cluster`)."""
    spans = len(types) > 1
    if intra is not None:
        missing = sorted({t for t in types.values() if t not in intra}, key=natural_key)
        if missing:
            hosts = _fold(n for n, t in types.items() if t == missing[0])
            known = ", ".join(repr(t) for t in sorted(intra)) or "none"
            raise InvalidInstanceError(
                "tables",
                f"no bandwidth table for host type {missing[0]!r} (hosts {hosts}); tables are "
                f"given for {known}",
            )
        if inter_gbps is not None:
            if cross is not None:
                raise InvalidInstanceError(
                    "cross", "give a cross-host table or inter_gbps, not both"
                )
            return BottleneckModel(intra=intra, inter_gbps=inter_gbps, gpus_per_nic=gpus_per_nic)
        if cross is None and spans:
            raise InvalidInstanceError(
                "inter_gbps",
                "a pool of several hosts needs the inter-host link (inter_gbps, GB/s) or a "
                "cross-host table (cross)",
            )
        if isinstance(cross, (str, PathLike)):
            cross = read_cross_csv(cross, field="cross")
        return TableModel(intra=intra, cross=cross)
    if cross is not None:
        raise InvalidInstanceError("cross", "a cross-host table needs intra-host tables (tables)")
    if inter_gbps is None and spans:
        raise InvalidInstanceError(
            "inter_gbps",
            "the topology model of a pool of several hosts needs the inter-host link "
            "(inter_gbps, GB/s)",
        )
    return TopologyModel(
        inter_gbps=0.0 if inter_gbps is None else inter_gbps,
        gpus_per_nic=gpus_per_nic,
        topology=dict(matrices),
    )


def from_cluster(
    hosts: str | Iterable[str] | Mapping[str, str | None],
    *,
    k: int,
    idle: str | Mapping[str, Iterable[int] | None] | None = None,
    host_type: str | None = None,
    gpus: int | Mapping[str, int] | None = None,
    tables: Mapping[str, Source | Sequence[Source] | Mapping[Any, float]] | None = None,
    cross: Source | Any = None,
    topologies: Mapping[str, Any] | None = None,
    inter_gbps: float | None = None,
    gpus_per_nic: int | None = None,
    model: BandwidthModel | None = None,
    name: str = "pool",
    cluster: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> GpuSelectInstance:
    """A gpuselect instance on a real cluster: its hosts, their idle GPUs and a bandwidth
    model read from nccl-tests tables or ``nvidia-smi topo -m`` matrices.

    Parameters
    ----------
    hosts
        The hosts, in order: a hostlist expression (``"node[01-04]"``), a sequence of names,
        or a mapping of hostlist expressions to host types (``{"node[01-04]": "H100"}``; a
        type ``None``: the type comes from the host's topology file).
    k
        GPUs requested.
    idle
        The idle GPUs: an expression of :func:`parse_idle` (``"node[01-02]:0-7,node03:0,3"``,
        or ``"@FILE"``) or a mapping of hostlists to indices; ``None``: every GPU is idle.
    host_type
        The type of every host when ``hosts`` is not a mapping.
    gpus
        GPUs per host (one number, or a mapping of hostlists to numbers). Default: the size of
        the host's topology matrix (given, or the built-in one of its type), else the GPUs its
        type's table covers, else 8.
    tables
        Per host type, nccl-tests per-subset CSV files (one path, or a list averaged entry by
        entry; ``data:`` names allowed) or tables ``{mask or "0123": GB/s}``.
    cross
        With ``tables``: a cross-host CSV (or table) keyed by per-host GPU counts.
    topologies
        ``nvidia-smi topo -m`` matrices (a file path, the text, or rows of tokens) keyed by a
        host type of the pool, or by a hostlist for per-host files. A host with a per-host
        matrix and no declared type takes the type of the first host with the same matrix,
        named after its file (``dgx.txt`` -> ``dgx``).
    inter_gbps, gpus_per_nic
        The inter-host link (GB/s) and NIC sharing of
        :class:`~topoopt.gpuselect.models.BottleneckModel` /
        :class:`~topoopt.gpuselect.models.TopologyModel`.
    model
        A bandwidth model to use as it is (instead of ``tables``/``topologies``).
    name, cluster, labels
        As for :class:`~topoopt.gpuselect.instance.GpuSelectInstance`.

    Notes
    -----
    The model: ``model`` when given; with ``tables``, a bottleneck model when ``inter_gbps``
    is given, else a table model (with the ``cross`` table; a single host needs neither);
    otherwise a topology model of the given (or built-in Appendix E) matrices, ``inter_gbps``
    being required for several hosts. Tables and topologies do not mix in one pool.

    Raises
    ------
    InvalidInstanceError
        Naming the parameter (``idle``, ``hosts``, ``tables``, ``topologies.<key>``,
        ``inter_gbps``, ``gpus``) or the instance's field (``k``) and the rule.

    Examples
    --------
    >>> inst = from_cluster("node[01-03]", host_type="H100", idle="node01:0-3,node03:4,6",
    ...                     k=4, inter_gbps=12.5)
    >>> [(h.name, h.available) for h in inst.hosts]
    [('node01', (0, 1, 2, 3)), ('node02', ()), ('node03', (4, 6))]
    >>> inst.bandwidth.kind
    'topology'
    """
    types = _host_types(hosts, host_type)
    if model is not None and (tables is not None or topologies is not None or cross is not None):
        raise InvalidInstanceError("model", "give a model or tables/topologies, not both")
    if tables is not None and topologies is not None:
        raise InvalidInstanceError(
            "topologies", "give nccl-tests tables or topology matrices for a pool, not both"
        )
    by_type, by_host = _topologies(topologies, types)
    resolved, matrices = _resolve_types(types, by_host)
    for kind, matrix in by_type.items():
        if kind in matrices and matrices[kind] != matrix:
            raise InvalidInstanceError(
                v.join("topologies", kind),
                f"hosts of type {kind!r} also have a per-host topology that differs",
            )
        matrices[kind] = matrix
    if model is None:
        model = _model(
            types=resolved,
            intra=None if tables is None else _tables(tables),
            matrices=matrices,
            cross=cross,
            inter_gbps=inter_gbps,
            gpus_per_nic=gpus_per_nic,
        )
    counts = _gpus(gpus, resolved, matrices, getattr(model, "intra", {}))
    available = None if idle is None else parse_idle(idle, counts)
    pool = [
        Host(n, resolved[n], counts[n], None if available is None else available[n])
        for n in resolved
    ]
    return GpuSelectInstance(name, k, pool, model, cluster=cluster, labels=labels)


# --------------------------------------------------------------------------- output


def visible_devices(selection: Any) -> dict[str, str]:
    """The ``CUDA_VISIBLE_DEVICES`` value of every host a selection uses.

    Parameters
    ----------
    selection
        A :class:`~topoopt.gpuselect.solution.Selection`, a result holding one, or
        ``(host, index)`` pairs (the ``gpus`` of the solution's JSON).

    Returns
    -------
    dict
        Host -> comma-separated local indices, ascending; hosts in the order they first
        appear.

    Examples
    --------
    >>> visible_devices([("n1", 5), ("n0", 3), ("n1", 4)])
    {'n1': '4,5', 'n0': '3'}
    """
    pairs = getattr(selection, "solution", selection)
    pairs = getattr(pairs, "gpus", pairs)
    grouped: dict[str, list[int]] = {}
    for host, index in pairs:
        grouped.setdefault(str(host), []).append(int(index))
    return {h: ",".join(str(i) for i in sorted(set(ix))) for h, ix in grouped.items()}


def devices_lines(selection: Any) -> list[str]:
    """``host CUDA_VISIBLE_DEVICES=...`` per used host (what ``topoopt solve --hostfile``
    writes for a gpuselect solution).

    Examples
    --------
    >>> devices_lines([("n0", 0), ("n0", 1), ("n2", 7)])
    ['n0 CUDA_VISIBLE_DEVICES=0,1', 'n2 CUDA_VISIBLE_DEVICES=7']
    """
    return [f"{h} CUDA_VISIBLE_DEVICES={d}" for h, d in visible_devices(selection).items()]
