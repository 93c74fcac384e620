"""The cluster graph (SpiderFlow §4.1.1): widest paths, bottlenecks, Kruskal groups and
latencies against brute force over networkx, and its input errors."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.clusterselect.generate import random_graph
from topoopt.core.errors import InvalidInstanceError
from topoopt.crosscluster.graph import ClusterGraph, Link

from .strategies import graph_parts, graphs


def brute_widest(graph: nx.Graph, u: str, v: str) -> float:
    """Eq. 1 by enumerating every simple path: max over paths of the min link bandwidth."""
    if u == v:
        return math.inf
    return max(
        min(graph[a][b]["bandwidth_gbps"] for a, b in itertools.pairwise(path))
        for path in nx.all_simple_paths(graph, u, v)
    )


def widest_table(graph: ClusterGraph) -> dict[tuple[str, str], float]:
    """Brute-force ``beta(u, v)`` for every ordered pair."""
    g = graph.to_networkx()
    table = {(u, u): math.inf for u in graph.clusters}
    for u, v in itertools.combinations(graph.clusters, 2):
        table[u, v] = table[v, u] = brute_widest(g, u, v)
    return table


def subsets(graph: ClusterGraph, min_size: int = 2) -> list[tuple[str, ...]]:
    names = graph.clusters
    return [s for k in range(min_size, len(names) + 1) for s in itertools.combinations(names, k)]


def connected_at(graph: ClusterGraph, members: frozenset[str], level: float) -> bool:
    """Whether ``members`` lie in one component of the links of bandwidth ``>= level``."""
    g = nx.Graph()
    g.add_nodes_from(graph.clusters)
    g.add_edges_from((lk.a, lk.b) for lk in graph.links if lk.bandwidth_gbps >= level)
    first = next(iter(members))
    return members <= nx.node_connected_component(g, first)


def component_at(graph: ClusterGraph, member: str, level: float) -> frozenset[str]:
    g = nx.Graph()
    g.add_nodes_from(graph.clusters)
    g.add_edges_from((lk.a, lk.b) for lk in graph.links if lk.bandwidth_gbps >= level)
    return frozenset(nx.node_connected_component(g, member))


# ------------------------------------------------------------------------ widest paths (eq. 1)


@given(graph=graphs())
def test_widest_equals_brute_force_over_all_simple_paths(graph: ClusterGraph) -> None:
    table = widest_table(graph)
    for u in graph.clusters:
        row = graph.widest_from(u)
        for v in graph.clusters:
            assert graph.widest(u, v) == table[u, v], (u, v)
            assert row[graph.index[v]] == table[u, v], (u, v)


@given(graph=graphs())
def test_widest_is_symmetric_and_infinite_only_on_the_diagonal(graph: ClusterGraph) -> None:
    for u, v in itertools.product(graph.clusters, repeat=2):
        assert graph.widest(u, v) == graph.widest(v, u)
        assert math.isinf(graph.widest(u, v)) == (u == v)


@given(graph=graphs())
def test_levels_are_the_distinct_pairwise_widest_bandwidths(graph: ClusterGraph) -> None:
    table = widest_table(graph)
    distinct = {w for (u, v), w in table.items() if u != v}
    assert graph.levels == tuple(sorted(distinct, reverse=True))
    assert graph.rank(math.inf) == 0
    for r, level in enumerate(graph.levels):
        assert graph.rank(level) == r


@given(graph=graphs())
def test_spanning_tree_is_a_maximum_spanning_tree(graph: ClusterGraph) -> None:
    tree = graph.spanning_tree
    assert len(tree) == graph.n - 1
    t = nx.Graph()
    t.add_nodes_from(range(graph.n))
    t.add_edges_from((i, j) for i, j, _ in tree)
    assert nx.is_tree(t)
    best = nx.maximum_spanning_tree(graph.to_networkx(), weight="bandwidth_gbps")
    assert sum(b for _, _, b in tree) == best.size(weight="bandwidth_gbps")


# ------------------------------------------------------------------------------ bottlenecks


@given(graph=graphs())
def test_bottleneck_is_the_smallest_pairwise_widest_path(graph: ClusterGraph) -> None:
    table = widest_table(graph)
    for members in subsets(graph):
        expected = min(table[u, v] for u, v in itertools.combinations(members, 2))
        assert graph.bottleneck(members) == expected, members
        assert graph.bottleneck(reversed(members)) == expected
        assert graph.bottleneck([*members, members[0]]) == expected  # repeats do not count


@given(graph=graphs())
def test_bottleneck_of_fewer_than_two_clusters_is_infinite(graph: ClusterGraph) -> None:
    assert graph.bottleneck([]) == math.inf
    for name in graph.clusters:
        assert graph.bottleneck([name]) == math.inf
        assert graph.bottleneck([name, name]) == math.inf


# --------------------------------------------------------------------------- Kruskal groups


@given(graph=graphs())
def test_groups_are_maximal_components_at_their_level(graph: ClusterGraph) -> None:
    levels = graph.levels
    for group in graph.groups:
        names = frozenset(graph.clusters[i] for i in group.members)
        if len(names) == 1:
            assert group.rank == 0
            continue
        level = levels[group.rank]
        # connected using only links of bandwidth >= its level, and nothing more joins there
        assert component_at(graph, next(iter(names)), level) == names, group
        if group.rank > 0:  # formed at this level: not yet connected one level higher
            assert not connected_at(graph, names, levels[group.rank - 1]), group


@given(graph=graphs())
def test_groups_are_distinct_sets_at_most_2n_minus_1(graph: ClusterGraph) -> None:
    groups = graph.groups
    assert len(groups) <= 2 * graph.n - 1
    assert len({g.members for g in groups}) == len(groups)
    singletons = [g for g in groups if len(g.members) == 1]
    assert sorted(next(iter(g.members)) for g in singletons) == list(range(graph.n))
    assert all(g.rank == 0 for g in singletons)
    assert max(g.rank for g in groups) == max(len(graph.levels) - 1, 0)
    assert any(g.members == frozenset(range(graph.n)) for g in groups)


@given(graph=graphs())
def test_every_component_of_every_level_is_a_group(graph: ClusterGraph) -> None:
    by_members = {g.members: g.rank for g in graph.groups}
    for r, level in enumerate(graph.levels):
        for name in graph.clusters:
            component = frozenset(graph.index[c] for c in component_at(graph, name, level))
            assert component in by_members, (level, component)
            assert by_members[component] <= r


@given(graph=graphs())
def test_smallest_rank_of_a_group_containing_a_set_is_its_bottleneck_rank(
    graph: ClusterGraph,
) -> None:
    for members in subsets(graph):
        chosen = frozenset(graph.index[name] for name in members)
        ranks = [g.rank for g in graph.groups if chosen <= g.members]
        assert ranks, members
        assert min(ranks) == graph.rank(graph.bottleneck(members)), members


# --------------------------------------------------------------------- latency, eq. 2, hops


@given(graph=graphs(latency=True))
def test_latency_equals_networkx_dijkstra(graph: ClusterGraph) -> None:
    g = graph.to_networkx()
    lengths = dict(nx.all_pairs_dijkstra_path_length(g, weight="latency_ms"))
    for u, v in itertools.product(graph.clusters, repeat=2):
        assert graph.latency(u, v) == lengths[u][v]
    for members in subsets(graph):
        expected = sum(lengths[u][v] for u, v in itertools.combinations(members, 2))
        assert graph.total_latency(members) == pytest.approx(expected, rel=1e-12)
    assert graph.total_latency(graph.clusters[:1]) == 0.0


@given(graph=graphs(latency=False))
def test_latency_is_zero_without_latencies(graph: ClusterGraph) -> None:
    assert not graph.has_latency
    for u in graph.clusters:
        assert graph.latency_from(u) == [0.0] * graph.n
    assert graph.total_latency(graph.clusters) == 0.0


@given(graph=graphs())
def test_incident_bandwidth_is_eq_2(graph: ClusterGraph) -> None:
    g = graph.to_networkx()
    expected = [g.degree(name, weight="bandwidth_gbps") for name in graph.clusters]
    assert graph.incident_bandwidth() == pytest.approx(expected, rel=1e-12)


@given(graph=graphs())
def test_hops_equal_networkx_bfs(graph: ClusterGraph) -> None:
    g = graph.to_networkx()
    for name in graph.clusters:
        assert graph.hops_from(name) == nx.single_source_shortest_path_length(g, name)


@settings(max_examples=30)
@given(parts=graph_parts())
def test_links_in_every_form_build_the_same_graph(parts) -> None:
    names, links = parts
    as_links = ClusterGraph(names, [Link(*lk) for lk in links])
    as_dicts = ClusterGraph(names, [Link(*lk).to_dict() for lk in links])
    assert ClusterGraph(names, links) == as_links == as_dicts
    assert ClusterGraph(names, as_links.to_dicts()) == as_links


def test_docstring_example_triangle() -> None:
    g = ClusterGraph(
        ["a", "b", "c"], [("a", "b", 10.0, 2.0), ("b", "c", 40.0, 1.0), ("a", "c", 5.0, 9.0)]
    )
    assert g.widest("a", "c") == 10.0  # a-b-c beats the direct 5 Gb/s link
    assert g.latency("a", "c") == 3.0  # and is faster than the direct 9 ms
    assert g.levels == (40.0, 10.0)
    assert [sorted(grp.members) for grp in g.groups if len(grp.members) > 1] == [[1, 2], [0, 1, 2]]


def test_single_cluster_graph() -> None:
    g = ClusterGraph(["only"], [])
    assert g.levels == () and g.spanning_tree == ()
    assert g.widest("only", "only") == math.inf
    assert g.bottleneck(["only"]) == math.inf
    assert [grp.members for grp in g.groups] == [frozenset({0})]
    assert not g.has_latency and g.total_latency(["only"]) == 0.0


# ------------------------------------------------------------------------------- bad input

ABC = ["a", "b", "c"]


@pytest.mark.parametrize(
    ("links", "field", "words"),
    [
        pytest.param(
            [("a", "b", 1.0), ("b", "c", 1.0), ("c", "bb", 1.0)],
            "links[2].b",
            "unknown cluster 'bb' (did you mean 'b'?)",
            id="unknown-cluster-b",
        ),
        pytest.param(
            [("a", "b", 1.0), ("x", "c", 1.0)], "links[1].a", "unknown cluster 'x'", id="unknown-a"
        ),
        pytest.param(
            [("a", "b", 1.0), ("c", "c", 1.0)],
            "links[1].b",
            "not 'c' itself",
            id="self-loop",
        ),
        pytest.param(
            [("a", "b", 1.0), ("b", "c", 0.0)],
            "links[1].bandwidth_gbps",
            "must be > 0",
            id="zero-bandwidth",
        ),
        pytest.param(
            [("a", "b", -2.5), ("b", "c", 1.0)],
            "links[0].bandwidth_gbps",
            "must be > 0",
            id="negative-bandwidth",
        ),
        pytest.param(
            [("a", "b", 1.0), ("b", "c", 1.0), ("b", "a", 3.0)],
            "links[2]",
            "already links[0]",
            id="duplicate-pair",
        ),
        pytest.param(
            [("a", "b", 1.0, 2.0), ("b", "c", 1.0)],
            "links[1].latency_ms",
            "on every link or on none",
            id="latency-on-some-links",
        ),
        pytest.param(
            [("a", "b", 1.0), ("b", "c", 1.0, 2.0)],
            "links[0].latency_ms",
            "on every link or on none",
            id="latency-missing-on-the-first",
        ),
        pytest.param(
            [("a", "b", 1.0, -1.0), ("b", "c", 1.0, 1.0)],
            "links[0].latency_ms",
            "",
            id="negative-latency",
        ),
        pytest.param([("a", "b", 1.0)], "links", "not connected", id="disconnected"),
        pytest.param([], "links", "not connected", id="no-links"),
        pytest.param([("a", "b")], "links[0]", "tuple", id="short-tuple"),
        pytest.param([{"a": "a", "b": "b"}], "links[0].bandwidth_gbps", "missing", id="no-bw"),
    ],
)
def test_bad_links_name_the_json_path(links, field: str, words: str) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        ClusterGraph(ABC, links)
    assert info.value.field == field
    assert words in str(info.value)


def test_disconnected_graph_names_the_unreachable_clusters() -> None:
    with pytest.raises(InvalidInstanceError, match=r"2 cluster\(s\) \('c', 'd'\) cannot reach 'a'"):
        ClusterGraph(["a", "b", "c", "d"], [("a", "b", 1.0), ("c", "d", 1.0)])


def test_error_path_prefix_is_the_callers() -> None:
    with pytest.raises(InvalidInstanceError) as info:
        ClusterGraph(ABC, [("a", "b", 1.0), ("b", "z", 1.0)], path="net.links")
    assert info.value.field == "net.links[1].b"


# ------------------------------------------- larger graphs: the array code against plain rules


def plain_widest_from(graph: ClusterGraph, source: str) -> dict[str, float]:
    """Eq. 1 by a max-min Dijkstra over the links (no spanning tree): the widest path found so
    far is extended from the cluster whose width is largest."""
    import heapq

    width = {name: -math.inf for name in graph.clusters}
    width[source] = math.inf
    heap = [(-math.inf, source)]
    done: set[str] = set()
    neighbours: dict[str, list[tuple[str, float]]] = {c: [] for c in graph.clusters}
    for lk in graph.links:
        neighbours[lk.a].append((lk.b, lk.bandwidth_gbps))
        neighbours[lk.b].append((lk.a, lk.bandwidth_gbps))
    while heap:
        _, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        for v, b in neighbours[u]:
            if min(width[u], b) > width[v]:
                width[v] = min(width[u], b)
                heapq.heappush(heap, (-width[v], v))
    return width


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(10, 300))
def test_tree_queries_equal_plain_rules_on_larger_graphs(seed: int, n: int) -> None:
    """Deep trees (many BFS layers): widest paths, bottlenecks and hops of the array code
    against a max-min Dijkstra, pairwise minima and networkx's BFS."""
    rng = np.random.default_rng(seed)
    clusters, links = random_graph(rng, n, extra_links=int(rng.integers(0, n + 1)))
    graph = ClusterGraph([c for c, _ in clusters], links)
    g = graph.to_networkx()
    best = nx.maximum_spanning_tree(g, weight="bandwidth_gbps")
    assert sum(b for _, _, b in graph.spanning_tree) == best.size(weight="bandwidth_gbps")
    sources = [graph.clusters[int(i)] for i in rng.choice(n, size=min(n, 5), replace=False)]
    rows = {u: plain_widest_from(graph, u) for u in sources}
    for u in sources:
        assert graph.widest_from(u) == [rows[u][v] for v in graph.clusters]
        assert graph.hops_from(u) == nx.single_source_shortest_path_length(g, u)
    for _ in range(10):
        members = [graph.clusters[int(i)] for i in rng.choice(n, size=int(rng.integers(2, 8)))]
        expected = min(
            (plain_widest_from(graph, u)[v] for u, v in itertools.combinations(members, 2)),
            default=math.inf,
        )
        assert graph.bottleneck(members) == expected, members


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(10, 120))
def test_total_latency_equals_networkx_with_and_without_kept_rows(seed: int, n: int) -> None:
    """The early-stopped Dijkstra, the kept rows and the kept totals give networkx's sum,
    exactly (whole-millisecond latencies add exactly)."""
    rng = np.random.default_rng(seed)
    clusters, links = random_graph(rng, n)
    names = [c for c, _ in clusters]
    lengths = dict(
        nx.all_pairs_dijkstra_path_length(
            ClusterGraph(names, links).to_networkx(), weight="latency_ms"
        )
    )
    for _ in range(5):
        members = sorted({names[int(i)] for i in rng.choice(n, size=int(rng.integers(2, 12)))})
        expected = sum(lengths[u][v] for u, v in itertools.combinations(members, 2))
        fresh = ClusterGraph(names, links)
        assert fresh.total_latency(members) == expected
        assert fresh.total_latency(reversed(members)) == expected  # the kept total
        kept = ClusterGraph(names, links)
        for name in members[::2]:  # some rows kept, the others searched
            kept.latency_row(kept.index[name])
        assert kept.total_latency(members) == expected
