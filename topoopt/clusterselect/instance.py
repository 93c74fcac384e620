"""The clusterselect instance: a cluster graph with free GPUs and one task's GPU demand.

JSON (the JSON Schema is :data:`topoopt.clusterselect.schema.SCHEMA`; ``docs/clusterselect.md``
explains it)::

    {"family": "clusterselect", "format_version": 1, "name": "fig2",
     "clusters": [{"name": "a", "free_gpus": 4}, ...],
     "links": [{"a": "a", "b": "e", "bandwidth_gbps": 10.0, "latency_ms": 7.0}, ...],
     "demand": 16, "source": "a"}

Every rule lives in the constructor (and in :class:`~topoopt.crosscluster.graph.ClusterGraph`),
so an instance built in code or from a networkx graph is checked exactly like one read from
JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from topoopt.clusterselect.schema import LIMITS
from topoopt.core import limits
from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.family import Instance
from topoopt.core.safejson import FileAccess
from topoopt.crosscluster.graph import ClusterGraph, Link

if TYPE_CHECKING:
    import networkx as nx

    from topoopt.clusterselect.result import ClusterSelectResult  # noqa: F401

limits.declare_all(LIMITS)


@dataclass(frozen=True)
class Cluster:
    """A cluster with ``free_gpus`` GPUs free for the task (``g_i`` of SpiderFlow §4.1.1)."""

    name: str
    free_gpus: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", v.as_str(self.name, "name"))
        object.__setattr__(self, "free_gpus", v.as_int(self.free_gpus, "free_gpus", minimum=0))

    @classmethod
    def from_any(cls, item: Any) -> Cluster:
        """A cluster from a ``Cluster``, its JSON object or a ``(name, free_gpus)`` pair."""
        if isinstance(item, Cluster):
            return item
        if isinstance(item, Mapping):
            return cls(v.field(item, "name"), v.field(item, "free_gpus"))
        if isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2:
            return cls(*item)
        raise InvalidInstanceError(
            "", f"must be a Cluster, a JSON object or a (name, free_gpus) pair, got {item!r}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object."""
        return {"name": self.name, "free_gpus": self.free_gpus}


