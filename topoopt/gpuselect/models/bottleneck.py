"""The ``bottleneck`` model: the paper's simulator (measured intra-host tables, one
inter-host link, optional NIC sharing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from topoopt.core import validate as v
from topoopt.core.safejson import FileAccess
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.models.fields import (
    IntraInput,
    IntraTable,
    _check_entries,
    _gpus_per_nic,
    _inter_gbps,
    _intra_arrays,
    _intra_entries,
    _intra_json,
    _intra_tables,
    _read_intra_sources,
)
from topoopt.gpuselect.models.structured import CapBound, StructuredModel


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
