"""The readers on real files from public sources.

Sources of the fixtures in ``tests/topology/data`` (small samples, kept as published):

* ``slurm/topology-guide-ex1.conf``, ``slurm/topology-guide-ex2.conf``: the two examples of
  Slurm's Topology Guide, SchedMD/slurm ``doc/html/topology.shtml``
  (https://slurm.schedmd.com/topology.html).
* ``slurm/man-tree.conf``, ``slurm/man-block.conf``, ``slurm/man-ring.conf``: the EXAMPLE
  section of topology.conf(5), SchedMD/slurm ``doc/man/man5/topology.conf.5``
  (https://slurm.schedmd.com/topology.conf.html).
* ``slurm/man-topology.yaml``: the EXAMPLE of topology.yaml(5), SchedMD/slurm
  ``doc/man/man5/topology.yaml.5`` (https://slurm.schedmd.com/topology.yaml.html).
* ``slurm/puppet-cluster.conf``: GitHub maatthias/slurm-cluster ``topology.conf``.
* ``slurm/superpod-overlap.conf``: GitHub tonystarkiss/slurm-superpod ``topology.conf``
  (a real file in which node ``circe-n051`` is under two switches).
* ``topograph/*.yaml``: NVIDIA/topograph ``tests/models/`` (medium.yaml, medium-tree.yaml,
  small-tree.yaml, nvl72.yaml verbatim; large.yaml and dual-level.yaml with the same
  switches, blocks and node ranges, the ASCII-art comments shortened).
* ``k8s/nodes.json``: the shape of ``kubectl get nodes -o json`` (a ``List`` of ``Node``)
  carrying the labels topograph's Kubernetes engine writes for its tree test set
  (NVIDIA/topograph, k8s labeler test: Node201/202/205 under leaf S2, Node304-306 under
  leaf xf946c4acef2d5939, spine S1), plus an unlabelled control-plane node.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from topoopt.topology import (
    TopologyError,
    guess_format,
    load_topology,
    read_free,
    read_k8s_nodes,
    read_slurm_conf,
    read_slurm_yaml,
    read_topograph,
)

DATA = Path(__file__).parent / "data"
SPINE = "network.topology.nvidia.com/spine"
LEAF = "network.topology.nvidia.com/leaf"


def test_slurm_guide_three_levels() -> None:
    topo = read_slurm_conf(DATA / "slurm/topology-guide-ex1.conf")
    assert topo.depth == 3
    assert [s.name for s in topo.switches_at(0)] == ["s6"]
    assert [s.name for s in topo.switches_at(1)] == ["s4", "s5"]
    assert topo.path("tux5") == ("s6", "s5", "s2")
    assert topo.switch_of("tux5", 1) == "s5"
    assert topo.nodes_under("s4") == ("tux0", "tux1", "tux2", "tux3")


def test_slurm_guide_parallel_spines_and_link_speed() -> None:
    topo = read_slurm_conf(DATA / "slurm/topology-guide-ex2.conf")
    (root,) = topo.roots
    assert root.name == "s4" and root.redundant == ("s5", "s6", "s7")
    assert root.link_speed == 1800
    assert topo.switch("s3").link_speed == 1800 and topo.switch("s0").link_speed == 900
    assert topo.switch("s6") is root
    assert len(topo.nodes) == 16


def test_slurm_man_tree_and_block() -> None:
    tree = read_slurm_conf(DATA / "slurm/man-tree.conf")
    assert tree.depth == 2 and len(tree.nodes) == 18 and tree.switch_of("dev12") == "s2"
    block = read_slurm_conf(DATA / "slurm/man-block.conf")
    assert block.kind == "block" and block.block_sizes == (30, 120)
    assert block.levels == ("block120", "block")
    assert [s.name for s in block.switches_at("block")] == ["block1", "block2", "block3", "block4"]
    assert block.switch_of("node100", "block120") == "block1..block4"
    assert len(block.nodes_under("block3")) == 32


def test_slurm_ring_is_refused_by_name() -> None:
    with pytest.raises(TopologyError, match=r"man-ring\.conf:5: RingName=: topology/ring"):
        read_slurm_conf(DATA / "slurm/man-ring.conf")


def test_slurm_real_flat_cluster() -> None:
    topo = read_slurm_conf(DATA / "slurm/puppet-cluster.conf")
    assert topo.depth == 1 and len(topo.roots) == 4
    assert len(topo.nodes_under("s0")) == 19 + 13 + 2 + 2
    assert topo.switch_of("xf11id-srv3") == "s2"


def test_slurm_real_file_with_a_node_under_two_switches() -> None:
    with pytest.raises(TopologyError) as err:
        read_slurm_conf(DATA / "slurm/superpod-overlap.conf")
    assert err.value.line == 5
    assert "node 'circe-n051' is under two switches: 's2' (line 3) and 's4'" in str(err.value)


def test_slurm_yaml_default_and_named_topologies() -> None:
    path = DATA / "slurm/man-topology.yaml"
    topo = read_slurm_yaml(path)
    assert topo.name == "topo1" and topo.nodes == ("node01", "node02", "node03", "node04")
    block = read_slurm_yaml(path, topology="topo2")
    assert block.kind == "block" and block.block_sizes == (4, 16)
    assert [s.name for s in block.roots] == ["b1..b4"]
    with pytest.raises(TopologyError, match="topo3' is flat"):
        read_slurm_yaml(path, topology="topo3")
    with pytest.raises(TopologyError, match="no topology is called 'nope'"):
        read_slurm_yaml(path, topology="nope")


def test_topograph_list_shape_capacity_blocks_are_a_level() -> None:
    topo = read_topograph(DATA / "topograph/medium.yaml")
    assert topo.depth == 4
    assert topo.path("n13-2") == ("sw3", "sw22", "sw13", "cb13")
    # medium-tree: cb10 hangs under no switch, so its nodes are not in the tree (as in topograph)
    tree = read_topograph(DATA / "topograph/medium-tree.yaml")
    assert "n10-1" not in tree and "n11-1" in tree


def test_topograph_map_shape() -> None:
    topo = read_topograph(DATA / "topograph/small-tree.yaml")
    assert topo.depth == 2
    assert topo.nodes_under("S2") == ("I21", "I22", "I25")


def test_topograph_blocks_shape() -> None:
    nvl = read_topograph(DATA / "topograph/nvl72.yaml", gpus_per_node=4)
    assert nvl.depth == 3 and len(nvl.nodes) == 72
    assert nvl.switch_of("node2105", 1) == "spine-2"
    assert nvl.gpus_of("node1101") == 4
    large = read_topograph(DATA / "topograph/large.yaml")
    assert large.nodes_under("leaf-1-1")[0] == "1101" and len(large.nodes) == 96


def test_topograph_empty_racks_and_irregular_ranges() -> None:
    topo = read_topograph(DATA / "topograph/dual-level.yaml")
    assert len(topo.switches_at(2)) == 31  # rack-1-03, rack-1-13 are empty leaves
    assert topo.nodes_under("rack-1-03") == ()
    assert topo.nodes_under("rack-1-04") == tuple(
        f"node{i:04d}" for i in (28, 29, 30, 32, 34, 35, 36)
    )
    assert len(topo.nodes_under("rack-2-15")) == 5 and len(topo.nodes) == 255
    assert topo.balanced


def test_k8s_nodes_with_levels() -> None:
    topo = read_k8s_nodes(DATA / "k8s/nodes.json", [SPINE, LEAF, "kubernetes.io/hostname"])
    assert topo.levels == (SPINE, LEAF)
    assert "control-plane-1" not in topo  # no topology labels: skipped
    assert topo.switch_of("Node305", "leaf") == "xf946c4acef2d5939"
    assert topo.switch_of("Node201", SPINE) == "S1"
    assert topo.gpus_of("Node201") == 8
    with pytest.raises(TopologyError, match=r"items\[0\]\.metadata\.labels: node 'control"):
        read_k8s_nodes(DATA / "k8s/nodes.json", [SPINE, LEAF], missing="error")


def test_k8s_same_value_under_two_parents_is_two_domains() -> None:
    from topoopt.topology import parse_k8s_nodes

    def node(name: str, block: str, rack: str) -> dict[str, object]:
        return {"metadata": {"name": name, "labels": {"b": block, "r": rack}}}

    topo = parse_k8s_nodes(
        {"items": [node("a", "b1", "r1"), node("b", "b2", "r1"), node("c", "b2", "r2")]},
        ["b", "r"],
    )
    assert topo.switch_of("a", "r") == "b1/r1" and topo.switch_of("b", "r") == "b2/r1"
    assert topo.switch_of("c", "r") == "r2"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("slurm/man-tree.conf", "slurm"),
        ("slurm/man-block.conf", "slurm"),
        ("slurm/man-topology.yaml", "slurm-yaml"),
        ("topograph/medium.yaml", "topograph"),
        ("topograph/small-tree.yaml", "topograph"),
        ("topograph/nvl72.yaml", "topograph"),
        ("k8s/nodes.json", "k8s"),
    ],
)
def test_guess_format(name: str, expected: str) -> None:
    assert guess_format(DATA / name) == expected


def test_load_topology_guesses_and_passes_options() -> None:
    topo = load_topology(DATA / "k8s/nodes.json", levels=[SPINE, LEAF])
    assert topo.depth == 2
    with pytest.raises(TopologyError, match="needs levels="):
        load_topology(DATA / "k8s/nodes.json")
    assert load_topology(DATA / "slurm/man-tree.conf", gpus_per_node=8).gpus_of("dev0") == 8
    with pytest.raises(TopologyError, match="cannot tell the topology format"):
        load_topology(DATA / "free/names.txt")
    with pytest.raises(TopologyError, match="unknown topology format"):
        load_topology(DATA / "slurm/man-tree.conf", format="pbs")


def test_free_nodes_from_hostlist_file_and_sinfo() -> None:
    assert read_free("tux[0-1],tux7") == {"tux0", "tux1", "tux7"}
    assert read_free(f"@{DATA / 'free/names.txt'}") == {"tux0", "tux1", "tux7", "tux12"}
    sinfo = DATA / "free/sinfo.txt"
    assert read_free(sinfo) == {"tux0", "tux1", "tux7"}
    assert read_free(sinfo, mixed=True) == {"tux0", "tux1", "tux2", "tux7"}
    assert read_free(sinfo, powered_off=True) == {"tux0", "tux1", "tux5", "tux7"}
