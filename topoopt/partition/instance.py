"""The partition instance: a job's communication graph and the clusters it is mapped onto.

JSON (the JSON Schema is :data:`topoopt.partition.schema.SCHEMA`; ``docs/partition.md`` explains
it)::

    {"family": "partition", "format_version": 1, "name": "tiny",
     "clusters": [{"name": "c0", "capacity_gpus": 64}, ...],
     "links": [{"a": "c0", "b": "c1", "bandwidth_gbps": 10.0}, ...],
     "graph": {"vertices": [{"name": "s0r0", "gpus": 8}, ...],
               "edges": [{"u": "s0r0", "v": "s1r0", "traffic": 2.5}, ...]}}

Optional intra-cluster data, for the two-level Heuristic-ILP (:mod:`topoopt.partition.intra`):
per cluster ``"nodes": [{"name": "n0", "gpus": 8}, ...]``, ``"intra_node_gbps"`` and
``"inter_node_gbps"`` (together); per vertex ``"compute_s"`` and ``"param_bytes"`` (together:
the vertex is a block of layers); at the top ``"training": {"activation_bytes": ...,
"micro_batches": ..., "alpha": 1.0, "beta": 1.0}``. They follow the rules of the
parallelconfig instance (:class:`~topoopt.parallelconfig.instance.Node`,
:class:`~topoopt.parallelconfig.instance.Layer`, the bandwidth range) and are written back only
when given, so an instance without them reads and writes exactly as before.

Every rule lives in the constructors (and in :class:`~topoopt.crosscluster.graph.ClusterGraph`),
so an instance built in code is checked exactly like one read from JSON.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from topoopt.core import limits
from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.family import Instance
from topoopt.core.safejson import FileAccess
from topoopt.crosscluster.graph import ClusterGraph, Link
from topoopt.parallelconfig.instance import Layer, Node, TrainingModel, bandwidth, parse_nodes
from topoopt.parallelconfig.schema import MAX_BYTES, MAX_WEIGHT
from topoopt.partition.schema import LIMITS

if TYPE_CHECKING:
    from topoopt.partition.result import PartitionResult  # noqa: F401

limits.declare_all(LIMITS)


def _from_any(
    cls: type[Any], item: Any, fields: tuple[str, ...], optional: tuple[str, ...] = ()
) -> Any:
    """``cls`` from an instance of it, its JSON object (``fields`` required, ``optional`` taken
    when present) or a tuple of its ``fields`` followed by some of ``optional``."""
    if isinstance(item, cls):
        return item
    if isinstance(item, Mapping):
        given = {name: item[name] for name in optional if name in item}
        return cls(*(v.field(item, name) for name in fields), **given)
    if (
        isinstance(item, Sequence)
        and not isinstance(item, str)
        and len(fields) <= len(item) <= len(fields) + len(optional)
    ):
        return cls(*item)
    raise InvalidInstanceError(
        "",
        f"must be a {cls.__name__}, a JSON object or a ({', '.join(fields)}) tuple, got {item!r}",
    )


def _together(obj: Any, names: tuple[str, ...], what: str) -> bool:
    """Whether all of the optional fields ``names`` of ``obj`` are given (``False``: none);
    an error naming the first missing field when only some are."""
    given = [name for name in names if getattr(obj, name) is not None]
    if given and len(given) < len(names):
        missing = next(name for name in names if getattr(obj, name) is None)
        listing = ", ".join(names[:-1]) + f" and {names[-1]}"
        raise InvalidInstanceError(
            missing,
            f"missing: {listing} describe {what} together, but only {' and '.join(given)} "
            f"{'is' if len(given) == 1 else 'are'} given",
        )
    return bool(given)


CLUSTER_INTRA = ("nodes", "intra_node_gbps", "inter_node_gbps")
"""A cluster's optional intra-cluster fields (all or none)."""
VERTEX_INTRA = ("compute_s", "param_bytes")
"""A vertex's optional layer-block fields (both or none)."""


