"""A GPU pool from a real cluster (issue #15): hostlists of hosts and idle GPUs, nccl-tests
tables and ``nvidia-smi topo -m`` files -> a gpuselect instance -> CUDA_VISIBLE_DEVICES.

The example topology files of ``examples/gpuselect`` are written by hand in the layout
``nvidia-smi topo -m`` prints (tabs, NIC rows, affinity columns, legend); the measured tables
and Appendix E matrices are read from ``../shared/data/hosts`` (skipped when absent).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.errors import InvalidInstanceError
from topoopt.gpuselect import BottleneckModel, GpuSelectInstance, Host, TableModel
from topoopt.gpuselect.loaders import read_intra_csv, read_topology
from topoopt.gpuselect.pool import (
    devices_lines,
    format_idle,
    from_cluster,
    parse_idle,
    parse_scontrol_nodes,
    visible_devices,
)
from topoopt.gpuselect.topologies import builtin_topology

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gpuselect"
EIGHT = {"n01": 8, "n02": 8, "n03": 8, "n10": 4}


# --------------------------------------------------------------------------- idle expressions


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("n[01-02]:0-3", {"n01": (0, 1, 2, 3), "n02": (0, 1, 2, 3)}),
        ("n01:0,3,n02:5-7", {"n01": (0, 3), "n02": (5, 6, 7)}),
        ("n01:[0-1,6] n03", {"n01": (0, 1, 6), "n03": tuple(range(8))}),
        ("n01:1;n01:0", {"n01": (0, 1)}),  # a host named twice: the union
        ("n10", {"n10": (0, 1, 2, 3)}),  # every GPU of the host
        ("n03:7,n[01-02]:0", {"n01": (0,), "n02": (0,), "n03": (7,)}),
    ],
)
def test_idle_expressions(spec: str, expected: dict[str, tuple[int, ...]]) -> None:
    idle = parse_idle(spec, EIGHT)
    assert list(idle) == list(EIGHT)  # every host, in pool order
    assert {h: g for h, g in idle.items() if g} == expected


def test_idle_from_a_file_and_a_mapping(tmp_path: Path) -> None:
    spec = tmp_path / "idle.txt"
    spec.write_text("# idle GPUs\nn01:0-3   # half\n\nn10\n")
    from_file = parse_idle(f"@{spec}", EIGHT)
    assert from_file == parse_idle("n01:0-3,n10", EIGHT)
    assert from_file == parse_idle({"n01": range(4), "n10": None}, EIGHT)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("n04:0", "idle: 'n04:0': host 'n04' is not in the pool (hosts: n[01-03,10])"),
        ("n01:8", "idle: 'n01:8': GPU 8 out of range: host 'n01' has GPUs 0..7"),
        ("n[01-10]:0", "host 'n04' is not in the pool"),
        ("n10:0-4", "GPU 4 out of range: host 'n10' has GPUs 0..3"),
        ("3", "idle: '3' is a GPU list without a host (write HOST:GPUS, e.g. n1:3)"),
        ("n01,3", "'3' is a GPU list without a host"),
        ("n01:3-1", "reversed GPU range 3-1"),
        ("n01:x", "GPUs must be indices and ranges (0-3,6), got 'x'"),
        ("n01:", "write HOSTS:GPUS"),
        (":1", "write HOSTS:GPUS"),
        ("n[01-02:0", "unclosed '['"),
        (" , ;", "names no host"),
        ("n01:99", "GPU 99 out of range (at most 16)"),
        ("n[02-01]:0", "idle:"),
    ],
)
def test_idle_errors_name_the_field_and_rule(spec: str, message: str) -> None:
    with pytest.raises(InvalidInstanceError, match=r"^idle: ") as info:
        parse_idle(spec, EIGHT)
    assert message in str(info.value)


def test_idle_mapping_errors() -> None:
    with pytest.raises(InvalidInstanceError, match=r"^idle: 'zz': host 'zz' is not in the pool"):
        parse_idle({"zz": None}, EIGHT)
    with pytest.raises(InvalidInstanceError, match="GPU 9 out of range"):
        parse_idle({"n01": [9]}, EIGHT)
    with pytest.raises(InvalidInstanceError, match=r"^idle\.n01\[0\]: must be non-negative"):
        parse_idle({"n01": [-1]}, EIGHT)


# --------------------------------------------------------------------------- pools


def example_pool(k: int = 12) -> GpuSelectInstance:
    return from_cluster(
        "gpu[01-04],ws[01-02]",
        topologies={
            "gpu[01-04]": EXAMPLE / "dgx-a100.txt",
            "ws[01-02]": str(EXAMPLE / "pcie-4gpu.txt"),
        },
        idle=f"@{EXAMPLE / 'idle.txt'}",
        k=k,
        inter_gbps=25.0,
        name="example",
    )


def test_per_host_topology_files_give_types_and_gpus() -> None:
    inst = example_pool()
    assert [(h.name, h.type, h.gpus) for h in inst.hosts] == [
        ("gpu01", "dgx-a100", 8),
        ("gpu02", "dgx-a100", 8),
        ("gpu03", "dgx-a100", 8),
        ("gpu04", "dgx-a100", 8),
        ("ws01", "pcie-4gpu", 4),
        ("ws02", "pcie-4gpu", 4),
    ]
    assert [h.available for h in inst.hosts] == [
        tuple(range(8)),
        tuple(range(8)),
        (2, 3, 4, 5),
        (0, 1, 6),
        (0, 1, 2, 3),
        (0, 2),
    ]
    assert inst.bandwidth.kind == "topology"
    assert inst.bandwidth.topology["dgx-a100"] == read_topology(EXAMPLE / "dgx-a100.txt")
    assert topoopt.load(inst.to_dict()) == inst


def test_the_exact_selection_and_its_devices() -> None:
    inst = example_pool(k=12)
    result = topoopt.solve(inst, "gpuselect/auto")
    assert result.is_ok
    exact = topoopt.solve(inst, "gpuselect/mip")
    assert result.objective == pytest.approx(exact.objective)
    devices = visible_devices(result)
    assert sum(len(d.split(",")) for d in devices.values()) == 12
    for host, listed in devices.items():
        idle = next(h for h in inst.hosts if h.name == host).available
        assert {int(i) for i in listed.split(",")} <= set(idle)
    assert devices_lines(result) == [f"{h} CUDA_VISIBLE_DEVICES={d}" for h, d in devices.items()]
    assert f"CUDA_VISIBLE_DEVICES={next(iter(devices.values()))}" in topoopt.get_family(
        "gpuselect"
    ).describe(inst, result.solution)


@pytest.mark.usefixtures("host_topologies")
def test_declared_types_and_builtin_topologies() -> None:
    inst = from_cluster({"a[1-2]": "V100", "b1": "A6000"}, k=3, inter_gbps=12.5)
    assert [(h.name, h.type, h.gpus, h.n_available) for h in inst.hosts] == [
        ("a1", "V100", 8, 8),
        ("a2", "V100", 8, 8),
        ("b1", "A6000", 8, 8),
    ]
    one = from_cluster(["solo"], host_type="4090", k=2, idle="solo:4,5,6")
    assert one.hosts[0].available == (4, 5, 6) and one.bandwidth.inter_gbps == 0.0


def test_type_topology_by_type_name(tmp_path: Path) -> None:
    inst = from_cluster(
        "n[1-3]", host_type="ws", topologies={"ws": EXAMPLE / "pcie-4gpu.txt"}, k=2, inter_gbps=5
    )
    assert {h.gpus for h in inst.hosts} == {4}
    assert inst.bandwidth.topology == {"ws": read_topology(EXAMPLE / "pcie-4gpu.txt")}


def test_tables_by_type_make_a_bottleneck_or_table_model() -> None:
    table = {"01": 40.0, "0": 0.0, "1": 0.0}
    inst = from_cluster("h[1-2]", host_type="T", tables={"T": table}, k=3, inter_gbps=10)
    assert inst.bandwidth == BottleneckModel(intra={"T": table}, inter_gbps=10)
    assert [h.gpus for h in inst.hosts] == [2, 2]  # from the table
    crossed = from_cluster("h[1-2]", host_type="T", tables={"T": table}, cross={(2, 1): 15.0}, k=3)
    assert crossed.bandwidth == TableModel(intra={"T": table}, cross={(2, 1): 15.0})
    single = from_cluster("h1", host_type="T", tables={"T": table}, k=2)
    assert isinstance(single.bandwidth, TableModel) and single.bandwidth.cross is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"hosts": {"h1": "T", "v[1-2]": "V100"}, "tables": {"T": {"0": 0.0}}, "inter_gbps": 5},
            "tables: no bandwidth table for host type 'V100' (hosts v[1-2]); tables are given "
            "for 'T'",
        ),
        ({"hosts": "h[1-2]", "host_type": "V100"}, "inter_gbps: the topology model of a pool"),
        (
            {"hosts": "h[1-2]", "host_type": "T", "tables": {"T": {"0": 0.0}}},
            "inter_gbps: a pool of several hosts needs the inter-host link",
        ),
        ({"hosts": "h[1-2]"}, "hosts: host 'h1' has no type"),
        ({"hosts": "h[1-2", "host_type": "T"}, "hosts: hostlist 'h[1-2'"),
        ({"hosts": ["h1", "h1"], "host_type": "V100"}, "hosts: host 'h1' is listed twice"),
        (
            {"hosts": "h1", "host_type": "V100", "topologies": {"zz": "GPU0 X"}},
            "topologies.zz: host 'zz' is not in the pool and 'zz' is not a host type",
        ),
        (
            {
                "hosts": "h[1-2]",
                "host_type": "X",
                "inter_gbps": 1,
                "topologies": {"h1": EXAMPLE / "pcie-4gpu.txt", "h2": EXAMPLE / "dgx-a100.txt"},
            },
            "topologies.h2: hosts 'h1' and 'h2' are both of type 'X' but their topologies differ",
        ),
        (
            {"hosts": "h1", "host_type": "V100", "tables": {"V100": {}}, "topologies": {}},
            "topologies: give nccl-tests tables or topology matrices for a pool, not both",
        ),
        ({"hosts": "h1", "host_type": "V100", "gpus": {"h9": 4}}, "gpus: host 'h9'"),
        ({"hosts": "h1", "host_type": "V100", "idle": "h1:0", "k": 2}, "k: requests 2 GPUs"),
        (
            {"hosts": "h1", "host_type": "V100", "tables": {"V100": "no/such.csv"}},
            "tables.V100",
        ),
    ],
)
def test_pool_errors_name_the_field_and_rule(kwargs: dict, message: str) -> None:
    kwargs.setdefault("k", 1)
    with pytest.raises(InvalidInstanceError) as info:
        from_cluster(**kwargs)
    assert message in str(info.value)


def test_same_stem_different_matrices_get_distinct_types(tmp_path: Path) -> None:
    for folder, source in (("a", "pcie-4gpu.txt"), ("b", "dgx-a100.txt")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "topo.txt").write_text((EXAMPLE / source).read_text())
    inst = from_cluster(
        "h[1-3]",
        topologies={"h[1-2]": tmp_path / "a" / "topo.txt", "h3": tmp_path / "b" / "topo.txt"},
        k=2,
        inter_gbps=1,
    )
    assert [h.type for h in inst.hosts] == ["topo", "topo", "topo-2"]


def test_visible_devices_of_pairs_and_selections() -> None:
    assert visible_devices([("b", 3), ("a", 0), ("b", 1)]) == {"b": "1,3", "a": "0"}
    assert visible_devices([["n0", 2]]) == {"n0": "2"}
    assert devices_lines([]) == []


# --------------------------------------------------------------------------- measured inputs


def test_measured_tables_by_hostlist(shared_data: Path) -> None:
    """The H100 tables of the BandPilot artifact (two hosts measured, averaged) on a pool of
    four H100 hosts with a mixed idle list: the same instance as built by hand."""
    hosts_dir = shared_data / "hosts"
    csvs = [
        hosts_dir / "H100_node26_allreduce_16MiB.csv",
        hosts_dir / "H100_node27_allreduce_16MiB.csv",
    ]
    inst = from_cluster(
        "node[26-29]",
        host_type="H100",
        tables={"H100": [str(p) for p in csvs]},
        idle="node[26-27]:0-5,node28:2,4,6,node29",
        k=10,
        inter_gbps=50.0,
        gpus_per_nic=4,
    )
    by_hand = GpuSelectInstance(
        "pool",
        10,
        [
            Host("node26", "H100", 8, range(6)),
            Host("node27", "H100", 8, range(6)),
            Host("node28", "H100", 8, [2, 4, 6]),
            Host("node29", "H100", 8),
        ],
        BottleneckModel(
            intra={"H100": [read_intra_csv(p) for p in csvs]}, inter_gbps=50.0, gpus_per_nic=4
        ),
    )
    assert inst == by_hand
    oracle = topoopt.solve(inst, "gpuselect/enumerate")
    result = topoopt.solve(inst, "gpuselect/auto")
    assert result.objective == pytest.approx(oracle.objective)
    devices = visible_devices(result)
    assert sum(len(d.split(",")) for d in devices.values()) == 10


def test_measured_tables_by_data_name(shared_data: Path) -> None:
    inst = from_cluster(
        {"v[1-2]": "V100", "a1": "A6000"},
        tables={
            "V100": "data:hosts/V100_bandwidth_16MiB.csv",
            "A6000": "data:hosts/A6000_bandwidth_16MiB.csv",
        },
        idle="v1:0-3,v2:4-7,a1:0,1",
        k=5,
        inter_gbps=12.5,
    )
    assert [h.gpus for h in inst.hosts] == [8, 8, 8]
    assert topoopt.solve(inst, "gpuselect/auto").is_ok


@pytest.mark.parametrize("host_type", ["4090", "A6000", "A800", "H100", "V100"])
def test_artifact_topology_files_per_host(shared_data: Path, host_type: str) -> None:
    """The artifact's ``nvidia-smi topo -m`` tables as per-host files: the host type is named
    after the file and the matrix is the paper's Appendix E one."""
    topo = shared_data / "hosts" / f"{host_type}_topo.md"
    inst = from_cluster("h[1-2]", topologies={"h[1-2]": topo}, k=9, inter_gbps=12.5)
    assert {h.type for h in inst.hosts} == {f"{host_type}_topo"}
    assert inst.bandwidth.topology[f"{host_type}_topo"] == builtin_topology(host_type)
    assert topoopt.solve(inst, "gpuselect/auto").is_ok


