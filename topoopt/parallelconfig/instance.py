"""The parallelconfig instance: the GPUs of one cluster given to a job, and the model to train.

JSON (the JSON Schema is :data:`topoopt.parallelconfig.schema.SCHEMA`; ``docs/parallelconfig.md``
explains every field)::

    {"family": "parallelconfig", "format_version": 1, "name": "worked",
     "nodes": [{"name": "n0", "gpus": 4}, {"name": "n1", "gpus": 4}],
     "intra_node_gbps": 800.0, "inter_node_gbps": 80.0,
     "model": {"layers": [{"compute_s": 0.01, "param_bytes": 2.5e8}, ...],
               "activation_bytes": 1e8, "micro_batches": 8},
     "alpha": 1.0, "beta": 1.0, "parallelism": {"d": 2, "p": 4}}

The GPUs are named ``"<node>/<k>"``, ``k = 0 .. gpus - 1`` (:meth:`ParallelConfigInstance.gpu`).
Every rule lives in the constructors, so an instance built in code is checked exactly like one
read from JSON.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from topoopt.core import limits
from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.family import Instance
from topoopt.core.safejson import FileAccess
from topoopt.parallelconfig.schema import GBPS_RANGE, LIMITS, MAX_BYTES, MAX_COMPUTE_S, MAX_WEIGHT

if TYPE_CHECKING:
    from topoopt.parallelconfig.result import ParallelConfigResult  # noqa: F401

limits.declare_all(LIMITS)

GBPS_TO_BYTES_PER_S = 1e9 / 8
"""Bytes per second in one Gb/s."""


def bandwidth(value: Any, path: str) -> float:
    """A GPU-to-GPU bandwidth in Gb/s (``intra_node_gbps``, ``inter_node_gbps``): a finite number
    ``> 0`` within :data:`~topoopt.parallelconfig.schema.GBPS_RANGE`.

    Examples
    --------
    >>> bandwidth(800, "intra_node_gbps")
    800.0
    """
    low, high = GBPS_RANGE
    return v.as_positive(value, path, high, low)


def _pair(item: Any, path: str) -> Sequence[Any]:
    """``item`` as a two-element sequence (not a string)."""
    if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
        raise InvalidInstanceError(path, f"must be a JSON object or a pair, got {item!r}")
    return item


def split_layers(n_layers: int, p: int) -> tuple[tuple[int, int], ...]:
    """The layers ``[start, stop)`` of each of ``p`` stages: contiguous, as even as possible,
    the first ``L mod p`` stages one layer longer.

    Examples
    --------
    >>> split_layers(10, 4)
    ((0, 3), (3, 6), (6, 8), (8, 10))
    """
    size, extra = divmod(n_layers, p)
    bounds, start = [], 0
    for s in range(p):
        stop = start + size + (1 if s < extra else 0)
        bounds.append((start, stop))
        start = stop
    return tuple(bounds)


@dataclass(frozen=True)
class Node:
    """A node of the cluster with ``gpus`` GPUs given to the job."""

    name: str
    gpus: int

    def __post_init__(self) -> None:
        name = v.as_str(self.name, "name")
        if "/" in name:
            raise InvalidInstanceError(
                "name", f"must not contain '/' (GPUs are 'node/k'): {name!r}"
            )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "gpus", v.as_int(self.gpus, "gpus", minimum=1))

    @classmethod
    def from_any(cls, item: Any) -> Node:
        """A node from a ``Node``, its JSON object or a ``(name, gpus)`` pair."""
        if isinstance(item, Node):
            return item
        if isinstance(item, Mapping):
            return cls(v.field(item, "name"), v.field(item, "gpus"))
        return cls(*_pair(item, ""))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        return {"name": self.name, "gpus": self.gpus}


def parse_nodes(nodes: Any, path: str = "nodes") -> tuple[Node, ...]:
    """At least one :class:`Node` (objects, JSON objects or ``(name, gpus)`` pairs) with unique
    names, within the ``parallelconfig_nodes`` and ``parallelconfig_gpus`` limits; errors name
    ``path[i]``."""
    raw = v.as_tuple(nodes, path, min_len=1)
    limits.check("parallelconfig_nodes", len(raw), path, f"{len(raw)} nodes")
    parsed = []
    for i, item in enumerate(raw):
        with v.within(f"{path}[{i}]"):
            parsed.append(Node.from_any(item))
    v.unique_names([n.name for n in parsed], path)
    total = sum(n.gpus for n in parsed)
    limits.check("parallelconfig_gpus", total, path, f"{total} GPUs")
    return tuple(parsed)


@dataclass(frozen=True)
class Layer:
    """One layer: ``compute_s`` (forward + backward of one micro-batch, s, > 0) and
    ``param_bytes`` (gradient bytes it all-reduces, >= 0)."""

    compute_s: float
    param_bytes: float

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "compute_s", v.as_positive(self.compute_s, "compute_s", MAX_COMPUTE_S)
        )
        object.__setattr__(
            self,
            "param_bytes",
            v.as_float(self.param_bytes, "param_bytes", minimum=0, maximum=MAX_BYTES),
        )

    @classmethod
    def from_any(cls, item: Any) -> Layer:
        """A layer from a ``Layer``, its JSON object or a ``(compute_s, param_bytes)`` pair."""
        if isinstance(item, Layer):
            return item
        if isinstance(item, Mapping):
            return cls(v.field(item, "compute_s"), v.field(item, "param_bytes"))
        return cls(*_pair(item, ""))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        return {"compute_s": self.compute_s, "param_bytes": self.param_bytes}


@dataclass(frozen=True, init=False)
class TrainingModel:
    """The model: its layers in pipeline order, the bytes crossing a stage boundary per
    micro-batch and the micro-batches of one iteration.

    Parameters
    ----------
    layers
        ``L >= 1`` layers: :class:`Layer` objects, JSON objects or ``(compute_s, param_bytes)``.
    activation_bytes
        ``A``: bytes sent from one stage to the next per micro-batch, forward activations plus
        backward gradients together (>= 0).
    micro_batches
        ``M >= 1``: micro-batches per iteration, split over the ``d`` replicas.

    Examples
    --------
    >>> model = TrainingModel.uniform(4, compute_s=0.5, param_bytes=8.0, activation_bytes=1.0,
    ...                               micro_batches=6)
    >>> model.stages(3)
    ((1.0, 0.5, 0.5), (16.0, 8.0, 8.0))
    """

    layers: tuple[Layer, ...]
    activation_bytes: float
    micro_batches: int

    def __init__(self, layers: Iterable[Any], activation_bytes: float, micro_batches: int) -> None:
        raw = v.as_tuple(layers, "layers", min_len=1)
        limits.check("parallelconfig_layers", len(raw), "layers", f"{len(raw)} layers")
        parsed = []
        for i, item in enumerate(raw):
            with v.within(f"layers[{i}]"):
                parsed.append(Layer.from_any(item))
        put = object.__setattr__
        put(self, "layers", tuple(parsed))
        put(
            self,
            "activation_bytes",
            v.as_float(activation_bytes, "activation_bytes", minimum=0, maximum=MAX_BYTES),
        )
        put(self, "micro_batches", v.as_int(micro_batches, "micro_batches", minimum=1))

    @classmethod
    def uniform(
        cls,
        layers: int,
        *,
        compute_s: float,
        param_bytes: float,
        activation_bytes: float,
        micro_batches: int,
    ) -> TrainingModel:
        """``layers`` identical layers."""
        count = v.as_int(layers, "layers", minimum=1)
        limits.check("parallelconfig_layers", count, "layers", f"{count} layers")
        return cls([(compute_s, param_bytes)] * count, activation_bytes, micro_batches)

    @classmethod
    def from_any(cls, item: Any) -> TrainingModel:
        """A model from a ``TrainingModel`` or its JSON object."""
        if isinstance(item, TrainingModel):
            return item
        data = v.as_mapping(item, "")
        return cls(
            v.field(data, "layers"),
            v.field(data, "activation_bytes"),
            v.field(data, "micro_batches"),
        )

    @property
    def n_layers(self) -> int:
        """``L``."""
        return len(self.layers)

    def stages(self, p: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Compute time ``c_s`` (s per micro-batch) and gradient bytes ``P_s`` of each of ``p``
        stages, the layers split by :func:`split_layers`."""
        bounds = split_layers(self.n_layers, p)
        compute = tuple(math.fsum(x.compute_s for x in self.layers[a:b]) for a, b in bounds)
        params = tuple(math.fsum(x.param_bytes for x in self.layers[a:b]) for a, b in bounds)
        return compute, params

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        return {
            "layers": [x.to_dict() for x in self.layers],
            "activation_bytes": self.activation_bytes,
            "micro_batches": self.micro_batches,
        }


