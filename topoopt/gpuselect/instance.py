"""The gpuselect instance: hosts with their idle GPUs, a request ``k`` and a bandwidth model.

JSON (the JSON Schema is :data:`topoopt.gpuselect.schema.SCHEMA`; ``docs/gpuselect.md``
explains it)::

    {"family": "gpuselect", "format_version": 1, "name": "h100-k8-s3", "cluster": "h100",
     "labels": {"setting": "fig1"}, "k": 8,
     "hosts": [{"name": "n0", "type": "H100", "gpus": 8, "available": [0, 1, 2, 3]}, ...],
     "bandwidth": {"model": "bottleneck", "intra": {"H100": "h100.csv"}, "inter_gbps": 50}}

Every rule lives in a constructor (:class:`~topoopt.gpuselect.host.Host`,
:class:`GpuSelectInstance` and the bandwidth models of :mod:`topoopt.gpuselect.models`), so an
instance built in code is checked exactly like one read from JSON:
:meth:`GpuSelectInstance.from_dict` only takes the JSON object apart, reads the files the
bandwidth model references and calls the constructors. ``topoopt.load(x.to_dict()) == x`` and
``topoopt.load(topoopt.save(x, path)) == x`` for every instance with a JSON model (tables read
from files are written inline).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from topoopt.core import limits
from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.family import FORMAT_VERSION, Instance
from topoopt.core.safejson import FileAccess
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.models import BandwidthModel, BoundModel, CallableModel, model_from_dict
from topoopt.gpuselect.schema import LIMITS

if TYPE_CHECKING:  # the result type parameter of the Instance base class
    from topoopt.gpuselect.result import GpuSelectResult  # noqa: F401

limits.declare_all(LIMITS)

HostLike = Host | Mapping[str, Any] | Sequence[Any]
"""What :class:`GpuSelectInstance` accepts as a host: a ``Host``, its JSON object or a
``(name, type, gpus[, available])`` tuple."""


def _as_host(item: Any, index: int) -> Host:
    """A :class:`Host` from a ``Host``, a JSON-like mapping or a ``(name, type, gpus[,
    available])`` tuple; errors name ``hosts[index]``."""
    if isinstance(item, Host):
        return item
    with v.within(f"hosts[{index}]"):
        if isinstance(item, Mapping):
            return Host.from_dict(item)
        if isinstance(item, Sequence) and not isinstance(item, str) and len(item) in (3, 4):
            return Host(*item)
        raise InvalidInstanceError(
            "",
            f"must be a Host, a JSON object or a (name, type, gpus, available) tuple, got {item!r}",
        )


def _as_model(value: Any) -> BandwidthModel:
    """A bandwidth model from a model, its JSON object or a callable ``S -> GB/s``."""
    if isinstance(value, BandwidthModel):
        return value
    if isinstance(value, Mapping):
        return model_from_dict(value)
    return CallableModel(value)


@dataclass(frozen=True, init=False)
class GpuSelectInstance(Instance["GpuSelectResult"]):
    """Choose ``k`` idle GPUs maximising ``B(S)`` (family ``gpuselect``, BandPilot eq. 2).

    Parameters
    ----------
    name
        Instance name (suites start it with the cluster name, e.g. ``h100-k8-s3``).
    k
        Number of GPUs requested, ``1 <= k <= available GPUs`` (the candidates of eq. 1).
    hosts
        The hosts (at least one, distinct names), stored as a tuple of
        :class:`~topoopt.gpuselect.host.Host`; each item may be a ``Host``, a mapping like the
        JSON objects or a ``(name, type, gpus[, available])`` tuple.
    bandwidth
        The bandwidth model: a :class:`~topoopt.gpuselect.models.BandwidthModel`, its JSON
        object (file paths in it resolve against the working directory) or a plain callable
        ``S -> GB/s`` (wrapped in a :class:`~topoopt.gpuselect.models.CallableModel`).
    cluster
        Optional cluster name (``h100``, ``het-4mix``, ...).
    labels
        Free-form metadata, string to string (e.g. ``{"setting": "fig1"}``); part of equality
        but not of the hash, written to JSON only when non-empty.

    Notes
    -----
    Integers may be given as integral floats (``8.0``) or NumPy integers and are stored as
    ``int``; booleans are refused.

    The size limits of :data:`~topoopt.gpuselect.schema.LIMITS` (``gpuselect_hosts``,
    ``gpuselect_gpus``, ``gpuselect_host_types``) are checked before the hosts are read and
    before the model is bound (:mod:`topoopt.core.limits` says how to raise them).

    Raises
    ------
    InvalidInstanceError
        Naming the JSON path of the field (``k``, ``hosts[1]``, ``hosts[0].available[2]``,
        ``bandwidth.inter_gbps``, ``labels.setting``, ...) and the rule.

    Examples
    --------
    >>> from topoopt.gpuselect.models import TopologyModel
    >>> inst = GpuSelectInstance(
    ...     "tiny", k=3.0,
    ...     hosts=[Host("a", "A800", 8, [0, 1, 2]), ("b", "A800", 8, [4, 5])],
    ...     bandwidth=TopologyModel(inter_gbps=12.5), labels={"source": "doctest"})
    >>> inst.k, inst.total_available, inst.bound.value([0b111, 0])
    (3, 5, 200.0)
    >>> inst == GpuSelectInstance.from_dict(inst.to_dict())
    True
    """

    family: ClassVar[str] = "gpuselect"

    name: str
    k: int
    hosts: tuple[Host, ...]
    bandwidth: BandwidthModel
    cluster: str | None
    labels: dict[str, str] = field(hash=False)
    bound: BoundModel = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        name: str,
        k: int,
        hosts: Iterable[HostLike],
        bandwidth: BandwidthModel | Mapping[str, Any] | Callable[[list[tuple[str, int]]], float],
        cluster: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(name, "name"))
        put(self, "cluster", None if cluster is None else v.as_str(cluster, "cluster"))
        put(self, "labels", v.as_labels({} if labels is None else labels, "labels"))
        count = v.as_int(k, "k", minimum=1)
        put(self, "k", count)
        raw = v.as_tuple(hosts, "hosts", min_len=1)
        limits.check("gpuselect_hosts", len(raw), "hosts", f"{len(raw)} hosts")
        parsed = tuple(_as_host(item, i) for i, item in enumerate(raw))
        put(self, "hosts", parsed)
        v.unique_names([h.name for h in parsed], "hosts")
        total = sum(h.gpus for h in parsed)
        limits.check("gpuselect_gpus", total, "hosts", f"{total} GPUs")
        types = len({h.type for h in parsed})
        limits.check("gpuselect_host_types", types, "hosts", f"{types} host types")
        if count > self.total_available:
            raise InvalidInstanceError(
                "k", f"requests {count} GPUs but only {self.total_available} are available"
            )
        model = _as_model(bandwidth)
        put(self, "bandwidth", model)
        put(self, "bound", model.bind(parsed))

    @property
    def n_hosts(self) -> int:
        """Number of hosts."""
        return len(self.hosts)

    @property
    def total_gpus(self) -> int:
        """GPUs over all hosts."""
        return sum(h.gpus for h in self.hosts)

    @property
    def total_available(self) -> int:
        """Idle GPUs over all hosts (``|A|``)."""
        return sum(h.n_available for h in self.hosts)

    @property
    def available_masks(self) -> np.ndarray:
        """Idle-GPU mask of every host, in host order."""
        return np.array([h.available_mask for h in self.hosts], dtype=np.int64)

    def with_bandwidth(self, model: BandwidthModel | Callable[..., float]) -> GpuSelectInstance:
        """The same hosts and request under another bandwidth model."""
        return GpuSelectInstance(self.name, self.k, self.hosts, model, self.cluster, self.labels)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the instance (``cluster`` and ``labels`` only when set; tables
        of the bandwidth model inline)."""
        out: dict[str, Any] = {
            "family": self.family,
            "format_version": FORMAT_VERSION,
            "name": self.name,
        }
        if self.cluster is not None:
            out["cluster"] = self.cluster
        if self.labels:
            out["labels"] = dict(self.labels)
        out["k"] = self.k
        out["hosts"] = [h.to_dict() for h in self.hosts]
        out["bandwidth"] = self.bandwidth.to_dict()
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, files: FileAccess | None = None
    ) -> GpuSelectInstance:
        """Read the family's JSON object; table and topology files are read as ``files``
        allows (relative to the instance file's folder). ``name`` defaults to
        ``"unnamed"``; every rule is the constructors'."""
        return cls(
            name=data.get("name", "unnamed"),
            k=v.field(data, "k"),
            hosts=v.field(data, "hosts"),
            bandwidth=model_from_dict(v.field(data, "bandwidth"), files),
            cluster=data.get("cluster"),
            labels=data.get("labels", {}),
        )
