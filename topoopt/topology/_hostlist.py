"""Slurm hostlist expressions, through ClusterShell's :class:`~ClusterShell.NodeSet.NodeSet`.

Slurm writes sets of node and switch names as hostlist expressions: ``tux[0-3,12,18-20]``,
``srv[1101-1108]``, zero-padded ranges ``nid[00001-00004]``, several bracket groups
``r[1-2]n[01-04]`` and comma-separated lists of all of these. ClusterShell's ``NodeSet``
parses and folds exactly these; this module keeps only the Slurm subset of its syntax:
ClusterShell's set operators (``!``, ``&``, ``^``) and group references (``@name``) are
refused, as are names with whitespace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetException

from topoopt.topology._errors import TopologyError

__all__ = ["expand", "fold", "natural_key"]

_FORBIDDEN = re.compile(r"[!&^@\s]")
#: Characters a single node or switch name may not contain (they are hostlist syntax).
NAME_FORBIDDEN = re.compile(r"[\[\],!&^@\s#=]")


def expand(expression: str) -> list[str]:
    """The names a Slurm hostlist expression stands for, in natural order, without repeats.

    Parameters
    ----------
    expression
        A hostlist expression such as ``"tux[0-3,12,18-20]"`` or ``"r[1-2]n[01-04],login1"``.

    Raises
    ------
    TopologyError
        For an empty expression, a syntax error (unclosed bracket, reversed or non-numeric
        range) or a character Slurm hostlists do not have (``! & ^ @`` or whitespace).

    Examples
    --------
    >>> expand("tux[0-3,12,18-20]")
    ['tux0', 'tux1', 'tux2', 'tux3', 'tux12', 'tux18', 'tux19', 'tux20']
    >>> expand("r[1-2]n[01-02]")
    ['r1n01', 'r1n02', 'r2n01', 'r2n02']
    """
    text = expression.strip()
    if not text:
        raise TopologyError("empty hostlist")
    bad = _FORBIDDEN.search(text)
    if bad:
        raise TopologyError(
            f"hostlist {expression!r}: character {bad.group()!r} is not Slurm hostlist syntax"
        )
    try:
        names = list(NodeSet(text, resolver=RESOLVER_NOGROUP))
    except (NodeSetException, ValueError) as exc:
        raise TopologyError(f"hostlist {expression!r}: {exc}") from None
    if not names:
        raise TopologyError(f"hostlist {expression!r} names no node")
    return sorted(names, key=natural_key)


def fold(names: Iterable[str]) -> str:
    """The shortest hostlist expression ClusterShell finds for ``names`` (inverse of
    :func:`expand`).

    Examples
    --------
    >>> fold(["n3", "n1", "n2", "gpu01", "gpu02"])
    'gpu[01-02],n[1-3]'
    """
    listed = list(names)
    if not listed:
        raise TopologyError("cannot write an empty hostlist")
    return str(NodeSet.fromlist(listed, resolver=RESOLVER_NOGROUP))


_RUNS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int, str, int, int], ...]:
    """Sort key putting ``n2`` before ``n10`` (digit runs compare as numbers, then by width).

    Examples
    --------
    >>> sorted(["n10", "n2", "m1", "n02"], key=natural_key)
    ['m1', 'n2', 'n02', 'n10']
    """
    parts = _RUNS.split(name)
    key = []
    for i, part in enumerate(parts):
        if i % 2:
            key.append((1, "", int(part), len(part)))
        elif part:
            key.append((0, part, 0, 0))
    return tuple(key)


def check_name(name: object, what: str) -> str:
    """``name`` when it is a usable node or switch name, else a :class:`TopologyError`."""
    if not isinstance(name, str) or not name:
        raise TopologyError(f"{what} name must be a non-empty string, got {name!r}")
    bad = NAME_FORBIDDEN.search(name)
    if bad:
        raise TopologyError(f"{what} name {name!r} contains {bad.group()!r}")
    return name
