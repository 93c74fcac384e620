"""Bandwidth models ``B(S)``: the objective of the family, as pluggable objects.

BandPilot treats ``B`` as a black box (§3.2). topoopt ships four kinds:

* :class:`TableModel` — measurements: per host type the bandwidth of every intra-host subset
  (nccl-tests tables, the paper's Stage-1 dictionaries, §4.2.1) and an optional cross-host
  table keyed by the per-host GPU counts of ``S``;
* :class:`BottleneckModel` — the paper's simulator (§5.1.1): the minimum of the measured
  intra-host bandwidths of the touched hosts and the inter-host link bandwidth, optionally
  reduced by NIC sharing on the most loaded host;
* :class:`TopologyModel` — the same bottleneck, its intra-host terms derived from an
  ``nvidia-smi topo -m`` matrix as the bottleneck link of the best ring;
* :class:`CallableModel` — any Python callable ``S -> GB/s`` (e.g. a learned surrogate).

The first three are *structured*: ``B(S) = min(min_h intra_h(S ∩ h), inter(counts(S)))`` where
the inter term depends only on how many GPUs ``S`` takes from each host. For ``S`` inside one
host ``B(S) = intra_h(S)``; when ``S`` spans two or more hosts, hosts contributing a single
GPU impose no intra term. Exact solvers (MIP, fast oracle) exploit that structure.

A model is *bound* to the hosts of an instance (:meth:`BandwidthModel.bind`), giving a
:class:`BoundModel` that evaluates one subset (:meth:`BoundModel.value`, the plain reference)
or a batch of them (:meth:`BoundModel.batch`, vectorised; heuristics use it). A subset is one
bitmask of local indices per host (:mod:`topoopt.gpuselect.masks`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.loaders import load_path, parse_cross_csv, parse_intra_csv, parse_topology
from topoopt.gpuselect.masks import POPCOUNT, format_mask, indices_of, parse_mask, popcount
from topoopt.gpuselect.topologies import (
    LinkMatrix,
    builtin_topology,
    default_link_gbps,
    ring_bandwidths,
)


class MissingEntryError(TopooptError, LookupError):
    """A measurement table has no entry for a subset whose bandwidth was asked for."""

    def __str__(self) -> str:
        return str(self.args[0])


class BoundModel(ABC):
    """A bandwidth model bound to the hosts of one instance."""

    def __init__(self, hosts: Sequence[Host]) -> None:
        self.hosts = tuple(hosts)

    @abstractmethod
    def value(self, masks: Sequence[int]) -> float:
        """``B(S)`` of the subset given by one mask per host (the reference evaluation)."""

    def batch(self, masks: np.ndarray) -> np.ndarray:
        """``B`` of every row of ``masks`` (shape ``(n, hosts)``); vectorised when possible."""
        return np.array([self.value(row) for row in np.asarray(masks, dtype=np.int64)])

    def pairs(self, masks: Sequence[int]) -> list[tuple[str, int]]:
        """The subset as ``(host name, local index)`` pairs in host order."""
        return [(h.name, i) for h, m in zip(self.hosts, masks, strict=True)
                for i in indices_of(int(m))]


class BandwidthModel(ABC):
    """A bandwidth model: JSON round-trip and binding to an instance's hosts."""

    kind: ClassVar[str]

    @abstractmethod
    def bind(self, hosts: Sequence[Host]) -> BoundModel:
        """Check the model covers ``hosts`` and return the evaluator for them."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the model (``{"model": kind, ...}``)."""

    def host_topology(self, host_type: str) -> tuple[tuple[str, ...], ...] | None:
        """The link matrix the model knows for ``host_type`` (default: Appendix E)."""
        return builtin_topology(host_type)


# --------------------------------------------------------------------------- structured