# --------------------------------------------------------------------------- round trip

_NAMES = st.builds(
    lambda prefix, number, width: f"{prefix}{number:0{width}d}",
    st.sampled_from(["n", "gpu", "r1n", "dgx-a"]),
    st.integers(0, 120),
    st.integers(1, 3),
)


@st.composite
def idle_pools(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, tuple[int, ...]]]:
    names = draw(st.lists(_NAMES, min_size=1, max_size=12, unique=True))
    gpus = {name: draw(st.integers(1, 16)) for name in names}
    idle = {
        name: tuple(sorted(draw(st.sets(st.integers(0, count - 1), max_size=count))))
        for name, count in gpus.items()
    }
    return gpus, idle


@settings(max_examples=300, deadline=None)
@given(idle_pools(), st.booleans())
def test_format_idle_round_trips(pool: tuple[dict, dict], whole_hosts: bool) -> None:
    gpus, idle = pool
    assume(any(idle.values()))
    text = format_idle(idle, gpus if whole_hosts else None)
    assert parse_idle(text, gpus) == idle


# --------------------------------------------------------------------------- scontrol

SCONTROL = EXAMPLE / "scontrol.txt"  # scontrol show node -d layout (Slurm 23.02), hand-written


def test_scontrol_multi_line_records() -> None:
    nodes = parse_scontrol_nodes(SCONTROL.read_text(), str(SCONTROL))
    assert nodes.types == dict.fromkeys(["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"], "a100")
    assert set(nodes.gpus.values()) == {8}  # cpu01 has no GPU: left out
    assert nodes.idle == {
        "gpu01": (2, 3, 4, 5, 6, 7),  # MIXED, IDX:0-1 held
        "gpu02": (3, 4, 6),  # MIXED, IDX:0-2,5,7 held
        "gpu03": tuple(range(8)),  # IDLE
        "gpu04": (),  # ALLOCATED
        "gpu05": (),  # IDLE+DRAIN
    }
    typed = parse_scontrol_nodes(SCONTROL.read_text(), host_type="dgx")
    assert set(typed.types.values()) == {"dgx"}


