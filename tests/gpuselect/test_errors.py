"""Bad input gives a clear error naming what is wrong."""

from __future__ import annotations

import json

import pytest

import topoopt
from topoopt.core.errors import InvalidInstanceError
from topoopt.gpuselect import MissingEntryError
from topoopt.gpuselect.loaders import INTRA_HEADER

TOPO = {"model": "topology", "inter_gbps": 12.5}

HEADER = ",".join(INTRA_HEADER) + "\n"
"""The nccl-tests per-host header (the columns by name: no line of the measured files)."""


def _inst(**changes):
    data = {
        "family": "gpuselect",
        "format_version": 1,
        "name": "bad",
        "k": 2,
        "hosts": [
            {"name": "n0", "type": "V100", "gpus": 8, "available": [0, 1, 2]},
            {"name": "n1", "type": "V100", "gpus": 8, "available": [3]},
        ],
        "bandwidth": TOPO,
    }
    data.update(changes)
    return data


def test_k_larger_than_pool() -> None:
    with pytest.raises(InvalidInstanceError, match="k: requests 5 GPUs but only 4"):
        topoopt.load(_inst(k=5))


def test_unknown_gpu_index() -> None:
    hosts = [{"name": "n0", "type": "V100", "gpus": 8, "available": [0, 9]}]
    with pytest.raises(
        InvalidInstanceError,
        match=r"hosts\[0\].available\[1\]: unknown GPU "
        r"index 9",
    ):
        topoopt.load(_inst(hosts=hosts))


def test_duplicate_host_names() -> None:
    hosts = [{"name": "n0", "type": "V100", "gpus": 8}, {"name": "n0", "type": "V100", "gpus": 8}]
    with pytest.raises(InvalidInstanceError, match=r"hosts\[1\]: duplicate name 'n0'"):
        topoopt.load(_inst(hosts=hosts))


def test_missing_field_and_type_table() -> None:
    with pytest.raises(InvalidInstanceError, match="k: missing required field"):
        topoopt.load({key: v for key, v in _inst().items() if key != "k"})
    bad = {"model": "bottleneck", "inter_gbps": 1.0, "intra": {"A800": {"01": 1.0}}}
    with pytest.raises(InvalidInstanceError, match="no table for host type 'V100'"):
        topoopt.load(_inst(bandwidth=bad))


def test_table_missing_a_subset_the_solver_needs() -> None:
    intra = {"V100": {"01": 5.0, "02": 6.0, "12": 7.0, "0": 0, "1": 0, "2": 0, "3": 0}}
    inst = topoopt.load(
        _inst(k=3, bandwidth={"model": "bottleneck", "inter_gbps": 9.0, "intra": intra})
    )
    # PTS starts from all four idle GPUs: {0,1,2} on n0 has no entry
    with pytest.raises(MissingEntryError, match="host type 'V100' has no entry for GPUs '012'"):
        topoopt.solve(inst, "gpuselect/pts")
    with pytest.raises(MissingEntryError, match="'012'"):
        topoopt.solve(inst, "gpuselect/enumerate")
    with pytest.raises(MissingEntryError, match="'012'"):
        topoopt.solve(inst, "gpuselect/mip")


def test_cross_table_missing_profile(tmp_path) -> None:
    intra = {"V100": {"01": 5.0, "02": 6.0, "12": 7.0, "012": 3.0}}
    cross = [{"counts": [2, 1], "gbps": 4.0}]
    inst = topoopt.load(_inst(k=2, bandwidth={"model": "table", "intra": intra, "cross": cross}))
    with pytest.raises(MissingEntryError, match=r"per-host GPU counts \(1, 1\)"):
        topoopt.solve(inst, "gpuselect/enumerate")
    no_cross = topoopt.load(_inst(k=4, bandwidth={"model": "table", "intra": intra}))
    with pytest.raises(MissingEntryError, match="no cross-host table"):
        topoopt.solve(no_cross, "gpuselect/hybrid")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("OP,GPU_num,Bandwidth(GB/s)\nx,2,1.0\n", "missing \\['GPU_used'\\]"),
        (
            HEADER + "x,2,012,1,3.0\n",
            "t.csv:2: GPU_num/GPU_used: GPU list '012' has 3 GPUs but GPU_num says 2",
        ),
        (
            HEADER + "x,2,01,1,fast\n",
            "t.csv:2: Bandwidth\\(GB/s\\) 'fast' is not a number",
        ),
        (HEADER + "x,2,0a,1,3\n", "not digits"),
        (HEADER, "no data rows"),
    ],
)
def test_malformed_csv(tmp_path, text: str, message: str) -> None:
    (tmp_path / "t.csv").write_text(text)
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(_inst(bandwidth={"model": "table", "intra": {"V100": "t.csv"}})))
    with pytest.raises(InvalidInstanceError, match=message):
        topoopt.load(path)


def test_missing_csv_file(tmp_path) -> None:
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(_inst(bandwidth={"model": "table", "intra": {"V100": "no.csv"}})))
    with pytest.raises(InvalidInstanceError, match=r"bandwidth\.intra\.V100: cannot read"):
        topoopt.load(path)


def test_malformed_topology() -> None:
    bad = {"model": "topology", "inter_gbps": 1.0, "topology": {"V100": "GPU0 X NV1\nGPU1 PIX X"}}
    with pytest.raises(InvalidInstanceError, match="not symmetric"):
        topoopt.load(_inst(bandwidth=bad))