class StructuredBound(BoundModel):
    """``B(S) = min(min over touched hosts of intra, inter(counts))`` (module docstring).

    Parameters
    ----------
    hosts
        The instance's hosts.
    tables
        Per host type, an array over all masks of the intra-host bandwidth (``nan`` where the
        table has no entry).
    """

    def __init__(self, hosts: Sequence[Host], tables: Mapping[str, np.ndarray]) -> None:
        super().__init__(hosts)
        types = sorted({h.type for h in self.hosts})
        width = max(len(tables[t]) for t in types)
        self.type_names = types
        self.tables = np.full((len(types), width), np.nan)
        for row, t in enumerate(types):
            self.tables[row, : len(tables[t])] = tables[t]
        self.type_index = np.array([types.index(h.type) for h in self.hosts], dtype=np.int64)

    # -- intra terms
    def intra(self, host: int, mask: int) -> float:
        """Intra-host bandwidth of ``mask`` on host number ``host`` (raises when missing)."""
        value = float(self.tables[self.type_index[host], mask])
        if math.isnan(value):
            h = self.hosts[host]
            raise MissingEntryError(
                f"bandwidth table of host type {h.type!r} has no entry for GPUs "
                f"{format_mask(mask)!r} (host {h.name!r})"
            )
        return value

    # -- inter term
    @abstractmethod
    def inter(self, counts: Sequence[int]) -> float:
        """Inter-host term for per-host GPU counts ``counts`` spanning >= 2 hosts."""

    @abstractmethod
    def inter_batch(self, counts: np.ndarray) -> np.ndarray:
        """:meth:`inter` of every row of ``counts`` (``nan`` where undefined)."""

    def value(self, masks: Sequence[int]) -> float:
        used = [(h, int(m)) for h, m in enumerate(masks) if m]
        if not used:
            return 0.0
        if len(used) == 1:
            return self.intra(*used[0])
        terms = [self.intra(h, m) for h, m in used if popcount(m) >= 2]
        terms.append(self.inter([popcount(int(m)) for m in masks]))
        return min(terms)

    def batch(self, masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks, dtype=np.int64)
        counts = POPCOUNT[masks]
        vals = self.tables[self.type_index[None, :], masks]
        used = counts > 0
        n_used = used.sum(axis=1)
        spanning = n_used >= 2
        multi = np.where(counts >= 2, vals, np.inf).min(axis=1, initial=np.inf)
        single = np.where(used, vals, np.inf).min(axis=1, initial=np.inf)
        out = np.where(spanning, multi, single)
        if spanning.any():
            out[spanning] = np.minimum(out[spanning], self.inter_batch(counts[spanning]))
        out[n_used == 0] = 0.0
        bad = np.flatnonzero(np.isnan(out))
        if bad.size:
            self.value(masks[bad[0]])  # raises MissingEntryError naming the entry
        return out


class CapBound(StructuredBound):
    """Inter term ``inter_gbps * min(1, gpus_per_nic / max_h c_h)`` (bottleneck, topology).

    Without NIC sharing (``gpus_per_nic=None``) the inter term is ``inter_gbps``.
    """

    def __init__(self, hosts: Sequence[Host], tables: Mapping[str, np.ndarray],
                 inter_gbps: float, gpus_per_nic: int | None) -> None:
        super().__init__(hosts, tables)
        self.inter_gbps = inter_gbps
        self.gpus_per_nic = gpus_per_nic

    def cap(self, count: int) -> float:
        """Inter-host bandwidth when the most loaded host contributes ``count`` GPUs."""
        if self.gpus_per_nic is None or count <= self.gpus_per_nic:
            return self.inter_gbps
        return self.inter_gbps * self.gpus_per_nic / count

    def inter(self, counts: Sequence[int]) -> float:
        return self.cap(max(counts))

    def inter_batch(self, counts: np.ndarray) -> np.ndarray:
        if self.gpus_per_nic is None:
            return np.full(len(counts), self.inter_gbps)
        top = counts.max(axis=1).astype(float)
        return self.inter_gbps * np.minimum(1.0, self.gpus_per_nic / np.maximum(top, 1.0))


