"""The structured form ``B(S) = min(min_h intra_h(S ∩ h), inter(counts(S)))``: its bound
evaluators (:class:`StructuredBound` and its two inter terms, :class:`CapBound` and
:class:`ProfileBound`) and :class:`StructuredModel`, the base of the kinds read from JSON.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

import numpy as np

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.safejson import FileAccess
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.masks import POPCOUNT, format_mask, popcount
from topoopt.gpuselect.models.base import (
    BATCH_CELLS,
    BandwidthModel,
    BoundModel,
    MissingEntryError,
)
from topoopt.gpuselect.models.fields import _short


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
