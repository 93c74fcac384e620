"""Free-node state: a hostlist expression, a file of names, or ``sinfo`` output.

:func:`read_free` takes any of them:

* a hostlist expression, ``"tux[0-3,12]"`` (several may be separated by commas or spaces);
* ``"@path"`` or a :class:`~pathlib.Path`: a file whose lines each hold names or hostlist
  expressions (``#`` starts a comment), **or** the output of
  ``sinfo -N -h -o "%N %t"`` (a node name and its compact state per line), recognised when
  every line has two fields and the second is a Slurm state.

From ``sinfo`` a node is free when its state is ``idle`` (and ``mix``, when
``mixed=True``: a partly used node). A state with a flag suffix is not free (``idle*``: not
responding, ``idle~``: powered off, ``idle#``: powering up, ``idle%``: powering down,
``idle!``: pending power down, ``idle@``: pending reboot, ``idle$``: in a maintenance
reservation, ``idle^``: rebooting, ``idle-``: planned for a higher-priority job) unless
``powered_off=True`` admits ``~`` (Slurm powers such nodes up for a job). A node listed once
per partition is counted once.
"""

from __future__ import annotations

import re
from os import PathLike
from pathlib import Path

from topoopt.topology._errors import TopologyError
from topoopt.topology._hostlist import expand, natural_key
from topoopt.topology._slurm import _read_text

__all__ = ["SINFO_STATES", "parse_sinfo", "read_free"]

#: Slurm's compact node states (``sinfo %t``).
SINFO_STATES = frozenset(
    [
        "alloc",
        "allocated",
        "blocked",
        "boot",
        "comp",
        "completing",
        "down",
        "drain",
        "drained",
        "drng",
        "draining",
        "fail",
        "failing",
        "futr",
        "future",
        "idle",
        "inval",
        "maint",
        "mix",
        "mixed",
        "npc",
        "perfctrs",
        "plnd",
        "planned",
        "pow_dn",
        "pow_up",
        "reboot",
        "resv",
        "unk",
        "unknown",
    ]
)
_STATE = re.compile(r"^([a-z_]+)([*~#!%$@^\-]*)$")


def parse_sinfo(
    text: str,
    source: str | PathLike[str] = "<sinfo>",
    *,
    mixed: bool = False,
    powered_off: bool = False,
) -> frozenset[str]:
    """The free nodes in the output of ``sinfo -N -h -o "%N %t"``.

    Raises
    ------
    TopologyError
        Naming the line, for a line without two fields or an unknown state.

    Examples
    --------
    >>> sorted(parse_sinfo("n1 idle\\nn2 mix\\nn3 alloc\\nn4 idle*\\nn1 idle\\n", mixed=True))
    ['n1', 'n2']
    """
    free: set[str] = set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2:
            raise TopologyError(
                f"expected 'NODE STATE' (sinfo -N -h -o \"%N %t\"), got {line!r}",
                source=source,
                line=number,
            )
        node, state = fields
        m = _STATE.match(state.lower())
        if not m or m.group(1) not in SINFO_STATES:
            raise TopologyError(f"unknown node state {state!r}", source=source, line=number)
        base, flags = m.group(1), m.group(2)
        ok_flags = flags == "" or (powered_off and flags == "~")
        wanted = base == "idle" or (mixed and base in ("mix", "mixed"))
        if wanted and ok_flags:
            free.add(node)
    return frozenset(free)


def _looks_like_sinfo(lines: list[str]) -> bool:
    if not lines:
        return False
    for line in lines:
        fields = line.split()
        if len(fields) != 2:
            return False
        m = _STATE.match(fields[1].lower())
        if not m or m.group(1) not in SINFO_STATES:
            return False
    return True


def read_free(
    spec: str | PathLike[str], *, mixed: bool = False, powered_off: bool = False
) -> frozenset[str]:
    """The free nodes given by a hostlist expression, ``@file``, or a path.

    Parameters
    ----------
    spec
        A hostlist expression, ``"@path"``, or a :class:`~os.PathLike`.
    mixed
        For ``sinfo`` output: count ``mix`` nodes as free.
    powered_off
        For ``sinfo`` output: count powered-off idle nodes (``idle~``) as free.

    Raises
    ------
    TopologyError
        For an empty or malformed hostlist (naming the file and line when it comes from
        one), an unreadable file, or a malformed ``sinfo`` line.

    Examples
    --------
    >>> sorted(read_free("tux[0-2],tux7"))
    ['tux0', 'tux1', 'tux2', 'tux7']
    """
    if isinstance(spec, str) and not spec.startswith("@"):
        try:
            return frozenset(n for part in spec.split() for n in expand(part)) or _empty(spec)
        except TopologyError as exc:
            raise exc.at("<free nodes>") from None
    path = Path(spec[1:] if isinstance(spec, str) else spec)
    text = _read_text(path)
    lines = [(i, line.split("#", 1)[0].strip()) for i, line in enumerate(text.splitlines(), 1)]
    lines = [(i, line) for i, line in lines if line]
    if _looks_like_sinfo([line for _, line in lines]):
        return parse_sinfo(text, path, mixed=mixed, powered_off=powered_off)
    free: set[str] = set()
    for number, line in lines:
        for part in line.split():
            try:
                free.update(expand(part))
            except TopologyError as exc:
                raise TopologyError(exc.rule, source=path, line=number) from None
    return frozenset(sorted(free, key=natural_key))


def _empty(spec: str) -> frozenset[str]:
    raise TopologyError(f"empty hostlist {spec!r}")