class ProfileBound(StructuredBound):
    """Inter term looked up in a cross-host table keyed by per-host GPU counts.

    With ``interchangeable`` hosts the key is the count profile sorted in decreasing order
    without zeros; otherwise the full count vector in host order. ``profiles=None`` means no
    cross-host table: subsets spanning hosts have no bandwidth.
    """

    def __init__(self, hosts: Sequence[Host], tables: Mapping[str, np.ndarray],
                 profiles: Mapping[tuple[int, ...], float] | None, interchangeable: bool) -> None:
        super().__init__(hosts, tables)
        self.profiles = profiles
        self.interchangeable = interchangeable

    def key(self, counts: Sequence[int]) -> tuple[int, ...]:
        """Lookup key of a count vector (see the class docstring)."""
        if self.interchangeable:
            return tuple(sorted((int(c) for c in counts if c), reverse=True))
        return tuple(int(c) for c in counts)

    def inter(self, counts: Sequence[int]) -> float:
        key = self.key(counts)
        if self.profiles is None:
            raise MissingEntryError(
                f"no cross-host table: cannot evaluate a subset spanning hosts "
                f"(per-host GPU counts {key})"
            )
        if key not in self.profiles:
            raise MissingEntryError(f"cross-host table has no entry for per-host GPU counts {key}")
        return self.profiles[key]

    def inter_batch(self, counts: np.ndarray) -> np.ndarray:
        table = self.profiles or {}
        return np.array([table.get(self.key(row), np.nan) for row in counts.tolist()])


# --------------------------------------------------------------------------- JSON readers


def _read_intra_source(raw: Any, base_dir: Path | None, path: str) -> dict[int, float]:
    """An intra table: a CSV path, an inline ``{"0123": GB/s}`` object, or a list of these
    (averaged entry by entry, e.g. two measured hosts of one type)."""
    if isinstance(raw, str):
        file, text = load_path(raw, base_dir, path)
        return parse_intra_csv(text, str(file))
    if isinstance(raw, Mapping):
        table = {}
        for key, value in raw.items():
            try:
                mask = parse_mask(str(key))
            except ValueError as exc:
                raise InvalidInstanceError(v.join(path, str(key)), str(exc)) from None
            table[mask] = v.as_float(value, v.join(path, str(key)), minimum=0.0)
        return table
    sources = v.as_list(raw, path, min_len=1)
    parts = [_read_intra_source(s, base_dir, v.join(path, i)) for i, s in enumerate(sources)]
    keys = set().union(*parts)
    return {m: sum(p[m] for p in parts if m in p) / sum(m in p for p in parts) for m in keys}


def _read_cross_source(raw: Any, base_dir: Path | None, path: str) -> dict[tuple[int, ...], float]:
    """A cross table: a CSV path or an inline list of ``{"counts": [...], "gbps": x}``."""
    if isinstance(raw, str):
        file, text = load_path(raw, base_dir, path)
        return parse_cross_csv(text, str(file))
    samples: dict[tuple[int, ...], list[float]] = {}
    for i, row in enumerate(v.as_list(raw, path)):
        where = v.join(path, i)
        row = v.as_mapping(row, where)
        counts = v.as_list(v.field(row, "counts", where), v.join(where, "counts"), min_len=1)
        key = tuple(v.as_int(c, v.join(where, f"counts[{j}]"), minimum=0)
                    for j, c in enumerate(counts))
        value = v.as_float(v.field(row, "gbps", where), v.join(where, "gbps"), minimum=0.0)
        samples.setdefault(key, []).append(value)
    return {key: sum(vals) / len(vals) for key, vals in samples.items()}


def _dense(table: Mapping[int, float], gpus: int) -> np.ndarray:
    out = np.full(1 << gpus, np.nan)
    for mask, value in table.items():
        if mask < len(out):
            out[mask] = value
    return out


def _max_gpus(hosts: Sequence[Host]) -> int:
    return max(h.gpus for h in hosts)