@dataclass(frozen=True)
class Cluster:
    """A cluster and the GPUs the job may use there (its capacity).

    Optionally (Heuristic-ILP) the nodes those GPUs are on
    (:class:`~topoopt.parallelconfig.instance.Node`, at least ``capacity_gpus`` GPUs in all)
    and the GPU-to-GPU bandwidths inside a node and between nodes (Gb/s), all three or none.
    """

    name: str
    capacity_gpus: int
    nodes: tuple[Node, ...] | None = None
    intra_node_gbps: float | None = None
    inter_node_gbps: float | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(self.name, "name"))
        capacity = v.as_int(self.capacity_gpus, "capacity_gpus", minimum=0)
        put(self, "capacity_gpus", capacity)
        if not _together(self, CLUSTER_INTRA, "the cluster's nodes"):
            return
        nodes = parse_nodes(self.nodes)
        held = sum(n.gpus for n in nodes)
        if held < capacity:
            raise InvalidInstanceError(
                "nodes", f"hold {held} GPUs in all, fewer than capacity_gpus = {capacity}"
            )
        put(self, "nodes", nodes)
        put(self, "intra_node_gbps", bandwidth(self.intra_node_gbps, "intra_node_gbps"))
        put(self, "inter_node_gbps", bandwidth(self.inter_node_gbps, "inter_node_gbps"))

    @property
    def has_nodes(self) -> bool:
        """Whether the intra-cluster fields are given."""
        return self.nodes is not None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (the intra-cluster fields only when given)."""
        out: dict[str, Any] = {"name": self.name, "capacity_gpus": self.capacity_gpus}
        if self.nodes is not None:
            out["nodes"] = [n.to_dict() for n in self.nodes]
            out["intra_node_gbps"] = self.intra_node_gbps
            out["inter_node_gbps"] = self.inter_node_gbps
        return out


@dataclass(frozen=True)
class Vertex:
    """A compute unit of the job (e.g. pipeline stage ``s`` of DP replica ``r``) and its GPUs.

    Optionally (Heuristic-ILP) a block of layers of the model: ``compute_s`` (forward +
    backward of one micro-batch, s, > 0) and ``param_bytes`` (gradient bytes, >= 0), both or
    none, on at least one GPU (:class:`~topoopt.parallelconfig.instance.Layer`'s rules).
    """

    name: str
    gpus: int
    compute_s: float | None = None
    param_bytes: float | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(self.name, "name"))
        put(self, "gpus", v.as_int(self.gpus, "gpus", minimum=0))
        if not _together(self, VERTEX_INTRA, "a block of layers"):
            return
        layer = Layer(self.compute_s, self.param_bytes)  # type: ignore[arg-type]
        put(self, "compute_s", layer.compute_s)
        put(self, "param_bytes", layer.param_bytes)
        if self.gpus < 1:
            raise InvalidInstanceError(
                "gpus", "a block of layers (with compute_s) needs at least 1 GPU, got 0"
            )

    @property
    def layer(self) -> Layer | None:
        """The vertex as a parallelconfig layer, ``None`` without ``compute_s``."""
        if self.compute_s is None or self.param_bytes is None:
            return None
        return Layer(self.compute_s, self.param_bytes)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (``compute_s`` and ``param_bytes`` only when given)."""
        out: dict[str, Any] = {"name": self.name, "gpus": self.gpus}
        if self.compute_s is not None:
            out["compute_s"] = self.compute_s
            out["param_bytes"] = self.param_bytes
        return out


@dataclass(frozen=True)
class Training:
    """The training figures every cluster's sub-problem shares (Heuristic-ILP): the bytes
    crossing a stage boundary per micro-batch, the micro-batches of an iteration and the
    weights of ``T_dp`` and ``T_pp`` — the rules of
    :class:`~topoopt.parallelconfig.instance.TrainingModel` and of ``alpha`` / ``beta`` in
    :class:`~topoopt.parallelconfig.instance.ParallelConfigInstance`.

    Examples
    --------
    >>> Training(1e8, 8).model([(0.01, 2.5e8)]).n_layers
    1
    """

    activation_bytes: float
    micro_batches: int
    alpha: float = 1.0
    beta: float = 1.0

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(
            self,
            "activation_bytes",
            v.as_float(self.activation_bytes, "activation_bytes", minimum=0, maximum=MAX_BYTES),
        )
        put(self, "micro_batches", v.as_int(self.micro_batches, "micro_batches", minimum=1))
        put(self, "alpha", v.as_float(self.alpha, "alpha", minimum=0, maximum=MAX_WEIGHT))
        put(self, "beta", v.as_float(self.beta, "beta", minimum=0, maximum=MAX_WEIGHT))

    @classmethod
    def from_any(cls, item: Any) -> Training:
        """From a ``Training`` or its JSON object (``alpha`` and ``beta`` default to 1)."""
        if isinstance(item, Training):
            return item
        data = v.as_mapping(item, "")
        return cls(
            v.field(data, "activation_bytes"),
            v.field(data, "micro_batches"),
            data.get("alpha", 1.0),
            data.get("beta", 1.0),
        )

    def model(self, layers: Iterable[Any]) -> TrainingModel:
        """The parallelconfig model of ``layers`` with these figures."""
        return TrainingModel(layers, self.activation_bytes, self.micro_batches)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        return {
            "activation_bytes": self.activation_bytes,
            "micro_batches": self.micro_batches,
            "alpha": self.alpha,
            "beta": self.beta,
        }


@dataclass(frozen=True)
class Edge:
    """Traffic between compute units ``u`` and ``v`` (undirected; any unit, e.g. GB per step)."""

    u: str
    v: str
    traffic: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "u", v.as_str(self.u, "u"))
        object.__setattr__(self, "v", v.as_str(self.v, "v"))
        if self.u == self.v:
            raise InvalidInstanceError(
                "v", f"an edge must join two vertices, not {self.u!r} itself"
            )
        object.__setattr__(self, "traffic", v.as_float(self.traffic, "traffic", minimum=0.0))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        return {"u": self.u, "v": self.v, "traffic": self.traffic}


