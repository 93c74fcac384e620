"""The gpuselect instance: hosts with their idle GPUs, a request ``k`` and a bandwidth model.

JSON (``docs/gpuselect.md`` has the full schema)::

    {"family": "gpuselect", "format_version": 1, "name": "h100-k8-s3", "cluster": "h100",
     "k": 8,
     "hosts": [{"name": "n0", "type": "H100", "gpus": 8, "available": [0, 1, 2, 3]}, ...],
     "bandwidth": {"model": "bottleneck", "intra": {"H100": "h100.csv"}, "inter_gbps": 50}}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.family import FORMAT_VERSION, Instance
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.masks import MAX_GPUS_PER_HOST
from topoopt.gpuselect.models import BandwidthModel, BoundModel, CallableModel, model_from_dict


@dataclass(frozen=True)
class GpuSelectInstance(Instance):
    """Choose ``k`` idle GPUs maximising ``B(S)`` (family ``gpuselect``, BandPilot eq. 2).

    Attributes
    ----------
    name
        Instance name (suites start it with the cluster name, e.g. ``h100-k8-s3``).
    k
        Number of GPUs requested, ``1 <= k <= available GPUs``.
    hosts
        The hosts, each with its type and idle GPUs.
    bandwidth
        The bandwidth model (a :class:`~topoopt.gpuselect.models.BandwidthModel`; a plain
        callable ``S -> GB/s`` is wrapped in a
        :class:`~topoopt.gpuselect.models.CallableModel`).
    cluster
        Optional cluster name (``h100``, ``het-4mix``, ...).

    Examples
    --------
    >>> inst = GpuSelectInstance.from_dict({
    ...     "family": "gpuselect", "name": "tiny", "k": 3,
    ...     "hosts": [{"name": "a", "type": "V100", "gpus": 8, "available": [0, 1, 2]},
    ...               {"name": "b", "type": "V100", "gpus": 8, "available": [4, 5]}],
    ...     "bandwidth": {"model": "topology", "inter_gbps": 12.5}})
    >>> inst.total_available, inst.bound.value([0b111, 0])
    (5, 25.0)
    """

    family: ClassVar[str] = "gpuselect"

    name: str
    k: int
    hosts: tuple[Host, ...]
    bandwidth: BandwidthModel
    cluster: str | None = None
    bound: BoundModel = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        v.as_str(self.name, "name")
        if self.cluster is not None:
            v.as_str(self.cluster, "cluster")
        k = v.as_int(self.k, "k", minimum=1)
        if not self.hosts:
            raise InvalidInstanceError("hosts", "must list at least one host")
        v.unique_names([h.name for h in self.hosts], "hosts")
        for i, host in enumerate(self.hosts):
            _validate_host(host, f"hosts[{i}]")
        if k > self.total_available:
            raise InvalidInstanceError(
                "k", f"requests {k} GPUs but only {self.total_available} are available"
            )
        model = self.bandwidth
        if not isinstance(model, BandwidthModel):
            if not callable(model):
                raise InvalidInstanceError(
                    "bandwidth", f"must be a bandwidth model or a callable, got {model!r}"
                )
            model = CallableModel(model)
            object.__setattr__(self, "bandwidth", model)
        object.__setattr__(self, "bound", model.bind(self.hosts))

    @property
    def n_hosts(self) -> int:
        return len(self.hosts)

    @property
    def total_gpus(self) -> int:
        return sum(h.gpus for h in self.hosts)

    @property
    def total_available(self) -> int:
        return sum(h.n_available for h in self.hosts)

    @property
    def available_masks(self) -> np.ndarray:
        """Idle-GPU mask of every host, in host order."""
        return np.array([h.available_mask for h in self.hosts], dtype=np.int64)

    def with_bandwidth(self, model: BandwidthModel | Callable[..., float]) -> GpuSelectInstance:
        """The same hosts and request under another bandwidth model."""
        return GpuSelectInstance(self.name, self.k, self.hosts, model,  # type: ignore[arg-type]
                                 cluster=self.cluster)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"family": self.family, "format_version": FORMAT_VERSION,
                               "name": self.name}
        if self.cluster is not None:
            out["cluster"] = self.cluster
        out["k"] = self.k
        out["hosts"] = [{"name": h.name, "type": h.type, "gpus": h.gpus,
                         "available": list(h.available)} for h in self.hosts]
        out["bandwidth"] = self.bandwidth.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *,
                  base_dir: Path | None = None) -> GpuSelectInstance:
        """Read the family's JSON object; table paths resolve against ``base_dir``."""
        raw_hosts = v.as_list(v.field(data, "hosts"), "hosts", min_len=1)
        cluster = data.get("cluster")
        return cls(
            name=v.as_str(data.get("name", "unnamed"), "name"),
            k=v.as_int(v.field(data, "k"), "k", minimum=1),
            hosts=tuple(_read_host(h, f"hosts[{i}]") for i, h in enumerate(raw_hosts)),
            bandwidth=model_from_dict(v.field(data, "bandwidth"), base_dir),
            cluster=None if cluster is None else v.as_str(cluster, "cluster"),
        )


def _validate_host(host: Host, path: str) -> None:
    v.as_str(host.name, f"{path}.name")
    v.as_str(host.type, f"{path}.type")
    gpus = v.as_int(host.gpus, f"{path}.gpus", minimum=1)
    if gpus > MAX_GPUS_PER_HOST:
        raise InvalidInstanceError(f"{path}.gpus", f"must be <= {MAX_GPUS_PER_HOST}, got {gpus}")
    seen: set[int] = set()
    for j, idx in enumerate(host.available):
        where = f"{path}.available[{j}]"
        v.as_int(idx, where, minimum=0)
        if idx >= gpus:
            raise InvalidInstanceError(
                where, f"unknown GPU index {idx}: host {host.name!r} has GPUs 0..{gpus - 1}"
            )
        if idx in seen:
            raise InvalidInstanceError(where, f"GPU {idx} is listed twice")
        seen.add(idx)


def _read_host(raw: Any, path: str) -> Host:
    raw = v.as_mapping(raw, path)
    gpus = v.as_int(v.field(raw, "gpus", path), f"{path}.gpus", minimum=1)
    available = raw.get("available", list(range(gpus)))
    items = v.as_list(available, f"{path}.available")
    idx = tuple(sorted(v.as_int(x, f"{path}.available[{j}]", minimum=0)
                       for j, x in enumerate(items)))
    if len(set(idx)) != len(idx):
        dup = next(x for x in idx if idx.count(x) > 1)
        raise InvalidInstanceError(f"{path}.available", f"GPU {dup} is listed twice")
    return Host(name=v.as_str(v.field(raw, "name", path), f"{path}.name"),
                type=v.as_str(str(v.field(raw, "type", path)), f"{path}.type"),
                gpus=gpus, available=idx)