class _MeasuredIntra:
    """Intra tables by host type, read from the ``intra`` field (table and bottleneck)."""

    def __init__(self, raw: Any, base_dir: Path | None, path: str) -> None:
        self.raw = dict(v.as_mapping(raw, path))
        self.tables = {
            v.as_str(t, path): _read_intra_source(src, base_dir, v.join(path, t))
            for t, src in self.raw.items()
        }
        self.path = path

    def arrays(self, hosts: Sequence[Host]) -> dict[str, np.ndarray]:
        for i, h in enumerate(hosts):
            if h.type not in self.tables:
                known = ", ".join(sorted(self.tables)) or "none"
                raise InvalidInstanceError(
                    self.path, f"no table for host type {h.type!r} of hosts[{i}] "
                    f"({h.name!r}); tables given for: {known}"
                )
        width = _max_gpus(hosts)
        return {t: _dense(self.tables[t], width) for t in {h.type for h in hosts}}


def _inter_params(data: Mapping[str, Any]) -> tuple[float, int | None]:
    inter = v.as_float(v.field(data, "inter_gbps", "bandwidth"), "bandwidth.inter_gbps",
                       minimum=0.0)
    nic = data.get("gpus_per_nic")
    return inter, None if nic is None else v.as_int(nic, "bandwidth.gpus_per_nic", minimum=1)


class TableModel(BandwidthModel):
    """Measured tables: ``{"model": "table", "intra": {type: table}, "cross": table,
    "interchangeable_hosts": true}``.

    ``intra`` maps each host type to a nccl-tests CSV path (relative to the instance file),
    a list of them (averaged), or an inline ``{"0123": GB/s}`` object. ``cross`` (optional)
    is a cross-host CSV path or an inline list ``[{"counts": [4, 4], "gbps": 40.0}, ...]``.
    ``B(S)`` is the intra entry for ``S`` inside one host; for ``S`` spanning hosts it is the
    minimum of the intra entries of the hosts contributing >= 2 GPUs and the cross entry of
    its per-host counts. A subset with no entry raises :class:`MissingEntryError`.
    """

    kind = "table"

    def __init__(self, data: Mapping[str, Any], base_dir: Path | None = None) -> None:
        self.intra = _MeasuredIntra(v.field(data, "intra", "bandwidth"), base_dir,
                                    "bandwidth.intra")
        self.cross_raw = data.get("cross")
        self.cross = (None if self.cross_raw is None
                      else _read_cross_source(self.cross_raw, base_dir, "bandwidth.cross"))
        flag = data.get("interchangeable_hosts", True)
        if not isinstance(flag, bool):
            raise InvalidInstanceError("bandwidth.interchangeable_hosts",
                                       f"must be true or false, got {flag!r}")
        self.interchangeable = flag

    def bind(self, hosts: Sequence[Host]) -> ProfileBound:
        if self.cross is not None and not self.interchangeable:
            bad = sorted({len(key) for key in self.cross if len(key) != len(hosts)})
            if bad:
                raise InvalidInstanceError(
                    "bandwidth.cross", f"with interchangeable_hosts false every mapping must "
                    f"list all {len(hosts)} hosts; found mappings of {bad} nodes"
                )
        profiles = None
        if self.cross is not None:
            if self.interchangeable:
                samples: dict[tuple[int, ...], list[float]] = {}
                for key, value in self.cross.items():
                    sorted_key = tuple(sorted((c for c in key if c), reverse=True))
                    samples.setdefault(sorted_key, []).append(value)
                profiles = {k: sum(vals) / len(vals) for k, vals in samples.items()}
            else:
                profiles = dict(self.cross)
        return ProfileBound(hosts, self.intra.arrays(hosts), profiles, self.interchangeable)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.kind, "intra": self.intra.raw,
                               "interchangeable_hosts": self.interchangeable}
        if self.cross_raw is not None:
            out["cross"] = self.cross_raw
        return out


