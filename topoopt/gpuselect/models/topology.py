"""The ``topology`` model: the bottleneck model's inter-host term, its intra-host terms
derived from ``nvidia-smi topo -m`` link matrices (the bottleneck link of the best ring)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.safejson import FileAccess
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.loaders import read_topology
from topoopt.gpuselect.models.base import Matrix
from topoopt.gpuselect.models.fields import (
    _check_entries,
    _gpus_per_nic,
    _inter_gbps,
    _key,
    _links,
    _links_entries,
    _matrices,
    _matrix_entries,
    _max_gpus,
)
from topoopt.gpuselect.models.structured import CapBound, StructuredModel
from topoopt.gpuselect.topologies import (
    LinkMatrix,
    builtin_topology,
    default_link_gbps,
    ring_bandwidths,
)


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
                    "built-in one (built-in: 4090, V100, A6000, A800, H100, read from "
                    "data:hosts/<type>_topo.md in the data folders; see TOPOOPT_DATA)",
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
