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
from collections.abc import Callable, Mapping, Sequence
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


# -- the fast path: a schema compiled to nested checks that only say yes or no ----------------
#
# ``jsonschema`` walks a schema anew for every value (about 0.2 ms for a placement instance,
# 0.5 ms for a gpuselect pool: most of ``topoopt.load``). A valid instance needs no error
# message, so :func:`validate` first asks a checker compiled once from the schema; only when
# it says no does ``jsonschema`` find the error to report. The checker knows the keywords
# the schemas here use (draft 2020-12 semantics, those of ``jsonschema``); a schema with any
# other keyword gets no checker and always goes through ``jsonschema``. A test holds the two
# to the same verdict on fuzzed instances of every family (tests/test_schema_fast.py).

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {"description", "title", "$schema", "$defs", "$comment", "default", "examples"}
)


class _Unsupported(Exception):
    pass


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}


def _equal(a: Any, b: Any) -> bool:
    """JSON equality as ``jsonschema`` has it (``true`` is not ``1``; ``1`` is ``1.0``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return a is None and b is None


def _compile(schema: Any, root: Mapping[str, Any], refs: dict[str, Check]) -> Check:
    if schema is True:
        return lambda v: True
    if schema is False:
        return lambda v: False
    if not isinstance(schema, Mapping):
        raise _Unsupported
    checks: list[Check] = []
    for key, arg in schema.items():
        if key in _ANNOTATIONS or key in ("then", "else"):
            continue
        checks.append(_keyword(key, arg, schema, root, refs))
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _keyword(
    key: str, arg: Any, schema: Mapping[str, Any], root: Mapping[str, Any], refs: dict[str, Check]
) -> Check:
    import re

    sub = functools.partial(_compile, root=root, refs=refs)
    if key == "type":
        kinds = [_TYPES[t] for t in (arg if isinstance(arg, list) else [arg])]
        return lambda v: any(kind(v) for kind in kinds)
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        bound = arg
        compare = {  # negated as jsonschema writes them (a NaN breaks none of them)
            "minimum": lambda v: not v < bound,
            "maximum": lambda v: not v > bound,
            "exclusiveMinimum": lambda v: not v <= bound,
            "exclusiveMaximum": lambda v: not v >= bound,
        }[key]
        return lambda v: not _is_number(v) or compare(v)
    if key in ("minLength", "maxLength"):
        size = arg
        if key == "minLength":
            return lambda v: not isinstance(v, str) or len(v) >= size
        return lambda v: not isinstance(v, str) or len(v) <= size
    if key == "pattern":
        regex = re.compile(arg)
        return lambda v: not isinstance(v, str) or regex.search(v) is not None
    if key in ("minItems", "maxItems"):
        size = arg
        if key == "minItems":
            return lambda v: not isinstance(v, list) or len(v) >= size
        return lambda v: not isinstance(v, list) or len(v) <= size
    if key in ("minProperties", "maxProperties"):
        size = arg
        if key == "minProperties":
            return lambda v: not isinstance(v, dict) or len(v) >= size
        return lambda v: not isinstance(v, dict) or len(v) <= size
    if key == "const":
        return lambda v: _equal(v, arg)
    if key == "enum":
        options = list(arg)
        return lambda v: any(_equal(v, option) for option in options)
    if key == "required":
        names = list(arg)
        return lambda v: not isinstance(v, dict) or all(name in v for name in names)
    if key == "properties":
        props = {name: sub(s) for name, s in arg.items()}
        return lambda v: (
            not isinstance(v, dict)
            or all(check(v[name]) for name, check in props.items() if name in v)
        )
    if key == "patternProperties":
        patterns = [(re.compile(p), sub(s)) for p, s in arg.items()]
        return lambda v: (
            not isinstance(v, dict)
            or all(
                check(item)
                for name, item in v.items()
                for regex, check in patterns
                if regex.search(name)
            )
        )
    if key == "additionalProperties":
        known = set(schema.get("properties", {}))
        regexes = [re.compile(p) for p in schema.get("patternProperties", {})]
        extra = sub(arg)

        def additional(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for name, item in v.items():
                if name in known or any(r.search(name) for r in regexes):
                    continue
                if not extra(item):
                    return False
            return True

        return additional
    if key == "propertyNames":
        names_check = sub(arg)
        return lambda v: not isinstance(v, dict) or all(names_check(name) for name in v)
    if key == "items":
        start = len(schema.get("prefixItems", ()))
        each = sub(arg)
        return lambda v: not isinstance(v, list) or all(each(item) for item in v[start:])
    if key == "prefixItems":
        firsts = [sub(s) for s in arg]
        return lambda v: (
            not isinstance(v, list)
            or all(check(item) for check, item in zip(firsts, v, strict=False))
        )
    if key in ("allOf", "anyOf", "oneOf"):
        parts = [sub(s) for s in arg]
        if key == "allOf":
            return lambda v: all(part(v) for part in parts)
        if key == "anyOf":
            return lambda v: any(part(v) for part in parts)
        return lambda v: sum(1 for part in parts if part(v)) == 1
    if key == "if":
        condition = sub(arg)
        then = sub(schema.get("then", True))
        otherwise = sub(schema.get("else", True))
        return lambda v: then(v) if condition(v) else otherwise(v)
    if key == "$ref":
        if not isinstance(arg, str) or not arg.startswith("#/$defs/"):
            raise _Unsupported
        name = arg.removeprefix("#/$defs/")
        definition = root.get("$defs", {}).get(name)
        if definition is None:
            raise _Unsupported
        if name not in refs:
            refs[name] = lambda v: True  # a recursive reference: filled in below
            compiled = _compile(definition, root, refs)
            refs[name] = compiled
        return lambda v: refs[name](v)
    raise _Unsupported


_FAST: dict[int, tuple[Mapping[str, Any], Check | None]] = {}
_FAST_ENTRIES = 256


def fast_check(schema: Mapping[str, Any]) -> Check | None:
    """The compiled yes/no checker of ``schema`` (cached; ``None`` when the schema uses a
    keyword the compiler does not know). Schemas must not change after their first use."""
    entry = _FAST.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    try:
        check: Check | None = _compile(schema, schema, {})
    except (_Unsupported, KeyError, TypeError, ValueError):
        check = None
    if len(_FAST) >= _FAST_ENTRIES:  # schemas made per call would pile up: start over
        _FAST.clear()
    _FAST[id(schema)] = (schema, check)
    return check


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
    check = fast_check(schema)
    if check is not None and check(data):
        return
    from jsonschema.exceptions import best_match

    validator = _validator(json.dumps(schema, sort_keys=True))
    error = best_match(validator.iter_errors(data))
    if error is not None:
        raise _describe(error)
