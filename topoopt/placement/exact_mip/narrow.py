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

import itertools
import math
import time
from collections.abc import Callable, Iterator
from functools import cached_property
from math import comb
from typing import Literal

from topoopt.placement.exact_mip._milp import SparseMilp
from topoopt.placement.exact_mip.transport import transport
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement, within_targets

MAX_PODS = 10
"""Most minipods with free nodes :func:`decide` looks at (its Hall inequalities are
``2^M'``)."""

MAX_WORK = 20_000
"""Most vectors ``z`` (wide-group miss counts, after symmetry) :func:`decide` enumerates."""

MAX_RAW_WORK = 200_000
"""Most vectors ``z`` :func:`decide` generates before the symmetry filter."""

MAX_JOINT_PODS = 16
"""Most minipods with free nodes of :meth:`NarrowPair.search_joint` (its edges are
``M'(M' - 1) / 2``)."""

MAX_JOINT_SIZE = 200_000
"""Most nonzeros of the miss-count rows of :meth:`NarrowPair.search_joint`."""

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

    @property
    def joint_size(self) -> int:
        """Nonzeros of the rows tying the miss counts to the edges in :meth:`search_joint`
        (its largest part)."""
        return comb(self.m, self.t) * (1 + comb(self.t, 2))

    def search_joint(
        self, time_limit: float = math.inf
    ) -> tuple[tuple[int, ...], list[int]] | Literal[False] | None:
        """``(z, p)`` of a feasible point, ``False`` when there is none, ``None`` when SCIP
        did not decide within ``time_limit`` seconds (building the programme included): one
        integer programme over ``z`` and
        ``p`` together instead of one per ``z`` (see "Narrow pairs" in ``docs/placement.md``).

        Variables: the counts ``z_Z``, the miss counts ``N_j``, the counts ``p_e`` of every
        edge and loop with a binary ``q_e`` (type used), the cells ``c_{e,j}`` of the groups
        of edge ``e = {j, k}`` in ``j``, and the products ``p_e N_k`` through the binary
        expansion of ``p_e`` (exact McCormick rows per bit). Rows: ``sum z = L``,
        ``sum p = n_p``; a used loop ``j`` has ``N_j = 0`` and a used edge lies in no used
        ``Z``; ``c_{e,j} + c_{e,k} = L p_e`` with ``c_{e,j} >= p_e N_k``; capacity
        ``L p_j + sum_e c_{e,j} <= f_j``. Minipods with equal free nodes are
        interchangeable, so their ``N`` is ordered. Solved by SCIP (see
        :meth:`SparseMilp._solve_scip <topoopt.placement.exact_mip._milp.SparseMilp._solve_scip>`).
        """
        started = time.perf_counter()
        m, length, n_p = self.m, self.length, self.n_narrow
        loops: list[tuple[int, ...]] = [(j,) for j in range(m)]
        edges: list[tuple[int, ...]] = list(itertools.combinations(range(m), 2))
        bits = n_p.bit_length()
        milp = SparseMilp()
        z = [milp.var(0, length, integer=True) for _ in self.miss_types]
        miss = [milp.var(0, length) for _ in range(m)]
        count = {e: milp.var(0, n_p, integer=True) for e in loops + edges}
        used = {e: milp.var(0, 1, integer=True) for e in loops + edges}
        milp.row(dict.fromkeys(z, 1), length, length)
        milp.row(dict.fromkeys(count.values(), 1), n_p, n_p)
        for j in range(m):
            coefs = {z[i]: 1.0 for i, gone in enumerate(self.miss_types) if j in gone}
            milp.row({**coefs, miss[j]: -1}, 0, 0)
            milp.row({miss[j]: 1, used[(j,)]: length}, upper=length)
        for e in loops + edges:
            milp.row({count[e]: 1, used[e]: -n_p}, upper=0)
        load: list[dict[int, float]] = [{count[(j,)]: length} for j in range(m)]
        for e in edges:
            j, k = e
            inside = {z[i]: 1.0 for i, gone in enumerate(self.miss_types) if {j, k} <= gone}
            if inside:
                milp.row({**inside, used[e]: length}, upper=length)
            bit = [milp.var(0, 1, integer=True) for _ in range(bits)]
            milp.row({**{b: 2**i for i, b in enumerate(bit)}, count[e]: -1}, 0, 0)
            cells = {j: milp.var(0, length * n_p), k: milp.var(0, length * n_p)}
            milp.row({cells[j]: 1, cells[k]: 1, count[e]: -length}, 0, 0)
            for here, other in ((j, k), (k, j)):
                forced: dict[int, float] = {cells[here]: 1}
                for i, b in enumerate(bit):  # w = b * N_other, exactly for binary b
                    w = milp.var(0, length)
                    milp.row({w: 1, b: -length}, upper=0)
                    milp.row({w: 1, miss[other]: -1}, upper=0)
                    milp.row({w: 1, miss[other]: -1, b: -length}, lower=-length)
                    forced[w] = -(2**i)
                milp.row(forced, lower=0)
                load[here][cells[here]] = 1
        for j in range(m):
            milp.row(load[j], upper=self.caps[j])
        classes: dict[int, list[int]] = {}
        for j, f in enumerate(self.caps):
            classes.setdefault(f, []).append(j)
        for members in classes.values():
            for a, b in itertools.pairwise(members):
                milp.row({miss[a]: 1, miss[b]: -1}, lower=0)
        left = time_limit - (time.perf_counter() - started)
        if left <= 0:
            return None
        status, values = milp.solve(left, backend="scip")
        if status == "infeasible":
            return False
        if status == "unknown":
            return None
        found = tuple(round(values[v]) for v in z)
        support = [self.miss_types[i] for i, c in enumerate(found) if c]
        return found, [round(values[count[e]]) for e in self.types(support)]

    def placement(
        self, instance: PlacementInstance, z: tuple[int, ...], p: list[int]
    ) -> Placement | None:
        """The placement of a feasible point ``(z, p)`` (see the module docstring), or
        ``None`` when the rounded point admits no split of the free cells (never for a
        point that meets Hall's inequalities)."""
        pods = [j for j, f in enumerate(instance.capacities) if f > 0]
        support = [self.miss_types[i] for i, c in enumerate(z) if c]
        types = self.types(support)
        miss = [0] * self.m
        for i, c in enumerate(z):
            for j in self.miss_types[i]:
                miss[j] += c
        length = self.length
        residual = list(self.caps)
        free: dict[int, int] = {}  # per edge type used, its free cells (either end)
        for e, (kind, count) in enumerate(zip(types, p, strict=True)):
            if not count:
                continue
            if len(kind) == 1:
                residual[kind[0]] -= count * length
                continue
            j, k = kind
            residual[j] -= count * miss[k]
            residual[k] -= count * miss[j]
            free[e] = count * (length - miss[j] - miss[k])
        if min(residual) < 0:
            return None
        split = transport(list(free.values()), [types[e] for e in free], residual)
        if split is None:
            return None
        sent = dict(zip(free, split, strict=True))
        wide_miss = [self.miss_types[i] for i, c in enumerate(z) for _ in range(c)]
        groups: list[list[int]] = []  # per narrow group, the local minipod of each cell
        for e, (kind, count) in enumerate(zip(types, p, strict=True)):
            if not count:
                continue
            if len(kind) == 1:
                groups += [[kind[0]] * length for _ in range(count)]
                continue
            j, k = kind
            to_j = sent[e].get(j, 0)  # free cells of the type sent to j
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


