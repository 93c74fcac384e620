"""The multi-cluster description: JSON round trip, its three ways of giving nodes, errors that
name the file and the field, and SpiderFlow's settings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import topoopt
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.crosscluster.multicluster import MultiCluster, Site, SiteNode
from topoopt.crosscluster.settings import (
    spiderflow_scale,
    spiderflow_simulated,
    spiderflow_testbed,
    uniform,
)

SLURM = Path(__file__).parents[1] / "topology" / "data" / "slurm" / "topology-guide-ex1.conf"


def description(**cluster_b: object) -> dict:
    b = {"name": "b", "intra_node_gbps": 200, "inter_node_gbps": 8, **cluster_b}
    return {
        "format": "topoopt-multicluster",
        "version": 1,
        "name": "two",
        "clusters": [
            {
                "name": "a",
                "intra_node_gbps": 200,
                "inter_node_gbps": 8,
                "nodes": [{"name": "n0", "gpus": 4, "free": [3, 1]}, {"name": "n1", "gpus": 4}],
            },
            b,
        ],
        "links": [{"a": "a", "b": "b", "bandwidth_gbps": 5}],
    }


def test_nodes_shape_and_round_trip() -> None:
    mc = MultiCluster.from_dict(description(shape={"nodes": 3, "gpus_per_node": 8}))
    a, b = mc.clusters
    assert a.node("n0").free == (1, 3) and a.free_gpus == 6 and a.total_gpus == 8
    assert [n.name for n in b.nodes] == ["b-n0", "b-n1", "b-n2"] and b.free_gpus == 24
    assert mc.free_gpus == 30
    assert MultiCluster.from_dict(mc.to_dict()) == mc
    busy = mc.with_free({"b": {"b-n1": []}})
    assert busy.cluster("b").free_gpus == 16 and mc.cluster("b").free_gpus == 24


def test_a_topology_file_gives_the_nodes(tmp_path: Path) -> None:
    shutil.copy(SLURM, tmp_path / "b.conf")
    data = description(topology="b.conf", gpus_per_node=4, free={"tux1": [0]})
    (tmp_path / "mc.json").write_text(json.dumps(data))
    mc = MultiCluster.load(tmp_path / "mc.json")
    b = mc.cluster("b")
    assert b.topology is not None and len(b.nodes) == len(b.topology.nodes)
    assert b.node("tux1").free == (0,) and b.free_gpus == 4 * len(b.nodes) - 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"links": [{"a": "a", "b": "x", "bandwidth_gbps": 5}]}, r"links\[0\]\.b: unknown cluster"),
        ({"links": []}, "connected"),
        ({"clusters": "many"}, "clusters"),
        ({"version": 2}, "version"),
    ],
)
def test_clusters_and_links_that_disagree_name_the_field(
    tmp_path: Path, change: dict, message: str
) -> None:
    path = tmp_path / "mc.json"
    path.write_text(json.dumps({**description(shape={"nodes": 1, "gpus_per_node": 8}), **change}))
    with pytest.raises(InvalidInstanceError, match=message) as error:
        MultiCluster.load(path)
    assert str(error.value).startswith(str(path))


@pytest.mark.parametrize(
    ("cluster_b", "message"),
    [
        ({}, r"clusters\[1\]: give exactly one of nodes, shape or topology"),
        (
            {"shape": {"nodes": 1, "gpus_per_node": 2}, "nodes": [{"name": "x", "gpus": 1}]},
            "exactly one",
        ),
        ({"nodes": [{"name": "x", "gpus": 2, "free": [2]}]}, r"nodes\[0\]\.free\[0\]: GPU 2"),
        ({"nodes": [{"name": "x", "gpus": 2}, {"name": "x", "gpus": 2}]}, "nodes"),
        ({"topology": "missing.conf", "gpus_per_node": 8}, r"clusters\[1\]\.topology"),
        ({"shape": {"nodes": 1, "gpus_per_node": 2}, "free": {}}, r"clusters\[1\]\.free: only"),
    ],
)
def test_bad_clusters_name_the_field(tmp_path: Path, cluster_b: dict, message: str) -> None:
    (tmp_path / "mc.json").write_text(json.dumps(description(**cluster_b)))
    with pytest.raises(InvalidInstanceError, match=message):
        MultiCluster.load(tmp_path / "mc.json")


def test_a_topology_that_does_not_parse_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.conf").write_text("SwitchName=s0 Nodes=\n this is not slurm\n")
    (tmp_path / "mc.json").write_text(json.dumps(description(topology="bad.conf", gpus_per_node=8)))
    with pytest.raises(InvalidInstanceError, match=r"mc\.json: clusters\[1\]\.topology"):
        MultiCluster.load(tmp_path / "mc.json")


def test_spiderflow_settings() -> None:
    sim = spiderflow_simulated()
    assert len(sim.clusters) == 6 and sim.free_gpus == 3072
    assert {c.intra_node_gbps for c in sim.clusters} == {200.0}  # 25 GB/s
    assert {c.inter_node_gbps for c in sim.clusters} == {8.0}  # 1 GB/s
    assert {link.bandwidth_gbps for link in sim.links} == {5.0} and len(sim.links) == 15
    for n in (1, 2, 64):
        scale = spiderflow_scale(n)
        assert [c.free_gpus for c in scale.clusters] == [56] * n
    bed = spiderflow_testbed(seed=3)
    assert [c.free_gpus for c in bed.clusters] == [2, 2, 2, 2, 2, 4, 1, 1]
    assert all(1 <= link.bandwidth_gbps <= 15 for link in bed.links)
    assert spiderflow_testbed(seed=3) == bed


def test_the_clusterselect_instance_solves() -> None:
    mc = uniform("u", clusters=4, nodes=2, gpus_per_node=4)
    result = topoopt.solve(mc.clusterselect(12), "clusterselect/spinsearch")
    assert result.is_ok and result.metric("clusters") == 2


def test_with_free_refuses_unknown_names() -> None:
    mc = MultiCluster("m", (Site("a", (SiteNode("n", 2, (0, 1)),), 200, 8),), ())
    with pytest.raises(TopooptError, match="unknown clusters"):
        mc.with_free({"z": {}})
    with pytest.raises(TopooptError, match="has no nodes"):
        mc.with_free({"a": {"q": []}})
