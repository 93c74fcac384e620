"""Placement instances built from real topologies (topoopt.placement.cluster.from_topology)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from tests.topology.test_roundtrip import trees
from topoopt.core.errors import InvalidInstanceError
from topoopt.placement.cluster import from_topology
from topoopt.topology import TopologyError, load_topology, parse_slurm_conf, read_free

DATA = Path(__file__).parents[1] / "topology" / "data"


def test_slurm_topology_guide_example() -> None:
    """Slurm's Topology Guide example 1 (tests/topology/data: SchedMD/slurm
    doc/html/topology.shtml): the middle switches s4 and s5 become the minipods."""
    topo = load_topology(DATA / "slurm" / "topology-guide-ex1.conf")
    free = read_free("tux[0-1,3-6]")
    inst = from_topology(topo, level=-2, free=free, dp=4, tp=8, pp=1, alpha=0.5)
    assert [(m.name, m.free_nodes) for m in inst.minipods] == [("s4", 3), ("s5", 3)]
    assert inst.minipods[0].leaves[1].nodes == ("tux3",)
    result = topoopt.solve(inst, "placement/exact-mip")
    order = result.to_dict()["solution"]["rank_order"]
    assert len(order) == inst.n_nodes and len(set(order)) == inst.n_nodes
    assert set(order) <= free


def test_empty_switches_are_left_out_and_labels_name_the_level() -> None:
    topo = parse_slurm_conf(
        "SwitchName=a Nodes=n[0-1]\nSwitchName=b Nodes=n[2-3]\nSwitchName=top Switches=a,b\n"
    )
    inst = from_topology(topo, level=-1, free={"n2", "n3"}, dp=2, tp=8, pp=1, alpha=0.3)
    assert [m.name for m in inst.minipods] == ["b"]
    assert inst.labels == {"topology": "cluster", "level": "-1"}


def test_unknown_free_node_is_an_error_unless_ignored() -> None:
    topo = parse_slurm_conf("SwitchName=a Nodes=n[0-3]\n")
    with pytest.raises(TopologyError, match="not in the topology"):
        from_topology(topo, level=0, free={"n0", "x9"}, dp=1, tp=8, pp=1, alpha=0.5)
    inst = from_topology(
        topo, level=0, free={"n0", "x9"}, dp=1, tp=8, pp=1, alpha=0.5, unknown="ignore"
    )
    assert inst.total_free == 1


def test_job_larger_than_the_free_nodes_names_the_field() -> None:
    topo = parse_slurm_conf("SwitchName=a Nodes=n[0-3]\n")
    with pytest.raises(InvalidInstanceError, match="job"):
        from_topology(topo, level=0, free={"n0"}, dp=2, tp=8, pp=1, alpha=0.5)


def test_mixed_gpu_counts_are_refused() -> None:
    topo = topoopt.topology.topology_from_dict(
        {
            "format": "topoopt-topology",
            "format_version": 1,
            "switches": [{"name": "a", "nodes": ["n0", "n1"]}],
            "gpus": {"n0": 8, "n1": 4},
        }
    )
    with pytest.raises(InvalidInstanceError, match="gpus_per_node"):
        from_topology(topo, level=0, free={"n0", "n1"}, dp=1, tp=4, pp=1, alpha=0.5)


@settings(max_examples=50, deadline=None)
@given(topo=trees(), data=st.data())
def test_every_free_node_lands_in_exactly_one_minipod(topo, data) -> None:
    nodes = sorted(topo.nodes)
    free = data.draw(st.sets(st.sampled_from(nodes), min_size=1))
    level = data.draw(st.integers(0, topo.depth - 1))
    inst = from_topology(topo, level=level, free=free, dp=1, tp=8, pp=1, alpha=0.5)
    names = [n for m in inst.minipods for n in m.node_names()]
    assert sorted(names) == sorted(free)
    for m in inst.minipods:
        assert {topo.switch_of(n, level) for n in m.node_names()} == {m.name}


def test_slurm_block_needs_a_block_topology_and_its_base_blocks_as_leaves() -> None:
    """``block`` on a tree topology, or with the base blocks as the minipods, is refused
    naming the constraint and why (it used to say that ``topology.block_sizes`` was missing,
    although the file gave BlockSizes)."""
    tree = parse_slurm_conf("SwitchName=l0 Nodes=n[0-3]\nSwitchName=l1 Nodes=n[4-7]\n"
                            "SwitchName=top Switches=l[0-1]\n")  # fmt: skip
    blocks = parse_slurm_conf(
        "BlockName=b0 Nodes=n[0-3]\nBlockName=b1 Nodes=n[4-7]\nBlockSizes=4,8\n"
    )
    job = {"dp": 2, "tp": 8, "pp": 2, "alpha": 0.5, "constraints": {"block": True}}
    with pytest.raises(InvalidInstanceError, match=r"constraints.block: .*a 'tree' topology"):
        from_topology(tree, level=0, free={f"n{i}" for i in range(8)}, **job)
    with pytest.raises(InvalidInstanceError, match=r"constraints.block: .*minipods are level"):
        from_topology(blocks, level=-1, free={f"n{i}" for i in range(8)}, **job)
    placed = from_topology(blocks, level=0, free={f"n{i}" for i in range(8)}, **job)
    assert placed.block_sizes == (4, 8)