@dataclass(frozen=True, init=False)
class ParallelConfigInstance(Instance["ParallelConfigResult"]):
    """Choose ``(d, p)`` and the GPU of every (replica, stage) of one job in one cluster
    (SpiderFlow §4.2, the intra-cluster level of TPA).

    Parameters
    ----------
    name
        Instance name.
    nodes
        The nodes and the GPUs each gives to the job (``r`` in all): :class:`Node` objects,
        JSON objects or ``(name, gpus)`` pairs; names unique, without ``/``.
    intra_node_gbps, inter_node_gbps
        GPU-to-GPU bandwidth inside a node and between nodes, Gb/s, > 0.
    model
        The :class:`TrainingModel` (or its JSON object).
    alpha, beta
        Weights of ``T_dp`` and ``T_pp`` in the objective (>= 0, default 1).
    parallelism
        ``None`` (the solvers choose ``(d, p)``) or a fixed ``(d, p)`` (a pair or ``{"d", "p"}``)
        with ``d·p <= r``, ``p <= L`` and ``d <= M``.
    labels
        Free-form metadata, string to string (part of equality, not of the hash).

    Raises
    ------
    InvalidInstanceError
        Naming the JSON path (``nodes[1].gpus``, ``model.layers[3].compute_s``,
        ``parallelism``, ...) and the rule.

    Examples
    --------
    >>> inst = ParallelConfigInstance(
    ...     "tiny", nodes=[("a", 2), ("b", 2)], intra_node_gbps=800, inter_node_gbps=80,
    ...     model=TrainingModel.uniform(4, compute_s=0.01, param_bytes=1e8,
    ...                                 activation_bytes=1e7, micro_batches=4))
    >>> inst.n_gpus, inst.gpu(1, 0), inst.locate("b/1")
    (4, 'b/0', (1, 1))
    >>> inst == ParallelConfigInstance.from_dict(inst.to_dict())
    True
    """

    family: ClassVar[str] = "parallelconfig"

    name: str
    nodes: tuple[Node, ...]
    intra_node_gbps: float
    inter_node_gbps: float
    model: TrainingModel
    alpha: float
    beta: float
    parallelism: tuple[int, int] | None
    labels: dict[str, str] = field(hash=False)

    def __init__(
        self,
        name: str,
        nodes: Iterable[Node | Mapping[str, Any] | Sequence[Any]],
        intra_node_gbps: float,
        inter_node_gbps: float,
        model: TrainingModel | Mapping[str, Any],
        alpha: float = 1.0,
        beta: float = 1.0,
        parallelism: tuple[int, int] | Mapping[str, Any] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(name, "name"))
        put(self, "labels", v.as_labels({} if labels is None else labels, "labels"))
        put(self, "nodes", parse_nodes(nodes))
        put(self, "intra_node_gbps", bandwidth(intra_node_gbps, "intra_node_gbps"))
        put(self, "inter_node_gbps", bandwidth(inter_node_gbps, "inter_node_gbps"))
        with v.within("model"):
            put(self, "model", TrainingModel.from_any(model))
        put(self, "alpha", v.as_float(alpha, "alpha", minimum=0, maximum=MAX_WEIGHT))
        put(self, "beta", v.as_float(beta, "beta", minimum=0, maximum=MAX_WEIGHT))
        put(self, "parallelism", None if parallelism is None else self._fixed(parallelism))

    def _fixed(self, parallelism: Any) -> tuple[int, int]:
        """A fixed ``(d, p)`` checked against the GPUs, layers and micro-batches."""
        if isinstance(parallelism, Mapping):
            d, p = (
                v.field(parallelism, "d", "parallelism"),
                v.field(parallelism, "p", "parallelism"),
            )
        else:
            d, p = _pair(parallelism, "parallelism")
        d = v.as_int(d, "parallelism.d", minimum=1)
        p = v.as_int(p, "parallelism.p", minimum=1)
        if d * p > self.n_gpus:
            raise InvalidInstanceError(
                "parallelism", f"d·p = {d}·{p} = {d * p} GPUs exceed the job's {self.n_gpus}"
            )
        if p > self.model.n_layers:
            raise InvalidInstanceError(
                "parallelism.p", f"{p} stages exceed the model's {self.model.n_layers} layers"
            )
        if d > self.model.micro_batches:
            raise InvalidInstanceError(
                "parallelism.d",
                f"{d} replicas exceed the {self.model.micro_batches} micro-batches "
                "(each replica needs one)",
            )
        return d, p

    @property
    def n_gpus(self) -> int:
        """``r``, the GPUs given to the job."""
        return sum(n.gpus for n in self.nodes)

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return len(self.nodes)

    @property
    def capacities(self) -> list[int]:
        """GPUs per node, in node order."""
        return list(self.gpu_counts)

    @functools.cached_property
    def gpu_counts(self) -> tuple[int, ...]:
        """GPUs per node, in node order, as a tuple computed once (the bounds ask it for every
        configuration)."""
        return tuple(n.gpus for n in self.nodes)

    @functools.cached_property
    def node_index(self) -> dict[str, int]:
        """Node name -> position."""
        return {n.name: i for i, n in enumerate(self.nodes)}

    @property
    def intra_bps(self) -> float:
        """``B_intra``: bytes/s between two GPUs of one node."""
        return self.intra_node_gbps * GBPS_TO_BYTES_PER_S

    @property
    def cross_bps(self) -> float:
        """``B_cross``: bytes/s between GPUs of different nodes, ``min(intra, inter)`` (the path
        crosses the node's fabric and the network)."""
        return min(self.intra_node_gbps, self.inter_node_gbps) * GBPS_TO_BYTES_PER_S

    def gpu(self, node: int, k: int) -> str:
        """Name of GPU ``k`` of node number ``node``: ``"<node name>/<k>"``."""
        return f"{self.nodes[node].name}/{k}"

    def locate(self, gpu: str) -> tuple[int, int] | None:
        """``(node number, k)`` of a GPU name, or ``None`` when no such GPU exists (names are
        exact: ``"n0/01"`` is not ``"n0/1"``)."""
        if not isinstance(gpu, str):
            return None
        node, _, k = gpu.partition("/")
        i = self.node_index.get(node)
        if i is None or not k.isdigit() or str(int(k)) != k or int(k) >= self.nodes[i].gpus:
            return None
        return i, int(k)

    def configurations(self) -> Iterator[tuple[int, int]]:
        """Every admissible ``(d, p)`` by ``d`` then ``p``: ``d·p <= r``, ``p <= L``, ``d <= M``
        (only the fixed one when :attr:`parallelism` is set)."""
        if self.parallelism is not None:
            yield self.parallelism
            return
        r = self.n_gpus
        for d in range(1, min(r, self.model.micro_batches) + 1):
            for p in range(1, min(r // d, self.model.n_layers) + 1):
                yield d, p

    def n_configurations(self) -> int:
        """How many ``(d, p)`` :meth:`configurations` yields."""
        if self.parallelism is not None:
            return 1
        r, layers = self.n_gpus, self.model.n_layers
        return sum(min(r // d, layers) for d in range(1, min(r, self.model.micro_batches) + 1))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the instance (``labels`` and ``parallelism`` only when set)."""
        out = self.json_header()
        out["nodes"] = [n.to_dict() for n in self.nodes]
        out["intra_node_gbps"] = self.intra_node_gbps
        out["inter_node_gbps"] = self.inter_node_gbps
        out["model"] = self.model.to_dict()
        out["alpha"] = self.alpha
        out["beta"] = self.beta
        if self.parallelism is not None:
            out["parallelism"] = {"d": self.parallelism[0], "p": self.parallelism[1]}
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, files: FileAccess | None = None
    ) -> ParallelConfigInstance:
        """Read the family's JSON object (it names no files). ``name`` defaults to
        ``"unnamed"``, ``alpha`` and ``beta`` to 1; every rule is the constructor's."""
        return cls(
            name=data.get("name", "unnamed"),
            nodes=v.field(data, "nodes"),
            intra_node_gbps=v.field(data, "intra_node_gbps"),
            inter_node_gbps=v.field(data, "inter_node_gbps"),
            model=v.field(data, "model"),
            alpha=data.get("alpha", 1.0),
            beta=data.get("beta", 1.0),
            parallelism=data.get("parallelism"),
            labels=data.get("labels", {}),
        )
