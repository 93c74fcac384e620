"""One side at a time: pack the columns (or the rows) alone, each on at most a given number of
minipods.

For a target pair ``(A, B)`` (every column on at most ``A`` minipods, every row on at most
``B``), forget the rows: can the ``cols`` columns of ``rows`` cells each be placed within the
free nodes, each column on at most ``A`` minipods? That is bin packing with splittable items
of equal size and at most ``A`` pieces per item, and it is decided exactly by a small integer
programme over *column types*: ``p_T`` columns on the minipod set ``T`` (``1 <= |T| <= A``),
``c_{T,j}`` of their cells in minipod ``j in T``, with

    sum_T p_T = cols,   sum_{j in T} c_{T,j} = rows * p_T,   sum_{T ∋ j} c_{T,j} <= f_j.

Given integral ``p`` the cells form a transportation problem with integral data, so integral
``c`` exist (:func:`~topoopt.placement.exact_mip.transport.transport` recomputes them by a maximum
flow), and the ``p_T``
columns of a type take their cells from ``T`` one after the other, each exactly ``rows``
cells. Two uses (``docs/placement.md``, "One side at a time"):

* **Relaxation.** Every placement of ``(A, B)`` packs its columns this way with ``A`` and its
  rows with ``B``; if either packing is impossible, so is the pair. :class:`Sides` caches the
  answers per target, which are monotone (a packing with ``A`` is one with ``A + 1``).
* **Construction.** Pack the columns with ``A`` on the ``B`` largest minipods only: every row
  then touches at most those ``B`` minipods, whatever cell of each column it gets (on all
  minipods when ``B >= cols``: a row has only ``cols`` cells). Likewise the rows with ``B``
  on the ``A`` largest minipods.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from math import comb
from typing import Literal

from topoopt.placement.exact_mip._milp import SparseMilp
from topoopt.placement.exact_mip.transport import transport
from topoopt.placement.exact_mip.two_pieces import pack_two
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement

MAX_ALIGN_WORK = 500_000
"""Most cell comparisons of :func:`_align` (groups x length^2; about 50 ms)."""

MAX_TYPES = 2_000
"""Most group types (minipod sets of size ``1..most``) of one packing model; a larger model
is not built and the packing stays undecided."""

Packing = list[list[int]]
"""One list per group: the local minipod index of each of its cells."""


def n_types(n_pods: int, most: int) -> int:
    """Group types of a packing model: the minipod sets of size ``1..most``."""
    return sum(comb(n_pods, size) for size in range(1, min(most, n_pods) + 1))


def pack(
    caps: list[int], n_groups: int, length: int, most: int, time_limit: float = math.inf
) -> Packing | Literal[False] | None:
    """Place ``n_groups`` groups of ``length`` cells within the free nodes ``caps``, each
    group on at most ``most`` minipods.

    With ``most = 2`` the combinatorial search of
    :func:`~topoopt.placement.exact_mip.two_pieces.pack_two` decides first; the integer programme
    below only gets what it gives up on.

    Returns the groups (local minipod index per cell), ``False`` when it is impossible, or
    ``None`` when not decided (more than :data:`MAX_TYPES` types, or HiGHS ran out of
    ``time_limit`` seconds).

    Examples
    --------
    >>> pack([5, 5], 2, 5, 1)  # one group per minipod
    [[0, 0, 0, 0, 0], [1, 1, 1, 1, 1]]
    >>> pack([4, 6], 2, 5, 1)  # a group of 5 fits whole only in the second minipod
    False
    >>> [sorted(set(group)) for group in pack([4, 6], 2, 5, 2)]  # split one across both
    [[0, 1], [1]]
    """
    pods = [j for j, f in enumerate(caps) if f > 0]
    if n_groups * length > sum(caps):
        return False
    if most == 2:  # exact and combinatorial, in milliseconds where it does not give up
        found = pack_two(caps, n_groups, length)
        if found is not None:
            return found
    if n_types(len(pods), most) > MAX_TYPES:
        return None
    types = [t for size in range(1, most + 1) for t in itertools.combinations(pods, size)]
    milp = SparseMilp()
    count = [milp.var(0, n_groups, integer=True) for _ in types]
    cells = [{j: milp.var(0, min(caps[j], n_groups * length)) for j in t} for t in types]
    milp.row(dict.fromkeys(count, 1), n_groups, n_groups)
    load: dict[int, dict[int, float]] = {j: {} for j in pods}
    for v, per_pod in zip(count, cells, strict=True):
        milp.row({**dict.fromkeys(per_pod.values(), 1.0), v: -length}, 0, 0)
        for j, c in per_pod.items():
            load[j][c] = 1
    for j in pods:
        milp.row(load[j], upper=caps[j])
    status, values = milp.solve(time_limit)
    if status == "infeasible":
        return False
    if status == "unknown":
        return None
    counts = [round(values[v]) for v in count]
    split = transport([p * length for p in counts], types, caps)
    if split is None:  # HiGHS's point does not hold up in integers
        return None
    groups: Packing = []
    for t, p, per_pod in zip(types, counts, split, strict=True):
        pool = [j for j in t for _ in range(per_pod[j])]
        groups += [pool[g * length : (g + 1) * length] for g in range(p)]
    return groups


def _align(groups: Packing) -> Packing:
    """The groups with their cells rotated so that the other side's groups (position ``h``
    of every group) touch few minipods.

    A group may hold its cells in any order, and groups are interchangeable. Greedily, the
    groups with the most minipods first, each takes the rotation of its sorted cells that
    keeps the most minipods at any position lowest, then their sum. Left as they are beyond
    :data:`MAX_ALIGN_WORK` cell comparisons.

    Examples
    --------
    >>> _align([[0, 0, 1, 1], [1, 1, 2, 2]])  # positions see {0, 2}, {0, 2}, {1}, {1}
    [[0, 0, 1, 1], [2, 2, 1, 1]]
    """
    if not groups or len(groups) * len(groups[0]) ** 2 > MAX_ALIGN_WORK:
        return groups
    length = len(groups[0])
    seen: list[set[int]] = [set() for _ in range(length)]
    out = []
    for group in sorted(groups, key=lambda cells: -len(set(cells))):
        cells = sorted(group)
        best: tuple[tuple[int, int], list[int]] | None = None
        for shift in range(length):
            turned = cells[shift:] + cells[:shift]
            counts = [len(seen[h]) + (turned[h] not in seen[h]) for h in range(length)]
            if best is None or (max(counts), sum(counts)) < best[0]:
                best = (max(counts), sum(counts)), turned
        assert best is not None
        for h, j in enumerate(best[1]):
            seen[h].add(j)
        out.append(best[1])
    return out


class Sides:
    """The one-sided packings of one instance, cached per target (see the module docstring).

    Parameters
    ----------
    instance
        The placement instance.
    seconds
        Time each packing model may take (called before each solve).
    """

    def __init__(
        self, instance: PlacementInstance, seconds: Callable[[], float] = lambda: math.inf
    ) -> None:
        self.instance = instance
        self.seconds = seconds
        self._answers: dict[tuple[str, int], bool | None] = {}
        self._failed: set[tuple[str, int, int]] = set()

    def _packs(self, side: str, most: int) -> bool | None:
        """Whether the columns (``side="cols"``) or rows pack alone with ``most``; ``None``
        when not decided. Monotone answers are reused: a packing with fewer also holds with
        more, a failure with more also fails with fewer."""
        known = self._answers
        if any(k[0] == side and k[1] <= most and v for k, v in known.items()):
            return True
        if any(k[0] == side and k[1] >= most and v is False for k, v in known.items()):
            return False
        inst = self.instance
        n_groups, length = (inst.cols, inst.rows) if side == "cols" else (inst.rows, inst.cols)
        found = pack(list(inst.capacities), n_groups, length, most, self.seconds())
        known[side, most] = None if found is None else found is not False
        return known[side, most]

    def refutes(self, max_dp_use: int, max_pp_use: int) -> bool:
        """Whether the columns alone cannot be packed with ``A`` minipods each, or the rows
        alone with ``B``: then the pair ``(A, B)`` is infeasible."""
        return self._packs("cols", max_dp_use) is False or self._packs("rows", max_pp_use) is False

    def construct(self, max_dp_use: int, max_pp_use: int) -> Placement | None:
        """A placement of ``(A, B)`` from a packing of one side on the other side's target
        number of largest minipods (on all of them when that target is at least the other
        side's group length, e.g. ``B >= cols``), or ``None``."""
        inst = self.instance
        by_size = sorted(range(inst.n_minipods), key=lambda j: -inst.capacities[j])
        for side, most, on in (("cols", max_dp_use, max_pp_use), ("rows", max_pp_use, max_dp_use)):
            if (side, most, on) in self._failed or any(
                s == side and m >= most and o >= on for s, m, o in self._failed
            ):
                continue
            n_groups, length = (inst.cols, inst.rows) if side == "cols" else (inst.rows, inst.cols)
            # a group of the other side has n_groups cells: with on >= n_groups it may use any
            chosen = by_size if on >= n_groups else by_size[:on]
            caps = [inst.capacities[j] for j in chosen]
            found = pack(caps, n_groups, length, most, self.seconds())
            if not found:
                if found is False:
                    self._failed.add((side, most, on))
                continue
            groups = _align([[chosen[j] for j in group] for group in found])
            if side == "cols":
                return Placement.from_rows([list(cells) for cells in zip(*groups, strict=True)])
            return Placement.from_rows(groups)
        return None