class BottleneckModel(BandwidthModel):
    """The paper's simulator (§5.1.1): ``{"model": "bottleneck", "intra": {...},
    "inter_gbps": 50.0, "gpus_per_nic": null}``.

    ``B(S) = min(min_h intra_h(S ∩ h), inter(S))``; ``intra`` as in :class:`TableModel`;
    ``inter(S)`` (only when ``S`` spans >= 2 hosts) is ``inter_gbps`` (GB/s, the per-host
    inter-host link, e.g. 400 Gb/s InfiniBand = 50 GB/s), times
    ``min(1, gpus_per_nic / max_h |S ∩ h|)`` when ``gpus_per_nic`` is given: the GPUs of the
    most loaded host share its NIC beyond ``gpus_per_nic`` of them (Fig. 1's 4+4 vs 6+2).
    """

    kind = "bottleneck"

    def __init__(self, data: Mapping[str, Any], base_dir: Path | None = None) -> None:
        self.intra = _MeasuredIntra(v.field(data, "intra", "bandwidth"), base_dir,
                                    "bandwidth.intra")
        self.inter_gbps, self.gpus_per_nic = _inter_params(data)

    def bind(self, hosts: Sequence[Host]) -> CapBound:
        return CapBound(hosts, self.intra.arrays(hosts), self.inter_gbps, self.gpus_per_nic)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.kind, "intra": self.intra.raw, "inter_gbps": self.inter_gbps,
                "gpus_per_nic": self.gpus_per_nic}


class TopologyModel(BandwidthModel):
    """Topology-derived: ``{"model": "topology", "topology": {type: matrix}, "links": {...},
    "inter_gbps": 12.5, "gpus_per_nic": null}``.

    The intra term of a subset is the bottleneck link of its best ring through the host's
    ``nvidia-smi topo -m`` matrix (:func:`~topoopt.gpuselect.topologies.ring_bandwidths`);
    the inter term is that of :class:`BottleneckModel`. ``topology`` maps a host type to a
    file path, the matrix text, or a list of rows of link tokens; types not listed use the
    paper's Appendix E matrix. ``links`` overrides the public-spec link bandwidths (GB/s) of
    :func:`~topoopt.gpuselect.topologies.default_link_gbps`, for all types
    (``{"NV4": 56.25}``) or per type (``{"A6000": {"NV4": 56.25}}``).
    """

    kind = "topology"
    MAX_GPUS = 10

    def __init__(self, data: Mapping[str, Any], base_dir: Path | None = None) -> None:
        self.topology_raw = dict(v.as_mapping(data.get("topology", {}), "bandwidth.topology"))
        self.matrices = {
            t: _read_topology(raw, base_dir, v.join("bandwidth.topology", t))
            for t, raw in self.topology_raw.items()
        }
        self.links_raw = dict(v.as_mapping(data.get("links", {}), "bandwidth.links"))
        for key, value in self.links_raw.items():
            where = v.join("bandwidth.links", key)
            if isinstance(value, Mapping):
                for link, gbps in value.items():
                    v.as_float(gbps, v.join(where, link), minimum=0.0)
            else:
                v.as_float(value, where, minimum=0.0)
        self.inter_gbps, self.gpus_per_nic = _inter_params(data)
        self._rings: dict[tuple[str, int], np.ndarray] = {}

    def host_topology(self, host_type: str) -> tuple[tuple[str, ...], ...] | None:
        return self.matrices.get(host_type) or builtin_topology(host_type)

    def link_gbps(self, host_type: str) -> dict[str, float]:
        """Link bandwidths used for ``host_type`` (defaults, then global, then per type)."""
        links = default_link_gbps(host_type)
        links.update({k: float(x) for k, x in self.links_raw.items()
                      if not isinstance(x, Mapping)})
        per_type = self.links_raw.get(host_type)
        if isinstance(per_type, Mapping):
            links.update({k: float(x) for k, x in per_type.items()})
        return links

    def bind(self, hosts: Sequence[Host]) -> CapBound:
        width = _max_gpus(hosts)
        tables = {}
        for i, h in enumerate(hosts):
            if h.type in tables:
                continue
            matrix = self.host_topology(h.type)
            where = v.join("bandwidth.topology", h.type)
            if matrix is None:
                raise InvalidInstanceError(
                    where, f"no topology for host type {h.type!r} of hosts[{i}] and no "
                    "built-in one (built-in: 4090, V100, A6000, A800, H100)"
                )
            if len(matrix) < h.gpus or len(matrix) > self.MAX_GPUS:
                raise InvalidInstanceError(
                    where, f"matrix has {len(matrix)} GPUs; hosts of this type have {h.gpus} "
                    f"(the topology model supports up to {self.MAX_GPUS})"
                )
            ring = self._ring(h.type, h.gpus, matrix, where)
            tables[h.type] = np.concatenate([ring, np.full((1 << width) - len(ring), np.nan)])
        return CapBound(hosts, tables, self.inter_gbps, self.gpus_per_nic)

    def _ring(self, host_type: str, gpus: int, matrix: tuple[tuple[str, ...], ...],
              where: str) -> np.ndarray:
        """Ring bandwidth of every subset of the first ``gpus`` GPUs (cached per type)."""
        key = (host_type, gpus)
        if key not in self._rings:
            bw = LinkMatrix(matrix).numeric(self.link_gbps(host_type), where)
            self._rings[key] = ring_bandwidths(bw[:gpus, :gpus])
        return self._rings[key]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.kind, "inter_gbps": self.inter_gbps,
                               "gpus_per_nic": self.gpus_per_nic}
        if self.topology_raw:
            out["topology"] = self.topology_raw
        if self.links_raw:
            out["links"] = self.links_raw
        return out


