"""The published JSON Schema of a gpuselect instance: valid itself, satisfied by every committed
instance and by every ``to_dict()``, enforced by ``topoopt.load`` with named errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from strategies import any_instances, small_instances

import topoopt
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.schema import validate
from topoopt.gpuselect import FAMILY, generate
from topoopt.gpuselect.schema import LIMITS, MODEL_KINDS, SCHEMA

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / "instances" / "gpuselect").glob("*/*.json"))


def _valid(data: dict[str, Any]) -> None:
    """``data`` and its JSON text both satisfy the schema."""
    validate(SCHEMA, data)
    validate(SCHEMA, json.loads(json.dumps(data)))


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_family_publishes_the_schema_and_limits() -> None:
    assert FAMILY.schema is SCHEMA
    assert dict(FAMILY.limits) == LIMITS
    assert set(LIMITS) == {
        "gpuselect_hosts",
        "gpuselect_gpus",
        "gpuselect_host_types",
        "gpuselect_table_entries",
    }


def test_every_committed_instance_validates() -> None:
    assert len(COMMITTED) > 400
    for path in COMMITTED:
        validate(SCHEMA, json.loads(path.read_text()))


@pytest.mark.parametrize("kind", ("table", "bottleneck", "topology"))
@given(data=st.data())
def test_to_dict_of_any_instance_validates(kind: str, data: st.DataObject) -> None:
    """The schema and ``to_dict`` cannot drift: everything the format allows is valid."""
    _valid(data.draw(any_instances(kind)).to_dict())


@pytest.mark.parametrize("kind", generate.MODEL_KINDS)
@settings(max_examples=15)
@given(data=st.data())
def test_to_dict_of_small_instances_validates(kind: str, data: st.DataObject) -> None:
    _valid(data.draw(small_instances(kind)).to_dict())


@pytest.mark.usefixtures("host_topologies")
def test_to_dict_of_generated_suites_validates() -> None:
    suites = [
        generate.examples(),
        generate.random_small(seed=3, count=10),
        generate.protocol(cluster="het-4mix", scenarios=2, ks=(1, 8, 30)),
        generate.large_pool(seed=1, gpus=64, ks=(8, 32)),
    ]
    for suite in suites:
        for inst in suite:
            _valid(inst.to_dict())


def test_model_kinds_match_the_models() -> None:
    from topoopt.gpuselect.models import MODELS

    assert tuple(MODELS) == MODEL_KINDS


BASE: dict[str, Any] = {
    "family": "gpuselect",
    "format_version": 1,
    "name": "x",
    "k": 2,
    "hosts": [
        {"name": "n0", "type": "A800", "gpus": 8, "available": [0, 1, 2]},
        {"name": "n1", "type": "A800", "gpus": 8, "available": [3]},
    ],
    "bandwidth": {"model": "topology", "inter_gbps": 12.5},
}


def _error(**changes: Any) -> str:
    data = copy.deepcopy(BASE)
    data.update(changes)
    with pytest.raises(InvalidInstanceError) as info:
        topoopt.load(data)
    return str(info.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"bandwidth": {"model": "table", "intra": {"V100": 5}}}, "bandwidth.intra.V100: must be"),
        (
            {"bandwidth": {"model": "table", "intra": {"V100": {"01": "x"}}}},
            "bandwidth.intra.V100.01: must be a finite number, got 'x'",
        ),
        (
            {"bandwidth": {"model": "table", "intra": {"V100": [{"01": 1}, {"01": -1}]}}},
            r"bandwidth.intra.V100\[1\].01: must be non-negative, got -1",
        ),
        (
            {"bandwidth": {"model": "table", "intra": {}, "cross": [{"counts": [1, 1]}]}},
            r"bandwidth.cross\[0\].gbps: missing required field",
        ),
        (
            {"bandwidth": {"model": "table", "intra": {}, "cross": [[[1, 1], "x"]]}},
            r"bandwidth.cross\[0\]\[1\]: must be a finite number",
        ),
        (
            {"bandwidth": {"model": "table", "intra": {}, "cross": {"1,1": 2.0}}},
            "bandwidth.cross: must be a JSON array or a string or null",
        ),
        (
            {"bandwidth": {"model": "bottleneck", "intra": {}}},
            "bandwidth.inter_gbps: missing required field",
        ),
        (
            {"bandwidth": {"model": "topology", "inter_gbps": 1, "gpus_per_nic": "x"}},
            "bandwidth.gpus_per_nic: must be an integer or null",
        ),
        (
            {"bandwidth": {"model": "topology", "inter_gbps": 1, "intra": {}}},
            "bandwidth.intra: unknown field",
        ),
        (
            {"bandwidth": {"model": "topology", "inter_gbp": 1}},
            "bandwidth.inter_gbp: unknown field; did you mean 'inter_gbps'",
        ),
        (
            {"bandwidth": {"model": "topology", "inter_gbps": 1, "topology": {"V100": [["Y"]]}}},
            r"bandwidth.topology.V100\[0\]\[0\]: 'Y' does not match",
        ),
        ({"bandwidth": {"inter_gbps": 1}}, "bandwidth.model: missing required field"),
        ({"k": 0}, "k: must be >= 1, got 0"),
        ({"cluster": 3}, "cluster: must be a string, got 3"),
        ({"extra": 1}, "extra: unknown field"),
    ],
)
def test_schema_errors_name_the_field_of_the_model_kind(
    changes: dict[str, Any], message: str
) -> None:
    """The bandwidth object is checked against the fields of its own model kind."""
    import re

    assert re.search(message, _error(**changes)), _error(**changes)


def test_user_keys_are_allowed_and_ignored() -> None:
    data = copy.deepcopy(BASE)
    data["x-scheduler"] = {"queue": "a"}
    data["hosts"][0]["x-rack"] = 3
    data["bandwidth"]["x-note"] = "measured"
    assert topoopt.load(data) == topoopt.load(BASE)


@pytest.mark.slow
def test_every_committed_instance_loads(shared_data: Path) -> None:
    """Schema and constructors: the measured suites name their tables by data name, read from
    ../shared/data (the default data folder), with no allow_paths."""
    for path in COMMITTED:
        assert topoopt.load(path).name == path.stem
