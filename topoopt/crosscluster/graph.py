"""The cluster graph of SpiderFlow (§4.1.1): clusters, links and widest-path bandwidths.

Clusters are the nodes of an undirected graph ``G = (V, E)``; each link ``(i, j)`` has a bandwidth
``b_ij > 0`` in Gb/s and, optionally, a latency in ms. The communication capacity between two
clusters is the *widest-path bandwidth* (SpiderFlow eq. 1)::

    beta(u -> v) = max over paths p from u to v of min over links e in p of b_e

Every widest path can be taken inside one maximum spanning tree ``T`` of ``G`` (the classical
bottleneck property of maximum spanning trees), so ``beta(u -> v)`` is the smallest bandwidth on
the tree path from ``u`` to ``v``: :class:`ClusterGraph` builds ``T`` once (Kruskal) and
answers every query on it, in ``O(n)`` per source instead of enumerating paths. Two more facts
follow and are used by the families:

* the *bottleneck* of a set ``S`` of clusters, ``min over u != v in S of beta(u -> v)``, is the
  smallest bandwidth on the subtree of ``T`` spanning ``S`` (:meth:`ClusterGraph.bottleneck`);
* the sets whose bottleneck is at least a value ``w`` are exactly the subsets of the connected
  components of ``T`` restricted to links of bandwidth ``>= w`` (a Kruskal merge tree, listed by
  :meth:`ClusterGraph.groups`).

Latency between two clusters is the shortest-path latency over ``G`` (Dijkstra, scipy); it is ``0``
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

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

    @cached_property
    def _ends(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The links as arrays: end indices ``a``, ``b`` and bandwidths ``b_ab``."""
        index = self.index
        a = np.fromiter(
            (index[link.a] for link in self.links), dtype=np.int64, count=len(self.links)
        )
        b = np.fromiter(
            (index[link.b] for link in self.links), dtype=np.int64, count=len(self.links)
        )
        bw = np.fromiter(
            (link.bandwidth_gbps for link in self.links), dtype=np.float64, count=len(self.links)
        )
        return a, b, bw

    @staticmethod
    def _csr(n: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Adjacency of the undirected links ``a[k] - b[k]`` as ``(start, neighbour)`` arrays:
        the neighbours of ``i`` are ``neighbour[start[i]:start[i + 1]]``."""
        tails = np.concatenate([a, b])
        heads = np.concatenate([b, a])
        order = np.argsort(tails, kind="stable")
        start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(tails, minlength=n), out=start[1:])
        return start, heads[order]

    @staticmethod
    def _bfs_layers(
        start: np.ndarray, neighbour: np.ndarray, source: int
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Breadth-first search from ``source`` over a :meth:`_csr` adjacency, one array
        operation per layer: the hop count of every node (``-1`` unreached) and the layers."""
        n = len(start) - 1
        hops = np.full(n, -1, dtype=np.int64)
        hops[source] = 0
        frontier = np.array([source], dtype=np.int64)
        layers = [frontier]
        while True:
            counts = start[frontier + 1] - start[frontier]
            # positions start[f], ..., start[f + 1] - 1 of every frontier node f, concatenated
            offsets = np.repeat(start[frontier] - np.cumsum(counts) + counts, counts)
            reached = neighbour[offsets + np.arange(counts.sum())]
            fresh = np.unique(reached[hops[reached] < 0])
            if not len(fresh):
                return hops, layers
            hops[fresh] = len(layers)
            layers.append(fresh)
            frontier = fresh

    def incident_bandwidth(self) -> list[float]:
        """``B_i``, the sum of the bandwidths of cluster ``i``'s links (SpiderFlow eq. 2)."""
        a, b, bw = self._ends
        total = np.bincount(a, bw, minlength=self.n) + np.bincount(b, bw, minlength=self.n)
        return [float(x) for x in total]

    @cached_property
    def _adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_csr` of all links."""
        a, b, _ = self._ends
        return self._csr(self.n, a, b)

    def hop_counts(self, source: str) -> np.ndarray:
        """Hop distance from ``source`` to every cluster, in cluster order (BFS, eq. 6)."""
        hops, _ = self._bfs_layers(*self._adjacency, self.index[source])
        return hops

    def hops_from(self, source: str) -> dict[str, int]:
        """Hop distance from ``source`` to every cluster (BFS, used by eq. 6)."""
        return {
            name: int(h)
            for name, h in zip(self.clusters, self.hop_counts(source), strict=True)
            if h >= 0
        }

    # ------------------------------------------------------------------- widest-path bandwidth
    @cached_property
    def spanning_tree(self) -> tuple[tuple[int, int, float], ...]:
        """The links ``(i, j, b_ij)`` of a maximum spanning tree: Kruskal over the links by
        bandwidth, descending (ties in link order), with a union-find of the clusters."""
        a, b, bw = self._ends
        root = list(range(self.n))
        tree: list[tuple[int, int, float]] = []
        ends_a, ends_b, width = a.tolist(), b.tolist(), bw.tolist()
        for k in np.lexsort((np.arange(len(width)), -bw)).tolist():
            i = ri = ends_a[k]
            while root[ri] != ri:  # find, halving the path
                root[ri] = root[root[ri]]
                ri = root[ri]
            j = rj = ends_b[k]
            while root[rj] != rj:
                root[rj] = root[root[rj]]
                rj = root[rj]
            if ri != rj:
                root[rj] = ri
                tree.append((i, j, width[k]))
                if len(tree) == self.n - 1:
                    break
        return tuple(tree)

    @cached_property
    def _tree_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The spanning tree's links as arrays ``(i, j, b_ij)``."""
        tree = self.spanning_tree
        i = np.array([t[0] for t in tree], dtype=np.int64)
        j = np.array([t[1] for t in tree], dtype=np.int64)
        w = np.array([t[2] for t in tree], dtype=np.float64)
        return i, j, w

    @cached_property
    def _tree_adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_csr` of the spanning tree."""
        i, j, _ = self._tree_arrays
        return self._csr(self.n, i, j)

    def _rooted_at(self, root: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """The spanning tree rooted at cluster ``root``: parent (``-1`` at the root), bandwidth
        to the parent (``inf`` at the root) and the BFS layers (clusters by depth)."""
        parent = np.full(self.n, -1, dtype=np.int64)
        up = np.full(self.n, math.inf)
        hops, layers = self._bfs_layers(*self._tree_adjacency, root)
        # every tree link joins depths h and h + 1: its deeper end is the child
        i, j, w = self._tree_arrays
        child = np.where(hops[i] > hops[j], i, j)
        parent[child] = np.where(child == i, j, i)
        up[child] = w
        return parent, up, layers

    @cached_property
    def _rooted_tree(self) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """:meth:`_rooted_at` cluster 0."""
        if not self.n:
            return np.empty(0, dtype=np.int64), np.empty(0), []
        return self._rooted_at(0)

    def widest_from(self, source: str) -> list[float]:
        """``beta(source -> i)`` for every cluster ``i`` in order (eq. 1; ``inf`` for the source
        itself): the tree rooted at ``source``, each cluster the smaller of its parent's value
        and the link to its parent, a BFS layer at a time."""
        parent, up, layers = self._rooted_at(self.index[source])
        width = np.full(self.n, math.inf)
        for layer in layers[1:]:
            width[layer] = np.minimum(width[parent[layer]], up[layer])
        return width.tolist()

    def widest(self, u: str, v: str) -> float:
        """``beta(u -> v)`` (eq. 1); ``inf`` when ``u == v``."""
        return self.widest_from(u)[self.index[v]]

    def bottleneck(self, members: Iterable[str]) -> float:
        """The smallest widest-path bandwidth between two of ``members`` (``inf`` for fewer than
        two clusters): the smallest link of the spanning subtree that connects them.

        A tree link lies on that subtree exactly when it separates two members: some but not all
        of them are below it (counted from the deepest layer up, one array operation a layer).
        """
        chosen = np.unique(np.fromiter((self.index[name] for name in members), dtype=np.int64))
        if len(chosen) < 2:
            return math.inf
        parent, up, layers = self._rooted_tree
        below = np.zeros(self.n, dtype=np.int64)
        below[chosen] = 1
        for layer in reversed(layers[1:]):
            np.add.at(below, parent[layer], below[layer])
        cut = (below > 0) & (below < len(chosen))
        return float(up[cut].min())

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
    @cached_property
    def _latency_matrix(self) -> Any:
        """The links' latencies as a symmetric sparse matrix (``scipy.sparse.csr_array``; a
        link of latency 0 is an explicit zero, which scipy's graph routines keep as an edge)."""
        from scipy.sparse import csr_array

        a, b, _ = self._ends
        latency = np.fromiter(
            (float(link.latency_ms or 0.0) for link in self.links), float, len(self.links)
        )
        return csr_array(
            (np.concatenate([latency, latency]), (np.concatenate([a, b]), np.concatenate([b, a]))),
            shape=(self.n, self.n),
        )

    def _search(self, sources: list[int]) -> np.ndarray:
        """Shortest-path latencies from each of ``sources`` (one row each): the rows kept, and
        scipy's Dijkstra for the others (not kept)."""
        missing = [i for i in sources if i not in self._latency_rows]
        found: dict[int, np.ndarray] = {}
        if missing:
            from scipy.sparse.csgraph import dijkstra

            rows = dijkstra(self._latency_matrix, directed=True, indices=missing)
            found = dict(zip(missing, rows, strict=True))
        return np.array(
            [self._latency_rows[i] if i in self._latency_rows else found[i] for i in sources]
        )

    def keep_latency_rows(self, sources: Iterable[int]) -> None:
        """Compute and keep the latency rows of ``sources`` (cluster indices), a batch of
        :data:`LATENCY_BATCH` per call of scipy's Dijkstra (a time limit stops the work
        between batches: the rows done are kept)."""
        if not self.has_latency:
            return
        missing = [i for i in dict.fromkeys(sources) if i not in self._latency_rows]
        for start in range(0, len(missing), LATENCY_BATCH):
            batch = missing[start : start + LATENCY_BATCH]
            for i, row in zip(batch, self._search(batch), strict=True):
                self._latency_rows[i] = row

    def latency_from(self, source: str) -> list[float]:
        """Shortest-path latency in ms from ``source`` to every cluster (Dijkstra over the
        links' ``latency_ms``; all ``0`` when the links carry no latency)."""
        return self.latency_row(self.index[source]).tolist()

    def latency_row(self, source: int) -> np.ndarray:
        """:meth:`latency_from` cluster index ``source``, as an array (kept: later calls and
        :meth:`total_latency` reuse it)."""
        if not self.has_latency:
            return np.zeros(self.n)
        self.keep_latency_rows([source])
        return self._latency_rows[source]

    @cached_property
    def _latency_rows(self) -> dict[int, np.ndarray]:
        """Latency rows kept so far, by source index."""
        return {}

    def latency(self, u: str, v: str) -> float:
        """Shortest-path latency in ms between ``u`` and ``v``."""
        return self.latency_from(u)[self.index[v]]

    def total_latency(self, members: Iterable[str]) -> float:
        """Sum over the unordered pairs of ``members`` of their shortest-path latency (ms).

        One Dijkstra (scipy's, in C) from every member but the last, :data:`LATENCY_BATCH`
        members at a time, rows kept by :meth:`keep_latency_rows` read instead: ``O(K m log
        n)`` for ``K`` members. Each batch adds the latencies to the later members; the batches
        are fixed by the members, so the sum does not depend on which rows were kept. The sum
        over all pairs of shortest paths has no known shortcut in general graphs (see
        ``docs/clusterselect.md``, "Scale"), so this is the family's costliest computation on
        large selections; the last few totals are kept.
        """
        chosen = sorted({self.index[name] for name in members})
        if len(chosen) < 2 or not self.has_latency:
            return 0.0
        memo = frozenset(chosen)
        if memo not in self._latency_totals:
            columns = np.array(chosen)
            total = 0.0
            for start in range(0, len(chosen) - 1, LATENCY_BATCH):
                batch = chosen[start : start + LATENCY_BATCH]
                block = self._search(batch)[:, columns]
                # row r is member start + r: its pairs are the members after it
                later = (
                    np.arange(len(chosen))[None, :] > np.arange(start, start + len(batch))[:, None]
                )
                total += float(block[later].sum())
            if len(self._latency_totals) >= LATENCY_TOTALS_KEPT:
                self._latency_totals.clear()
            self._latency_totals[memo] = total
        return self._latency_totals[memo]

    @cached_property
    def _latency_totals(self) -> dict[frozenset[int], float]:
        """:meth:`total_latency` of the last member sets asked for (evaluating a result asks
        for the objective and for the metrics: both need it)."""
        return {}

    def to_dicts(self) -> list[dict[str, Any]]:
        """The links as JSON objects."""
        return [link.to_dict() for link in self.links]


LATENCY_BATCH = 32
"""Sources per call of scipy's Dijkstra."""
LATENCY_TOTALS_KEPT = 16
"""How many :meth:`ClusterGraph.total_latency` results a graph keeps."""

__all__ = ["ClusterGraph", "Group", "Link"]
