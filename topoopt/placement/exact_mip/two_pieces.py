"""Groups of equal length on at most two minipods each: an exact combinatorial packing.

The one-sided packing of :mod:`topoopt.placement.exact_mip.sides` with ``most = 2``: place ``n``
groups of ``L`` cells within the free nodes ``f_j``, each group on at most two minipods.

**Characterisation** (``docs/placement.md``, "Two pieces per group"). Draw a packing as a
multigraph on the minipods, one edge (or loop) per group. A connected component on the
minipod set ``G`` carrying ``c`` groups has ``c >= |G| - 1`` (it is connected) and
``c L <= f(G)``. Call ``G`` *valid* when ``v(G) = floor(f(G) / L) >= |G| - 1``. Hence:

    n groups pack  iff  the minipods can be partitioned into valid sets G_1, ..., G_r
                        with  v(G_1) + ... + v(G_r) >= n,

and, since ``f(V) - L sum v(G) = sum (f(G) mod L)``, iff the *waste*
``sum_i f(G_i) mod L`` of some partition into valid sets is at most the slack
``f(V) - n L``. Sufficiency is constructive:

* lower the values to sum exactly ``n``: lower ``c_G`` while ``c_G > |G| - 1``, else drop
  the smallest minipod of ``G`` with one group (the rest stays valid:
  ``f(G) - f_min >= (1 - 1/|G|) f(G) >= (|G| - 2) L``);
* pack each set with ``c`` groups on used amounts ``u_j <= f_j`` summing to ``c L``, by the
  alias method (Walker): while groups are left, take the minipod ``s`` with the least
  ``u_s``; if ``u_s >= L`` a whole group goes into it; else the group takes ``u_s`` from
  ``s`` and ``L - u_s`` from the minipod ``b`` with the most, which has enough because
  ``c >= |G| - 1`` gives ``u_b >= (c L - u_s) / (|G| - 1) >= L - u_s``; ``s`` is then
  empty and ``c >= |G| - 1`` holds again.

:func:`pack_two` searches the partitions depth first (the set of the first minipod left,
then the rest), with the waste so far plus ``(residues left) mod L`` as the bound and the
minimum waste of each set of minipods left memoised. It gives up beyond
:data:`MAX_PODS` minipods or :data:`MAX_WORK` candidate sets, leaving the question to the
integer programme of :mod:`topoopt.placement.exact_mip.sides`.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

import numpy as np

MAX_PODS = 18
"""Most minipods with free nodes :func:`pack_two` searches (its tables have ``2^M'``
entries)."""

MAX_WORK = 2_000_000
"""Most candidate sets :func:`pack_two` looks at before it gives up."""


class _GaveUp(Exception):
    """The search went over :data:`MAX_WORK`."""


def pack_two(
    caps: list[int], n_groups: int, length: int
) -> list[list[int]] | Literal[False] | None:
    """Place ``n_groups`` groups of ``length`` cells within the free nodes ``caps``, each on
    at most two minipods (see the module docstring).

    Returns the groups (the index into ``caps`` of each cell), ``False`` when it is
    impossible, or ``None`` when the search gave up.

    Examples
    --------
    >>> pack_two([5, 5, 5], 3, 5)  # one group per minipod
    [[0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [2, 2, 2, 2, 2]]
    >>> pack_two([4, 4, 4], 2, 6)  # the middle minipod is shared: pieces 4 + 2 and 2 + 4
    [[0, 0, 0, 0, 1, 1], [1, 1, 2, 2, 2, 2]]
    >>> pack_two([4, 1, 1, 1, 1], 2, 4)  # the second group would need four pieces of 1
    False
    """
    pods = [j for j, f in enumerate(caps) if f > 0]
    slack = sum(caps) - n_groups * length
    if slack < 0:
        return False
    if n_groups == 0:
        return []
    if len(pods) > MAX_PODS:
        return None
    sets = _search([caps[j] for j in pods], length, slack)
    if sets is None:
        return None
    if sets is False:
        return False
    groups: list[list[int]] = []
    for members, count in _lower(sets, [caps[j] for j in pods], length, n_groups):
        groups += _alias([pods[i] for i in members], caps, count, length)
    return groups


def _search(
    caps: list[int], length: int, slack: int
) -> list[tuple[int, ...]] | Literal[False] | None:
    """A partition of the minipods (local indices) into valid sets with waste at most
    ``slack``, ``False`` when there is none, ``None`` over the work limit."""
    m = len(caps)
    masks = np.arange(1 << m, dtype=np.int64)
    bits = (masks[:, None] >> np.arange(m)) & 1
    total = bits @ np.asarray(caps, dtype=np.int64)
    valid = total // length >= bits.sum(axis=1) - 1
    waste = total % length
    choice: dict[int, int] = {}
    work = 0

    @cache
    def least(left: int) -> int:
        """Least waste of a partition of ``left`` into valid sets, or ``slack + 1`` when
        that is more than ``slack``; the set of its lowest minipod goes to ``choice``."""
        nonlocal work
        if left == 0:
            return 0
        low = left & -left
        subs = _submasks(left ^ low) | low
        work += len(subs)
        if work > MAX_WORK:
            raise _GaveUp
        fits = subs[valid[subs] & (waste[subs] <= slack)]
        best = slack + 1
        for group in fits[np.argsort(waste[fits], kind="stable")].tolist():
            here = int(waste[group])
            if here + int(total[left ^ group]) % length >= best:
                continue  # the rest wastes at least its free nodes mod L
            if here + least(left ^ group) < best:
                best = here + least(left ^ group)
                choice[left] = group
        return best

    try:
        if least((1 << m) - 1) > slack:
            return False
    except _GaveUp:
        return None
    out = []
    left = (1 << m) - 1
    while left:
        group = choice[left]
        out.append(tuple(i for i in range(m) if group >> i & 1))
        left ^= group
    return out


def _submasks(mask: int) -> np.ndarray:
    """Every submask of ``mask`` (``0`` included)."""
    subs = np.zeros(1, dtype=np.int64)
    while mask:
        low = mask & -mask
        subs = np.concatenate([subs, subs | low])
        mask ^= low
    return subs


def _lower(
    sets: list[tuple[int, ...]], caps: list[int], length: int, n_groups: int
) -> list[tuple[tuple[int, ...], int]]:
    """The sets with their group counts lowered from ``floor(f(G) / L)`` to sum to
    ``n_groups``, each set still valid (see the module docstring)."""
    excess = sum(sum(caps[i] for i in s) // length for s in sets) - n_groups
    out = []
    for s in sets:
        members = sorted(s, key=lambda i: -caps[i])
        count = sum(caps[i] for i in s) // length
        while excess > 0 and count > 0:
            if count == len(members) - 1:
                members.pop()  # the smallest goes, with one group
            count -= 1
            excess -= 1
        if count > 0:
            out.append((tuple(members), count))
    return out


def _alias(members: list[int], caps: list[int], count: int, length: int) -> list[list[int]]:
    """``count`` groups of ``length`` on the minipods ``members`` (free nodes ``caps``), at
    most two each, by the alias method (see the module docstring)."""
    used = {}
    left = count * length
    for j in members:  # amounts u_j <= f_j summing to count * L
        used[j] = min(caps[j], left)
        left -= used[j]
    groups = []
    for _ in range(count):
        live = [j for j in members if used[j] > 0]
        small = min(live, key=lambda j: used[j])
        if used[small] >= length:
            used[small] -= length
            groups.append([small] * length)
            continue
        big = max((j for j in live if j != small), key=lambda j: used[j])
        piece = used[small]
        used[small] = 0
        used[big] -= length - piece
        groups.append([small] * piece + [big] * (length - piece))
    return groups
