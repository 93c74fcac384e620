"""The compiled schema checker (``topoopt.core.schema.fast_check``) that lets valid instances
skip ``jsonschema``: it says yes exactly when ``jsonschema`` finds no error — on every
family's examples, on fuzzed instances of every family, on the service's request schemas,
and on values chosen for each keyword's corner cases."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from jsonschema import Draft202012Validator

import topoopt
from topoopt.core.schema import fast_check, validate
from topoopt.testing.fuzz import base_documents, instance_files


def agree(schema: dict[str, Any], value: Any) -> None:
    check = fast_check(schema)
    assert check is not None
    reference = Draft202012Validator(schema).is_valid(value)
    assert check(value) == reference, value


@pytest.mark.parametrize("family", topoopt.families())
def test_every_family_schema_compiles_and_accepts_its_examples(family: str) -> None:
    schema = topoopt.get_family(family).schema
    assert schema is not None
    for document in base_documents(topoopt.get_family(family)):
        agree(dict(schema), document)


def _verdicts(family: str, examples: int) -> int:
    """Draw ``examples`` fuzzed instance files of ``family``; assert that the checker and
    ``jsonschema`` agree on each one that parses; return how many were compared."""
    schema = topoopt.get_family(family).schema
    assert schema is not None
    check = fast_check(schema)
    assert check is not None
    reference = Draft202012Validator(schema)
    compared = [0]

    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(raw=instance_files(topoopt.get_family(family)))
    def run(raw: bytes) -> None:
        try:
            value = json.loads(raw)
            expected = reference.is_valid(value)
        except (ValueError, RecursionError):
            return
        assert check(value) == expected
        compared[0] += 1

    run()
    return compared[0]


@pytest.mark.parametrize("family", topoopt.families())
def test_fuzzed_instances_get_the_same_verdict(family: str) -> None:
    assert _verdicts(family, 25) > 0


@pytest.mark.slow
@pytest.mark.parametrize("family", topoopt.families())
def test_many_fuzzed_instances_get_the_same_verdict(family: str) -> None:
    assert _verdicts(family, 2000) > 1000


CORNERS: list[tuple[dict[str, Any], list[Any]]] = [
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None, math.nan, math.inf, 2**70]),
    ({"type": "number", "minimum": 0, "maximum": 1}, [0, 1, 1.5, -0.0, math.nan, True, "x"]),
    ({"exclusiveMinimum": 0, "exclusiveMaximum": 2}, [0, 1, 2, math.nan, "s"]),
    ({"type": ["string", "null"], "minLength": 2, "maxLength": 3}, ["a", "ab", "abcd", None, 1]),
    ({"const": 1}, [1, 1.0, True, "1", [1]]),
    ({"const": [1, {"a": True}]}, [[1, {"a": True}], [1, {"a": 1}], [1.0, {"a": True}]]),
    ({"enum": [False, "x", None]}, [0, False, "x", None, []]),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "required": ["a"],
            "patternProperties": {"^x-": {}},
            "additionalProperties": False,
        },
        [{"a": 1}, {"a": 1, "x-y": 2}, {"a": 1, "b": 2}, {}, [], {"a": "1"}],
    ),
    ({"propertyNames": {"maxLength": 2}, "minProperties": 1}, [{}, {"ab": 1}, {"abc": 1}, 3]),
    (
        {
            "type": "array",
            "prefixItems": [{"type": "string"}],
            "items": {"type": "integer"},
            "minItems": 1,
            "maxItems": 3,
        },
        [["a"], ["a", 1], [1], [], ["a", 1, 2, 3], ["a", "b"]],
    ),
    (
        {
            "if": {"properties": {"k": {"const": "a"}}},
            "then": {"required": ["x"]},
            "else": {"required": ["y"]},
        },
        [{"k": "a", "x": 1}, {"k": "a"}, {"k": "b", "y": 1}, {"k": "b"}, 5],
    ),
    ({"anyOf": [{"type": "string"}, {"minimum": 3}]}, ["s", 4, 2, None]),
    ({"allOf": [{"minimum": 1}, {"maximum": 2}]}, [0, 1, 3]),
    ({"oneOf": [{"minimum": 1}, {"maximum": 2}]}, [0, 1.5, 3]),
    ({"pattern": "^a[0-9]+$"}, ["a1", "a", "b1", 1]),
    (
        {"$defs": {"n": {"type": "integer", "minimum": 0}}, "items": {"$ref": "#/$defs/n"}},
        [[0, 1], [-1], ["x"], "x"],
    ),
]


@pytest.mark.parametrize(("schema", "values"), CORNERS)
def test_keyword_corner_cases(schema: dict[str, Any], values: list[Any]) -> None:
    for value in values:
        agree(schema, value)


def test_unknown_keywords_leave_the_checker_out() -> None:
    assert fast_check({"type": "string", "format": "email"}) is None
    assert fast_check({"$ref": "https://example.com/s.json"}) is None
    # without a checker, validate still reports through jsonschema
    with pytest.raises(topoopt.InvalidInstanceError):
        validate({"type": "string", "format": "email"}, 3)


def test_the_service_request_schemas_compile() -> None:
    from topoopt.serve import api

    for schema in (api.SOLVE_REQUEST, api.CHECK_REQUEST):
        assert fast_check(schema) is not None
        agree(schema, {"instance": {}, "solver": "x", "seed": 1, "x-mine": 2})
        agree(schema, {"instance": {}, "solver": "", "seed": -1})
