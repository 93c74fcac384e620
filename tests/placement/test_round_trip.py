"""Round trips: an instance survives ``to_dict`` / ``save`` + ``load`` unchanged, and loose
constructor input (lists, pairs, mappings, NumPy scalars, integral floats) is normalised to the
same instance."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import topoopt
from topoopt.placement import Leaf, Minipod, PlacementInstance
from topoopt.placement.generate import arnold_paper

from .strategies import instances, raw_forms

KINDS = pytest.mark.parametrize(
    ("leaves", "labels"),
    [(False, False), (True, False), (False, True), (True, True)],
    ids=["plain", "leaves", "labels", "leaves+labels"],
)


def _assert_canonical(inst: PlacementInstance) -> None:
    """Every field holds its canonical type: plain int / float / str, tuples, Leaf, Minipod."""
    for attr in ("dp", "tp", "pp", "gpus_per_node"):
        assert type(getattr(inst, attr)) is int, attr
    assert type(inst.alpha) is float
    assert type(inst.name) is str
    assert type(inst.labels) is dict
    assert type(inst.minipods) is tuple
    for pod in inst.minipods:
        assert type(pod) is Minipod
        assert type(pod.free_nodes) is int
        assert type(pod.leaves) is tuple
        for leaf in pod.leaves:
            assert type(leaf) is Leaf
            assert type(leaf.nodes) is tuple


@KINDS
@given(data=st.data())
def test_load_of_to_dict_is_the_instance(leaves, labels, data):
    inst = data.draw(instances(leaves=leaves, labels=labels))
    back = topoopt.load(inst.to_dict())
    assert back == inst
    assert hash(back) == hash(inst)
    assert ("labels" in inst.to_dict()) is labels
    assert any(pod.leaves for pod in inst.minipods) is leaves


@KINDS
@given(data=st.data())
def test_save_then_load_is_the_instance(leaves, labels, data):
    inst = data.draw(instances(leaves=leaves, labels=labels))
    with tempfile.TemporaryDirectory() as folder:
        back = topoopt.load(topoopt.save(inst, Path(folder) / "x.json"))
    assert back == inst
    _assert_canonical(back)


@given(data=st.data())
def test_loose_constructor_input_gives_the_same_instance(data):
    inst = data.draw(instances())
    built = PlacementInstance(**data.draw(raw_forms(inst)))
    assert built == inst
    assert hash(built) == hash(inst)
    _assert_canonical(built)


def test_labels_are_part_of_equality_but_not_of_the_hash():
    pods = (Minipod("a", 2),)
    plain = PlacementInstance("x", pods, dp=2, tp=8, pp=1, alpha=0.5)
    labelled = PlacementInstance("x", pods, dp=2, tp=8, pp=1, alpha=0.5, labels={"k": "v"})
    assert plain != labelled
    assert hash(plain) == hash(labelled)
    assert "labels" not in plain.to_dict()
    assert labelled.to_dict()["labels"] == {"k": "v"}


def test_labels_are_copied_from_the_caller():
    given_labels = {"setting": "i"}
    inst = PlacementInstance("x", [("a", 2)], dp=2, tp=8, pp=1, alpha=0.5, labels=given_labels)
    given_labels["setting"] = "changed"
    assert inst.labels == {"setting": "i"}


SUITE = Path(__file__).resolve().parents[2] / "instances" / "placement" / "arnold-paper"


def test_arnold_paper_files_are_the_generator_output_with_setting_labels():
    generated = {inst.name: inst for inst in arnold_paper()}
    files = sorted(SUITE.glob("*.json"))
    assert len(files) == len(generated) == 27
    for path in files:
        inst = topoopt.load(path)
        assert inst.labels == {"setting": path.name.split("-")[0]}
        assert inst == generated[inst.name]
        assert path.read_text(encoding="utf-8") == json.dumps(inst.to_dict(), indent=2) + "\n"
