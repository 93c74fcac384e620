"""Bandwidth models ``B(S)``: the objective of the family (BandPilot eq. 2), as pluggable objects.

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

The first three are *structured* (:class:`StructuredModel`):
``B(S) = min(min_h intra_h(S ∩ h), inter(counts(S)))`` where the inter term depends only on how
many GPUs ``S`` takes from each host. For ``S`` inside one host ``B(S) = intra_h(S)``; when
``S`` spans two or more hosts, hosts contributing a single GPU impose no intra term. Exact
solvers (MIP, fast oracle) exploit that structure.

Models are values: frozen dataclasses built with keyword arguments
(``BottleneckModel(intra={"H100": table}, inter_gbps=50.0)``), equal when their fields are
equal. The constructors validate and normalise every field and raise
:class:`~topoopt.core.errors.InvalidInstanceError` naming the field's JSON path inside an
instance (``bandwidth.inter_gbps``, ``bandwidth.intra.H100.01``), exactly as when the model is
read from JSON: ``from_dict`` only reads the files the JSON object references (as the
instance's :class:`~topoopt.core.safejson.FileAccess` allows) and calls the constructor. A
table read from a file is a value like any other: ``to_dict`` writes it inline, so the
written JSON loads anywhere and equals the model.

A model is *bound* to the hosts of an instance (:meth:`BandwidthModel.bind`), giving a
:class:`BoundModel` that evaluates one subset (:meth:`BoundModel.value`, the plain reference)
or a batch of them, vectorised, in three layouts with the same values: dense rows
(:meth:`BoundModel.batch`), sparse rows naming the few hosts a subset touches
(:meth:`BoundModel.batch_sparse`) and replacements of one host's mask
(:meth:`BoundModel.batch_replace`) — the last two keep the heuristics' memory independent of
the number of hosts times the number of candidates. A subset is one bitmask of local indices
per host (:mod:`topoopt.gpuselect.masks`).
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

from topoopt.core import limits
from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.core.safejson import FileAccess
from topoopt.gpuselect.host import Host, type_name
from topoopt.gpuselect.loaders import (
    parse_topology,
    read_cross_csv,
    read_intra_csv,
    read_topology,
)
from topoopt.gpuselect.masks import (
    MAX_GPUS_PER_HOST,
    POPCOUNT,
    format_mask,
    indices_of,
    parse_mask,
    popcount,
)
from topoopt.gpuselect.topologies import (
    LinkMatrix,
    builtin_topology,
    default_link_gbps,
    ring_bandwidths,
)

Matrix = tuple[tuple[str, ...], ...]
"""A host's ``nvidia-smi topo -m`` link matrix: one tuple of link tokens per GPU."""


class MissingEntryError(TopooptError, LookupError):
    """A measurement table has no entry for a subset whose bandwidth was asked for."""

    def __str__(self) -> str:
        return str(self.args[0])


BATCH_CELLS = 1 << 20
"""Most cells (candidate rows x hosts) one dense batch of masks holds: 8 MiB of ``int64``.
The sparse and replacement evaluations below cut their work into batches of this size, so
their memory does not grow with the number of candidates times the number of hosts."""


