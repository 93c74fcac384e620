"""Instances, hosts and bandwidth models built in code: validated and normalised like JSON."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import topoopt
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.gpuselect import (
    BottleneckModel,
    CallableModel,
    GpuSelectInstance,
    Host,
    TableModel,
    TopologyModel,
    model_from_dict,
)

TOPO = TopologyModel(inter_gbps=12.5)


def _hosts() -> list[Host]:
    return [Host("n0", "A800", 8, [0, 1, 2]), Host("n1", "A800", 8, [3])]


def _json(**changes: Any) -> dict[str, Any]:
    data = {
        "family": "gpuselect",
        "name": "x",
        "k": 2,
        "hosts": [
            {"name": "n0", "type": "A800", "gpus": 8, "available": [0, 1, 2]},
            {"name": "n1", "type": "A800", "gpus": 8, "available": [3]},
        ],
        "bandwidth": {"model": "topology", "inter_gbps": 12.5},
    }
    data.update(changes)
    return data


def _field(build: Callable[[], object]) -> tuple[str, str]:
    with pytest.raises(InvalidInstanceError) as info:
        build()
    return info.value.field, info.value.rule


# --------------------------------------------------------------------------- hosts


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"gpus": 8.5}, "gpus"),
        ({"gpus": True}, "gpus"),
        ({"gpus": "8"}, "gpus"),
        ({"gpus": 0}, "gpus"),
        ({"gpus": 17}, "gpus"),
        ({"name": ""}, "name"),
        ({"name": 3}, "name"),
        ({"type": None}, "type"),
        ({"type": True}, "type"),
        ({"type": 4090}, "type"),
        ({"type": np.int64(4090)}, "type"),
        ({"type": ""}, "type"),
        ({"available": [0, 0]}, "available[1]"),
        ({"available": [1, 9]}, "available[1]"),
        ({"available": [-1]}, "available[0]"),
        ({"available": [0.5]}, "available[0]"),
        ({"available": "01"}, "available"),
        ({"available": 3}, "available"),
    ],
)
def test_bad_host_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    args = {"name": "a", "type": "T", "gpus": 8, "available": [0, 1], **kwargs}
    assert _field(lambda: Host(**args))[0] == field


def test_host_normalises_numbers_and_collections() -> None:
    host = Host(np.str_("a"), np.str_("4090"), np.int64(8), np.array([5, 1, 3]))
    assert host == Host("a", "4090", 8, (1, 3, 5))
    assert type(host.name) is str and type(host.type) is str and type(host.gpus) is int
    assert all(type(i) is int for i in host.available)
    assert Host("b", "T", 4.0, {2, 0}).available == (0, 2)
    assert Host("c", "T", 3).available == (0, 1, 2)
    assert Host("d", "T", 3, ()).available == ()
    assert Host.from_dict(Host("e", "T", 4, [1]).to_dict()) == Host("e", "T", 4, [1])


# --------------------------------------------------------------------------- instances


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"k": True}, "k"),
        ({"k": 2.5}, "k"),
        ({"k": 0}, "k"),
        ({"k": 5}, "k"),
        ({"k": None}, "k"),
        ({"name": ""}, "name"),
        ({"cluster": 5}, "cluster"),
        ({"labels": {"a": 1}}, "labels.a"),
        ({"labels": ["a"]}, "labels"),
        ({"hosts": []}, "hosts"),
        ({"hosts": Host("n0", "A800", 8)}, "hosts"),
        ({"hosts": [Host("n0", "A800", 8), Host("n0", "A800", 8)]}, "hosts[1]"),
        (
            {"hosts": [Host("n0", "A800", 8), {"name": "n1", "type": "A800", "gpus": 8.5}]},
            "hosts[1].gpus",
        ),
        ({"hosts": [{"name": "n0", "type": "A800"}]}, "hosts[0].gpus"),
        ({"hosts": [("n0", "A800", 8, [0, 0])]}, "hosts[0].available[1]"),
        ({"hosts": [42]}, "hosts[0]"),
        ({"bandwidth": 42}, "bandwidth"),
        ({"bandwidth": {"model": "topology", "inter_gbps": -1}}, "bandwidth.inter_gbps"),
        ({"bandwidth": {"model": "magic"}}, "bandwidth.model"),
        ({"bandwidth": {"model": ["table"]}}, "bandwidth.model"),
    ],
)
def test_bad_instance_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    args = {"name": "x", "k": 2, "hosts": _hosts(), "bandwidth": TOPO, **kwargs}
    assert _field(lambda: GpuSelectInstance(**args))[0] == field


def test_instance_normalises_like_json() -> None:
    inst = GpuSelectInstance(
        np.str_("x"),
        np.int64(2),
        [
            ("n0", "A800", 8, [2, 1, 0]),
            {"name": "n1", "type": "A800", "gpus": 8.0, "available": [3]},
        ],
        {"model": "topology", "inter_gbps": 12.5},
    )
    assert type(inst.k) is int and type(inst.name) is str
    assert isinstance(inst.hosts, tuple) and inst.hosts == tuple(_hosts())
    assert inst == topoopt.load(_json())
    assert GpuSelectInstance("x", 2.0, _hosts(), TOPO).k == 2


@pytest.mark.parametrize(
    ("changes", "build"),
    [
        ({"k": True}, lambda: GpuSelectInstance("x", True, _hosts(), TOPO)),
        ({"k": 9}, lambda: GpuSelectInstance("x", 9, _hosts(), TOPO)),
        ({"labels": {"a": 1}}, lambda: GpuSelectInstance("x", 2, _hosts(), TOPO, labels={"a": 1})),
        (
            {
                "hosts": [
                    {"name": "n0", "type": "A800", "gpus": 8},
                    {"name": "n0", "type": "A800", "gpus": 8},
                ]
            },
            lambda: GpuSelectInstance("x", 2, [Host("n0", "A800", 8), Host("n0", "A800", 8)], TOPO),
        ),
        (
            {"hosts": [{"name": "n0", "type": "A800", "gpus": 8.5}]},
            lambda: GpuSelectInstance("x", 2, [{"name": "n0", "type": "A800", "gpus": 8.5}], TOPO),
        ),
        (
            {"hosts": [{"name": "n0", "type": "A800", "gpus": 8, "available": [1, 8]}]},
            lambda: GpuSelectInstance("x", 2, [("n0", "A800", 8, [1, 8])], TOPO),
        ),
        (
            {"bandwidth": {"model": "bottleneck", "intra": {"A800": {"01": -1}}, "inter_gbps": 1}},
            lambda: BottleneckModel(intra={"A800": {0b11: -1}}, inter_gbps=1),
        ),
        (
            {"bandwidth": {"model": "table", "intra": {"A800": {"0a": 1.0}}}},
            lambda: TableModel(intra={"A800": {"0a": 1.0}}),
        ),
        (
            {"bandwidth": {"model": "table", "intra": {"A800": [{"01": 1.0}, {"01": "x"}]}}},
            lambda: TableModel(intra={"A800": [{"01": 1.0}, {3: "x"}]}),
        ),
        (
            {
                "bandwidth": {
                    "model": "table",
                    "intra": {},
                    "cross": [{"counts": [1, 1], "gbps": 2}, {"counts": [2, -1], "gbps": 2}],
                }
            },
            lambda: TableModel(intra={}, cross={(1, 1): 2, (2, -1): 2}),
        ),
        (
            {"bandwidth": {"model": "table", "intra": {}, "cross": [{"counts": [1, 1]}]}},
            lambda: TableModel(intra={}, cross=[{"counts": [1, 1]}]),
        ),
        (
            {"bandwidth": {"model": "table", "intra": {}, "interchangeable_hosts": 1}},
            lambda: TableModel(intra={}, interchangeable_hosts=1),
        ),
        (
            {
                "bandwidth": {
                    "model": "bottleneck",
                    "intra": {},
                    "inter_gbps": 1,
                    "gpus_per_nic": 1.5,
                }
            },
            lambda: BottleneckModel(intra={}, inter_gbps=1, gpus_per_nic=1.5),
        ),
        (
            {"bandwidth": {"model": "topology", "inter_gbps": "fast"}},
            lambda: TopologyModel(inter_gbps="fast"),
        ),
        (
            {"bandwidth": {"model": "topology", "inter_gbps": 1, "gpus_per_nic": True}},
            lambda: TopologyModel(inter_gbps=1, gpus_per_nic=True),
        ),
        (
            {
                "bandwidth": {
                    "model": "topology",
                    "inter_gbps": 1,
                    "topology": {"X": [["X", "NV1"], ["NV2", "X"]]},
                }
            },
            lambda: TopologyModel(inter_gbps=1, topology={"X": (("X", "NV1"), ("NV2", "X"))}),
        ),
        (
            {"bandwidth": {"model": "topology", "inter_gbps": 1, "links": {"A800": {"NV1": -2}}}},
            lambda: TopologyModel(inter_gbps=1, links={"A800": {"NV1": -2}}),
        ),
    ],
)
def test_constructor_errors_equal_json_errors(
    changes: dict[str, Any], build: Callable[[], object]
) -> None:
    """The same bad value gives the same field path and rule in code and in JSON."""
    from_json = _field(lambda: topoopt.load(_json(**changes)))
    assert _field(build) == from_json


# --------------------------------------------------------------------------- models


def test_models_normalise_their_fields() -> None:
    model = BottleneckModel(
        intra={"T": {np.int64(3): np.float32(40.0), "0": 0}},
        inter_gbps=np.int64(50),
        gpus_per_nic=4.0,
    )
    assert model.intra == {"T": {3: 40.0, 1: 0.0}}
    assert type(model.inter_gbps) is float and type(model.gpus_per_nic) is int
    assert model == BottleneckModel(
        intra={"T": {"01": 40, 1: 0.0}}, inter_gbps=50.0, gpus_per_nic=4
    )
    averaged = TableModel(
        intra={"T": [{"01": 10.0}, {"01": 20.0, "0": 0.0}]},
        cross=[((2, 1), 5.0), {"counts": [2, 1], "gbps": 7.0}],
    )
    assert averaged.intra == {"T": {1: 0.0, 3: 15.0}} and averaged.cross == {(2, 1): 6.0}
    topo = TopologyModel(inter_gbps=1, topology={"X": "GPU0 X NV2\nGPU1 NV2 X\n"}, links={"NV2": 3})
    assert topo.topology == {"X": (("X", "NV2"), ("NV2", "X"))} and topo.links == {"NV2": 3.0}


def test_model_tables_are_values_not_paths() -> None:
    with pytest.raises(InvalidInstanceError, match="read_intra_csv"):
        BottleneckModel(intra={"T": "t.csv"}, inter_gbps=1)
    with pytest.raises(InvalidInstanceError, match="read_cross_csv"):
        TableModel(intra={}, cross="cross.csv")
    with pytest.raises(InvalidInstanceError, match=r"bandwidth\.intra\.T\.01: GPUs '01'"):
        TableModel(intra={"T": {"01": 1.0, 3: 1.0}})
    with pytest.raises(InvalidInstanceError, match=r"bandwidth\.model: TableModel reads"):
        TableModel.from_dict({"model": "bottleneck", "intra": {}})


@pytest.mark.parametrize(
    ("model", "change"),
    [
        (
            TableModel(intra={"T": {"01": 40.0}}, cross={(2, 1): 3.0}, interchangeable_hosts=False),
            {"cross": {(2, 1): 3.5}},
        ),
        (
            BottleneckModel(intra={"T": {"01": 40.0}}, inter_gbps=50.0, gpus_per_nic=2),
            {"intra": {"T": {"01": 40.5}}},
        ),
        (
            TopologyModel(
                inter_gbps=12.5,
                topology={"X": [["X", "PIX"], ["PIX", "X"]]},
                links={"X": {"PIX": 9.0}},
            ),
            {"links": {"X": {"PIX": 9.5}}},
        ),
    ],
    ids=["table", "bottleneck", "topology"],
)
def test_models_are_hashable_values(model: Any, change: dict[str, Any]) -> None:
    again = model_from_dict(json.loads(json.dumps(model.to_dict())))
    assert again == model and hash(again) == hash(model)
    assert copy.deepcopy(model) == model and pickle.loads(pickle.dumps(model)) == model
    assert dataclasses.replace(model, **change) != model
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.gpus_per_nic = 1


def test_callable_model_equality_and_serialisation(tmp_path) -> None:
    def fn(s: list[tuple[str, int]]) -> float:
        return float(len(s))

    inst = GpuSelectInstance("x", 2, _hosts(), fn)
    assert inst.bandwidth == CallableModel(fn) and hash(inst.bandwidth) == hash(CallableModel(fn))
    assert inst.bandwidth != CallableModel(lambda s: float(len(s)))
    assert inst == GpuSelectInstance("x", 2, _hosts(), CallableModel(fn))
    with pytest.raises(TopooptError, match="a Python callable cannot be serialised to JSON"):
        inst.to_dict()
    with pytest.raises(TopooptError, match="cannot be serialised"):
        topoopt.save(inst, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()
    assert _field(lambda: CallableModel(42))[0] == "bandwidth"


# --------------------------------------------------------------------------- labels, equality


def test_labels_equality_and_json() -> None:
    plain = GpuSelectInstance("x", 2, _hosts(), TOPO)
    labelled = GpuSelectInstance("x", 2, _hosts(), TOPO, labels={"setting": "fig1"})
    assert "labels" not in plain.to_dict()
    assert labelled.to_dict()["labels"] == {"setting": "fig1"}
    assert plain != labelled and hash(plain) == hash(labelled)
    assert topoopt.load(labelled.to_dict()) == labelled
    assert topoopt.load(_json(labels={"setting": "fig1"})) == labelled
    swapped = labelled.with_bandwidth(TopologyModel(inter_gbps=1.0))
    assert swapped.labels == {"setting": "fig1"} and swapped.bandwidth.inter_gbps == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        labelled.k = 1
