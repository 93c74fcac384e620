"""Small helpers for the human summaries of solutions (``Family.describe``, what ``topoopt
solve`` prints): integer ranges and long lists shortened."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def ranges(numbers: Iterable[int]) -> str:
    """Sorted distinct integers as ranges.

    Examples
    --------
    >>> ranges([5, 0, 1, 2, 3, 7, 8, 11])
    '0-3, 5, 7-8, 11'
    >>> ranges([])
    'none'
    """
    values = sorted(set(numbers))
    if not values:
        return "none"
    parts, start = [], values[0]
    for previous, value in zip(values, [*values[1:], None], strict=True):
        if value is None or value != previous + 1:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
            start = value if value is not None else start
    return ", ".join(parts)


def shortened(items: Sequence[str], most: int, sep: str = " ") -> str:
    """``items`` joined by ``sep``, the first ``most`` of them and how many more.

    Examples
    --------
    >>> shortened(["a", "b", "c", "d"], 2)
    'a b ... and 2 more'
    """
    if len(items) <= most:
        return sep.join(items)
    return f"{sep.join(items[:most])} ... and {len(items) - most} more"


__all__ = ["ranges", "shortened"]
