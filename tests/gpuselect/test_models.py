"""Bandwidth models, loaders and JSON round trips."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import small_instances

import topoopt
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.gpuselect import GpuSelectInstance, Host, TableModel, model_from_dict
from topoopt.gpuselect.generate import MODEL_KINDS, examples
from topoopt.gpuselect.loaders import (
    CROSS_HEADER,
    INTRA_HEADER,
    parse_cross_csv,
    parse_intra_csv,
    parse_topology,
)
from topoopt.gpuselect.topologies import APPENDIX_E_TYPES, builtin_topology

INTRA = (
    ",".join(INTRA_HEADER)
    + """
ag,2,01,1048576,40.0
ag,2,02,1048576,10.0
ag,2,12,1048576,20.0
ag,3,012,1048576,9.0
"""
)

CROSS = (
    ",".join(CROSS_HEADER)
    + """
ag,2,"[[0],[1]]",1048576,30.0
ag,3,"[[0,1],[2]]",1048576,25.0
ag,3,"[[2],[0,1]]",1048576,15.0
ag,4,"[[0,1],[0,1]]",1048576,35.0
ag,4,"[[0,1,2],[0]]",1048576,5.0
ag,5,"[[0,1,2],[0,1]]",1048576,4.0
"""
)

RAW_SMI = """\tGPU0\tGPU1\tGPU2\tNIC0\tCPU Affinity\tNUMA Affinity
GPU0\t X \tNV4\tSYS\tPIX\t0-31\t0
GPU1\tNV4\t X \tSYS\tPIX\t0-31\t0
GPU2\tSYS\tSYS\t X \tSYS\t32-63\t1
NIC0\tPIX\tPIX\tSYS\t X

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def _table_instance(tmp_path, k: int, available=(0, 1, 2), interchangeable=True):
    (tmp_path / "t.csv").write_text(INTRA)
    (tmp_path / "cross.csv").write_text(CROSS)
    data = {
        "family": "gpuselect",
        "format_version": 1,
        "name": "t",
        "k": k,
        "hosts": [
            {"name": "a", "type": "T", "gpus": 3, "available": list(available)},
            {"name": "b", "type": "T", "gpus": 3, "available": [0, 1]},
        ],
        "bandwidth": {
            "model": "table",
            "intra": {"T": "t.csv"},
            "cross": "cross.csv",
            "interchangeable_hosts": interchangeable,
        },
    }
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(data))
    return topoopt.load(path)


def test_intra_and_cross_csv() -> None:
    table = parse_intra_csv(INTRA)
    assert table[0b011] == 40.0 and table[0b111] == 9.0
    cross = parse_cross_csv(CROSS)
    assert cross[(2, 1)] == 25.0 and cross[(1, 2)] == 15.0


def test_table_model_from_files(tmp_path) -> None:
    inst = _table_instance(tmp_path, k=3)
    assert inst.bound.value([0b011, 0]) == 40.0
    # {a: 0,1} + {b: 0}: min(intra 40, cross (2,1) averaged (25+15)/2 = 20)
    assert inst.bound.value([0b011, 0b001]) == 20.0
    assert inst.bound.value([0b111, 0]) == 9.0
    result = topoopt.solve(inst, "gpuselect/enumerate")
    assert result.objective == 20.0
    ordered = _table_instance(tmp_path, k=3, interchangeable=False)
    assert ordered.bound.value([0b011, 0b001]) == 25.0
    assert ordered.bound.value([0b001, 0b011]) == 15.0


def test_tables_read_from_files_are_written_inline(tmp_path) -> None:
    """A table file is read into the model: to_dict writes the table, so the JSON loads
    anywhere (another folder, another working directory) and equals the instance."""
    inst = _table_instance(tmp_path, k=4)
    data = inst.to_dict()
    assert data["bandwidth"]["intra"] == {"T": {"01": 40.0, "02": 10.0, "12": 20.0, "012": 9.0}}
    assert data["bandwidth"]["cross"][1] == {"counts": [2, 1], "gbps": 25.0}
    assert inst.bandwidth == TableModel(
        intra={"T": parse_intra_csv(INTRA)}, cross=parse_cross_csv(CROSS)
    )
    assert topoopt.load(data) == inst
    elsewhere = tmp_path / "elsewhere" / "copy.json"
    assert topoopt.load(topoopt.save(inst, elsewhere)) == inst


@pytest.mark.parametrize("inst", examples(), ids=lambda i: i.name)
def test_examples_round_trip(inst: GpuSelectInstance) -> None:
    data = json.loads(json.dumps(inst.to_dict()))
    assert topoopt.load(data).to_dict() == data
    assert topoopt.load(data) == inst


def test_topology_parsers_agree() -> None:
    matrix = parse_topology(RAW_SMI)
    assert matrix == (("X", "NV4", "SYS"), ("NV4", "X", "SYS"), ("SYS", "SYS", "X"))
    assert set(APPENDIX_E_TYPES) == {"4090", "V100", "A6000", "A800", "H100"}
    assert builtin_topology("P100") is None  # not in the paper


def test_topology_model_ring() -> None:
    model = model_from_dict(
        {
            "model": "topology",
            "inter_gbps": 10.0,
            "topology": {"X3": RAW_SMI},
            "links": {"X3": {"NV4": 80.0}},
        }
    )
    inst = GpuSelectInstance("x", 2, (Host("h", "X3", 3, (0, 1, 2)),), model)
    assert inst.bound.value([0b011]) == 80.0
    assert inst.bound.value([0b101]) == 20.8  # SYS: one UPI link
    assert inst.bound.value([0b111]) == 20.8


@pytest.mark.parametrize("kind", MODEL_KINDS)
@given(data=st.data())
def test_batch_equals_reference_value(kind: str, data: st.DataObject) -> None:
    inst = data.draw(small_instances(kind))
    size = 30 * inst.n_hosts  # 30 rows of one 8-bit mask per host, drawn as one block of bytes
    drawn = np.frombuffer(data.draw(st.binary(min_size=size, max_size=size)), dtype=np.uint8)
    rows = inst.available_masks[None, :] & drawn.reshape(30, inst.n_hosts).astype(np.int64)
    rows = rows[(rows != 0).any(axis=1)]
    batch = inst.bound.batch(rows)
    for row, value in zip(rows, batch, strict=True):
        assert math.isclose(value, inst.bound.value(row.tolist()))


def test_nic_sharing_prefers_balance() -> None:
    inst = examples()[0]
    assert inst.bound.value([0b001111, 0b111100]) == 50.0  # 4 + 4
    assert math.isclose(inst.bound.value([0b111111, 0b001100]), 50.0 * 4 / 6)  # 6 + 2


def test_callable_model_cannot_be_saved() -> None:
    inst = examples()[1].with_bandwidth(lambda s: 1.0)
    assert topoopt.solve(inst, "gpuselect/hybrid").objective == 1.0
    with pytest.raises(TopooptError, match="callable cannot be serialised"):
        inst.to_dict()


def test_unknown_model_named() -> None:
    with pytest.raises(InvalidInstanceError, match=r"bandwidth\.model"):
        model_from_dict({"model": "magic"})
