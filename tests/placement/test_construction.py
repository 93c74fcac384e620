"""Instances built in code: the constructors check and normalise every field like the JSON
loader does, and name the field with the same JSON path."""

from __future__ import annotations

import math

import numpy as np
import pytest

import topoopt
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.registry import solver_names
from topoopt.placement import Leaf, Minipod, PlacementInstance

GOOD = {
    "name": "fig12",
    "minipods": (Minipod("a", 6), Minipod("b", 6)),
    "dp": 6,
    "tp": 8,
    "pp": 2,
    "alpha": 0.5,
}
CANONICAL = PlacementInstance(**GOOD)


def _build(**changes: object) -> PlacementInstance:
    return PlacementInstance(**{**GOOD, **changes})


# --- normalisation --------------------------------------------------------------------------


def test_integral_float_dp_and_a_list_of_minipods_are_normalised():
    inst = _build(dp=6.0, minipods=[Minipod("a", 6), Minipod("b", 6)])
    assert inst.dp == 6 and type(inst.dp) is int
    assert type(inst.minipods) is tuple
    assert inst == CANONICAL


def test_minipod_with_an_integral_float_stores_an_int():
    pod = Minipod("a", 40.0)
    assert pod.free_nodes == 40 and type(pod.free_nodes) is int
    assert pod == Minipod("a", 40)


def test_numpy_scalars_are_accepted_and_converted():
    inst = _build(
        minipods=[Minipod("a", np.int64(6)), ("b", np.uint8(6))],
        dp=np.int64(6),
        tp=np.int32(8),
        pp=np.int16(2),
        alpha=np.float32(0.5),
        gpus_per_node=np.int64(8),
    )
    assert inst == CANONICAL
    for value in (inst.dp, inst.tp, inst.pp, inst.gpus_per_node, *inst.capacities):
        assert type(value) is int
    assert type(inst.alpha) is float


def test_minipod_forms_pairs_mappings_counts_and_arrays():
    inst = _build(minipods=[("a", 6), {"name": "b", "free_nodes": 6}])
    assert inst == CANONICAL
    counted = _build(minipods=np.array([6, 6]))
    assert counted.minipods == (Minipod("mp0", 6), Minipod("mp1", 6))
    generated = _build(minipods=(Minipod(n, 6) for n in "ab"))
    assert generated == CANONICAL


def test_leaf_forms_are_normalised():
    by_pairs = Minipod("a", 3, [("l0", ["h1", "h2"]), ("l1", ("h3",))])
    by_maps = Minipod(
        "a", 3, [{"name": "l0", "nodes": ["h1", "h2"]}, {"name": "l1", "nodes": ["h3"]}]
    )
    by_leaves = Minipod("a", 3, (Leaf("l0", ("h1", "h2")), Leaf("l1", ("h3",))))
    assert by_pairs == by_maps == by_leaves
    assert type(by_pairs.leaves) is tuple and type(by_pairs.leaves[0].nodes) is tuple
    assert Minipod.from_leaves("a", [("l0", ["h1", "h2"]), ("l1", ["h3"])]) == by_leaves


@pytest.mark.parametrize("solver", solver_names("placement"))
def test_every_solver_accepts_an_instance_built_loosely(solver):
    """The symptoms of the report: a float ``dp``, a list, float free nodes, pairs."""
    loose = _build(dp=6.0, minipods=[Minipod("a", 6.0), ("b", 6.0)])
    result = topoopt.solve(loose, solver)
    reference = topoopt.solve(CANONICAL, solver)
    assert result.is_ok, result.message
    assert math.isclose(result.objective, reference.objective)


