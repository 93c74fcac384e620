"""JSON Schemas of instance files: small builders, and validation with named errors.

Each family publishes the JSON Schema (draft 2020-12) of its instance file as
:attr:`Family.schema <topoopt.core.family.Family.schema>` (``topoopt instances schema
FAMILY`` prints it), so that scheduler authors in other languages can validate before they
call. :func:`topoopt.load` validates every instance against it — the published schema is
what is enforced — with the ``jsonschema`` library, then the family's constructors check the
rules a schema cannot state (divisibility, capacities, unique names).

The schema fixes structure and types: every object lists its fields and refuses others
(``additionalProperties: false``, with a "did you mean" for a near miss), except keys that
start with ``x-``, the area for a caller's own data, which topoopt ignores. Integers are
bounded by :data:`~topoopt.core.limits.MAX_INTEGER` unless a field says less.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from topoopt.core.errors import InvalidInstanceError
from topoopt.core.limits import MAX_INTEGER

DRAFT = "https://json-schema.org/draft/2020-12/schema"
USER_KEYS = "^x-"
"""Pattern of the keys an object may carry for the caller's own data (ignored by topoopt)."""

NAME = {"type": "string", "minLength": 1, "maxLength": 1000}
LABELS = {
    "type": "object",
    "description": "Free-form labels of the instance (reported as tags in benchmarks).",
    "propertyNames": {"minLength": 1, "maxLength": 200},
    "additionalProperties": {"type": "string", "maxLength": 1000},
}


def integer(minimum: int = 0, maximum: int = MAX_INTEGER, description: str = "") -> dict[str, Any]:
    """An integer field within ``[minimum, maximum]``."""
    out: dict[str, Any] = {"type": "integer", "minimum": minimum, "maximum": maximum}
    if description:
        out["description"] = description
    return out


def number(
    minimum: float | None = None, maximum: float | None = None, description: str = ""
) -> dict[str, Any]:
    """A finite number within ``[minimum, maximum]``."""
    out: dict[str, Any] = {"type": "number"}
    if minimum is not None:
        out["minimum"] = minimum
    if maximum is not None:
        out["maximum"] = maximum
    if description:
        out["description"] = description
    return out


def array(items: Mapping[str, Any], min_items: int = 0, **extra: Any) -> dict[str, Any]:
    """An array of ``items``."""
    return {"type": "array", "items": dict(items), "minItems": min_items, **extra}


def obj(
    properties: Mapping[str, Any], required: Sequence[str] = (), description: str = ""
) -> dict[str, Any]:
    """A closed object: these fields, ``required`` among them, and ``x-`` keys."""
    out: dict[str, Any] = {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "patternProperties": {USER_KEYS: {}},
        "additionalProperties": False,
    }
    if description:
        out["description"] = description
    return out


def instance_schema(
    family: str, title: str, properties: Mapping[str, Any], required: Sequence[str]
) -> dict[str, Any]:
    """The schema of a family's instance file: the envelope (``family``, ``format_version``,
    ``name``, ``labels``) plus the family's ``properties``."""
    envelope = {
        "family": {"const": family},
        "format_version": {"const": 1, "description": "Version of the instance format."},
        "name": NAME,
        "labels": LABELS,
    }
    schema = obj({**envelope, **properties}, ["family", *required])
    return {"$schema": DRAFT, "title": title, **schema}


@functools.lru_cache(maxsize=32)
def _validator(schema_json: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def _path(parts: Sequence[Any]) -> str:
    out = ""
    for part in parts:
        out = f"{out}[{part}]" if isinstance(part, int) else (f"{out}.{part}" if out else part)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_TYPE_NAMES = {
    "number": "a finite number",
    "integer": "an integer",
    "string": "a string",
    "object": "a JSON object",
    "array": "a JSON array",
    "boolean": "true or false",
    "null": "null",
}


def _describe(error: Any) -> InvalidInstanceError:
    """One jsonschema error as ``InvalidInstanceError(json path, rule)``."""
    path = _path(list(error.absolute_path))
    kind, value, schema = error.validator, error.instance, error.schema
    if kind == "additionalProperties" and isinstance(value, Mapping):
        known = list(schema.get("properties", {}))
        unknown = sorted(k for k in value if k not in known and not k.startswith("x-"))
        key = unknown[0] if unknown else "?"
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(known)}"
        return InvalidInstanceError(_join(path, key), f"unknown field{hint}")
    if kind == "required":
        missing = next((k for k in error.validator_value if k not in value), "?")
        return InvalidInstanceError(_join(path, missing), "missing required field")
    if kind == "type":
        wanted = error.validator_value
        kinds = wanted if isinstance(wanted, list) else [wanted]
        names = [_TYPE_NAMES.get(str(w), str(w)) for w in kinds]
        return InvalidInstanceError(
            path or "<root>", f"must be {' or '.join(names)}, got {_short(value)}"
        )
    if kind == "const":
        return InvalidInstanceError(path, f"must be {error.validator_value!r}, got {_short(value)}")
    if kind == "enum":
        options = ", ".join(repr(o) for o in error.validator_value)
        return InvalidInstanceError(path, f"must be one of {options}, got {_short(value)}")
    if kind in ("minimum", "maximum"):
        low, high = schema.get("minimum"), schema.get("maximum")
        if schema.get("type") == "number" and low is not None and high is not None:
            rule = f"must lie in [{low:g}, {high:g}]"
        elif kind == "minimum":
            rule = "must be non-negative" if low == 0 else f"must be >= {low}"
        else:
            rule = f"must be <= {high}"
        return InvalidInstanceError(path, f"{rule}, got {_short(value)}")
    limit = error.validator_value
    if kind in ("minItems", "minLength", "minProperties"):
        unit = {"minItems": "item", "minLength": "character", "minProperties": "field"}[kind]
        return InvalidInstanceError(path, f"must have at least {limit} {unit}(s)")
    if kind in ("maxItems", "maxLength"):
        unit = "item" if kind == "maxItems" else "character"
        return InvalidInstanceError(path, f"must have at most {limit} {unit}(s)")
    return InvalidInstanceError(path or "<root>", error.message[:300])


def validate(schema: Mapping[str, Any], data: Any) -> None:
    """Validate ``data`` against ``schema``.

    Raises
    ------
    InvalidInstanceError
        Naming the JSON path and the rule of the most relevant violation
        (``jsonschema.exceptions.best_match``).
    """
    from jsonschema.exceptions import best_match

    validator = _validator(json.dumps(schema, sort_keys=True))
    error = best_match(validator.iter_errors(data))
    if error is not None:
        raise _describe(error)
