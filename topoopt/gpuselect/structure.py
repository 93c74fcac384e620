"""The count-profile decomposition of structured bandwidth models (table, bottleneck, topology).

For a structured model ``B(S) = min(min_h intra_h(S ∩ h), inter(c))`` with ``c_h = |S ∩ h|``,
the best subset of a given count on one host does not depend on the other hosts: replacing
``S ∩ h`` by the best ``c_h``-subset of host ``h`` never lowers ``B``. So the optimum is the
best over **count vectors** ``c`` (``sum c = k``) of
``min(min_{h: c_h >= 2} best_h(c_h), inter(c))`` (or ``best_h(k)`` for one host), which the
fast oracle and the MIP search. :class:`Decomposition` precomputes ``best_h(c)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from topoopt.core.errors import TopooptError
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.masks import submask_array
from topoopt.gpuselect.models import ProfileBound, StructuredBound


def structured_bound(instance: GpuSelectInstance) -> StructuredBound:
    """The instance's bound model if it is structured, else a clear error."""
    bound = instance.bound
    if not isinstance(bound, StructuredBound):
        raise TopooptError(
            f"instance {instance.name!r}: this solver needs a structured bandwidth model "
            f"(table, bottleneck or topology), not {instance.bandwidth.kind!r}"
        )
    return bound


class Decomposition:
    """Best intra-host subset of every count on every host of a structured instance.

    Attributes
    ----------
    best
        ``best[h][c] = (value, mask)``: the largest intra-host bandwidth of a ``c``-subset of
        host ``h``'s idle GPUs and that subset; ``c = 0`` is ``(inf, 0)``; ``c = 1`` holds the
        best single-GPU table value (``nan`` if the table has none).
    """

    def __init__(self, instance: GpuSelectInstance) -> None:
        self.instance = instance
        self.bound = structured_bound(instance)
        self.k = instance.k
        self.avail = [h.n_available for h in instance.hosts]
        self.best: list[list[tuple[float, int]]] = []
        shared: dict[tuple[int, int], list[tuple[float, int]]] = {}  # same type, same idle GPUs
        for h, host in enumerate(instance.hosts):
            key = (int(self.bound.type_index[h]), host.available_mask)
            if key not in shared:
                shared[key] = self._best_by_count(h)
            self.best.append(shared[key])

    def _best_by_count(self, h: int) -> list[tuple[float, int]]:
        """``best[h]`` (raises :class:`MissingEntryError` for a missing entry of >= 2 GPUs)."""
        host = self.instance.hosts[h]
        row: list[tuple[float, int]] = [(math.inf, 0)]
        table = self.bound.tables[self.bound.type_index[h]]
        for c in range(1, host.n_available + 1):
            masks = submask_array(host.available_mask, c)
            vals = table[masks]
            missing = np.isnan(vals)
            if c >= 2 and missing.any():
                self.bound.intra(h, int(masks[np.argmax(missing)]))  # raises, naming it
            if missing.all():
                row.append((math.nan, int(masks[0])))
            else:
                j = int(np.nanargmax(vals))
                row.append((float(vals[j]), int(masks[j])))
        return row

    def intra(self, h: int, c: int) -> float:
        """Intra term of host ``h`` contributing ``c`` GPUs to a spanning subset."""
        return math.inf if c <= 1 else self.best[h][c][0]

    def single_host(self) -> tuple[float, int] | None:
        """Best single-host subset of ``k`` GPUs as ``(value, host)``, if one host fits."""
        fits = [
            (self.best[h][self.k][0], h) for h in range(len(self.avail)) if self.avail[h] >= self.k
        ]
        if not fits:
            return None
        if self.k == 1 and any(math.isnan(val) for val, _ in fits):
            h = next(h for val, h in fits if math.isnan(val))
            self.bound.intra(h, self.best[h][1][1])  # raises: single GPU missing in its table
        return max(fits, key=lambda vh: (vh[0], -vh[1]))

    def masks(self, counts: Sequence[int]) -> list[int]:
        """The subset made of the best ``counts[h]``-subset of every host."""
        return [self.best[h][c][1] for h, c in enumerate(counts)]

    def spanning_possible(self) -> bool:
        """Whether some k-subset spans two or more hosts."""
        if self.k < 2:
            return False
        return sum(1 for a in self.avail if a) >= 2

    def spanning_value(self, counts: Sequence[int]) -> float:
        """``B`` of the best subset with per-host counts ``counts`` spanning >= 2 hosts."""
        terms = [self.intra(h, c) for h, c in enumerate(counts) if c]
        return min([*terms, self.bound.inter(list(counts))])