def _parse(
    items: Any,
    path: str,
    cls: type[Any],
    fields: tuple[str, ...],
    limit: str,
    optional: tuple[str, ...] = (),
) -> tuple:
    raw = v.as_tuple(items, path)
    limits.check(limit, len(raw), path, f"{len(raw)} items")
    out = []
    for i, item in enumerate(raw):
        with v.within(f"{path}[{i}]"):
            out.append(_from_any(cls, item, fields, optional))
    return tuple(out)


@dataclass(frozen=True, init=False)
class PartitionInstance(Instance["PartitionResult"]):
    """Map a job's compute units onto clusters with capacities, minimising the weighted cut
    (family ``partition``, SpiderFlow §4.2 eq. 9).

    Parameters
    ----------
    name
        Instance name.
    clusters
        The clusters (at least one, distinct names): :class:`Cluster` objects, JSON objects or
        ``(name, capacity_gpus)`` pairs.
    links
        The links between clusters (:class:`~topoopt.crosscluster.graph.Link`, JSON objects or
        ``(a, b, bandwidth[, latency])`` tuples); the cluster graph must be connected.
    vertices
        The job's compute units (at least one, distinct names): :class:`Vertex`, JSON objects or
        ``(name, gpus)`` pairs; each fits some cluster and together they fit all clusters.
    edges
        Traffic between units: :class:`Edge`, JSON objects or ``(u, v, traffic)`` tuples, one per
        pair of distinct units.
    labels
        Free-form metadata, string to string (part of equality, not of the hash).
    training
        Optional (Heuristic-ILP): the :class:`Training` figures (or their JSON object).

    Raises
    ------
    InvalidInstanceError
        Naming the JSON path (``clusters[1].capacity_gpus``, ``links[0].b``,
        ``graph.vertices[3].gpus``, ``graph.edges[2].v``, ``clusters[2].nodes``,
        ``graph.vertices[0].compute_s``, ``training.micro_batches``, ...) and the rule.

    Examples
    --------
    >>> inst = PartitionInstance(
    ...     "tiny", clusters=[("c0", 16), ("c1", 8)], links=[("c0", "c1", 10.0)],
    ...     vertices=[("s0", 8), ("s1", 8)], edges=[("s0", "s1", 2.5)])
    >>> inst.weights.tolist()
    [[0.0, 0.1], [0.1, 0.0]]
    >>> inst == PartitionInstance.from_dict(inst.to_dict())
    True
    """

    family: ClassVar[str] = "partition"

    name: str
    clusters: tuple[Cluster, ...]
    graph: ClusterGraph
    vertices: tuple[Vertex, ...]
    edges: tuple[Edge, ...]
    labels: dict[str, str] = field(hash=False)
    training: Training | None = None

    def __init__(
        self,
        name: str,
        clusters: Iterable[Cluster | Mapping[str, Any] | Sequence[Any]],
        links: Iterable[Link | Mapping[str, Any] | Sequence[Any]],
        vertices: Iterable[Vertex | Mapping[str, Any] | Sequence[Any]],
        edges: Iterable[Edge | Mapping[str, Any] | Sequence[Any]],
        labels: Mapping[str, str] | None = None,
        training: Training | Mapping[str, Any] | None = None,
    ) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(name, "name"))
        put(self, "labels", v.as_labels({} if labels is None else labels, "labels"))
        parsed = _parse(
            clusters,
            "clusters",
            Cluster,
            ("name", "capacity_gpus"),
            "partition_clusters",
            CLUSTER_INTRA,
        )
        if not parsed:
            raise InvalidInstanceError("clusters", "must have at least 1 item(s)")
        v.unique_names([c.name for c in parsed], "clusters")
        put(self, "clusters", parsed)
        raw_links = v.as_tuple(links, "links")
        limits.check("partition_edges", len(raw_links), "links", f"{len(raw_links)} links")
        put(self, "graph", ClusterGraph([c.name for c in parsed], raw_links))
        units = _parse(
            vertices, "graph.vertices", Vertex, ("name", "gpus"), "partition_vertices", VERTEX_INTRA
        )
        if not units:
            raise InvalidInstanceError("graph.vertices", "must have at least 1 item(s)")
        v.unique_names([u.name for u in units], "graph.vertices")
        put(self, "vertices", units)
        put(
            self,
            "edges",
            _parse(edges, "graph.edges", Edge, ("u", "v", "traffic"), "partition_edges"),
        )
        self._check_edges()
        self._check_capacity()
        if training is not None:
            with v.within("training"):
                put(self, "training", Training.from_any(training))
        else:
            put(self, "training", None)

    def _check_edges(self) -> None:
        names = self.vertex_index
        seen: dict[frozenset[str], int] = {}
        for i, edge in enumerate(self.edges):
            for end in ("u", "v"):
                name = getattr(edge, end)
                if name not in names:
                    close = difflib.get_close_matches(name, list(names), n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    raise InvalidInstanceError(
                        f"graph.edges[{i}].{end}", f"unknown vertex {name!r}{hint}"
                    )
            pair = frozenset((edge.u, edge.v))
            if pair in seen:
                raise InvalidInstanceError(
                    f"graph.edges[{i}]",
                    f"joins {edge.u!r} and {edge.v!r} again (already graph.edges[{seen[pair]}]); "
                    "give one edge per pair with the summed traffic",
                )
            seen[pair] = i

    def _check_capacity(self) -> None:
        largest = max(c.capacity_gpus for c in self.clusters)
        for i, unit in enumerate(self.vertices):
            if unit.gpus > largest:
                raise InvalidInstanceError(
                    f"graph.vertices[{i}].gpus",
                    f"needs {unit.gpus} GPUs but the largest cluster holds {largest}",
                )
        if self.total_gpus > self.total_capacity:
            raise InvalidInstanceError(
                "graph.vertices",
                f"need {self.total_gpus} GPUs but the clusters hold {self.total_capacity}",
            )

    @cached_property
    def vertex_index(self) -> dict[str, int]:
        """Position of every vertex name."""
        return {u.name: i for i, u in enumerate(self.vertices)}

    @property
    def n_clusters(self) -> int:
        """Number of clusters."""
        return len(self.clusters)

    @property
    def n_vertices(self) -> int:
        """Number of vertices."""
        return len(self.vertices)

    @property
    def total_gpus(self) -> int:
        """GPUs of all vertices."""
        return sum(u.gpus for u in self.vertices)

    @cached_property
    def intra_missing(self) -> str | None:
        """The first missing piece of the intra-cluster data (a JSON path and what is missing),
        or ``None`` when it is complete: ``training`` given, ``nodes`` on every cluster with a
        capacity, ``compute_s`` on every vertex."""
        if self.training is None:
            return "training: missing"
        for i, cluster in enumerate(self.clusters):
            if cluster.capacity_gpus > 0 and cluster.nodes is None:
                return f"clusters[{i}].nodes: missing"
        for i, unit in enumerate(self.vertices):
            if unit.compute_s is None:
                return f"graph.vertices[{i}].compute_s: missing"
        return None

    @property
    def has_intra(self) -> bool:
        """Whether the intra-cluster data is complete (:attr:`intra_missing` is ``None``): every
        cluster's sub-problem of Heuristic-ILP can then be built (:mod:`topoopt.partition.intra`).
        """
        return self.intra_missing is None

    @property
    def total_capacity(self) -> int:
        """Capacity of all clusters."""
        return sum(c.capacity_gpus for c in self.clusters)

    @cached_property
    def weights(self) -> np.ndarray:
        """``w(a, b) = 1 / beta(a -> b)`` in s/Gb for every pair of clusters (eq. 9 with the
        widest-path bandwidth of eq. 1), 0 on the diagonal."""
        out = np.zeros((self.n_clusters, self.n_clusters))
        for a, name in enumerate(self.graph.clusters):
            widths = self.graph.widest_from(name)
            for b, width in enumerate(widths):
                if a != b:
                    out[a, b] = 1.0 / width
        return out

    @cached_property
    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(u, v, traffic)`` of every edge as vertex indices and traffic."""
        index = self.vertex_index
        u = np.array([index[e.u] for e in self.edges], dtype=np.int64)
        w = np.array([index[e.v] for e in self.edges], dtype=np.int64)
        return u, w, np.array([e.traffic for e in self.edges], dtype=float)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the instance (``labels`` only when set)."""
        out = self.json_header()
        out["clusters"] = [c.to_dict() for c in self.clusters]
        out["links"] = self.graph.to_dicts()
        out["graph"] = {
            "vertices": [u.to_dict() for u in self.vertices],
            "edges": [e.to_dict() for e in self.edges],
        }
        if self.training is not None:
            out["training"] = self.training.to_dict()
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, files: FileAccess | None = None
    ) -> PartitionInstance:
        """Read the family's JSON object (it names no files). ``name`` defaults to
        ``"unnamed"``; every rule is the constructors'."""
        graph = v.as_mapping(v.field(data, "graph"), "graph")
        return cls(
            name=data.get("name", "unnamed"),
            clusters=v.field(data, "clusters"),
            links=v.field(data, "links"),
            vertices=v.field(graph, "vertices", "graph"),
            edges=v.field(graph, "edges", "graph"),
            labels=data.get("labels", {}),
            training=data.get("training"),
        )
