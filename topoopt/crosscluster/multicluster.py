"""A set of decentralized clusters: the WAN graph between them and, per cluster, its nodes.

SpiderFlow schedules one job over several clusters (§3): which clusters (SpinSearch, on the
WAN graph's widest-path bandwidths, eq. 1), how the job's graph is cut across them (TPA, eq. 9)
and how each cluster runs its part (the intra-cluster ILP, on its nodes). A
:class:`MultiCluster` holds what these decisions read: the clusters (:class:`Site`: nodes with
their GPUs and which are free, the intra-node and inter-node bandwidth, optionally the
cluster's own network in any format :func:`topoopt.topology.load_topology` reads) and the
links between clusters (:class:`~topoopt.crosscluster.graph.Link`, the graph
``clusterselect`` reads).

JSON (``"format": "topoopt-multicluster"``, version 1; the JSON Schema is :data:`SCHEMA`)::

    {"format": "topoopt-multicluster", "version": 1, "name": "two-sites",
     "clusters": [
       {"name": "a", "intra_node_gbps": 200, "inter_node_gbps": 8,
        "nodes": [{"name": "n0", "gpus": 8, "free": [0, 1, 2, 3]}, {"name": "n1", "gpus": 8}]},
       {"name": "b", "intra_node_gbps": 200, "inter_node_gbps": 8,
        "shape": {"nodes": 4, "gpus_per_node": 8}},
       {"name": "c", "intra_node_gbps": 200, "inter_node_gbps": 8,
        "topology": "c-topology.conf", "gpus_per_node": 8, "free": {"c-n3": []}}],
     "links": [{"a": "a", "b": "b", "bandwidth_gbps": 5},
               {"a": "b", "b": "c", "bandwidth_gbps": 5}]}

A cluster's nodes are given in one of three ways: ``nodes`` (each ``free`` defaults to all its
GPUs), ``shape`` (``nodes`` nodes named ``<cluster>-n<i>``, all free) or ``topology`` (a file,
relative to the description, in any format topoopt reads; its nodes, with ``gpus_per_node``
GPUs unless the file counts them; ``free`` then maps node names to their free GPU indices,
nodes not named being wholly free). Bandwidths are in Gb/s (200 Gb/s = 25 GB/s). Every error
names the file and the JSON path (``clusters[2].topology``, ``links[0].b``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.core.safejson import FileAccess, parse_json
from topoopt.core.schema import NAME, array, integer, number, obj, validate
from topoopt.crosscluster.graph import ClusterGraph, Link
from topoopt.parallelconfig.instance import bandwidth

if TYPE_CHECKING:
    from topoopt.clusterselect.instance import ClusterSelectInstance
    from topoopt.topology import Topology

FORMAT = "topoopt-multicluster"
"""The ``"format"`` of a multi-cluster description."""

VERSION = 1
"""The version this topoopt writes and reads."""

MAX_GPUS_PER_NODE = 1024
"""Most GPUs of one node (a sanity bound, far above any real node)."""

GBPS = number(0.0, 1e9, description="Gb/s, > 0 (200 Gb/s = 25 GB/s).")
NODE = obj(
    {
        "name": NAME,
        "gpus": integer(1, MAX_GPUS_PER_NODE, "GPUs of the node."),
        "free": array(integer(0, MAX_GPUS_PER_NODE - 1), description="Free GPU indices."),
    },
    ["name", "gpus"],
)
SITE = obj(
    {
        "name": NAME,
        "intra_node_gbps": GBPS,
        "inter_node_gbps": GBPS,
        "nodes": array(NODE, 1),
        "shape": obj(
            {"nodes": integer(1, 1_000_000), "gpus_per_node": integer(1, MAX_GPUS_PER_NODE)},
            ["nodes", "gpus_per_node"],
        ),
        "topology": {"type": "string", "minLength": 1, "description": "A topology file."},
        "topology_format": {"type": "string", "description": "Its format (default: guessed)."},
        "gpus_per_node": integer(1, MAX_GPUS_PER_NODE),
        "free": {
            "type": "object",
            "additionalProperties": array(integer(0, MAX_GPUS_PER_NODE - 1)),
            "description": "With topology: free GPU indices of the nodes named.",
        },
    },
    ["name", "intra_node_gbps", "inter_node_gbps"],
)
LINK = obj(
    {
        "a": NAME,
        "b": NAME,
        "bandwidth_gbps": number(0.0, description="Link bandwidth in Gb/s, > 0."),
        "latency_ms": number(0.0, description="One-way latency in ms."),
    },
    ["a", "b", "bandwidth_gbps"],
)
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "topoopt multi-cluster description (SpiderFlow's decentralized clusters)",
    **obj(
        {
            "format": {"const": FORMAT},
            "version": {"const": VERSION},
            "name": NAME,
            "clusters": array(SITE, 1),
            "links": array(LINK),
        },
        ["format", "version", "clusters", "links"],
    ),
}
"""The JSON Schema (draft 2020-12) of a multi-cluster description."""


@dataclass(frozen=True)
class SiteNode:
    """A node of a cluster: ``gpus`` GPUs (local indices ``0 .. gpus - 1``), ``free`` of them
    free (sorted, distinct)."""

    name: str
    gpus: int
    free: tuple[int, ...]

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(self.name, "name"))
        gpus = v.as_int(self.gpus, "gpus", minimum=1)
        if gpus > MAX_GPUS_PER_NODE:
            raise InvalidInstanceError("gpus", f"must be <= {MAX_GPUS_PER_NODE}, got {gpus}")
        put(self, "gpus", gpus)
        free = [v.as_int(i, f"free[{j}]", minimum=0) for j, i in enumerate(self.free)]
        for j, i in enumerate(free):
            if i >= gpus:
                raise InvalidInstanceError(f"free[{j}]", f"GPU {i} of a node of {gpus} GPUs")
        if len(set(free)) != len(free):
            raise InvalidInstanceError("free", "lists a GPU twice")
        put(self, "free", tuple(sorted(free)))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "gpus": self.gpus}
        if len(self.free) != self.gpus:
            out["free"] = list(self.free)
        return out


@dataclass(frozen=True)
class Site:
    """One cluster of a :class:`MultiCluster`: its nodes and its internal bandwidths.

    Parameters
    ----------
    name
        Cluster name (distinct within the description).
    nodes
        Its nodes (distinct names, at least one).
    intra_node_gbps, inter_node_gbps
        GPU-to-GPU bandwidth inside a node and between two nodes of the cluster, Gb/s.
    topology
        The cluster's own network, when known (read from its file); its nodes are ``nodes``.
    """

    name: str
    nodes: tuple[SiteNode, ...]
    intra_node_gbps: float
    inter_node_gbps: float
    topology: Topology | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(self.name, "name"))
        nodes = tuple(self.nodes)
        if not nodes:
            raise InvalidInstanceError("nodes", "a cluster needs at least one node")
        v.unique_names([n.name for n in nodes], "nodes")
        put(self, "nodes", nodes)
        put(self, "intra_node_gbps", bandwidth(self.intra_node_gbps, "intra_node_gbps"))
        put(self, "inter_node_gbps", bandwidth(self.inter_node_gbps, "inter_node_gbps"))

    @property
    def free_gpus(self) -> int:
        """Free GPUs of the cluster (``g_i`` of SpiderFlow §4.1.1)."""
        return sum(len(n.free) for n in self.nodes)

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    def node(self, name: str) -> SiteNode:
        """The node ``name`` (``KeyError`` when the cluster has none)."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "intra_node_gbps": self.intra_node_gbps,
            "inter_node_gbps": self.inter_node_gbps,
            "nodes": [n.to_dict() for n in self.nodes],
        }


