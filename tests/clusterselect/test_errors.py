"""Bad clusterselect input gives one clear error naming the JSON path, whether it comes from a
dict, a file through the CLI, in-code construction or a networkx graph; good input round-trips."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings

import topoopt
from topoopt.clusterselect import ClusterSelectInstance
from topoopt.clusterselect.generate import examples, fig2
from topoopt.core.errors import InvalidInstanceError
from topoopt.testing.input_errors import (
    Change,
    assert_cli_exits_2,
    assert_load_names,
    edited,
    setter,
)

from .strategies import instances


def base() -> dict[str, Any]:
    """Fig. 2 as JSON: links[0] a-b, [1] b-c, [2] c-d, [3] a-e, [4] a-g, [5] e-f, [6] f-g,
    [7] d-f; clusters a, b, c, d, e (12), f (2), g (12); demand 16 from source a."""
    return fig2().to_dict()


def drop_links_of(cluster: str) -> Callable[[dict], None]:
    def change(data: dict) -> None:
        data["links"] = [lk for lk in data["links"] if cluster not in (lk["a"], lk["b"])]

    return change


def add_link(**link: Any) -> Callable[[dict], None]:
    return lambda data: data["links"].append(link)


# (id, change, field, words): errors every way of building an instance reports alike
CONSTRUCTOR_CASES = [
    ("unknown-cluster", setter("links", 2, "b", value="dd"), "links[2].b", "did you mean 'd'?"),
    ("unknown-cluster-a", setter("links", 5, "a", value="zz"), "links[5].a", "unknown cluster"),
    ("negative-free", setter("clusters", 1, "free_gpus", value=-1), "clusters[1].free_gpus", "-1"),
    ("self-loop", setter("links", 3, "b", value="a"), "links[3].b", "not 'a' itself"),
    (
        "zero-bandwidth",
        setter("links", 1, "bandwidth_gbps", value=0.0),
        "links[1].bandwidth_gbps",
        "> 0",
    ),
    (
        "negative-bandwidth",
        setter("links", 6, "bandwidth_gbps", value=-5.0),
        "links[6].bandwidth_gbps",
        "> 0",
    ),
    ("negative-latency", setter("links", 4, "latency_ms", value=-1.0), "links[4].latency_ms", "-1"),
    (
        "duplicate-pair",
        add_link(a="g", b="a", bandwidth_gbps=1.0, latency_ms=1.0),
        "links[8]",
        "already links[4]",
    ),
    ("disconnected", drop_links_of("e"), "links", "('e') cannot reach 'a'"),
    ("source-not-a-cluster", setter("source", value="h"), "source", "'h' is not a cluster"),
    ("demand-above-free", setter("demand", value=43), "demand", "43 GPUs but the clusters have 42"),
    ("demand-zero", setter("demand", value=0), "demand", ">= 1"),
    (
        "duplicate-cluster",
        lambda data: data["clusters"].append({"name": "a", "free_gpus": 1}),
        "clusters[7]",
        "duplicate name 'a'",
    ),
]

# errors only the JSON reader can meet
JSON_CASES = [
    ("unknown-field", setter("demnd", value=3), "demnd", "did you mean 'demand'?"),
    (
        "unknown-link-field",
        setter("links", 0, "latncy_ms", value=3),
        "links[0].latncy_ms",
        "did you mean 'latency_ms'?",
    ),
    ("format-version", setter("format_version", value=2), "format_version", "got 2"),
    ("missing-demand", lambda data: data.pop("demand"), "demand", "missing"),
    ("demand-not-integer", setter("demand", value=2.5), "demand", "integer"),
    (
        "latency-on-some-links",
        lambda data: data["links"][4].pop("latency_ms"),
        "links[4].latency_ms",
        "on every link or on none",
    ),
]

ALL_CASES = CONSTRUCTOR_CASES + JSON_CASES


def bad(change: Change) -> dict[str, Any]:
    return edited(base(), change)


@pytest.mark.parametrize(
    ("change", "field", "words"), [c[1:] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES]
)
def test_load_dict_names_the_field(change, field: str, words: str) -> None:
    assert_load_names(bad(change), field, words)


@pytest.mark.parametrize(
    ("change", "field", "words"), [c[1:] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES]
)
def test_cli_solve_bad_file_exits_2_with_one_line(tmp_path, change, field: str, words: str) -> None:
    assert_cli_exits_2(tmp_path, bad(change), "clusterselect/spinsearch", field, words)


def in_code(data: dict[str, Any]) -> ClusterSelectInstance:
    """The instance built in code from tuples, as a user would."""
    clusters = [(c["name"], c["free_gpus"]) for c in data["clusters"]]
    links = [
        (
            lk["a"],
            lk["b"],
            lk["bandwidth_gbps"],
            *(() if "latency_ms" not in lk else (lk["latency_ms"],)),
        )
        for lk in data["links"]
    ]
    return ClusterSelectInstance(
        data["name"], clusters, links, data["demand"], source=data.get("source")
    )


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [c[1:] for c in CONSTRUCTOR_CASES],
    ids=[c[0] for c in CONSTRUCTOR_CASES],
)
def test_in_code_construction_names_the_same_field(change, field: str, words: str) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        in_code(bad(change))
    assert info.value.field == field
    assert words in str(info.value)


def test_in_code_construction_of_the_base_is_fig2_without_labels() -> None:
    assert in_code(base()).to_dict() == {k: v for k, v in base().items() if k != "labels"}


def test_wrong_item_shapes_name_the_item() -> None:
    with pytest.raises(InvalidInstanceError) as info:
        ClusterSelectInstance("x", [("a", 4), ("b",)], [("a", "b", 1.0)], 2)
    assert info.value.field == "clusters[1]"
    with pytest.raises(InvalidInstanceError) as info:
        ClusterSelectInstance("x", [("a", 4), ("b", 4)], [("a", "b")], 2)
    assert info.value.field == "links[0]"
    with pytest.raises(InvalidInstanceError) as info:
        ClusterSelectInstance("x", [], [], 1)
    assert info.value.field == "clusters"


# -------------------------------------------------------------------------------- networkx


def nx_graph() -> nx.Graph:
    g = nx.Graph()
    g.add_node("a", free_gpus=4)
    g.add_node("b", free_gpus=12)
    g.add_node("c", free_gpus=2)
    g.add_edge("a", "b", bandwidth_gbps=100.0, latency_ms=1.0)
    g.add_edge("b", "c", bandwidth_gbps=10.0, latency_ms=2.0)
    return g


def test_from_networkx_builds_the_instance() -> None:
    inst = ClusterSelectInstance.from_networkx(nx_graph(), 16, source="a", name="g")
    assert inst == ClusterSelectInstance(
        "g",
        [("a", 4), ("b", 12), ("c", 2)],
        [("a", "b", 100.0, 1.0), ("b", "c", 10.0, 2.0)],
        16,
        source="a",
    )


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        pytest.param(
            lambda g: g.nodes["c"].pop("free_gpus"), "nodes['c'].free_gpus", "missing", id="no-free"
        ),
        pytest.param(
            lambda g: g.nodes["b"].update(free_gpus=-3),
            "nodes['b'].free_gpus",
            "-3",
            id="negative-free",
        ),
        pytest.param(
            lambda g: g.edges["b", "c"].pop("bandwidth_gbps"),
            "edges['b', 'c'].bandwidth_gbps",
            "missing",
            id="no-bandwidth",
        ),
        pytest.param(
            lambda g: g.edges["b", "c"].update(bandwidth_gbps=-1.0),
            "edges['b', 'c'].bandwidth_gbps",
            "> 0",
            id="negative-bandwidth",
        ),
        pytest.param(
            lambda g: g.edges["a", "b"].update(bandwidth_gbps=0.0),
            "edges['a', 'b'].bandwidth_gbps",
            "> 0",
            id="zero-bandwidth",
        ),
        pytest.param(
            lambda g: g.edges["a", "b"].update(latency_ms=-2.0),
            "edges['a', 'b'].latency_ms",
            "-2",
            id="negative-latency",
        ),
        pytest.param(
            lambda g: g.add_edge("c", "c", bandwidth_gbps=5.0, latency_ms=0.0),
            "edges['c', 'c'].b",
            "not 'c' itself",
            id="self-loop",
        ),
        pytest.param(
            lambda g: g.add_node("d", free_gpus=1), "links", "('d') cannot reach 'a'", id="isolated"
        ),
    ],
)
def test_from_networkx_errors_name_the_node_or_edge(change, field: str, words: str) -> None:
    g = nx_graph()
    change(g)
    with pytest.raises(InvalidInstanceError) as info:
        ClusterSelectInstance.from_networkx(g, 6)
    assert info.value.field == field
    assert words in str(info.value)


# ------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("inst", examples(), ids=lambda inst: inst.name)
def test_examples_round_trip_through_dict_and_file(inst, tmp_path) -> None:
    assert topoopt.load(inst.to_dict()) == inst
    assert topoopt.load(json.loads(json.dumps(inst.to_dict()))) == inst
    path = topoopt.save(inst, tmp_path / f"{inst.name}.json")
    again = topoopt.load(path)
    assert again == inst and again.labels == inst.labels
    assert again.to_dict() == inst.to_dict()


@settings(max_examples=40)
@given(inst=instances())
def test_random_instances_round_trip(inst: ClusterSelectInstance) -> None:
    data = json.loads(json.dumps(inst.to_dict()))
    again = topoopt.load(data)
    assert again == inst
    assert again.graph.levels == inst.graph.levels
    assert ("source" in data) == (inst.source is not None)
    assert ("latency_ms" in data["links"][0]) == inst.graph.has_latency