# --- errors name the field --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"name": ""}, "name", "non-empty string"),
        ({"name": 3}, "name", "non-empty string"),
        ({"dp": 6.5}, "job.dp", "must be an integer"),
        ({"dp": True}, "job.dp", "must be an integer"),
        ({"dp": "6"}, "job.dp", "must be an integer"),
        ({"dp": np.bool_(True)}, "job.dp", "must be an integer"),
        ({"tp": 8.000001}, "job.tp", "must be an integer"),
        ({"pp": 0}, "job.pp", ">= 1"),
        ({"pp": None}, "job.pp", "must be an integer"),
        ({"gpus_per_node": 8.5}, "topology.gpus_per_node", "must be an integer"),
        ({"gpus_per_node": False}, "topology.gpus_per_node", "must be an integer"),
        ({"alpha": True}, "alpha", "finite number"),
        ({"alpha": math.nan}, "alpha", "finite number"),
        ({"alpha": np.float64(1.5)}, "alpha", "[0, 1]"),
        ({"alpha": "0.5"}, "alpha", "finite number"),
        ({"labels": {"setting": 1}}, "labels.setting", "must be a string"),
        ({"labels": [("setting", "i")]}, "labels", "JSON object"),
        ({"labels": {"": "x"}}, "labels key", "non-empty string"),
        ({"minipods": []}, "topology.minipods", "at least 1"),
        ({"minipods": "ab"}, "topology.minipods", "JSON array"),
        ({"minipods": {"a": 6}}, "topology.minipods", "JSON array"),
        ({"minipods": {Minipod("a", 12)}}, "topology.minipods", "JSON array"),
        ({"minipods": [("a", 40.5)]}, "topology.minipods[0].free_nodes", "must be an integer"),
        ({"minipods": [("a", 6), ("b", True)]}, "topology.minipods[1].free_nodes", "integer"),
        ({"minipods": [("a", 6), ("b", -1)]}, "topology.minipods[1].free_nodes", "non-negative"),
        ({"minipods": [("a",)]}, "topology.minipods[0]", "(name, free_nodes) pair"),
        ({"minipods": ["a"]}, "topology.minipods[0]", "(name, free_nodes) pair"),
        ({"minipods": [object()]}, "topology.minipods[0]", "(name, free_nodes) pair"),
        ({"minipods": [6, 6.5]}, "topology.minipods[1]", "must be an integer"),
        ({"minipods": [("", 12)]}, "topology.minipods[0].name", "non-empty string"),
        ({"minipods": [{"name": "a"}]}, "topology.minipods[0].free_nodes", "missing"),
        ({"minipods": [("a", 6), ("a", 6)]}, "topology.minipods[1]", "duplicate name 'a'"),
        ({"minipods": [("a", 6), ("b", 5)]}, "topology.minipods", "only 11 are free"),
        (
            {"minipods": [("a", 6), ("b", 6, [("l", ["x"] * 6)])]},
            "topology.minipods[1].leaves[0].nodes[1]",
            "duplicate name 'x'",
        ),
        (
            {"minipods": [{"name": "a", "free_nodes": 12, "leaves": [{"nodes": ["x", 3]}]}]},
            "topology.minipods[0].leaves[0].nodes[1]",
            "non-empty string",
        ),
        (
            {"minipods": [("a", 12, [{"name": "l"}])]},
            "topology.minipods[0].leaves[0].nodes",
            "missing",
        ),
        (
            {"minipods": [("a", 6, [("l", list("uvwxyz"))]), ("b", 6, [("l", list("abcdez"))])]},
            "topology.minipods[1].leaves",
            "node 'z' is also listed in topology.minipods[0]",
        ),
    ],
)
def test_bad_instance_input_names_the_field(changes, field, words):
    with pytest.raises(InvalidInstanceError) as info:
        _build(**changes)
    assert info.value.field == field
    assert words in info.value.rule


@pytest.mark.parametrize(
    ("build", "field", "words"),
    [
        (lambda: Minipod("a", 40.5), "free_nodes", "must be an integer"),
        (lambda: Minipod("a", True), "free_nodes", "must be an integer"),
        (lambda: Minipod("a", -1), "free_nodes", "non-negative"),
        (lambda: Minipod("", 3), "name", "non-empty string"),
        (lambda: Minipod(None, 3), "name", "non-empty string"),
        (lambda: Minipod("a", 3, "leaf"), "leaves", "JSON array"),
        (lambda: Minipod("a", 3, [("l", ["x", "y"])]), "free_nodes", "leaves list 2"),
        (lambda: Minipod("a", 2, [("l", ["x"]), ("m", ["x"])]), "leaves[1].nodes[0]", "leaves[0]"),
        (lambda: Minipod("a", 1, [3]), "leaves[0]", "(name, nodes) pair"),
        (lambda: Leaf("l", "abc"), "nodes", "JSON array"),
        (lambda: Leaf("l", ["a", "a"]), "nodes[1]", "duplicate name 'a'"),
        (lambda: Leaf("l", ["a", 3]), "nodes[1]", "non-empty string"),
        (lambda: Leaf(3, ["a"]), "name", "non-empty string"),
    ],
)
def test_bad_minipod_and_leaf_input_names_the_field(build, field, words):
    """A standalone minipod or leaf names the field relative to itself."""
    with pytest.raises(InvalidInstanceError) as info:
        build()
    assert info.value.field == field
    assert words in info.value.rule


def test_json_and_code_report_the_same_path():
    data = CANONICAL.to_dict()
    data["topology"]["minipods"][1]["free_nodes"] = 6.5
    with pytest.raises(InvalidInstanceError) as from_json:
        topoopt.load(data)
    with pytest.raises(InvalidInstanceError) as from_code:
        _build(minipods=[("a", 6), ("b", 6.5)])
    assert from_json.value.field == from_code.value.field == "topology.minipods[1].free_nodes"
    assert str(from_json.value) == str(from_code.value)