def test_scontrol_one_line_records_into_a_pool() -> None:
    text = (
        "NodeName=n1 CPUAlloc=8 Gres=gpu:4(S:0) GresUsed=gpu:1(IDX:3) State=MIXED Partitions=a\n"
        "NodeName=n2 Gres=gpu:4 GresUsed=gpu:0(IDX:N/A) State=IDLE Reason=(null)\n"
        "NodeName=n3 Gres=gpu:4 GresUsed=gpu:0 State=DOWN* Reason=Not responding\n"
    )
    nodes = parse_scontrol_nodes(text)
    assert nodes.types == {"n1": "gpu", "n2": "gpu", "n3": "gpu"}
    assert nodes.idle == {"n1": (0, 1, 2), "n2": (0, 1, 2, 3), "n3": ()}
    pool = from_cluster(
        nodes.types,
        gpus=nodes.gpus,
        idle=nodes.idle,
        topologies={"gpu": EXAMPLE / "pcie-4gpu.txt"},
        k=4,
        inter_gbps=10,
    )
    assert [h.available for h in pool.hosts] == [(0, 1, 2), (0, 1, 2, 3), ()]
    assert visible_devices(topoopt.solve(pool, "gpuselect/auto")) == {"n2": "0,1,2,3"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "NodeName=a Gres=gpu:a100:8 GresUsed=gpu:a100:2 State=MIXED",
            "<scontrol>:1: GresUsed of node 'a' does not say which GPUs are used (no IDX): run "
            "scontrol show node -d",
        ),
        (
            "NodeName=a Gres=gpu:a100:4(S:0),gpu:v100:4(S:1) State=IDLE",
            "several GPU entries on one node",
        ),
        (
            "NodeName=a Gres=gpu:a100:4 GresUsed=gpu:a100:1(IDX:6) State=MIXED",
            "node 'a' uses GPU 6 but has GPUs 0..3",
        ),
        ("NodeName=a Gres=(null) State=IDLE", "<scontrol>: no node with GPUs"),
        ("State=IDLE\nNodeName=a", "<scontrol>:1: expected a NodeName= record first"),
        ("NodeName=a Gres=gpu:x:y State=IDLE", "'gpu:x:y' is not gpu[:TYPE]:COUNT"),
        ("NodeName=a Gres=gpu:1\nNodeName=a Gres=gpu:1", "<scontrol>:2: node 'a' is listed twice"),
    ],
)
def test_scontrol_errors_name_the_line_and_rule(text: str, message: str) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        parse_scontrol_nodes(text)
    assert message in str(info.value)
