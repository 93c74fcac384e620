"""The ``table`` model: measured intra-host tables and an optional cross-host table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.safejson import FileAccess
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.loaders import read_cross_csv
from topoopt.gpuselect.models.fields import (
    CrossInput,
    CrossTable,
    IntraInput,
    IntraTable,
    _check_entries,
    _cross_table,
    _intra_arrays,
    _intra_entries,
    _intra_json,
    _intra_tables,
    _read_intra_sources,
    _size,
)
from topoopt.gpuselect.models.structured import ProfileBound, StructuredModel


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
