"""The Topology type: levels, lookups, subtrees and the free-node groups for placement."""

from __future__ import annotations

from pathlib import Path

import pytest

from topoopt.topology import Switch, Topology, TopologyError, load_topology, read_free

DATA = Path(__file__).parent / "data"


def guide() -> Topology:
    return load_topology(DATA / "slurm/topology-guide-ex1.conf")


def test_levels_by_depth_negative_and_name() -> None:
    topo = guide()
    assert topo.level(-1) == 2 and topo.level("1") == 1
    with pytest.raises(TopologyError, match="out of range: the topology has 3 levels"):
        topo.level(3)
    with pytest.raises(TopologyError, match="unknown level 'rack'"):
        topo.level("rack")
    k8s = load_topology(
        DATA / "k8s/nodes.json",
        levels=["network.topology.nvidia.com/spine", "network.topology.nvidia.com/leaf"],
    )
    assert k8s.level("leaf") == 1 and k8s.level("network.topology.nvidia.com/spine") == 0


def test_free_groups_at_every_level() -> None:
    topo = guide()
    free = read_free("tux[0,2-3,6]")
    top = topo.free_groups(0, free)
    assert [(g.name, g.leaves) for g in top] == [
        ("s6", (("s4", ("tux0", "tux2", "tux3")), ("s5", ("tux6",))))
    ]
    middle = topo.free_groups(1, free)
    assert [(g.name, g.free_nodes) for g in middle] == [("s4", 3), ("s5", 1)]
    assert middle[1].leaves == (("s2", ()), ("s3", ("tux6",)))
    assert [g.leaves for g in topo.free_groups(1, free, drop_empty=True)][1] == (("s3", ("tux6",)),)
    leaves = topo.free_groups(-1, free, drop_empty=True)
    assert [(g.name, g.leaves) for g in leaves] == [
        ("s0", (("s0", ("tux0",)),)),
        ("s1", (("s1", ("tux2", "tux3")),)),
        ("s3", (("s3", ("tux6",)),)),
    ]


def test_free_groups_unknown_nodes() -> None:
    topo = guide()
    with pytest.raises(TopologyError, match="1 free node"):
        topo.free_groups(0, {"tux0", "login1"})
    groups = topo.free_groups(0, {"tux0", "login1"}, unknown="ignore")
    assert groups[0].node_names() == ("tux0",)


def test_free_groups_fit_placement_minipods() -> None:
    from topoopt.placement.instance import Minipod

    topo = load_topology(DATA / "topograph/nvl72.yaml")
    free = set(topo.nodes[::3])
    pods = [Minipod.from_leaves(g.name, g.leaves) for g in topo.free_groups("1", free)]
    assert sum(p.free_nodes for p in pods) == len(free)


def test_subtree_cut_restricted() -> None:
    topo = load_topology(
        DATA / "k8s/nodes.json",
        levels=["network.topology.nvidia.com/spine", "network.topology.nvidia.com/leaf"],
    )
    sub = topo.subtree("S2")
    assert sub.depth == 1 and sub.levels == ("network.topology.nvidia.com/leaf",)
    assert sub.gpus_of("Node201") == 8 and "Node304" not in sub
    cut = guide().cut(1)
    assert cut.depth == 2 and cut.switch("s4").nodes == ("tux0", "tux1", "tux2", "tux3")
    small = guide().restricted({"tux0", "tux7"})
    assert small.nodes == ("tux0", "tux7") and small.depth == 3


def test_unbalanced_tree() -> None:
    topo = Topology(
        (
            Switch(
                "top",
                children=(
                    Switch("a", nodes=("n1",)),
                    Switch("mid", children=(Switch("b", nodes=("n2",)),)),
                ),
            ),
        )
    )
    assert not topo.balanced and topo.depth == 3
    assert topo.switch_of("n1", 2) is None and topo.switch_of("n2", 2) == "b"
    assert [g.name for g in topo.free_groups(1, {"n1", "n2"})] == ["a", "mid"]


def test_equality_ignores_input_order() -> None:
    a = Topology((Switch("s1", nodes=("n2", "n10")), Switch("s0", nodes=("n1",))))
    b = Topology((Switch("s0", nodes=("n1",)), Switch("s1", nodes=("n10", "n2"))))
    assert a == b and a.nodes == ("n1", "n2", "n10")
