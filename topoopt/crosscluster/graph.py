"""The cluster graph of SpiderFlow (§4.1.1): clusters, links and widest-path bandwidths.

Clusters are the nodes of an undirected graph ``G = (V, E)``; each link ``(i, j)`` has a bandwidth
``b_ij > 0`` in Gb/s and, optionally, a latency in ms. The communication capacity between two
clusters is the *widest-path bandwidth* (SpiderFlow eq. 1)::

    beta(u -> v) = max over paths p from u to v of min over links e in p of b_e

Every widest path can be taken inside one maximum spanning tree ``T`` of ``G`` (the classical
bottleneck property of maximum spanning trees), so ``beta(u -> v)`` is the smallest bandwidth on
the tree path from ``u`` to ``v``: :class:`ClusterGraph` builds ``T`` once with networkx and
answers every query on it, in ``O(n)`` per source instead of enumerating paths. Two more facts
follow and are used by the families:

* the *bottleneck* of a set ``S`` of clusters, ``min over u != v in S of beta(u -> v)``, is the
  smallest bandwidth on the subtree of ``T`` spanning ``S`` (:meth:`ClusterGraph.bottleneck`);
* the sets whose bottleneck is at least a value ``w`` are exactly the subsets of the connected
  components of ``T`` restricted to links of bandwidth ``>= w`` (a Kruskal merge tree, listed by
  :meth:`ClusterGraph.groups`).

Latency between two clusters is the shortest-path latency over ``G`` (Dijkstra); it is ``0``
when the links carry no latency. Both the cluster-selection family and the partitioning
families build on this one type.

Examples
--------
>>> g = ClusterGraph(["a", "b", "c"], [("a", "b", 10.0, 2.0), ("b", "c", 40.0, 1.0),
...                                    ("a", "c", 5.0, 9.0)])
>>> g.widest("a", "c"), g.bottleneck(["b", "c"]), g.bottleneck(["a", "b", "c"])
(10.0, 40.0, 10.0)
>>> g.latency("a", "c"), g.levels
(3.0, (40.0, 10.0))
"""

from __future__ import annotations

