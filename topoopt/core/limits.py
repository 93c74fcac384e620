"""Size limits on untrusted input, checked before anything is allocated for it.

Every limit has a name, a default and a reason; its current value comes from, in order: a
value set in this process (:func:`set_limits`, or the :func:`limits_raised` context
manager), the environment variable ``TOPOOPT_LIMIT_<NAME>`` (upper case), the default. The
error of a broken limit names the limit and both ways to raise it, e.g.::

    topology.minipods: 100000000 free nodes exceed the limit placement_free_nodes=1000000
    (raise it with topoopt.set_limits(placement_free_nodes=...) or
    TOPOOPT_LIMIT_PLACEMENT_FREE_NODES)

The JSON limits below apply to every input file and JSON object topoopt reads (instances,
benchmark results, options); families add their own (:attr:`Family.limits
<topoopt.core.family.Family.limits>`), e.g. the free nodes of a placement instance or the
hosts of a gpuselect pool, and check them in their instance constructors.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from topoopt.core.errors import InvalidInstanceError, InvalidOptionError


@dataclass(frozen=True)
class Limit:
    """A named limit, its default and what it protects against."""

    name: str
    default: int
    doc: str


JSON_LIMITS = (
    Limit("json_file_bytes", 256 * 2**20, "bytes of one JSON file (instance, table, records)"),
    Limit("json_depth", 64, "nesting depth of arrays and objects in one JSON document"),
    Limit("json_string_chars", 1_000_000, "characters of one JSON string"),
    Limit("json_array_items", 10_000_000, "items of one JSON array or keys of one object"),
    Limit("json_int_digits", 19, "decimal digits of one JSON integer"),
)
"""The limits of every JSON document topoopt reads."""

MAX_INTEGER = 2**53
"""Largest magnitude of an integer field (the integers a JSON double holds exactly)."""

_DEFINED: dict[str, Limit] = {limit.name: limit for limit in JSON_LIMITS}
_SET: dict[str, int] = {}


def define(limit: Limit) -> None:
    """Declare a limit (families declare theirs when registered); redefining keeps the first."""
    _DEFINED.setdefault(limit.name, limit)


def defined() -> dict[str, Limit]:
    """Every declared limit by name (the installed families' included)."""
    _discover_families()
    return dict(sorted(_DEFINED.items()))


def _discover_families() -> None:
    """Register the installed families, which declares their limits."""
    from topoopt.core import registry  # registry imports this module

    registry.families()


def _env(name: str) -> str:
    return f"TOPOOPT_LIMIT_{name.upper()}"


def value(name: str) -> int:
    """The current value of the limit ``name`` (see the module docstring for the order)."""
    if name in _SET:
        return _SET[name]
    limit = _DEFINED.get(name)
    if limit is None:
        _discover_families()  # a family's limit may be set before the family is first used
        limit = _DEFINED.get(name)
    if limit is None:
        raise InvalidOptionError(f"unknown limit {name!r}; known: {', '.join(sorted(_DEFINED))}")
    raw = os.environ.get(_env(name))
    if raw is not None:
        try:
            number = int(raw)
        except ValueError:
            number = 0
        if number < 1:
            raise InvalidOptionError(f"{_env(name)}: must be a positive integer, got {raw!r}")
        return number
    return limit.default


def set_limits(**values: int) -> None:
    """Set limits for this process, e.g. ``set_limits(placement_free_nodes=5_000_000)``.

    Raises
    ------
    InvalidOptionError
        For an unknown limit or a value that is not a positive integer.
    """
    for name, number in values.items():
        value(name)  # known?
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise InvalidOptionError(f"limit {name}: must be a positive integer, got {number!r}")
    _SET.update(values)


@contextmanager
def limits_raised(**values: int) -> Iterator[None]:
    """Set limits inside a ``with`` block only."""
    saved = dict(_SET)
    set_limits(**values)
    try:
        yield
    finally:
        _SET.clear()
        _SET.update(saved)


def exceeded(name: str, what: str) -> str:
    """The rule text of a broken limit: ``"<what> exceed the limit <name>=<value> (raise
    it with ...)"``."""
    return (
        f"{what} exceed the limit {name}={value(name)} (raise it with "
        f"topoopt.set_limits({name}=...) or {_env(name)})"
    )


_BROKEN = re.compile(r" exceed the limit ([a-z0-9_]+)=")


def broken_limit(message: object) -> str | None:
    """The name of the limit an error message says was broken (see :func:`exceeded`), or
    ``None``. Errors are re-raised with longer JSON paths on their way out, so the message,
    written by :func:`exceeded` alone, is what tells a broken limit from another rule (the
    HTTP service answers ``413`` for it, ``docs/service.md``).

    Examples
    --------
    >>> broken_limit("minipods: 9 free nodes exceed the limit placement_free_nodes=8 (...)")
    'placement_free_nodes'
    >>> broken_limit("alpha: must lie in [0, 1], got 3") is None
    True
    """
    match = _BROKEN.search(str(message))
    return None if match is None else match.group(1)


def check(name: str, amount: int, field: str, what: str) -> None:
    """Raise :class:`InvalidInstanceError` at ``field`` when ``amount`` exceeds limit ``name``.

    ``what`` describes the amount in the message, e.g. ``"100000000 free nodes"``.
    """
    if amount > value(name):
        raise InvalidInstanceError(field, exceeded(name, what))


def declare_all(limits: Mapping[str, tuple[int, str]]) -> None:
    """Declare several limits ``{name: (default, doc)}`` at once."""
    for name, (default, doc) in limits.items():
        define(Limit(name, default, doc))