@dataclass(frozen=True)
class MultiCluster:
    """Decentralized clusters and the WAN links between them (module docstring).

    Parameters
    ----------
    name
        Name of the description.
    clusters
        The clusters (:class:`Site`), distinct names, at least one.
    links
        The links (:class:`~topoopt.crosscluster.graph.Link`, JSON objects or tuples): they
        must join known clusters and connect them all (:class:`ClusterGraph`'s rules).

    Examples
    --------
    >>> from topoopt.crosscluster.settings import uniform
    >>> mc = uniform("demo", clusters=3, nodes=2, gpus_per_node=4)
    >>> [c.free_gpus for c in mc.clusters], mc.free_gpus, mc.graph.clusters
    ([8, 8, 8], 24, ('c0', 'c1', 'c2'))
    >>> MultiCluster.from_dict(mc.to_dict()) == mc
    True
    """

    name: str
    clusters: tuple[Site, ...]
    links: tuple[Link, ...]
    graph: ClusterGraph = field(init=False, repr=False, compare=False)
    """The WAN graph (widest paths, eq. 1)."""

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(self.name, "name"))
        clusters = tuple(self.clusters)
        if not clusters:
            raise InvalidInstanceError("clusters", "at least one cluster is needed")
        put(self, "clusters", clusters)
        graph = ClusterGraph([c.name for c in clusters], self.links)
        put(self, "links", graph.links)
        put(self, "graph", graph)

    @property
    def free_gpus(self) -> int:
        return sum(c.free_gpus for c in self.clusters)

    def cluster(self, name: str) -> Site:
        """The cluster ``name`` (``KeyError`` when there is none)."""
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(name)

    def with_free(self, free: Mapping[str, Mapping[str, Sequence[int]]]) -> MultiCluster:
        """The same clusters with the free GPUs of the nodes named in ``free``
        (``{cluster: {node: [indices]}}``) replaced."""
        unknown = sorted(set(free) - {c.name for c in self.clusters})
        if unknown:
            raise TopooptError(f"with_free: unknown clusters {unknown}")
        sites = []
        for c in self.clusters:
            changes = free.get(c.name, {})
            missing = sorted(set(changes) - {n.name for n in c.nodes})
            if missing:
                raise TopooptError(f"with_free: cluster {c.name!r} has no nodes {missing}")
            nodes = tuple(
                SiteNode(n.name, n.gpus, tuple(changes[n.name])) if n.name in changes else n
                for n in c.nodes
            )
            sites.append(Site(c.name, nodes, c.intra_node_gbps, c.inter_node_gbps, c.topology))
        return MultiCluster(self.name, tuple(sites), self.links)

    def clusterselect(self, demand: int, source: str | None = None) -> ClusterSelectInstance:
        """The ``clusterselect`` instance of a task of ``demand`` GPUs on the free GPUs."""
        from topoopt.clusterselect.instance import ClusterSelectInstance

        return ClusterSelectInstance(
            f"{self.name}-{demand}",
            clusters=[(c.name, c.free_gpus) for c in self.clusters],
            links=self.links,
            demand=demand,
            source=source,
        )

    # -- JSON
    def to_dict(self) -> dict[str, Any]:
        """The description as JSON (every cluster by its ``nodes``, topologies not kept)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name,
            "clusters": [c.to_dict() for c in self.clusters],
            "links": [link.to_dict() for link in self.links],
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> MultiCluster:
        """Read a description file; errors name the file and the JSON path. Topology files
        it names are read relative to it."""
        file = Path(path)
        _, text = FileAccess(allow=True).read_text(str(file), str(file))
        data = parse_json(text, str(file))
        return cls.from_dict(data, files=FileAccess(file.resolve().parent), source=str(file))

    @classmethod
    def from_dict(
        cls, data: Any, files: FileAccess | None = None, source: str = "multicluster"
    ) -> MultiCluster:
        """Read the JSON form (see the module docstring); ``files`` says where topology files
        are read from (default: the working directory). Errors are
        :class:`~topoopt.core.errors.InvalidInstanceError` naming ``source: path``."""
        try:
            validate(SCHEMA, data)
            access = files or FileAccess()
            sites = [_site(item, i, access) for i, item in enumerate(data["clusters"])]
            v.unique_names([s.name for s in sites], "clusters")
            return cls(data.get("name", "multicluster"), tuple(sites), tuple(data["links"]))
        except InvalidInstanceError as exc:
            raise InvalidInstanceError(f"{source}: {exc.field}", exc.rule) from None


def _site(item: Mapping[str, Any], i: int, files: FileAccess) -> Site:
    """One cluster of the JSON form (errors name ``clusters[i].<field>``)."""
    path = f"clusters[{i}]"
    ways = [k for k in ("nodes", "shape", "topology") if k in item]
    if len(ways) != 1:
        raise InvalidInstanceError(
            path, f"give exactly one of nodes, shape or topology (got {ways or 'none'})"
        )
    for key in ("gpus_per_node", "free", "topology_format"):
        if key in item and ways != ["topology"]:
            raise InvalidInstanceError(f"{path}.{key}", "only with topology")
    topology = None
    if ways == ["nodes"]:
        nodes = []
        for j, node in enumerate(item["nodes"]):
            with v.within(f"{path}.nodes[{j}]"):
                gpus = node["gpus"]
                nodes.append(SiteNode(node["name"], gpus, tuple(node.get("free", range(gpus)))))
    elif ways == ["shape"]:
        shape = item["shape"]
        per = shape["gpus_per_node"]
        nodes = [
            SiteNode(f"{item['name']}-n{j}", per, tuple(range(per))) for j in range(shape["nodes"])
        ]
    else:
        topology, nodes = _topology_nodes(item, path, files)
    with v.within(path):
        return Site(
            item["name"],
            tuple(nodes),
            item["intra_node_gbps"],
            item["inter_node_gbps"],
            topology,
        )


def _topology_nodes(
    item: Mapping[str, Any], path: str, files: FileAccess
) -> tuple[Topology, list[SiteNode]]:
    """The nodes of a cluster given by a topology file (and ``free``)."""
    from topoopt.topology import TopologyError, load_topology

    where = f"{path}.topology"
    file, _ = files.read_text(item["topology"], where)  # checks the path is allowed
    try:
        topo = load_topology(
            file, item.get("topology_format"), gpus_per_node=item.get("gpus_per_node")
        )
    except TopologyError as exc:
        raise InvalidInstanceError(where, str(exc)) from None
    free = item.get("free", {})
    names = list(topo.nodes)
    unknown = sorted(set(free) - set(names))
    if unknown:
        raise InvalidInstanceError(f"{path}.free", f"nodes not in the topology: {unknown}")
    nodes = []
    for name in names:
        gpus = topo.gpus_of(name) or item.get("gpus_per_node")
        if not gpus:
            raise InvalidInstanceError(
                f"{path}.gpus_per_node", f"needed: the topology does not count node {name!r}'s GPUs"
            )
        with v.within(f"{path}.free.{name}"):
            nodes.append(SiteNode(name, gpus, tuple(free.get(name, range(gpus)))))
    return topo, nodes


def sites_from(
    names: Iterable[str], nodes: int, gpus_per_node: int, intra_gbps: float, inter_gbps: float
) -> tuple[Site, ...]:
    """Identical clusters of ``nodes`` wholly free nodes of ``gpus_per_node`` GPUs."""
    return tuple(
        Site(
            name,
            tuple(
                SiteNode(f"{name}-n{j}", gpus_per_node, tuple(range(gpus_per_node)))
                for j in range(nodes)
            ),
            intra_gbps,
            inter_gbps,
        )
        for name in names
    )


__all__ = ["FORMAT", "SCHEMA", "VERSION", "MultiCluster", "Site", "SiteNode", "sites_from"]