import difflib
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class Link:
    """An undirected link between clusters ``a`` and ``b``.

    Parameters
    ----------
    a, b
        Cluster names (distinct).
    bandwidth_gbps
        Link bandwidth ``b_ab > 0`` in Gb/s (SpiderFlow §4.1.1).
    latency_ms
        One-way latency in ms (``>= 0``), or ``None`` when not known.
    """

    a: str
    b: str
    bandwidth_gbps: float
    latency_ms: float | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "a", v.as_str(self.a, "a"))
        put(self, "b", v.as_str(self.b, "b"))
        if self.a == self.b:
            raise InvalidInstanceError("b", f"a link must join two clusters, not {self.a!r} itself")
        bandwidth = v.as_float(self.bandwidth_gbps, "bandwidth_gbps")
        if bandwidth <= 0:
            raise InvalidInstanceError("bandwidth_gbps", f"must be > 0, got {bandwidth:g}")
        put(self, "bandwidth_gbps", bandwidth)
        if self.latency_ms is not None:
            put(self, "latency_ms", v.as_float(self.latency_ms, "latency_ms", minimum=0.0))

    @classmethod
    def from_any(cls, item: Any) -> Link:
        """A link from a ``Link``, its JSON object or an ``(a, b, bandwidth[, latency])`` tuple."""
        if isinstance(item, Link):
            return item
        if isinstance(item, Mapping):
            return cls(
                v.field(item, "a"),
                v.field(item, "b"),
                v.field(item, "bandwidth_gbps"),
                item.get("latency_ms"),
            )
        if isinstance(item, Sequence) and not isinstance(item, str) and len(item) in (3, 4):
            return cls(*item)
        raise InvalidInstanceError(
            "",
            f"must be a Link, a JSON object or an (a, b, bandwidth, latency) tuple, got {item!r}",
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (``latency_ms`` only when known)."""
        out: dict[str, Any] = {"a": self.a, "b": self.b, "bandwidth_gbps": self.bandwidth_gbps}
        if self.latency_ms is not None:
            out["latency_ms"] = self.latency_ms
        return out


@dataclass(frozen=True)
class Group:
    """A set of clusters connected by links of bandwidth ``>= levels[rank]`` (a node of the
    Kruskal merge tree of the maximum spanning tree; singletons have rank 0).

    Every subset of :attr:`members` with two or more clusters has a bottleneck of at least
    ``levels[rank]``; a singleton needs no link at all.
    """

    rank: int
    members: frozenset[int]


@dataclass(frozen=True, init=False)
class ClusterGraph:
    """Clusters and the links between them, with widest-path queries (SpiderFlow eq. 1).

    Parameters
    ----------
    clusters
        Cluster names, distinct, in a fixed order (indices refer to it).
    links
        The links: :class:`Link` objects, their JSON objects or ``(a, b, bandwidth[, latency])``
        tuples. Either every link gives a latency or none does.
    path
        JSON path of the links in error messages (``"links"``).

    Raises
    ------
    InvalidInstanceError
        Naming the link (``links[3].b``) and the rule: unknown cluster, self-loop, bandwidth not
        positive, negative latency, a pair linked twice, latency on some links only, or a graph
        that is not connected.
    """

    clusters: tuple[str, ...]
    links: tuple[Link, ...]

    def __init__(self, clusters: Iterable[str], links: Iterable[Any], path: str = "links") -> None:
        names = tuple(v.as_str(name, f"clusters[{i}]") for i, name in enumerate(clusters))
        v.unique_names(names, "clusters")
        parsed: list[Link] = []
        for i, item in enumerate(v.as_tuple(links, path)):
            with v.within(v.join(path, i)):
                parsed.append(Link.from_any(item))
        object.__setattr__(self, "clusters", names)
        object.__setattr__(self, "links", tuple(parsed))
        self._validate(path)

    def _validate(self, path: str) -> None:
        index = self.index
        seen: dict[frozenset[str], int] = {}
        for i, link in enumerate(self.links):
            for end in ("a", "b"):
                name = getattr(link, end)
                if name not in index:
                    close = difflib.get_close_matches(name, self.clusters, n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    raise InvalidInstanceError(
                        f"{path}[{i}].{end}", f"unknown cluster {name!r}{hint}"
                    )
            pair = frozenset((link.a, link.b))
            if pair in seen:
                raise InvalidInstanceError(
                    f"{path}[{i}]",
                    f"links {link.a!r} and {link.b!r} again (already {path}[{seen[pair]}]); "
                    "give one link per pair",
                )
            seen[pair] = i
        given = [link.latency_ms is not None for link in self.links]
        if any(given) and not all(given):
            i = given.index(False)
            raise InvalidInstanceError(
                f"{path}[{i}].latency_ms", "missing: give latency_ms on every link or on none"
            )
        if self.clusters:
            reach = self._reachable(self.clusters[0])
            if len(reach) < len(self.clusters):
                cut = [c for c in self.clusters if c not in reach]
                shown = ", ".join(repr(c) for c in cut[:5]) + (" ..." if len(cut) > 5 else "")
                raise InvalidInstanceError(
                    path,
                    f"the cluster graph is not connected: {len(cut)} cluster(s) ({shown}) "
                    f"cannot reach {self.clusters[0]!r}",
                )

    def _reachable(self, source: str) -> set[str]:
        """The clusters ``source`` reaches over the links (a plain search: validating an
        instance does not import networkx)."""
        neighbours: dict[str, list[str]] = {name: [] for name in self.clusters}
        for link in self.links:
            neighbours[link.a].append(link.b)
            neighbours[link.b].append(link.a)
        reach = {source}
        stack = [source]
        while stack:
            for other in neighbours[stack.pop()]:
                if other not in reach:
                    reach.add(other)
                    stack.append(other)
        return reach

    # ----------------------------------------------------------------------------- structure
    @cached_property
    def index(self) -> dict[str, int]:
        """Position of every cluster name."""
        return {name: i for i, name in enumerate(self.clusters)}

    @property
    def n(self) -> int:
        """Number of clusters."""
        return len(self.clusters)

    @property
    def has_latency(self) -> bool:
        """Whether the links carry latencies."""
        return bool(self.links) and self.links[0].latency_ms is not None

    def to_networkx(self) -> nx.Graph:
        """The graph as a ``networkx.Graph`` (edge attributes ``bandwidth_gbps`` and, when
        known, ``latency_ms``)."""
        import networkx as nx

        graph = nx.Graph()
        graph.add_nodes_from(self.clusters)
        for link in self.links:
            attrs: dict[str, float] = {"bandwidth_gbps": link.bandwidth_gbps}
            if link.latency_ms is not None:
                attrs["latency_ms"] = link.latency_ms
            graph.add_edge(link.a, link.b, **attrs)
        return graph

    def incident_bandwidth(self) -> list[float]:
        """``B_i``, the sum of the bandwidths of cluster ``i``'s links (SpiderFlow eq. 2)."""
        degree = self._networkx.degree(weight="bandwidth_gbps")
        return [float(degree[name]) for name in self.clusters]

    def hops_from(self, source: str) -> dict[str, int]:
        """Hop distance from ``source`` to every cluster (BFS, used by eq. 6)."""
        import networkx as nx

        return dict(nx.single_source_shortest_path_length(self._networkx, source))

    # ------------------------------------------------------------------- widest-path bandwidth
    @cached_property
    def spanning_tree(self) -> tuple[tuple[int, int, float], ...]:
        """The links ``(i, j, b_ij)`` of a maximum spanning tree (networkx, Kruskal)."""
        import networkx as nx

        tree = nx.maximum_spanning_tree(self._networkx, weight="bandwidth_gbps")
        return tuple(
            (self.index[a], self.index[b], float(data["bandwidth_gbps"]))
            for a, b, data in tree.edges(data=True)
        )

    @cached_property
    def _tree_adjacency(self) -> list[list[tuple[int, float]]]:
        """``(j, b_ij)`` for every spanning-tree link of cluster ``i``."""
        adjacency: list[list[tuple[int, float]]] = [[] for _ in self.clusters]
        for i, j, b in self.spanning_tree:
            adjacency[i].append((j, b))
            adjacency[j].append((i, b))
        return adjacency

    @cached_property
    def _rooted_tree(self) -> tuple[list[int], list[float], list[int]]:
        """The spanning tree rooted at cluster 0: parent, bandwidth to the parent, BFS order."""
        adjacency = self._tree_adjacency
        parent = [-1] * self.n
        up = [math.inf] * self.n
        order: list[int] = []
        if self.n:
            seen = [False] * self.n
            seen[0] = True
            queue = deque([0])
            while queue:
                i = queue.popleft()
                order.append(i)
                for j, b in adjacency[i]:
                    if not seen[j]:
                        seen[j] = True
                        parent[j], up[j] = i, b
                        queue.append(j)
        return parent, up, order

    def widest_from(self, source: str) -> list[float]:
        """``beta(source -> i)`` for every cluster ``i`` in order (eq. 1; ``inf`` for the source
        itself), by one traversal of the maximum spanning tree."""
        adjacency = self._tree_adjacency
        start = self.index[source]
        width = [-1.0] * self.n
        width[start] = math.inf
        stack = [start]
        while stack:
            i = stack.pop()
            for j, b in adjacency[i]:
                if width[j] < 0:
                    width[j] = min(width[i], b)
                    stack.append(j)
        return width

    def widest(self, u: str, v: str) -> float:
        """``beta(u -> v)`` (eq. 1); ``inf`` when ``u == v``."""
        return self.widest_from(u)[self.index[v]]

    def bottleneck(self, members: Iterable[str]) -> float:
        """The smallest widest-path bandwidth between two of ``members`` (``inf`` for fewer than
        two clusters): the smallest link of the spanning subtree that connects them."""
        chosen = {self.index[name] for name in members}
        if len(chosen) < 2:
            return math.inf
        parent, up, order = self._rooted_tree
        below = [0] * self.n
        for i in chosen:
            below[i] = 1
        width = math.inf
        for i in reversed(order):
            if 0 < below[i] < len(chosen):  # the tree link above i joins chosen clusters
                width = min(width, up[i])
            if parent[i] >= 0:
                below[parent[i]] += below[i]
        return width

    @cached_property
    def levels(self) -> tuple[float, ...]:
        """The distinct widest-path bandwidths (the spanning tree's link bandwidths), largest
        first; every bottleneck of two or more clusters is one of them."""
        return tuple(sorted({b for _, _, b in self.spanning_tree}, reverse=True))

    def rank(self, bandwidth: float) -> int:
        """How many levels are strictly larger than ``bandwidth`` (0 for ``inf``)."""
        return sum(1 for level in self.levels if level > bandwidth)

    @cached_property
    def groups(self) -> tuple[Group, ...]:
        """Every distinct set of clusters that is connected at some level: the singletons (rank
        0), then, level by level, the components formed by merging along spanning-tree links of
        bandwidth ``>= levels[r]`` (rank ``r``). At most ``2n - 1`` groups."""
        root = list(range(self.n))

        def find(i: int) -> int:
            while root[i] != i:
                root[i] = root[root[i]]
                i = root[i]
            return i

        members: dict[int, frozenset[int]] = {i: frozenset((i,)) for i in range(self.n)}
        out = [Group(0, members[i]) for i in range(self.n)]
        for rank, level in enumerate(self.levels):
            touched: set[int] = set()
            for i, j, b in self.spanning_tree:
                if b == level:
                    a, c = find(i), find(j)
                    root[c] = a
                    members[a] = members.pop(a) | members.pop(c)
                    touched.discard(c)
                    touched.add(a)
            out.extend(Group(rank, members[find(t)]) for t in sorted(touched) if find(t) == t)
        return tuple(out)

    @cached_property
    def hierarchy(self) -> tuple[tuple[frozenset[int], ...], ...]:
        """The partitions of the clusters by level: ``hierarchy[0]`` the singletons,
        ``hierarchy[j]`` the components of the spanning-tree links of bandwidth
        ``>= levels[j - 1]`` (``hierarchy[q]`` is one component).

        Two clusters first share a component in ``hierarchy[j]`` exactly when their widest-path
        bandwidth is ``levels[j - 1]``, so ``1 / beta(a -> b)`` is a sum of positive steps
        ``1 / levels[0], 1 / levels[1] - 1 / levels[0], ...`` over the partitions that separate
        ``a`` and ``b`` (the partitioning families linearise their cut cost with it).
        """
        root = list(range(self.n))

        def find(i: int) -> int:
            while root[i] != i:
                root[i] = root[root[i]]
                i = root[i]
            return i

        out = [tuple(frozenset((i,)) for i in range(self.n))]
        for level in self.levels:
            for i, j, b in self.spanning_tree:
                if b == level:
                    root[find(j)] = find(i)
            parts: dict[int, set[int]] = {}
            for i in range(self.n):
                parts.setdefault(find(i), set()).add(i)
            out.append(tuple(frozenset(part) for part in parts.values()))
        return tuple(out)

    # --------------------------------------------------------------------------------- latency
    def latency_from(self, source: str) -> list[float]:
        """Shortest-path latency in ms from ``source`` to every cluster (Dijkstra over the
        links' ``latency_ms``; all ``0`` when the links carry no latency)."""
        if not self.has_latency:
            return [0.0] * self.n
        if source not in self._latency_rows:
            import networkx as nx

            lengths = nx.single_source_dijkstra_path_length(
                self._networkx, source, weight="latency_ms"
            )
            self._latency_rows[source] = [float(lengths[name]) for name in self.clusters]
        return self._latency_rows[source]

    @cached_property
    def _latency_rows(self) -> dict[str, list[float]]:
        """Latency rows computed so far, by source."""
        return {}

    @cached_property
    def _networkx(self) -> nx.Graph:
        """:meth:`to_networkx`, built once."""
        return self.to_networkx()

    def latency(self, u: str, v: str) -> float:
        """Shortest-path latency in ms between ``u`` and ``v``."""
        return self.latency_from(u)[self.index[v]]

    def total_latency(self, members: Iterable[str]) -> float:
        """Sum over the unordered pairs of ``members`` of their shortest-path latency (ms)."""
        names = sorted(set(members), key=self.index.__getitem__)
        if len(names) < 2 or not self.has_latency:
            return 0.0
        total = 0.0
        for k, u in enumerate(names[:-1]):
            row = self.latency_from(u)
            total += sum(row[self.index[w]] for w in names[k + 1 :])
        return total

    def to_dicts(self) -> list[dict[str, Any]]:
        """The links as JSON objects."""
        return [link.to_dict() for link in self.links]


__all__ = ["ClusterGraph", "Group", "Link"]