def _read_topology(raw: Any, base_dir: Path | None, path: str) -> tuple[tuple[str, ...], ...]:
    if isinstance(raw, str):
        if "GPU0" in raw:
            return parse_topology(raw, path)
        file, text = load_path(raw, base_dir, path)
        return parse_topology(text, str(file))
    rows = v.as_list(raw, path, min_len=1)
    lines = [f"GPU{i} " + " ".join(str(c) for c in v.as_list(r, v.join(path, i)))
             for i, r in enumerate(rows)]
    return parse_topology("\n".join(lines), path)


# --------------------------------------------------------------------------- callables


class _CallableBound(BoundModel):
    def __init__(self, hosts: Sequence[Host], fn: Callable[[list[tuple[str, int]]], float]):
        super().__init__(hosts)
        self.fn = fn

    def value(self, masks: Sequence[int]) -> float:
        return float(self.fn(self.pairs(masks)))


class CallableModel(BandwidthModel):
    """A user function ``fn(S) -> GB/s`` where ``S`` is a list of ``(host name, index)`` pairs.

    The black box of BandPilot §3.2 (e.g. a learned surrogate). It cannot be written to JSON.

    Examples
    --------
    >>> model = CallableModel(lambda s: 10.0 * len({h for h, _ in s}))
    >>> model.bind([Host("a", "T", 2, (0, 1)), Host("b", "T", 2, (0,))]).value([3, 1])
    20.0
    """

    kind = "callable"

    def __init__(self, fn: Callable[[list[tuple[str, int]]], float]) -> None:
        if not callable(fn):
            raise TopooptError(f"bandwidth: expected a callable, got {type(fn).__name__}")
        self.fn = fn

    def bind(self, hosts: Sequence[Host]) -> BoundModel:
        return _CallableBound(hosts, self.fn)

    def to_dict(self) -> dict[str, Any]:
        raise TopooptError(
            "bandwidth: a Python callable cannot be serialised to JSON; use a table, "
            "bottleneck or topology model to save the instance"
        )


MODELS: dict[str, type[BandwidthModel]] = {
    "table": TableModel, "bottleneck": BottleneckModel, "topology": TopologyModel,
}
"""Built-in models by their JSON ``"model"`` name."""


def model_from_dict(data: Any, base_dir: Path | None = None) -> BandwidthModel:
    """Read the ``bandwidth`` object of an instance (errors name ``bandwidth.<field>``)."""
    data = v.as_mapping(data, "bandwidth")
    kind = v.field(data, "model", "bandwidth")
    if kind not in MODELS:
        raise InvalidInstanceError(
            "bandwidth.model", f"unknown model {kind!r}; one of {', '.join(MODELS)}"
        )
    return MODELS[kind](data, base_dir)  # type: ignore[call-arg]
