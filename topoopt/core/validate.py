"""Small readers for JSON input that raise :class:`InvalidInstanceError` naming the field.

Families use these in their ``from_dict`` so that every bad input produces
``"<json.path>: <rule>"`` instead of a ``KeyError`` or ``TypeError``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from typing import Any

from topoopt.core.errors import InvalidInstanceError, InvalidOptionError


def join(path: str, key: str | int) -> str:
    """Extend a JSON path: ``join("job", "tp") == "job.tp"``, ``join("a", 2) == "a[2]"``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def field(data: Mapping[str, Any], key: str, path: str = "") -> Any:
    """``data[key]``, or an error saying the field is missing."""
    if not isinstance(data, Mapping):
        raise InvalidInstanceError(path or "<root>", "must be a JSON object")
    if key not in data:
        raise InvalidInstanceError(join(path, key), "missing required field")
    return data[key]


def as_mapping(value: Any, path: str) -> Mapping[str, Any]:
    """``value`` if it is a JSON object."""
    if not isinstance(value, Mapping):
        raise InvalidInstanceError(path, f"must be a JSON object, got {type(value).__name__}")
    return value


def as_list(value: Any, path: str, *, min_len: int = 0) -> Sequence[Any]:
    """``value`` if it is a JSON array of at least ``min_len`` items."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidInstanceError(path, f"must be a JSON array, got {type(value).__name__}")
    if len(value) < min_len:
        raise InvalidInstanceError(path, f"must have at least {min_len} item(s)")
    return value


def as_number(value: Any) -> Any:
    """``value`` with a number of another library (a NumPy scalar, ...) made a Python number.

    Integral numbers become ``int``, other real numbers ``float``; ``bool`` and everything that
    is not a number are returned unchanged (so the readers below refuse them).

    Examples
    --------
    >>> import numpy as np
    >>> as_number(np.int64(8)), as_number(np.float32(0.5)), as_number(True), as_number("8")
    (8, 0.5, True, '8')
    """
    if isinstance(value, (bool, int, float)) or not isinstance(value, numbers.Real):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    return float(value)


def as_int(value: Any, path: str, *, minimum: int | None = None) -> int:
    """``value`` as an ``int``: integral floats (``6.0``) and NumPy integers are converted,
    booleans and fractional numbers refused.

    Examples
    --------
    >>> import numpy as np
    >>> as_int(np.int32(3), "k"), as_int(8.0, "k")
    (3, 8)
    >>> as_int(True, "k")
    Traceback (most recent call last):
    ...
    topoopt.core.errors.InvalidInstanceError: k: must be an integer, got True
    """
    value = as_number(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInstanceError(path, f"must be an integer, got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise InvalidInstanceError(path, f"must be an integer, got {value!r}")
    number = int(value)
    if minimum is not None and number < minimum:
        rule = "non-negative" if minimum == 0 else f">= {minimum}"
        raise InvalidInstanceError(path, f"must be {rule}, got {number}")
    return number


def as_float(
    value: Any, path: str, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    """``value`` (a Python or NumPy number, not a ``bool``) as a finite ``float`` within
    ``[minimum, maximum]``."""
    value = as_number(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInstanceError(path, f"must be a finite number, got {value!r}")
    number = float(value)
    low = -math.inf if minimum is None else minimum
    high = math.inf if maximum is None else maximum
    if not low <= number <= high:
        raise InvalidInstanceError(path, f"must lie in [{low:g}, {high:g}], got {number:g}")
    return number


def as_positive(value: Any, path: str, maximum: float, minimum: float = 0.0) -> float:
    """``value`` as a finite ``float > 0`` within ``[minimum, maximum]`` (a bandwidth, a time).

    Examples
    --------
    >>> as_positive(0, "tor_gbps", 1e9)
    Traceback (most recent call last):
    ...
    topoopt.core.errors.InvalidInstanceError: tor_gbps: must be > 0, got 0
    """
    number = as_float(value, path, maximum=maximum)
    if number <= 0:
        raise InvalidInstanceError(path, f"must be > 0, got {number:g}")
    if number < minimum:
        raise InvalidInstanceError(path, f"must be >= {minimum:g}, got {number:g}")
    return number


def as_str(value: Any, path: str) -> str:
    """``value`` if it is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidInstanceError(path, f"must be a non-empty string, got {value!r}")
    return str(value)


def as_tuple(value: Any, path: str, *, min_len: int = 0) -> tuple[Any, ...]:
    """An ordered collection (list, tuple, generator, NumPy array, ...) as a tuple.

    Strings, mappings and sets are refused (a set has no order), as by :func:`as_list`.
    """
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping, Set)):
        value = tuple(value)
    return tuple(as_list(value, path, min_len=min_len))


@contextmanager
def within(prefix: str) -> Iterator[None]:
    """Re-raise an :class:`InvalidInstanceError` with its field path placed under ``prefix``
    (so a part validated on its own reports the full JSON path inside the whole).

    Examples
    --------
    >>> with within("hosts[2]"):
    ...     as_int(8.5, "gpus")
    Traceback (most recent call last):
    ...
    topoopt.core.errors.InvalidInstanceError: hosts[2].gpus: must be an integer, got 8.5
    """
    try:
        yield
    except InvalidInstanceError as exc:
        field = exc.field
        if not field:
            field = prefix
        elif field.startswith("["):
            field = f"{prefix}{field}"
        else:
            field = f"{prefix}.{field}"
        raise InvalidInstanceError(field, exc.rule) from None


def unique_names(names: Sequence[str], path: str) -> None:
    """Raise if a name repeats."""
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise InvalidInstanceError(join(path, i), f"duplicate name {name!r}")
        seen.add(name)


def as_labels(value: Any, path: str = "labels") -> dict[str, str]:
    """``value`` as user labels: a JSON object of non-empty string keys and string values.

    Labels are free-form metadata of an instance (e.g. ``{"setting": "iii"}``); families add
    them to their :attr:`~topoopt.core.family.Family.tags`, so benchmark reports can group by
    them.
    """
    labels = as_mapping(value, path)
    out: dict[str, str] = {}
    for key, item in labels.items():
        as_str(key, f"{path} key")
        if not isinstance(item, str):
            raise InvalidInstanceError(join(path, key), f"must be a string, got {item!r}")
        out[key] = item
    return out


def option_int(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an ``int`` in ``[low, high]``, or an :class:`InvalidOptionError` naming the
    option ``name`` (for generator and solver options, not instance fields).

    Examples
    --------
    >>> option_int("count", -3, 1, 10)
    Traceback (most recent call last):
    ...
    topoopt.core.errors.InvalidOptionError: count: must be an integer in [1, 10], got -3
    """
    rule = f"{name}: must be an integer in [{low}, {high}], got {value!r}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidOptionError(rule)
    number = int(value)
    if not low <= number <= high:
        raise InvalidOptionError(rule)
    return number
