"""Reading, validating and writing placement instances."""

from __future__ import annotations

import copy
import json

import pytest

import topoopt
from topoopt.core.errors import InvalidInstanceError
from topoopt.placement import PlacementInstance

ISSUE_EXAMPLE = {
    "family": "placement",
    "format_version": 1,
    "name": "issue-example",
    "topology": {
        "gpus_per_node": 8,
        "minipods": [
            {"name": "mp0", "free_nodes": 6},
            {"name": "mp1", "free_nodes": 6},
            {"name": "mp2", "free_nodes": 6},
        ],
    },
    "job": {"dp": 12, "tp": 4, "pp": 2},
    "alpha": 0.5,
}


def _with(path: str, value: object) -> dict:
    data = copy.deepcopy(ISSUE_EXAMPLE)
    *parents, last = path.split(".")
    target = data
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    if value is _DELETE:
        del target[int(last) if last.isdigit() else last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return data


_DELETE = object()


def test_issue_example_loads():
    inst = topoopt.load(ISSUE_EXAMPLE)
    assert isinstance(inst, PlacementInstance)
    assert (inst.rows, inst.cols, inst.n_nodes) == (6, 2, 12)
    assert inst.beta == pytest.approx(0.5)


def test_round_trip_through_a_file(tmp_path):
    inst = topoopt.load(ISSUE_EXAMPLE)
    path = topoopt.save(inst, tmp_path / "sub" / "x.json")
    assert topoopt.load(path) == inst
    assert json.loads(path.read_text())["family"] == "placement"


def test_flat_free_node_list_and_leaves_are_accepted():
    data = _with(
        "topology.minipods",
        [
            6,
            {
                "name": "b",
                "leaves": [
                    {"name": "leaf0", "nodes": ["n1", "n2", "n3"]},
                    {"name": "leaf1", "nodes": ["n4", "n5", "n6"]},
                ],
            },
        ],
    )
    inst = topoopt.load(data)
    assert inst.capacities == (6, 6)
    assert inst.minipods[0].name == "mp0"
    assert inst.minipods[1].node_names() == ["n1", "n2", "n3", "n4", "n5", "n6"]


@pytest.mark.parametrize(
    ("path", "value", "field", "words"),
    [
        ("topology", _DELETE, "topology", "missing"),
        ("job", _DELETE, "job", "missing"),
        ("job.pp", _DELETE, "job.pp", "missing"),
        ("alpha", _DELETE, "alpha", "missing"),
        ("topology.minipods", _DELETE, "topology.minipods", "missing"),
        ("job.dp", 5, "job.dp", "integral number of rows"),
        ("job.tp", 3, "job.tp", "must divide"),
        ("job.dp", 200, "topology.minipods", "only 18 are free"),
        ("topology.minipods.1.free_nodes", -2, "topology.minipods[1].free_nodes", "non-negative"),
        ("job.dp", -4, "job.dp", ">= 1"),
        ("alpha", 1.5, "alpha", "[0, 1]"),
        ("alpha", -0.1, "alpha", "[0, 1]"),
        ("alpha", "high", "alpha", "finite number"),
        ("job.tp", 2.5, "job.tp", "integer"),
        ("topology.minipods", [], "topology.minipods", "at least 1"),
        ("topology.minipods.1.name", "mp0", "topology.minipods[1]", "duplicate"),
    ],
)
def test_invalid_instances_name_the_field(path, value, field, words):
    with pytest.raises(InvalidInstanceError) as info:
        topoopt.load(_with(path, value))
    assert info.value.field == field
    assert words in str(info.value)


def test_node_listed_in_two_minipods_is_rejected():
    leaf = {"name": "l", "nodes": ["h1", "h2", "h3", "h4", "h5", "h6"]}
    data = _with(
        "topology.minipods", [{"name": "a", "leaves": [leaf]}, {"name": "b", "leaves": [leaf]}]
    )
    with pytest.raises(InvalidInstanceError, match="also listed") as info:
        topoopt.load(data)
    assert info.value.field == "topology.minipods[1].leaves"


def test_envelope_errors(tmp_path):
    with pytest.raises(InvalidInstanceError, match="family"):
        topoopt.load({k: v for k, v in ISSUE_EXAMPLE.items() if k != "family"})
    with pytest.raises(InvalidInstanceError, match="unknown family"):
        topoopt.load({**ISSUE_EXAMPLE, "family": "nope"})
    with pytest.raises(InvalidInstanceError, match="format_version"):
        topoopt.load({**ISSUE_EXAMPLE, "format_version": 2})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidInstanceError, match="not valid JSON"):
        topoopt.load(bad)
    with pytest.raises(topoopt.TopooptError, match="cannot read"):
        topoopt.load(tmp_path / "missing.json")
