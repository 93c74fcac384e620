"""The benchmark record schema: one table of field → rule, checked on every record read.

:data:`FIELDS` is the whole layout of a record (see :mod:`topoopt.bench.records`): each
:class:`Field` names a field, whether it is required, and a :class:`Rule` (a predicate with a
phrase for the error message). :func:`record_problem` checks a record against the table and
returns the first problem in plain words, e.g. ``seed must be a non-negative integer, got
'x'``; the readers of :mod:`topoopt.bench.records` prefix it with the file and line. Fields
the table does not name are the family's solution metrics (``dp_spread``, ``bandwidth``, ...),
which :meth:`topoopt.Result.to_dict` writes as numbers, ``"inf"`` / ``"-inf"`` or ``null``.

Optional fields are those that hand-made or older records may lack and that the report reads
with a default (``tags`` predates tag support; ``bound``, ``gap`` and the timings besides
``total_s`` are not used by the report). A field added to the records needs a row here, or it
is checked as a metric.

Examples
--------
>>> record_problem({"seed": "x"})
'missing required field(s): family, suite, instance, instance_hash, solver, backend, repeat, \
sense, status, termination, objective, total_s, size'
>>> record_problem(
...     {"family": "f", "suite": "s", "instance": "i", "instance_hash": "h", "solver": "f/a",
...      "backend": None, "seed": "x", "repeat": 0, "sense": "minimize", "status": "feasible",
...      "termination": "completed", "objective": 1.0, "total_s": 0.5, "size": {}})
"seed must be a non-negative integer, got 'x'"
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from topoopt.core.result import JSON_INFINITY
from topoopt.core.status import SolutionStatus

RECORD_VERSION = 1
"""Version of the record layout; stored in every record as ``record_version``."""

ERROR_STATUS = "error"
"""``status`` of a record whose run produced no result (timeout, crash, exception, memory)."""

STATUSES = (*(s.label for s in SolutionStatus), ERROR_STATUS)
"""The values of ``status``: a :class:`~topoopt.core.status.SolutionStatus` label or
:data:`ERROR_STATUS`."""

SENSES = ("minimize", "maximize")

SHOWN_CHARS = 60
"""Characters of an offending value quoted in an error message."""


@dataclass(frozen=True)
class Rule:
    """What a field's value must be.

    Attributes
    ----------
    holds
        Predicate on the value.
    expected
        The rule in words, after "must be": ``"a non-negative integer"``.
    """

    holds: Callable[[Any], bool]
    expected: str


@dataclass(frozen=True)
class Field:
    """One row of the record table: a field, whether a record must have it, and its rule."""

    name: str
    rule: Rule
    required: bool = True


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _or_null(rule: Rule) -> Rule:
    return Rule(lambda v: v is None or rule.holds(v), f"{rule.expected} or null")


def _object_of(values: Rule, expected: str) -> Rule:
    return Rule(
        lambda v: isinstance(v, dict) and all(values.holds(x) for x in v.values()),
        f"an object of {expected}",
    )


TEXT = Rule(lambda v: isinstance(v, str), "a string")
NAME = Rule(lambda v: isinstance(v, str) and v != "", "a non-empty string")
NON_NEGATIVE_INT = Rule(lambda v: _is_int(v) and v >= 0, "a non-negative integer")
INTEGER = Rule(_is_int, "an integer")
NUMBER = Rule(_is_number, "a finite number")
NUMBER_OR_INFINITY = Rule(
    lambda v: _is_number(v) or (isinstance(v, str) and v in JSON_INFINITY),
    'a finite number, "inf" or "-inf"',
)
NON_NEGATIVE = Rule(lambda v: _is_number(v) and v >= 0, "a finite number >= 0")
POSITIVE = Rule(lambda v: _is_number(v) and v > 0, "a finite number > 0")
OBJECT = Rule(lambda v: isinstance(v, dict), "an object")
TEXT_LIST = Rule(
    lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"
)


def _one_of(values: tuple[str, ...]) -> Rule:
    return Rule(lambda v: v in values, "one of " + ", ".join(repr(x) for x in values))


FIELDS: tuple[Field, ...] = (
    # identity (record_key plus the family and suite the report groups by)
    Field("family", NAME),
    Field("suite", TEXT),
    Field("instance", NAME),
    Field("instance_hash", NAME),
    Field("solver", NAME),
    Field("backend", _or_null(NAME)),
    Field("seed", NON_NEGATIVE_INT),
    Field("repeat", NON_NEGATIVE_INT),
    # outcome
    Field("sense", _one_of(SENSES)),
    Field("status", _one_of(STATUSES)),
    Field("termination", NAME),
    Field("objective", _or_null(NUMBER)),
    Field("total_s", NON_NEGATIVE),
    Field("size", _object_of(NON_NEGATIVE_INT, "non-negative integers")),
    # optional: older or hand-made records may lack them; the report has defaults
    Field("record_version", Rule(lambda v: _is_int(v) and v == RECORD_VERSION, "1"), False),
    Field("instance_file", TEXT, False),
    Field("bound", _or_null(NUMBER_OR_INFINITY), False),
    Field("gap", _or_null(NUMBER_OR_INFINITY), False),
    Field("build_s", _or_null(NON_NEGATIVE), False),
    Field("solve_s", _or_null(NON_NEGATIVE), False),
    Field("wall_s", _or_null(NON_NEGATIVE), False),
    Field("peak_memory_mb", _or_null(NON_NEGATIVE), False),
    Field("time_limit", _or_null(POSITIVE), False),
    Field("hard_timeout", _or_null(POSITIVE), False),
    Field("threads", _or_null(INTEGER), False),
    Field("executor", _or_null(TEXT), False),
    Field("message", _or_null(TEXT), False),
    Field("violations", TEXT_LIST, False),
    Field("tags", _object_of(TEXT, "strings"), False),
    Field("versions", _object_of(_or_null(TEXT), "strings or nulls"), False),
    Field("host", OBJECT, False),
    Field("started_at", TEXT, False),
)
"""The record layout, field by field (identity, outcome, then optional fields)."""

METRIC = _or_null(NUMBER_OR_INFINITY)
"""Rule of every field not in :data:`FIELDS`: a family's solution metric (``"inf"`` for an
infinite one, e.g. clusterselect's ``bottleneck_gbps`` of a single cluster)."""

_BY_NAME = {field.name: field for field in FIELDS}
REQUIRED = tuple(field.name for field in FIELDS if field.required)
"""Fields every record must have."""


def shown(value: Any) -> str:
    """``repr(value)`` cut to :data:`SHOWN_CHARS` characters (one line: ``repr`` escapes
    control characters).

    Examples
    --------
    >>> shown("x"), shown(None), shown("a" * 100)[-5:]
    ("'x'", 'None', 'aa...')
    """
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _field_name(name: str) -> str:
    text = repr(name)[1:-1]
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def record_problem(record: Mapping[str, Any]) -> str | None:
    """The first way ``record`` breaks the table, in words, or ``None`` when it is valid.

    Missing required fields come first (all of them in one message), then each field in the
    record's order.
    """
    missing = [name for name in REQUIRED if name not in record]
    if missing:
        return "missing required field(s): " + ", ".join(missing)
    for name, value in record.items():
        field = _BY_NAME.get(name)
        rule = METRIC if field is None else field.rule
        if not rule.holds(value):
            what = _field_name(name) + ("" if field is not None else " (a metric)")
            return f"{what} must be {rule.expected}, got {shown(value)}"
    return None