@dataclass(frozen=True, init=False)
class ClusterSelectInstance(Instance["ClusterSelectResult"]):
    """Choose clusters and GPUs per cluster for a task of ``demand`` GPUs (SpiderFlow §4.1).

    Parameters
    ----------
    name
        Instance name.
    clusters
        The clusters (at least one, distinct names): :class:`Cluster` objects, JSON objects or
        ``(name, free_gpus)`` pairs.
    links
        The links (see :class:`~topoopt.crosscluster.graph.Link`); the graph must be connected.
    demand
        GPUs the task needs, ``1 <= demand <=`` the free GPUs of all clusters (``d_t``).
    source
        The cluster the task arrives at, or ``None``. SpinSearch then ranks clusters by their
        widest-path bandwidth from it (eq. 3) and anchors its hop expansion there; the objective
        does not depend on it.
    labels
        Free-form metadata, string to string (part of equality, not of the hash).

    Raises
    ------
    InvalidInstanceError
        Naming the JSON path (``clusters[2].free_gpus``, ``links[0].b``, ``demand``,
        ``source``, ...) and the rule.

    Examples
    --------
    >>> inst = ClusterSelectInstance(
    ...     "tiny", clusters=[("a", 4), ("b", 8)], links=[("a", "b", 10.0)], demand=6)
    >>> inst.total_free, inst.graph.widest("a", "b")
    (12, 10.0)
    >>> inst == ClusterSelectInstance.from_dict(inst.to_dict())
    True
    """

    family: ClassVar[str] = "clusterselect"

    name: str
    clusters: tuple[Cluster, ...]
    graph: ClusterGraph
    demand: int
    source: str | None
    labels: dict[str, str] = field(hash=False)

    def __init__(
        self,
        name: str,
        clusters: Iterable[Cluster | Mapping[str, Any] | Sequence[Any]],
        links: Iterable[Link | Mapping[str, Any] | Sequence[Any]],
        demand: int,
        source: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(name, "name"))
        put(self, "labels", v.as_labels({} if labels is None else labels, "labels"))
        raw = v.as_tuple(clusters, "clusters", min_len=1)
        limits.check("clusterselect_clusters", len(raw), "clusters", f"{len(raw)} clusters")
        parsed = []
        for i, item in enumerate(raw):
            with v.within(f"clusters[{i}]"):
                parsed.append(Cluster.from_any(item))
        v.unique_names([c.name for c in parsed], "clusters")
        put(self, "clusters", tuple(parsed))
        raw_links = v.as_tuple(links, "links")
        limits.check("clusterselect_links", len(raw_links), "links", f"{len(raw_links)} links")
        put(self, "graph", ClusterGraph([c.name for c in parsed], raw_links))
        count = v.as_int(demand, "demand", minimum=1)
        if count > self.total_free:
            raise InvalidInstanceError(
                "demand", f"needs {count} GPUs but the clusters have {self.total_free} free"
            )
        put(self, "demand", count)
        if source is not None:
            source = v.as_str(source, "source")
            if source not in self.graph.index:
                raise InvalidInstanceError("source", f"{source!r} is not a cluster")
        put(self, "source", source)

    @property
    def n_clusters(self) -> int:
        """Number of clusters ``n``."""
        return len(self.clusters)

    @property
    def n_links(self) -> int:
        """Number of links ``m``."""
        return len(self.graph.links)

    @property
    def total_free(self) -> int:
        """Free GPUs over all clusters."""
        return sum(c.free_gpus for c in self.clusters)

    @property
    def free(self) -> list[int]:
        """``g_i`` in cluster order."""
        return [c.free_gpus for c in self.clusters]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the instance (``source`` and ``labels`` only when set)."""
        out = self.json_header()
        out["clusters"] = [c.to_dict() for c in self.clusters]
        out["links"] = self.graph.to_dicts()
        out["demand"] = self.demand
        if self.source is not None:
            out["source"] = self.source
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, files: FileAccess | None = None
    ) -> ClusterSelectInstance:
        """Read the family's JSON object (it names no files). ``name`` defaults to
        ``"unnamed"``; every rule is the constructor's."""
        return cls(
            name=data.get("name", "unnamed"),
            clusters=v.field(data, "clusters"),
            links=v.field(data, "links"),
            demand=v.field(data, "demand"),
            source=data.get("source"),
            labels=data.get("labels", {}),
        )

    @classmethod
    def from_networkx(
        cls,
        graph: nx.Graph,
        demand: int,
        *,
        source: str | None = None,
        name: str = "networkx",
        labels: Mapping[str, str] | None = None,
    ) -> ClusterSelectInstance:
        """An instance from a networkx graph: node attribute ``free_gpus``, edge attributes
        ``bandwidth_gbps`` and (optionally) ``latency_ms``; node names become strings.

        Examples
        --------
        >>> import networkx as nx
        >>> g = nx.Graph()
        >>> g.add_node("a", free_gpus=4); g.add_node("b", free_gpus=12)
        >>> g.add_edge("a", "b", bandwidth_gbps=100.0, latency_ms=1.0)
        >>> ClusterSelectInstance.from_networkx(g, 16, source="a").total_free
        16
        """
        clusters = []
        for node, data in graph.nodes(data=True):
            with v.within(f"nodes[{node!r}]"):
                clusters.append(Cluster(str(node), v.field(data, "free_gpus")))
        links = []
        for a, b, data in graph.edges(data=True):
            with v.within(f"edges[{a!r}, {b!r}]"):
                links.append(
                    Link(str(a), str(b), v.field(data, "bandwidth_gbps"), data.get("latency_ms"))
                )
        return cls(name, clusters, links, demand, source=source, labels=labels)
