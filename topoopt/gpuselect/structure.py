"""The count-profile decomposition of structured bandwidth models (table, bottleneck, topology).

For a structured model ``B(S) = min(min_h intra_h(S ∩ h), inter(c))`` with ``c_h = |S ∩ h|``,
the best subset of a given count on one host does not depend on the other hosts: replacing
``S ∩ h`` by the best ``c_h``-subset of host ``h`` never lowers ``B``. So the optimum is the
best over **count vectors** ``c`` (``sum c = k``) of
``min(min_{h: c_h >= 2} best_h(c_h), inter(c))`` (or ``best_h(k)`` for one host), which the
fast oracle and the MIP search. :class:`Decomposition` precomputes ``best_h(c)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

import numpy as np

from topoopt.core.errors import TopooptError
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.masks import submasks
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
        for h, host in enumerate(instance.hosts):
            row: list[tuple[float, int]] = [(math.inf, 0)]
            table = self.bound.tables[self.bound.type_index[h]]
            for c in range(1, host.n_available + 1):
                masks = np.fromiter(submasks(host.available_mask, c), dtype=np.int64)
                vals = table[masks]
                missing = np.isnan(vals)
                if c >= 2 and missing.any():
                    self.bound.intra(h, int(masks[np.argmax(missing)]))  # raises, naming it
                if missing.all():
                    row.append((math.nan, int(masks[0])))
                else:
                    j = int(np.nanargmax(vals))
                    row.append((float(vals[j]), int(masks[j])))
            self.best.append(row)

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
    idle GPUs can realise.

    Examples
    --------
    >>> list(spanning_profiles([3, 2, 1], 4))
    [(3, 1), (2, 2), (2, 1, 1)]
    """
    caps = sorted((a for a in avail if a), reverse=True)

    def parts(left: int, largest: int, taken: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        if left == 0:
            if len(taken) >= 2:
                yield taken
            return
        if len(taken) == len(caps):
            return
        for p in range(min(left, largest, caps[len(taken)]), 0, -1):
            yield from parts(left - p, p, (*taken, p))

    yield from parts(k, k, ())


def spanning_vectors(avail: Sequence[int], k: int) -> Iterator[tuple[int, ...]]:
    """Count vectors in host order (``c_h <= avail[h]``, sum ``k``, >= 2 hosts used)."""
    for counts in itertools.product(*(range(a + 1) for a in avail)):
        if sum(counts) == k and sum(1 for c in counts if c) >= 2:
            yield counts


def required_keys(dec: Decomposition) -> list[tuple[int, ...]]:
    """Cross-table keys an exact search needs: every realisable spanning count key."""
    bound = dec.bound
    assert isinstance(bound, ProfileBound)
    if not dec.spanning_possible():
        return []
    if bound.interchangeable:
        return list(spanning_profiles(dec.avail, dec.k))
    return list(spanning_vectors(dec.avail, dec.k))


def check_profiles_complete(dec: Decomposition) -> None:
    """Raise :class:`MissingEntryError` naming the first spanning key missing in the table."""
    bound = dec.bound
    assert isinstance(bound, ProfileBound)
    for key in required_keys(dec):
        bound.inter(key if not bound.interchangeable else list(key))


__all__ = [
    "Decomposition",
    "check_profiles_complete",
    "required_keys",
    "spanning_profiles",
    "spanning_vectors",
    "structured_bound",
]
