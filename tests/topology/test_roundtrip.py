"""Writers: generated trees -> write -> read -> equal (topology.conf and JSON)."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from topoopt.topology import (
    Switch,
    Topology,
    load_topology,
    parse_slurm_conf,
    topology_from_dict,
    topology_to_dict,
    write_slurm_conf,
    write_topology,
)

DATA = Path(__file__).parent / "data"

# node names: realistic prefixes, numbers with or without zero padding, several bracket
# dimensions (r1n01), dots and dashes (ip-10-0-1-5.ec2)
PREFIXES = st.sampled_from(["n", "tux", "gpu-", "r1n", "r2n", "ip-10-0-", "node", "x.a"])


@st.composite
def node_names(draw: st.DrawFn, count: int) -> list[str]:
    names: set[str] = set()
    while len(names) < count:
        prefix = draw(PREFIXES)
        width = draw(st.sampled_from([0, 2, 3]))
        number = draw(st.integers(0, 120))
        suffix = draw(st.sampled_from(["", "", ".ec2", "-ib"]))
        names.add(f"{prefix}{number:0{width}d}{suffix}" if width else f"{prefix}{number}{suffix}")
    return sorted(names)


@st.composite
def trees(draw: st.DrawFn, *, link_speeds: bool = True) -> Topology:
    depth = draw(st.integers(1, 3))
    fan = [draw(st.integers(1, 3)) for _ in range(depth)]
    counter = itertools.count()
    leaves = 0
    shapes: list[list[int]] = []

    def count(d: int) -> int:
        return fan[d] if d == 0 else fan[d] * count(d - 1)

    leaves = count(depth - 1)
    sizes = [draw(st.integers(1, 4)) for _ in range(leaves)]
    names = iter(draw(node_names(sum(sizes))))
    size_iter = iter(sizes)
    del shapes

    def make(d: int) -> Switch:
        name = f"{draw(st.sampled_from(['s', 'sw', 'leaf-', 'spine']))}{next(counter)}"
        speed = draw(st.none() | st.integers(1, 4000)) if link_speeds else None
        if d == depth - 1:
            nodes = tuple(next(names) for _ in range(next(size_iter)))
            return Switch(name, nodes=nodes, link_speed=speed)
        children = tuple(make(d + 1) for _ in range(fan[d + 1]))
        return Switch(name, children=children, link_speed=speed)

    roots = tuple(make(0) for _ in range(fan[0]))
    return Topology(roots)


@given(trees())
def test_topology_conf_round_trip(topo: Topology) -> None:
    text = write_slurm_conf(topo)
    assert parse_slurm_conf(text) == topo


@given(trees(), st.booleans(), st.none() | st.integers(0, 8))
def test_json_round_trip(topo: Topology, named: bool, default_gpus: int | None) -> None:
    from dataclasses import replace

    levels = tuple(f"level{d}" for d in range(topo.depth)) if named else ()
    gpus = {n: i % 9 for i, n in enumerate(topo.nodes[::2])}
    topo = replace(topo, level_names=levels, gpus=gpus, default_gpus=default_gpus, name="t")
    assert topology_from_dict(topology_to_dict(topo)) == topo


@given(st.lists(st.integers(1, 6), min_size=1, max_size=9), st.integers(0, 2))
def test_block_round_trip(sizes: list[int], levels: int) -> None:
    names = iter(f"node{i:03d}" for i in range(1000))
    base = min(sizes)
    text = "".join(
        f"BlockName=b{k} Nodes={','.join(next(names) for _ in range(n))}\n"
        for k, n in enumerate(sizes, 1)
    )
    text += "BlockSizes=" + ",".join(str(base * 2**i) for i in range(levels + 1)) + "\n"
    topo = parse_slurm_conf(text)
    assert topo.depth == levels + 1
    assert parse_slurm_conf(write_slurm_conf(topo)) == topo
    assert topology_from_dict(topology_to_dict(topo)) == topo


def test_parallel_spines_round_trip() -> None:
    topo = load_topology(DATA / "slurm/topology-guide-ex2.conf")
    text = write_slurm_conf(topo)
    assert text.count("Switches=s[0-3]") == 4
    assert parse_slurm_conf(text) == topo


def test_real_files_round_trip(tmp_path: Path) -> None:
    for name in ("slurm/man-tree.conf", "topograph/dual-level.yaml", "topograph/nvl72.yaml"):
        topo = load_topology(DATA / name)
        out = tmp_path / "t.json"
        write_topology(topo, out)
        assert load_topology(out) == topo
    # dual-level has empty racks, which topology.conf cannot express: only nonempty ones;
    # nor level names (topograph's label keys)
    topo = load_topology(DATA / "topograph/nvl72.yaml")
    assert parse_slurm_conf(write_slurm_conf(topo)) == dataclasses.replace(topo, level_names=())