def _integer_counts(
    model: NarrowPair, miss: list[int], types: list[tuple[int, ...]]
) -> list[int] | None:
    """Solve the integer programme in ``p`` with HiGHS (a few variables, ``2^M'`` rows)."""
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
    if len(types) == 1:
        p = [model.n_narrow]
        ok = all(c[0] * p[0] <= up for c, up in zip(rows, uppers, strict=True))
        return p if ok else None
    milp = SparseMilp()
    counts = [milp.var(0, model.n_narrow, integer=True) for _ in types]
    milp.row(dict.fromkeys(counts, 1), model.n_narrow, model.n_narrow)
    for coef, up in zip(rows, uppers, strict=True):
        milp.row({v: c for v, c in zip(counts, coef, strict=True) if c}, upper=up)
    status, values = milp.solve()
    if status == "infeasible":
        return None
    if status == "unknown":
        return UNKNOWN
    sol = [round(values[v]) for v in counts]
    # the point must satisfy the inequalities exactly, in integers
    if sum(sol) != model.n_narrow or min(sol) < 0:
        return UNKNOWN
    for coef, up in zip(rows, uppers, strict=True):
        if sum(c * s for c, s in zip(coef, sol, strict=True)) > up:
            return UNKNOWN
    return sol


def orientations(
    instance: PlacementInstance, max_dp_use: int, max_pp_use: int, max_pods: int = MAX_PODS
) -> list[NarrowPair]:
    """The reduced models of ``(A, B)`` with its narrow side (columns when ``A = 2``, rows
    when ``B = 2``), the cheapest first; empty when neither target is 2 or more than
    ``max_pods`` minipods have free nodes."""
    caps = [f for f in instance.capacities if f > 0]
    if len(caps) > max_pods:
        return []
    out = []
    if max_dp_use == 2:
        out.append(NarrowPair(caps, instance.cols, instance.rows, max_pp_use, narrow="cols"))
    if max_pp_use == 2:
        out.append(NarrowPair(caps, instance.rows, instance.cols, max_dp_use, narrow="rows"))
    return sorted(out, key=lambda model: model.work)


def decide(
    instance: PlacementInstance,
    max_dp_use: int,
    max_pp_use: int,
    expired: Expired = _never,
    seconds: Callable[[], float] = lambda: math.inf,
) -> Placement | Literal[False] | None:
    """Decide ``(A, B)`` exactly when ``A = 2`` or ``B = 2``.

    Each orientation is decided by enumerating ``z`` when that takes at most
    :data:`MAX_WORK` vectors (and at most :data:`MAX_PODS` minipods have free nodes), else by
    the joint integer programme (:meth:`NarrowPair.search_joint`, at most
    :data:`MAX_JOINT_PODS` minipods and :data:`MAX_JOINT_SIZE` nonzeros) within
    ``seconds()``.

    Returns a placement with every column touching at most ``A`` minipods and every row at
    most ``B`` (the pair is feasible; checked before it is returned), ``False`` (proven
    infeasible), or ``None`` (not decided: no narrow side, too large, or out of time).

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
    models = orientations(instance, max_dp_use, max_pp_use, MAX_JOINT_PODS)
    for model in models:
        if model.m > MAX_PODS or model.work > min(MAX_WORK * len(model._perms()), MAX_RAW_WORK):
            continue
        found = model.search(expired)
        if found is None:
            continue
        if found is False:
            return False
        placement = model.placement(instance, *found)
        if placement is not None and within_targets(instance, placement, max_dp_use, max_pp_use):
            return placement
    for model in sorted(models, key=lambda model: model.joint_size):
        if model.joint_size > MAX_JOINT_SIZE or expired():
            continue
        joint = model.search_joint(seconds())
        if joint is False:
            return False
        if joint is not None:
            placement = model.placement(instance, *joint)
            if placement is not None and within_targets(
                instance, placement, max_dp_use, max_pp_use
            ):
                return placement
    return None
