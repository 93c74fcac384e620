"""Exact decision of a target pair with a *narrow* side: groups touching at most two minipods.

For a pair ``(A, B)`` with ``A = 2`` (every column touches at most two minipods) or ``B = 2``
(every row), call the groups of that side *narrow* (``n_p`` of them, each of length ``L``) and
the groups of the other side *wide* (``L`` of them, each touching at most ``K`` minipods, ``K``
the other target). Only minipods with free nodes count; ``V`` is their set, ``M' = |V|`` and
``t = max(0, M' - K)``.

**Reduced model** (exact; ``docs/placement.md``, "Narrow pairs"). Describe a wide group by
the set ``Z`` of minipods of ``V`` it misses (WLOG ``|Z| = t``: missing fewer only loosens
everything below), with ``z_Z`` wide groups per set, and let ``N_j`` be the number of wide
groups missing ``j``. A narrow group touches an edge ``{j, k}`` or a single minipod (a
loop) ``{j}``; it meets every wide group, so ``{j, k}`` lies in no used ``Z`` and a loop's
``j`` in none. Its cell in a wide group missing ``k`` must go to ``j`` and vice versa, the
other cells may go to either: ``j`` receives between ``N_k`` and ``L - N_j`` of its ``L``
cells, any number in between. With ``p_e`` narrow groups of type ``e``, the cells can be
placed within the free nodes ``f`` iff for every set ``X`` of minipods the cells forced into
``X`` fit (Hall's condition of the transportation problem, integral for integral data):

    sum_{e inside X} p_e L + sum_{e = {j, k}, j in X, k not in X} p_e N_k <= f(X).

So the pair is feasible iff some ``z`` (``sum z = L``) and integral ``p`` (``sum p = n_p``, on
the edges and loops the support of ``z`` allows) satisfy these inequalities. :func:`decide`
enumerates ``z`` (up to the symmetry of minipods with equal free nodes) and solves the small
integer programme in ``p`` for each; a solution is turned into a placement (so it is checked
by construction), and when no ``z`` admits one the pair is infeasible. The enumeration is
exponential in ``M'`` and ``L``: :func:`decide` gives up (returns ``None``) beyond
:data:`MAX_WORK` candidate vectors ``z`` or when ``expired()`` says so.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
from collections.abc import Callable, Iterator
from functools import cached_property
from math import comb
from typing import Any, Literal

from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement

MAX_PODS = 10
"""Most minipods with free nodes :func:`decide` looks at (its Hall inequalities are
``2^M'``)."""

MAX_WORK = 20_000
"""Most vectors ``z`` (wide-group miss counts, after symmetry) :func:`decide` enumerates."""

MAX_RAW_WORK = 200_000
"""Most vectors ``z`` :func:`decide` generates before the symmetry filter."""

UNKNOWN: list[int] = []
"""Marker of an integer programme HiGHS did not decide (never a valid ``p``: ``n_p >= 1``)."""

Expired = Callable[[], bool]


def _never() -> bool:
    return False


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every vector of ``parts`` non-negative integers summing to ``total``."""
    if parts == 0:
        if total == 0:
            yield ()
        return
    for cuts in itertools.combinations(range(total + parts - 1), parts - 1):
        prev = -1
        out = []
        for c in cuts:
            out.append(c - prev - 1)
            prev = c
        out.append(total + parts - 2 - prev)
        yield tuple(out)


class NarrowPair:
    """The reduced model of one instance and one orientation (see the module docstring).

    Parameters
    ----------
    caps
        Free nodes of the minipods of ``V`` (all positive).
    n_narrow, length
        Number ``n_p`` of narrow groups and their length ``L`` (= number of wide groups).
    wide_use
        ``K``, the most minipods a wide group may touch.
    narrow
        ``"cols"`` or ``"rows"``: which groups of the instance are the narrow ones (used by
        :meth:`placement`).
    """

    def __init__(
        self, caps: list[int], n_narrow: int, length: int, wide_use: int, narrow: str = "cols"
    ) -> None:
        self.caps = caps
        self.narrow = narrow
        self.n_narrow = n_narrow
        self.length = length
        self.m = len(caps)
        self.t = max(0, self.m - wide_use)
        self._cache: dict[tuple, list[int] | None] = {}

    @cached_property
    def miss_types(self) -> list[frozenset[int]]:
        """Every miss set: the ``t``-subsets of ``V``."""
        return [frozenset(z) for z in itertools.combinations(range(self.m), self.t)]

    @cached_property
    def subsets(self) -> list[frozenset[int]]:
        """The non-empty sets ``X`` of Hall's inequalities."""
        return [
            frozenset(x)
            for size in range(1, self.m + 1)
            for x in itertools.combinations(range(self.m), size)
        ]

    @cached_property
    def cap_of(self) -> dict[frozenset[int], int]:
        """``f(X)`` for every set of :attr:`subsets`."""
        return {x: sum(self.caps[j] for j in x) for x in self.subsets}

    @property
    def work(self) -> int:
        """Vectors ``z`` of the full enumeration (before symmetry)."""
        types = comb(self.m, self.t)
        return comb(self.length + types - 1, types - 1)

    def _perms(self) -> list[tuple[int, ...]]:
        """Permutations of ``V`` preserving the free nodes (the symmetry group), identity
        first; only when it is small."""
        classes: dict[int, list[int]] = {}
        for j, f in enumerate(self.caps):
            classes.setdefault(f, []).append(j)
        size = 1
        for members in classes.values():
            for k in range(2, len(members) + 1):
                size *= k
        if size > 120:
            return [tuple(range(self.m))]
        perms = []
        groups = list(classes.values())
        for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
            perm = [0] * self.m
            for g, image in zip(groups, choice, strict=True):
                for a, b in zip(g, image, strict=True):
                    perm[a] = b
            perms.append(tuple(perm))
        return perms

    def types(self, support: list[frozenset[int]]) -> list[tuple[int, ...]]:
        """Narrow-group types allowed by the used miss sets: edges in no ``Z``, loops at
        minipods in no ``Z``."""
        out: list[tuple[int, ...]] = [
            (j,) for j in range(self.m) if not any(j in z for z in support)
        ]
        out += [
            (j, k)
            for j, k in itertools.combinations(range(self.m), 2)
            if not any(j in z and k in z for z in support)
        ]
        return out

    def solve_counts(self, miss: list[int], types: list[tuple[int, ...]]) -> list[int] | None:
        """Integral ``p`` over ``types`` (summing to ``n_p``) meeting Hall's inequalities for
        the miss counts ``miss`` (``N_j``), ``None`` when there is none, or :data:`UNKNOWN`
        when the integer programme was not decided."""
        key = (tuple(miss), tuple(types))
        if key in self._cache:
            return self._cache[key]
        found = _integer_counts(self, miss, types)
        self._cache[key] = found
        return found

    def search(
        self, expired: Expired = _never
    ) -> tuple[tuple[int, ...], list[int]] | Literal[False] | None:
        """``(z, p)`` of a feasible point, ``False`` when there is none, ``None`` when stopped
        (work limit or ``expired``)."""
        perms = self._perms()
        index = {z: i for i, z in enumerate(self.miss_types)}
        image = [[index[frozenset(perm[j] for j in z)] for z in self.miss_types] for perm in perms]
        seen = 0
        for n, z in enumerate(_compositions(self.length, len(self.miss_types))):
            if n % 64 == 63 and expired():
                return None
            if any(tuple(z[img[i]] for i in range(len(z))) > z for img in image[1:]):
                continue  # not the largest of its symmetry class
            seen += 1
            if seen > MAX_WORK:
                return None
            support = [self.miss_types[i] for i, c in enumerate(z) if c]
            miss = [0] * self.m
            for i, c in enumerate(z):
                for j in self.miss_types[i]:
                    miss[j] += c
            types = self.types(support)
            if not types:
                continue
            p = self.solve_counts(miss, types)
            if p is UNKNOWN:
                return None
            if p is not None:
                return z, p
        return False

    def placement(self, instance: PlacementInstance, z: tuple[int, ...], p: list[int]) -> Placement:
        """The placement of a feasible point ``(z, p)`` (see the module docstring)."""
        import networkx as nx

        pods = [j for j, f in enumerate(instance.capacities) if f > 0]
        support = [self.miss_types[i] for i, c in enumerate(z) if c]
        types = self.types(support)
        miss = [0] * self.m
        for i, c in enumerate(z):
            for j in self.miss_types[i]:
                miss[j] += c
        length = self.length
        residual = list(self.caps)
        graph = nx.DiGraph()
        for e, (kind, count) in enumerate(zip(types, p, strict=True)):
            if not count:
                continue
            if len(kind) == 1:
                residual[kind[0]] -= count * length
                continue
            j, k = kind
            residual[j] -= count * miss[k]
            residual[k] -= count * miss[j]
            graph.add_edge("s", ("e", e), capacity=count * (length - miss[j] - miss[k]))
            graph.add_edge(("e", e), ("v", j))
            graph.add_edge(("e", e), ("v", k))
        for j in range(self.m):
            graph.add_edge(("v", j), "t", capacity=residual[j])
        flow = nx.maximum_flow(graph, "s", "t")[1] if "s" in graph else {}
        wide_miss = [self.miss_types[i] for i, c in enumerate(z) for _ in range(c)]
        groups: list[list[int]] = []  # per narrow group, the local minipod of each cell
        for e, (kind, count) in enumerate(zip(types, p, strict=True)):
            if not count:
                continue
            if len(kind) == 1:
                groups += [[kind[0]] * length for _ in range(count)]
                continue
            j, k = kind
            to_j = flow[("e", e)][("v", j)]  # free cells of the type sent to j
            per_group = length - miss[j] - miss[k]
            for _ in range(count):
                extra = min(per_group, to_j)
                to_j -= extra
                cells = []
                for gone in wide_miss:
                    if k in gone:
                        cells.append(j)
                    elif j in gone:
                        cells.append(k)
                    elif extra:
                        cells.append(j)
                        extra -= 1
                    else:
                        cells.append(k)
                groups.append(cells)
        if self.narrow == "rows":
            rows = [[pods[j] for j in cells] for cells in groups]
        else:
            rows = [[pods[groups[g][h]] for g in range(len(groups))] for h in range(length)]
        return Placement.from_rows(rows)

    def forced(self, miss: list[int], kind: tuple[int, ...], x: frozenset[int]) -> int:
        """Cells of one narrow group of type ``kind`` forced into ``x``."""
        if all(j in x for j in kind):
            return self.length
        if len(kind) == 2:
            j, k = kind
            if j in x:
                return miss[k]
            if k in x:
                return miss[j]
        return 0


@functools.cache
def _highs() -> Any:
    """One ``highspy.Highs`` per process, made with the standard output closed (HiGHS prints
    its banner when constructed, which would corrupt ``topoopt solve --json``)."""
    import highspy

    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        highs = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    highs.setOptionValue("output_flag", False)
    # no "threads" option: HiGHS refuses to run when it differs from the thread scheduler
    # another Highs object of the process started
    return highs


def _integer_counts(
    model: NarrowPair, miss: list[int], types: list[tuple[int, ...]]
) -> list[int] | None:
    """Solve the integer programme in ``p`` with HiGHS (a few variables, ``2^M'`` rows)."""
    import highspy
    import numpy as np

    n = len(types)
    rows = []
    uppers = []
    for x in model.subsets:
        coef = [model.forced(miss, kind, x) for kind in types]
        if any(coef):
            rows.append(coef)
            uppers.append(model.cap_of[x])
    # quick refutations: every group forces at least min(coef) into x
    for coef, up in zip(rows, uppers, strict=True):
        if min(coef) * model.n_narrow > up:
            return None
    if n == 1:
        p = [model.n_narrow]
        ok = all(c[0] * p[0] <= up for c, up in zip(rows, uppers, strict=True))
        return p if ok else None
    h = _highs()
    h.clearModel()
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(rows) + 1
    lp.col_cost_ = np.zeros(n)
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.full(n, float(model.n_narrow))
    lp.row_lower_ = np.array([-highspy.kHighsInf] * len(rows) + [float(model.n_narrow)])
    lp.row_upper_ = np.array([float(u) for u in uppers] + [float(model.n_narrow)])
    start, index, value = [0], [], []
    for col in range(n):
        for r, coef in enumerate(rows):
            if coef[col]:
                index.append(r)
                value.append(float(coef[col]))
        index.append(len(rows))
        value.append(1.0)
        start.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(start, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n
    decided = (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kInfeasible)
    h.passModel(lp)
    h.run()
    if h.getModelStatus() not in decided:  # a solver left in a bad state (interrupted): anew
        _highs.cache_clear()
        h = _highs()
        h.passModel(lp)
        h.run()
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kInfeasible:
        return None
    if status != highspy.HighsModelStatus.kOptimal:
        return UNKNOWN
    sol = [round(v) for v in h.getSolution().col_value]
    # the point must satisfy the inequalities exactly, in integers
    if sum(sol) != model.n_narrow or min(sol) < 0:
        return UNKNOWN
    for coef, up in zip(rows, uppers, strict=True):
        if sum(c * s for c, s in zip(coef, sol, strict=True)) > up:
            return UNKNOWN
    return sol


def orientations(instance: PlacementInstance, max_dp_use: int, max_pp_use: int) -> list[NarrowPair]:
    """The reduced models of ``(A, B)`` with its narrow side (columns when ``A = 2``, rows
    when ``B = 2``), the cheapest first; empty when neither target is 2."""
    caps = [f for f in instance.capacities if f > 0]
    if len(caps) > MAX_PODS:
        return []
    out = []
    if max_dp_use == 2:
        out.append(NarrowPair(caps, instance.cols, instance.rows, max_pp_use, narrow="cols"))
    if max_pp_use == 2:
        out.append(NarrowPair(caps, instance.rows, instance.cols, max_dp_use, narrow="rows"))
    return sorted(out, key=lambda model: model.work)


def decide(
    instance: PlacementInstance, max_dp_use: int, max_pp_use: int, expired: Expired = _never
) -> Placement | Literal[False] | None:
    """Decide ``(A, B)`` exactly when ``A = 2`` or ``B = 2``.

    Returns a placement with every column touching at most ``A`` minipods and every row at
    most ``B`` (the pair is feasible), ``False`` (proven infeasible), or ``None`` (not
    decided: no narrow side, more than :data:`MAX_WORK` vectors, or ``expired()``).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", [Minipod("a", 3), Minipod("b", 3)], dp=3, tp=8, pp=2,
    ...                          alpha=0.5)
    >>> decide(inst, 2, 2).matrix
    ((0, 1), (0, 1), (0, 1))
    >>> decide(inst, 3, 3) is None  # no narrow side
    True
    """
    for model in orientations(instance, max_dp_use, max_pp_use):
        if model.work > min(MAX_WORK * len(model._perms()), MAX_RAW_WORK):
            continue
        found = model.search(expired)
        if found is None:
            continue
        if found is False:
            return False
        z, p = found
        return model.placement(instance, z, p)
    return None