def _chunks(total: int, rows: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive slices of at most ``rows`` of ``range(total)``."""
    for start in range(0, total, rows):
        yield start, min(start + rows, total)


def _min_excluding(terms: np.ndarray, hosts: np.ndarray) -> np.ndarray:
    """For each ``h`` of ``hosts``, ``min(terms[j] for j != h)`` with NumPy's rules (``nan`` if
    any of those terms is ``nan``; ``inf`` if none): the two smallest terms suffice."""
    nan = np.isnan(terms)
    clean = np.where(nan, np.inf, terms)
    first = int(np.argmin(clean))
    second = np.delete(clean, first).min(initial=np.inf)
    out = np.where(hosts == first, second, clean[first])
    others_nan = int(nan.sum()) - nan[hosts]
    return np.where(others_nan > 0, np.nan, out)


def _max_excluding(counts: np.ndarray, hosts: np.ndarray) -> np.ndarray:
    """For each ``h`` of ``hosts``, ``max(counts[j] for j != h)`` (0 if none)."""
    first = int(np.argmax(counts))
    second = np.delete(counts, first).max(initial=0)
    return np.where(hosts == first, second, counts[first])


class BoundModel(ABC):
    """A bandwidth model bound to the hosts of one instance.

    Besides the reference :meth:`value` of one subset, it evaluates batches of subsets in
    three layouts, all giving exactly the values of :meth:`value` (and raising the same
    :class:`MissingEntryError` for the first subset a table lacks):

    * :meth:`batch` — dense rows, one mask per host;
    * :meth:`batch_sparse` — each subset as the few hosts it touches and their masks
      (candidates of EHA and the single-host searches);
    * :meth:`batch_replace` — one subset with one host's mask replaced per candidate (the
      removals of PTS).

    The default sparse and replacement evaluations build dense rows in batches of at most
    :data:`BATCH_CELLS` cells; the structured models evaluate them without dense rows.
    """

    vectorised: ClassVar[bool] = False
    """Whether a batch is evaluated by array operations (not one Python call per subset)."""

    def __init__(self, hosts: Sequence[Host]) -> None:
        self.hosts = tuple(hosts)

    @abstractmethod
    def value(self, masks: Sequence[int]) -> float:
        """``B(S)`` of the subset given by one mask per host (the reference evaluation)."""

    def batch(self, masks: np.ndarray) -> np.ndarray:
        """``B`` of every row of ``masks`` (shape ``(n, hosts)``); vectorised when possible."""
        return np.array([self.value(row) for row in np.asarray(masks, dtype=np.int64)])

    def batch_sparse(self, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``B`` of ``n`` subsets given sparsely: subset ``i`` takes mask ``masks[i, j]`` on host
        ``hosts[i, j]`` and nothing elsewhere (both of shape ``(n, w)``; the hosts of a row
        are distinct, a mask may be 0).

        Examples
        --------
        >>> hosts = [Host("a", "V100", 8), Host("b", "V100", 8), Host("c", "V100", 8)]
        >>> bound = TopologyModel(inter_gbps=12.5).bind(hosts)
        >>> bound.batch_sparse([[0, 2], [1, 0]], [[0b101, 0b1], [0b1001, 0]]).tolist()
        [12.5, 25.0]
        >>> bound.batch(np.array([[0b101, 0, 0b1], [0, 0b1001, 0]])).tolist()
        [12.5, 25.0]
        """
        hosts = np.asarray(hosts, dtype=np.int64)
        masks = np.asarray(masks, dtype=np.int64)
        out = np.empty(len(hosts))
        rows = max(1, BATCH_CELLS // len(self.hosts))
        for start, stop in _chunks(len(hosts), rows):
            dense = np.zeros((stop - start, len(self.hosts)), dtype=np.int64)
            dense[np.arange(stop - start)[:, None], hosts[start:stop]] = masks[start:stop]
            out[start:stop] = self.batch(dense)
        return out

    def batch_replace(self, base: np.ndarray, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``B`` of ``n`` subsets, each the dense subset ``base`` with the mask of host
        ``hosts[i]`` replaced by ``masks[i]``.

        Examples
        --------
        >>> bound = TopologyModel(inter_gbps=12.5).bind([Host("a", "V100", 8)])
        >>> bound.batch_replace([0b1101], [0, 0, 0], [0b0101, 0b1001, 0b1100]).tolist()
        [50.0, 25.0, 50.0]
        """
        base = np.asarray(base, dtype=np.int64)
        hosts = np.asarray(hosts, dtype=np.int64)
        masks = np.asarray(masks, dtype=np.int64)
        out = np.empty(len(hosts))
        rows = max(1, BATCH_CELLS // len(self.hosts))
        for start, stop in _chunks(len(hosts), rows):
            dense = np.repeat(base[None, :], stop - start, axis=0)
            dense[np.arange(stop - start), hosts[start:stop]] = masks[start:stop]
            out[start:stop] = self.batch(dense)
        return out

    def chunk_rows(self, width: int) -> int:
        """How many candidates of ``width`` hosts a solver hands to :meth:`batch_sparse` (or
        :meth:`batch_replace`) at once: few for a model evaluated one subset at a time (so a
        time limit is checked often), enough to amortise the array operations otherwise."""
        if not self.vectorised:
            return 256
        return max(1, BATCH_CELLS // (8 * max(1, width)))

    def pairs(self, masks: Sequence[int]) -> list[tuple[str, int]]:
        """The subset as ``(host name, local index)`` pairs in host order."""
        return [
            (h.name, i) for h, m in zip(self.hosts, masks, strict=True) for i in indices_of(int(m))
        ]


class BandwidthModel(ABC):
    """A bandwidth model ``B(S)``: a value that binds to an instance's hosts.

    Subclasses are frozen dataclasses with value equality; :class:`StructuredModel`\\ s also
    convert from and to JSON.
    """

    kind: ClassVar[str]

    @abstractmethod
    def bind(self, hosts: Sequence[Host]) -> BoundModel:
        """Check the model covers ``hosts`` and return the evaluator for them."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the model (``{"model": kind, ...}``)."""

    def host_topology(self, host_type: str) -> Matrix | None:
        """The link matrix the model knows for ``host_type`` (default: Appendix E)."""
        return builtin_topology(host_type)


# --------------------------------------------------------------------------- structured bounds


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

    vectorised = True

    def __init__(self, hosts: Sequence[Host], tables: Mapping[str, np.ndarray]) -> None:
        super().__init__(hosts)
        types = sorted({h.type for h in self.hosts})
        width = max(len(tables[t]) for t in types)
        self.type_names = types
        self.tables = np.full((len(types), width), np.nan)
        for row, t in enumerate(types):
            self.tables[row, : len(tables[t])] = tables[t]
        index = {t: row for row, t in enumerate(types)}
        self.type_index = np.array([index[h.type] for h in self.hosts], dtype=np.int64)

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

    def inter_sparse(self, hosts: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """:meth:`inter_batch` of sparse rows (``counts[i, j]`` GPUs on host ``hosts[i, j]``,
        none elsewhere). The default suits inter terms that ignore which host a count is on."""
        return self.inter_batch(counts)

    @abstractmethod
    def inter_replace(self, counts: np.ndarray, hosts: np.ndarray, new: np.ndarray) -> np.ndarray:
        """:meth:`inter_batch` of the count vectors ``counts`` with ``counts[hosts[i]]``
        replaced by ``new[i]``, one per ``i``, without building them."""

    def value(self, masks: Sequence[int]) -> float:
        used = [(h, int(m)) for h, m in enumerate(masks) if m]
        if not used:
            return 0.0
        if len(used) == 1:
            return self.intra(*used[0])
        terms = [self.intra(h, m) for h, m in used if popcount(m) >= 2]
        terms.append(self.inter([popcount(int(m)) for m in masks]))
        return min(terms)

    @staticmethod
    def _combine(
        counts: np.ndarray, vals: np.ndarray, inter: Callable[[np.ndarray], np.ndarray]
    ) -> np.ndarray:
        """The structured form over rows of per-host ``counts`` and intra ``vals``;
        ``inter(spanning)`` gives the inter term of the rows selected by ``spanning``."""
        used = counts > 0
        n_used = used.sum(axis=1)
        spanning = n_used >= 2
        multi = np.where(counts >= 2, vals, np.inf).min(axis=1, initial=np.inf)
        single = np.where(used, vals, np.inf).min(axis=1, initial=np.inf)
        out = np.where(spanning, multi, single)
        if spanning.any():
            out[spanning] = np.minimum(out[spanning], inter(spanning))
        out[n_used == 0] = 0.0
        return out

    def _raise_first_missing(self, out: np.ndarray, dense_row: Callable[[int], np.ndarray]) -> None:
        """Raise the :class:`MissingEntryError` of the first ``nan`` of ``out`` (by
        :meth:`value` of its dense row, so the message names the entry)."""
        bad = np.flatnonzero(np.isnan(out))
        if bad.size:
            self.value(dense_row(int(bad[0])).tolist())

    def batch(self, masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks, dtype=np.int64)
        counts = POPCOUNT[masks]
        vals = self.tables[self.type_index[None, :], masks]
        out = self._combine(counts, vals, lambda rows: self.inter_batch(counts[rows]))
        self._raise_first_missing(out, lambda i: masks[i])
        return out

    def batch_sparse(self, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        hosts = np.asarray(hosts, dtype=np.int64)
        masks = np.asarray(masks, dtype=np.int64)
        counts = POPCOUNT[masks]
        vals = self.tables[self.type_index[hosts], masks]
        out = self._combine(counts, vals, lambda rows: self.inter_sparse(hosts[rows], counts[rows]))

        def dense_row(i: int) -> np.ndarray:
            row = np.zeros(len(self.hosts), dtype=np.int64)
            row[hosts[i]] = masks[i]
            return row

        self._raise_first_missing(out, dense_row)
        return out

    def batch_replace(self, base: np.ndarray, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """See :meth:`BoundModel.batch_replace`; in ``O(n + hosts)`` time and memory: the terms
        of the hosts left unchanged are the minimum over all of them but the replaced one,
        which the two smallest give."""
        base = np.asarray(base, dtype=np.int64)
        hosts = np.asarray(hosts, dtype=np.int64)
        masks = np.asarray(masks, dtype=np.int64)
        base_counts = POPCOUNT[base]
        base_vals = self.tables[self.type_index, base]
        base_used = base_counts > 0
        others_multi = _min_excluding(np.where(base_counts >= 2, base_vals, np.inf), hosts)
        others_single = _min_excluding(np.where(base_used, base_vals, np.inf), hosts)
        counts = POPCOUNT[masks]
        vals = self.tables[self.type_index[hosts], masks]
        n_used = int(base_used.sum()) - base_used[hosts] + (counts > 0)
        spanning = n_used >= 2
        multi = np.minimum(others_multi, np.where(counts >= 2, vals, np.inf))
        single = np.minimum(others_single, np.where(counts > 0, vals, np.inf))
        out = np.where(spanning, multi, single)
        if spanning.any():
            inter = self.inter_replace(base_counts, hosts[spanning], counts[spanning])
            out[spanning] = np.minimum(out[spanning], inter)
        out[n_used == 0] = 0.0

        def dense_row(i: int) -> np.ndarray:
            row = base.copy()
            row[hosts[i]] = masks[i]
            return row

        self._raise_first_missing(out, dense_row)
        return out


class CapBound(StructuredBound):
    """Inter term ``inter_gbps * min(1, gpus_per_nic / max_h c_h)`` (bottleneck, topology).

    Without NIC sharing (``gpus_per_nic=None``) the inter term is ``inter_gbps``.
    """

    def __init__(
        self,
        hosts: Sequence[Host],
        tables: Mapping[str, np.ndarray],
        inter_gbps: float,
        gpus_per_nic: int | None,
    ) -> None:
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

    def inter_replace(self, counts: np.ndarray, hosts: np.ndarray, new: np.ndarray) -> np.ndarray:
        top = np.maximum(_max_excluding(counts, hosts), new)
        return self.inter_batch(top[:, None])


class ProfileBound(StructuredBound):
    """Inter term looked up in a cross-host table keyed by per-host GPU counts.

    With ``interchangeable`` hosts the key is the count profile sorted in decreasing order
    without zeros; otherwise the full count vector in host order. ``profiles=None`` means no
    cross-host table: subsets spanning hosts have no bandwidth.
    """

    def __init__(
        self,
        hosts: Sequence[Host],
        tables: Mapping[str, np.ndarray],
        profiles: Mapping[tuple[int, ...], float] | None,
        interchangeable: bool,
    ) -> None:
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

    def inter_sparse(self, hosts: np.ndarray, counts: np.ndarray) -> np.ndarray:
        if self.interchangeable:
            return self.inter_batch(counts)
        table = self.profiles or {}
        out = np.empty(len(counts))
        rows = zip(hosts.tolist(), counts.tolist(), strict=True)
        for i, (row_hosts, row_counts) in enumerate(rows):
            full = [0] * len(self.hosts)
            for h, c in zip(row_hosts, row_counts, strict=True):
                full[h] = c
            out[i] = table.get(tuple(full), np.nan)
        return out

    def inter_replace(self, counts: np.ndarray, hosts: np.ndarray, new: np.ndarray) -> np.ndarray:
        """Interchangeable hosts: one lookup per distinct (old count, new count) pair."""
        table = self.profiles or {}
        base = sorted((int(c) for c in counts if c), reverse=True)
        old = counts[hosts]
        out = np.empty(len(hosts))
        for a, b in set(zip(old.tolist(), new.tolist(), strict=True)):
            parts = list(base)
            if a:
                parts.remove(a)
            if b:
                parts.append(b)
            key = tuple(sorted(parts, reverse=True))
            out[(old == a) & (new == b)] = table.get(key, np.nan)
        return out

    def batch_replace(self, base: np.ndarray, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if not self.interchangeable:  # a key per full count vector: dense rows
            return BoundModel.batch_replace(self, base, hosts, masks)
        return super().batch_replace(base, hosts, masks)

    def chunk_rows(self, width: int) -> int:
        if not self.interchangeable:  # keys of every host: as for dense rows
            return max(1, min(super().chunk_rows(width), BATCH_CELLS // len(self.hosts)))
        return super().chunk_rows(width)


# --------------------------------------------------------------------------- field readers

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


# --------------------------------------------------------------------------- structured models


class StructuredModel(BandwidthModel):
    """A built-in model of the structured form (module docstring), readable from JSON.

    Subclasses are frozen keyword-only dataclasses; ``repr`` summarises large tables.
    """

    @classmethod
    @abstractmethod
    def from_dict(cls, data: Any, *, files: FileAccess | None = None) -> StructuredModel:
        """Read the model's JSON object; the files it names are read as ``files`` allows
        (relative to the instance's folder). Errors name ``bandwidth.<field>``."""

    @classmethod
    def _object(cls, data: Any) -> Mapping[str, Any]:
        """``data`` as the model's JSON object (its ``"model"`` key, if any, must be ours)."""
        data = v.as_mapping(data, "bandwidth")
        kind = data.get("model", cls.kind)
        if kind != cls.kind:
            raise InvalidInstanceError(
                "bandwidth.model", f"{cls.__name__} reads model {cls.kind!r}, got {kind!r}"
            )
        return data

    def __repr__(self) -> str:
        shown = [f for f in fields(self) if f.repr]  # type: ignore[arg-type]
        args = ", ".join(f"{f.name}={_short(getattr(self, f.name))}" for f in shown)
        return f"{type(self).__name__}({args})"


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


@dataclass(frozen=True, init=False, repr=False)
class TableModel(StructuredModel):
    """Measured tables: intra-host per host type and an optional cross-host table.

    ``B(S)`` is the intra entry for ``S`` inside one host; for ``S`` spanning hosts it is the
    minimum of the intra entries of the hosts contributing >= 2 GPUs and the cross entry of
    its per-host counts. A subset with no entry raises :class:`MissingEntryError`.

    Parameters
    ----------
    intra
        Per host type, the bandwidth (GB/s, finite, >= 0) of GPU subsets of one host, keyed by
        mask (``0b1011``) or by nccl-tests name (``"013"``); a list of tables is averaged entry
        by entry. Stored as ``{type: {mask: GB/s}}``.
    cross
        Optional cross-host table keyed by the per-host GPU counts of a spanning subset:
        ``{(4, 4): 40.0}``, or a list of ``{"counts": [4, 4], "gbps": 40.0}`` objects or
        ``((4, 4), 40.0)`` pairs (repeated counts are averaged). Stored as
        ``{counts: GB/s}``; ``None`` (no table) means spanning subsets have no bandwidth.
    interchangeable_hosts
        With ``True`` (default) a cross key is the count profile, sorted decreasingly without
        zeros; with ``False`` the full count vector in host order.

    Notes
    -----
    JSON: ``{"model": "table", "intra": {type: table}, "cross": table,
    "interchangeable_hosts": true}``, where a table may also be a nccl-tests CSV path
    (relative to the instance file), read by :meth:`from_dict`.

    Examples
    --------
    >>> m = TableModel(intra={"T": {"0": 0.0, "1": 0.0, 0b11: 40}}, cross={(2, 1): 30.0})
    >>> m
    TableModel(intra={'T': <3 entries>}, cross=<1 entries>, interchangeable_hosts=True)
    >>> m.intra["T"][0b11], m.bind([Host("a", "T", 2), Host("b", "T", 2)]).value([0b11, 0b01])
    (40.0, 30.0)
    >>> m.to_dict()["intra"]
    {'T': {'0': 0.0, '1': 0.0, '01': 40.0}}
    >>> m == TableModel.from_dict(m.to_dict())
    True
    """

    kind = "table"

    intra: Mapping[str, IntraTable] = field(hash=False)
    cross: CrossTable | None = field(hash=False)
    interchangeable_hosts: bool

    def __init__(
        self,
        *,
        intra: Mapping[str, IntraInput],
        cross: CrossInput | None = None,
        interchangeable_hosts: bool = True,
    ) -> None:
        put = object.__setattr__
        _check_entries(_intra_entries(intra) + _size(cross))
        put(self, "intra", _intra_tables(intra))
        put(self, "cross", _cross_table(cross))
        flag = interchangeable_hosts
        if not isinstance(flag, (bool, np.bool_)):
            raise InvalidInstanceError(
                "bandwidth.interchangeable_hosts", f"must be true or false, got {flag!r}"
            )
        put(self, "interchangeable_hosts", bool(flag))

    @classmethod
    def from_dict(cls, data: Any, *, files: FileAccess | None = None) -> TableModel:
        data = cls._object(data)
        cross = data.get("cross")
        if isinstance(cross, str):
            cross = read_cross_csv(cross, files or FileAccess(), "bandwidth.cross")
        return cls(
            intra=_read_intra_sources(
                v.field(data, "intra", "bandwidth"), files, "bandwidth.intra"
            ),
            cross=cross,
            interchangeable_hosts=data.get("interchangeable_hosts", True),
        )

    def bind(self, hosts: Sequence[Host]) -> ProfileBound:
        if self.cross is not None and not self.interchangeable_hosts:
            bad = sorted({len(key) for key in self.cross if len(key) != len(hosts)})
            if bad:
                raise InvalidInstanceError(
                    "bandwidth.cross",
                    f"with interchangeable_hosts false every mapping must "
                    f"list all {len(hosts)} hosts; found mappings of {bad} nodes",
                )
        profiles = None
        if self.cross is not None:
            if self.interchangeable_hosts:
                samples: dict[tuple[int, ...], list[float]] = {}
                for key, value in self.cross.items():
                    sorted_key = tuple(sorted((c for c in key if c), reverse=True))
                    samples.setdefault(sorted_key, []).append(value)
                profiles = {k: sum(vals) / len(vals) for k, vals in samples.items()}
            else:
                profiles = dict(self.cross)
        return ProfileBound(
            hosts, _intra_arrays(self.intra, hosts), profiles, self.interchangeable_hosts
        )

    def to_dict(self) -> dict[str, Any]:
        """``{"model": "table", "intra": ..., "interchangeable_hosts": ..., "cross": ...}``
        with every table inline (``cross`` only when given)."""
        out: dict[str, Any] = {
            "model": self.kind,
            "intra": _intra_json(self.intra),
            "interchangeable_hosts": self.interchangeable_hosts,
        }
        if self.cross is not None:
            out["cross"] = [{"counts": list(key), "gbps": gbps} for key, gbps in self.cross.items()]
        return out


@dataclass(frozen=True, init=False, repr=False)
class BottleneckModel(StructuredModel):
    """The paper's simulator (§5.1.1): measured intra-host tables and one inter-host link.

    ``B(S) = min(min_h intra_h(S ∩ h), inter(S))`` where ``inter(S)`` (only when ``S`` spans
    >= 2 hosts) is ``inter_gbps``, times ``min(1, gpus_per_nic / max_h |S ∩ h|)`` when
    ``gpus_per_nic`` is given: the GPUs of the most loaded host share its NIC beyond
    ``gpus_per_nic`` of them (Fig. 1's 4+4 vs 6+2).

    Parameters
    ----------
    intra
        Intra-host tables per host type, as for :class:`TableModel`.
    inter_gbps
        The per-host inter-host link in GB/s (finite, >= 0; e.g. 400 Gb/s InfiniBand = 50).
    gpus_per_nic
        GPUs a host's NIC serves at full rate (integer >= 1), or ``None`` for no sharing.

    Notes
    -----
    JSON: ``{"model": "bottleneck", "intra": {...}, "inter_gbps": 50.0, "gpus_per_nic": null}``.

    Examples
    --------
    >>> m = BottleneckModel(intra={"T": {"01": 40.0, "0": 0.0}}, inter_gbps=25, gpus_per_nic=1)
    >>> m.inter_gbps, m.bind([Host("a", "T", 2), Host("b", "T", 2)]).value([0b11, 0b01])
    (25.0, 12.5)
    >>> BottleneckModel(intra={}, inter_gbps=50.0, gpus_per_nic=0)
    Traceback (most recent call last):
    ...
    topoopt.core.errors.InvalidInstanceError: bandwidth.gpus_per_nic: must be >= 1, got 0
    """

    kind = "bottleneck"

    intra: Mapping[str, IntraTable] = field(hash=False)
    inter_gbps: float
    gpus_per_nic: int | None

    def __init__(
        self, *, intra: Mapping[str, IntraInput], inter_gbps: float, gpus_per_nic: int | None = None
    ) -> None:
        put = object.__setattr__
        _check_entries(_intra_entries(intra))
        put(self, "intra", _intra_tables(intra))
        put(self, "inter_gbps", _inter_gbps(inter_gbps))
        put(self, "gpus_per_nic", _gpus_per_nic(gpus_per_nic))

    @classmethod
    def from_dict(cls, data: Any, *, files: FileAccess | None = None) -> BottleneckModel:
        data = cls._object(data)
        return cls(
            intra=_read_intra_sources(
                v.field(data, "intra", "bandwidth"), files, "bandwidth.intra"
            ),
            inter_gbps=v.field(data, "inter_gbps", "bandwidth"),
            gpus_per_nic=data.get("gpus_per_nic"),
        )

    def bind(self, hosts: Sequence[Host]) -> CapBound:
        return CapBound(hosts, _intra_arrays(self.intra, hosts), self.inter_gbps, self.gpus_per_nic)

    def to_dict(self) -> dict[str, Any]:
        """``{"model": "bottleneck", "intra": ..., "inter_gbps": ..., "gpus_per_nic": ...}``
        with every table inline."""
        return {
            "model": self.kind,
            "intra": _intra_json(self.intra),
            "inter_gbps": self.inter_gbps,
            "gpus_per_nic": self.gpus_per_nic,
        }


@functools.lru_cache(maxsize=256)
def _ring_table(
    matrix: Matrix, links: tuple[tuple[str, float], ...], gpus: int, where: str
) -> np.ndarray:
    """:func:`~topoopt.gpuselect.topologies.ring_bandwidths` of the first ``gpus`` GPUs of
    ``matrix`` under the link bandwidths ``links`` (read-only; computed once per process for
    every instance that shares them, e.g. the suites of one cluster)."""
    bw = LinkMatrix(matrix).numeric(dict(links), where)
    out = ring_bandwidths(bw[:gpus, :gpus])
    out.setflags(write=False)
    return out


@dataclass(frozen=True, init=False, repr=False)
class TopologyModel(StructuredModel):
    """Topology-derived intra-host terms and the inter-host term of :class:`BottleneckModel`.

    The intra term of a subset is the bottleneck link of its best ring through the host's
    ``nvidia-smi topo -m`` matrix (:func:`~topoopt.gpuselect.topologies.ring_bandwidths`).

    Parameters
    ----------
    inter_gbps, gpus_per_nic
        As for :class:`BottleneckModel`.
    topology
        Link matrices by host type: ``nvidia-smi topo -m`` text (raw output or Markdown) or
        rows of link tokens; stored as tuples of tokens. Types not listed use the paper's
        Appendix E matrix (4090, V100, A6000, A800, H100).
    links
        Overrides of the public-spec link bandwidths (GB/s) of
        :func:`~topoopt.gpuselect.topologies.default_link_gbps`, for all types
        (``{"NV4": 56.25}``) or per type (``{"A6000": {"NV4": 56.25}}``).

    Notes
    -----
    JSON: ``{"model": "topology", "topology": {type: matrix}, "links": {...},
    "inter_gbps": 12.5, "gpus_per_nic": null}``, where a matrix may also be a file path
    (relative to the instance file), read by :meth:`from_dict`; ``to_dict`` writes matrices
    as rows of tokens.

    Examples
    --------
    >>> m = TopologyModel(inter_gbps=12.5, topology={"X2": [["X", "NV2"], ["NV2", "X"]]})
    >>> m
    TopologyModel(inter_gbps=12.5, gpus_per_nic=None, topology={'X2': <2x2 matrix>}, links={})
    >>> m.topology["X2"], m.bind([Host("a", "X2", 2)]).value([0b11])
    ((('X', 'NV2'), ('NV2', 'X')), 50.0)
    """

    kind = "topology"
    MAX_GPUS: ClassVar[int] = 10

    inter_gbps: float
    gpus_per_nic: int | None
    topology: Mapping[str, Matrix] = field(hash=False)
    links: Mapping[str, float | Mapping[str, float]] = field(hash=False)
    _rings: dict[tuple[str, int], np.ndarray] = field(
        init=False, repr=False, compare=False, hash=False
    )

    def __init__(
        self,
        *,
        inter_gbps: float,
        gpus_per_nic: int | None = None,
        topology: Mapping[str, str | Sequence[Sequence[str]]] | None = None,
        links: Mapping[str, float | Mapping[str, float]] | None = None,
    ) -> None:
        put = object.__setattr__
        _check_entries(_matrix_entries(topology) + _links_entries(links))
        put(self, "inter_gbps", _inter_gbps(inter_gbps))
        put(self, "gpus_per_nic", _gpus_per_nic(gpus_per_nic))
        put(self, "topology", _matrices({} if topology is None else topology))
        put(self, "links", _links({} if links is None else links))
        put(self, "_rings", {})

    @classmethod
    def from_dict(cls, data: Any, *, files: FileAccess | None = None) -> TopologyModel:
        data = cls._object(data)
        topology = data.get("topology", {})
        if isinstance(topology, Mapping):
            topology = {
                t: read_topology(m, files or FileAccess(), _key("bandwidth.topology", t))
                if isinstance(m, str) and "GPU0" not in m
                else m
                for t, m in topology.items()
            }
        return cls(
            inter_gbps=v.field(data, "inter_gbps", "bandwidth"),
            gpus_per_nic=data.get("gpus_per_nic"),
            topology=topology,
            links=data.get("links", {}),
        )

    def host_topology(self, host_type: str) -> Matrix | None:
        return self.topology.get(host_type) or builtin_topology(host_type)

    def link_gbps(self, host_type: str) -> dict[str, float]:
        """Link bandwidths used for ``host_type`` (defaults, then global, then per type)."""
        links = default_link_gbps(host_type)
        links.update({k: x for k, x in self.links.items() if not isinstance(x, Mapping)})
        per_type = self.links.get(host_type)
        if isinstance(per_type, Mapping):
            links.update(per_type)
        return links

    def bind(self, hosts: Sequence[Host]) -> CapBound:
        width = _max_gpus(hosts)
        tables = {}
        for i, h in enumerate(hosts):
            if h.type in tables:
                continue
            matrix = self.host_topology(h.type)
            where = _key("bandwidth.topology", h.type)
            if matrix is None:
                raise InvalidInstanceError(
                    where,
                    f"no topology for host type {h.type!r} of hosts[{i}] and no "
                    "built-in one (built-in: 4090, V100, A6000, A800, H100)",
                )
            if len(matrix) < h.gpus or len(matrix) > self.MAX_GPUS:
                raise InvalidInstanceError(
                    where,
                    f"matrix has {len(matrix)} GPUs; hosts of this type have {h.gpus} "
                    f"(the topology model supports up to {self.MAX_GPUS})",
                )
            ring = self._ring(h.type, h.gpus, matrix, where)
            tables[h.type] = np.concatenate([ring, np.full((1 << width) - len(ring), np.nan)])
        return CapBound(hosts, tables, self.inter_gbps, self.gpus_per_nic)

    def _ring(self, host_type: str, gpus: int, matrix: Matrix, where: str) -> np.ndarray:
        """Ring bandwidth of every subset of the first ``gpus`` GPUs (cached per type, and
        across models with the same matrix and link bandwidths)."""
        key = (host_type, gpus)
        if key not in self._rings:
            links = tuple(sorted(self.link_gbps(host_type).items()))
            self._rings[key] = _ring_table(matrix, links, gpus, where)
        return self._rings[key]

    def to_dict(self) -> dict[str, Any]:
        """``{"model": "topology", "inter_gbps": ..., "gpus_per_nic": ...}``, plus ``topology``
        (rows of tokens) and ``links`` when given."""
        out: dict[str, Any] = {
            "model": self.kind,
            "inter_gbps": self.inter_gbps,
            "gpus_per_nic": self.gpus_per_nic,
        }
        if self.topology:
            out["topology"] = {t: [list(row) for row in m] for t, m in self.topology.items()}
        if self.links:
            out["links"] = {
                k: dict(x) if isinstance(x, Mapping) else x for k, x in self.links.items()
            }
        return out


# --------------------------------------------------------------------------- callables


class _CallableBound(BoundModel):
    """One call of the user's function per subset; batches never build dense rows (the
    function gets the same ``(host name, index)`` list as for the dense subset)."""

    def __init__(self, hosts: Sequence[Host], fn: Callable[[list[tuple[str, int]]], float]):
        super().__init__(hosts)
        self.fn = fn

    def value(self, masks: Sequence[int]) -> float:
        return float(self.fn(self.pairs(masks)))

    def _host_pairs(self, host: int, mask: int) -> list[tuple[str, int]]:
        name = self.hosts[host].name
        return [(name, i) for i in indices_of(mask)]

    def batch_sparse(self, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        rows = zip(np.asarray(hosts).tolist(), np.asarray(masks).tolist(), strict=True)
        out = []
        for row_hosts, row_masks in rows:
            pairs = [
                pair
                for h, m in sorted(zip(row_hosts, row_masks, strict=True))
                for pair in self._host_pairs(h, m)
            ]
            out.append(float(self.fn(pairs)))
        return np.array(out, dtype=float)

    def batch_replace(self, base: np.ndarray, hosts: np.ndarray, masks: np.ndarray) -> np.ndarray:
        base_list = np.asarray(base).tolist()
        flat: list[tuple[str, int]] = []
        start = []
        for h, m in enumerate(base_list):
            start.append(len(flat))
            flat += self._host_pairs(h, m)
        start.append(len(flat))
        out = []
        for h, m in zip(np.asarray(hosts).tolist(), np.asarray(masks).tolist(), strict=True):
            pairs = flat[: start[h]] + self._host_pairs(h, m) + flat[start[h + 1] :]
            out.append(float(self.fn(pairs)))
        return np.array(out, dtype=float)


@dataclass(frozen=True, eq=False)
class CallableModel(BandwidthModel):
    """A user function ``fn(S) -> GB/s`` where ``S`` is a list of ``(host name, index)`` pairs.

    The black box of BandPilot §3.2 (e.g. a learned surrogate). Two callable models are equal
    when they wrap the same callable object. It cannot be written to JSON: :meth:`to_dict`
    raises :class:`~topoopt.core.errors.TopooptError`.

    Examples
    --------
    >>> fn = lambda s: 10.0 * len({h for h, _ in s})
    >>> model = CallableModel(fn)
    >>> model.bind([Host("a", "T", 2, (0, 1)), Host("b", "T", 2, (0,))]).value([3, 1])
    20.0
    >>> model == CallableModel(fn), model == CallableModel(lambda s: 0.0)
    (True, False)
    """

    kind = "callable"

    fn: Callable[[list[tuple[str, int]]], float]

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise InvalidInstanceError(
                "bandwidth",
                f"must be a bandwidth model, its JSON object or a callable "
                f"S -> GB/s, got {self.fn!r}",
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CallableModel):
            return NotImplemented
        return self.fn is other.fn

    def __hash__(self) -> int:
        return hash(id(self.fn))

    def bind(self, hosts: Sequence[Host]) -> BoundModel:
        return _CallableBound(hosts, self.fn)

    def to_dict(self) -> dict[str, Any]:
        raise TopooptError(
            "bandwidth: a Python callable cannot be serialised to JSON; use a table, "
            "bottleneck or topology model to save the instance"
        )


MODELS: dict[str, type[StructuredModel]] = {
    "table": TableModel,
    "bottleneck": BottleneckModel,
    "topology": TopologyModel,
}
"""Built-in models by their JSON ``"model"`` name."""


def model_from_dict(data: Any, files: FileAccess | None = None) -> StructuredModel:
    """Read the ``bandwidth`` object of an instance (errors name ``bandwidth.<field>``).

    Dispatches on ``"model"`` to :meth:`StructuredModel.from_dict` of :data:`MODELS`; the
    files it names are read as ``files`` allows (default: inside the working directory).

    Examples
    --------
    >>> model_from_dict({"model": "topology", "inter_gbps": 12.5})
    TopologyModel(inter_gbps=12.5, gpus_per_nic=None, topology={}, links={})
    """
    data = v.as_mapping(data, "bandwidth")
    kind = v.field(data, "model", "bandwidth")
    if not isinstance(kind, str) or kind not in MODELS:
        raise InvalidInstanceError(
            "bandwidth.model", f"unknown model {kind!r}; one of {', '.join(MODELS)}"
        )
    return MODELS[kind].from_dict(data, files=files)


__all__ = [
    "MODELS",
    "BandwidthModel",
    "BottleneckModel",
    "BoundModel",
    "CallableModel",
    "CapBound",
    "MissingEntryError",
    "ProfileBound",
    "StructuredBound",
    "StructuredModel",
    "TableModel",
    "TopologyModel",
    "model_from_dict",
]