def spanning_profiles(avail: Sequence[int], k: int) -> Iterator[tuple[int, ...]]:
    """Count profiles (decreasing, >= 2 parts) of ``k`` that distinct hosts with ``avail``
    idle GPUs can realise, largest first part first (then the second, ...).

    Lazy and iterative: any ``k`` and any number of hosts, no recursion.

    Examples
    --------
    >>> list(spanning_profiles([3, 2, 1], 4))
    [(3, 1), (2, 2), (2, 1, 1)]
    """
    caps = sorted((a for a in avail if a), reverse=True)
    if not caps or k < 1:
        return
    parts: list[int] = []
    left = k
    p = min(k, caps[0])  # the part to try at depth len(parts)
    while True:
        if p >= 1:
            parts.append(p)
            left -= p
            if left == 0:
                if len(parts) >= 2:
                    yield tuple(parts)
            elif len(parts) < len(caps):
                p = min(left, p, caps[len(parts)])  # descend
                continue
            left += parts.pop()  # a leaf or a dead end: the next smaller part here
            p -= 1
            continue
        if not parts:  # every part at this depth tried: back up one level
            return
        last = parts.pop()
        left += last
        p = last - 1


def spanning_vectors(avail: Sequence[int], k: int) -> Iterator[tuple[int, ...]]:
    """Count vectors in host order (``c_h <= avail[h]``, sum ``k``, >= 2 hosts used), in
    lexicographic order.

    Lazy and iterative, and only vectors that can still reach ``k`` are extended, so the
    next vector comes after ``O(hosts)`` work however many hosts there are.

    Examples
    --------
    >>> list(spanning_vectors([2, 1, 1], 2))
    [(0, 1, 1), (1, 0, 1), (1, 1, 0)]
    """
    n = len(avail)
    if n == 0:
        return
    rest = [0] * (n + 1)  # rest[i]: idle GPUs of hosts i..n-1
    for i in range(n - 1, -1, -1):
        rest[i] = rest[i + 1] + avail[i]
    counts = [0] * n
    before = [0] * (n + 1)  # before[i]: GPUs taken from hosts 0..i-1
    i = 0
    counts[0] = max(0, k - rest[1]) - 1
    while i >= 0:
        counts[i] += 1
        if counts[i] > min(avail[i], k - before[i]):
            i -= 1
            continue
        before[i + 1] = before[i] + counts[i]
        if i == n - 1:
            if before[n] == k and sum(1 for c in counts if c) >= 2:
                yield tuple(counts)
            continue
        i += 1
        counts[i] = max(0, k - before[i] - rest[i + 1]) - 1


def iter_required_keys(dec: Decomposition) -> Iterator[tuple[int, ...]]:
    """Cross-table keys an exact search needs, lazily: every realisable spanning count key."""
    bound = dec.bound
    assert isinstance(bound, ProfileBound)
    if not dec.spanning_possible():
        return iter(())
    if bound.interchangeable:
        return spanning_profiles(dec.avail, dec.k)
    return spanning_vectors(dec.avail, dec.k)


def required_keys(dec: Decomposition) -> list[tuple[int, ...]]:
    """Cross-table keys an exact search needs: every realisable spanning count key.

    Call :func:`check_profiles_complete` first: then every key is in the table and the list
    is no longer than the table.
    """
    return list(iter_required_keys(dec))


def check_profiles_complete(dec: Decomposition) -> None:
    """Raise :class:`MissingEntryError` naming the first spanning key missing in the table
    (after at most one key more than the table holds)."""
    bound = dec.bound
    assert isinstance(bound, ProfileBound)
    for key in iter_required_keys(dec):
        bound.inter(key if not bound.interchangeable else list(key))


__all__ = [
    "Decomposition",
    "check_profiles_complete",
    "iter_required_keys",
    "required_keys",
    "spanning_profiles",
    "spanning_vectors",
    "structured_bound",
]
