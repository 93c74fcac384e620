"""Exact decision of a target pair by group types: one side's groups one by one, the other
side's aggregated by the minipods they may touch.

For a pair ``(A, B)`` take the columns *explicit* (``n_e = cols`` groups, each on at most
``K_e = A`` minipods) and the rows *aggregated* (``n_a = rows`` groups, each on at most
``K_a = B``), or the other way round. Only minipods with free nodes count (``V``, ``M' = |V|``).
A row is described by its *type*: the set ``U`` of minipods it may touch, WLOG of size
``k = min(K_a, M')`` (a larger set only loosens everything below). Variables:

* ``v[g, j]`` binary: explicit group ``g`` touches minipod ``j``; ``sum_j v[g, j] <= K_e``;
* ``y_U`` integer: aggregated groups of type ``U``, ``sum_U y_U = n_a``; ``s_U`` binary with
  ``y_U <= n_a s_U``;
* ``x[g, U, j] >= 0`` (``j in U``): cells of group ``g`` in groups of type ``U`` placed in
  ``j``, ``sum_{j in U} x[g, U, j] = y_U``.

Rows: a used type meets every explicit group, ``s_U <= sum_{j in U} v[g, j]``; group ``g``
only uses its minipods, ``sum_U x[g, U, j] <= min(f_j, n_a) v[g, j]``; capacities
``sum_{g, U} x[g, U, j] <= f_j``; and the interchangeable explicit groups are ordered by
``sum_j 2^j v[g, j]`` (non-increasing).

**Exact.** A placement gives a point (each aggregated group's type: a ``k``-set containing the
minipods it touches). Conversely, given integral ``v`` and ``y`` the cells form a
transportation problem with integral data (supplies ``y_U`` per ``(g, U)``, arcs to the
minipods of ``U`` that ``g`` touches, capacities ``f_j``), so integral ``x`` exist (a maximum
flow recomputes them, :meth:`TypedPair.placement`); the ``y_U`` groups of type ``U`` then take
the ``x[g, U, j]`` cells of each group ``g`` one each, so every aggregated group touches only
minipods of ``U`` and every explicit group only its own. Unlike the per-cell model
(:mod:`topoopt.placement.formulations.exact`), the aggregated groups have no variables of
their own, hence no symmetry; the model has ``n_e C(M', k) k`` cell variables, independent of
``n_a``, and :func:`decide` builds the orientation with fewer (at most
:data:`MAX_TYPED_CELLS`). See "Group types" in ``docs/placement.md``.
"""

from __future__ import annotations

import itertools
import math
from math import comb
from typing import Literal

from topoopt.placement.exact_mip._milp import SparseMilp
from topoopt.placement.exact_mip.transport import transport
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement, within_targets

MAX_TYPED_CELLS = 20_000
"""Most cell variables ``x[g, U, j]`` of a model :func:`decide` builds."""

MAX_ORDER_PODS = 16
"""Most minipods with free nodes for the ordering weights ``2^j`` (beyond, ``j + 1``: still
valid, weaker)."""


class TypedPair:
    """The group-type programme of one instance, one pair and one orientation.

    Parameters
    ----------
    pods
        The minipods of ``V`` (indices into ``instance.minipods``), most free nodes first: HiGHS
        searches in the order of the variables, and the order of the input should not matter.
    caps
        Their free nodes (all positive).
    n_explicit, explicit_use
        ``n_e`` and ``K_e``: the explicit groups and the most minipods each may touch.
    n_aggregated, aggregated_use
        ``n_a`` and ``K_a`` for the aggregated groups.
    explicit
        ``"cols"`` or ``"rows"``: which groups of the instance are explicit.
    """

    def __init__(
        self,
        pods: list[int],
        caps: list[int],
        n_explicit: int,
        explicit_use: int,
        n_aggregated: int,
        aggregated_use: int,
        explicit: Literal["cols", "rows"],
    ) -> None:
        self.pods = pods
        self.caps = caps
        self.n_explicit = n_explicit
        self.explicit_use = explicit_use
        self.n_aggregated = n_aggregated
        self.explicit = explicit
        self.k = min(aggregated_use, len(caps))

    @property
    def size(self) -> int:
        """Cell variables ``x[g, U, j]`` of the programme."""
        return self.n_explicit * comb(len(self.caps), self.k) * self.k

    def solve(
        self, time_limit: float = math.inf
    ) -> tuple[list[list[int]], list[int]] | Literal[False] | None:
        """``(v, y)`` of a feasible point (``v[g]`` the minipods of group ``g``, ``y`` per
        type of :meth:`types`), ``False`` when there is none, ``None`` when HiGHS did not
        decide within ``time_limit`` seconds."""
        m, n_e, n_a, caps = len(self.caps), self.n_explicit, self.n_aggregated, self.caps
        types = self.types()
        milp = SparseMilp()
        v = [[milp.var(0, 1, integer=True) for _ in range(m)] for _ in range(n_e)]
        y = [milp.var(0, n_a, integer=True) for _ in types]
        used = [milp.var(0, 1, integer=True) for _ in types]
        milp.row(dict.fromkeys(y, 1), n_a, n_a)
        for count, on in zip(y, used, strict=True):
            milp.row({count: 1, on: -n_a}, upper=0)
        weight = [2**j if m <= MAX_ORDER_PODS else j + 1 for j in range(m)]
        for g in range(n_e):
            milp.row(dict.fromkeys(v[g], 1), upper=self.explicit_use)
            milp.row({v[g][j]: min(caps[j], n_a) for j in range(m)}, lower=n_a)
        for g in range(n_e):
            for t, kind in enumerate(types):
                milp.row({used[t]: 1, **{v[g][j]: -1 for j in kind}}, upper=0)
        load: list[dict[int, float]] = [{} for _ in range(m)]
        mine: list[list[dict[int, float]]] = [[{} for _ in range(m)] for _ in range(n_e)]
        for g in range(n_e):
            for t, kind in enumerate(types):
                cells = {y[t]: -1.0}
                for j in kind:
                    x = milp.var(0, n_a)
                    cells[x] = load[j][x] = mine[g][j][x] = 1
                milp.row(cells, 0, 0)
        for g in range(n_e):
            for j in range(m):
                milp.row({**mine[g][j], v[g][j]: -min(caps[j], n_a)}, upper=0)
        for j in range(m):
            milp.row(load[j], upper=caps[j])
        for g in range(1, n_e):
            order = {v[g - 1][j]: weight[j] for j in range(m)}
            order.update({v[g][j]: -weight[j] for j in range(m)})
            milp.row(order, lower=0)
        status, values = milp.solve(time_limit)
        if status == "infeasible":
            return False
        if status == "unknown":
            return None
        pods = [[j for j in range(m) if values[v[g][j]] > 0.5] for g in range(n_e)]
        return pods, [round(values[count]) for count in y]

    def types(self) -> list[tuple[int, ...]]:
        """The types ``U``: every ``k``-subset of ``V``."""
        return list(itertools.combinations(range(len(self.caps)), self.k))

    def placement(
        self, instance: PlacementInstance, pods: list[list[int]], y: list[int]
    ) -> Placement | None:
        """The placement of a feasible point (see the module docstring), or ``None`` when the
        rounded point admits no integral flow (never for a point within HiGHS's
        tolerances)."""
        used = [(t, kind) for t, kind in enumerate(self.types()) if y[t]]
        blocks = [(g, t, kind) for g in range(self.n_explicit) for t, kind in used]
        cells_of = transport(
            [y[t] for _, t, _ in blocks],
            [set(kind) & set(pods[g]) for g, _, kind in blocks],
            self.caps,
        )
        if cells_of is None:
            return None
        groups: list[list[int]] = [[] for _ in range(self.n_explicit)]
        for (g, _, kind), cells in zip(blocks, cells_of, strict=True):
            for j in kind:  # per explicit group, the minipod of each aggregated one
                groups[g] += [self.pods[j]] * cells.get(j, 0)
        if self.explicit == "rows":
            return Placement.from_rows(groups)
        return Placement.from_rows([list(line) for line in zip(*groups, strict=True)])


def orientations(instance: PlacementInstance, max_dp_use: int, max_pp_use: int) -> list[TypedPair]:
    """Both orientations of the pair, the one with fewer cell variables first."""
    free = instance.capacities
    pods = sorted((j for j, f in enumerate(free) if f > 0), key=lambda j: (-free[j], j))
    caps = [free[j] for j in pods]
    rows, cols = instance.rows, instance.cols
    models = [
        TypedPair(pods, caps, cols, max_dp_use, rows, max_pp_use, "cols"),
        TypedPair(pods, caps, rows, max_pp_use, cols, max_dp_use, "rows"),
    ]
    return sorted(models, key=lambda model: model.size)


def decide(
    instance: PlacementInstance, max_dp_use: int, max_pp_use: int, time_limit: float = math.inf
) -> Placement | Literal[False] | None:
    """Decide ``(A, B)`` by the group-type programme of the smaller orientation.

    Returns a placement with every column touching at most ``A`` minipods and every row at
    most ``B`` (checked before it is returned), ``False`` (proven infeasible), or ``None``
    (more than :data:`MAX_TYPED_CELLS` cell variables, or not decided within
    ``time_limit`` seconds).

    Examples
    --------
    >>> inst = PlacementInstance("x", [3, 3], dp=3, tp=8, pp=2, alpha=0.5)
    >>> decide(inst, 1, 2).matrix  # each column on one minipod
    ((1, 0), (1, 0), (1, 0))
    >>> decide(inst, 2, 1)  # each row on one minipod: one row of 2 cells per minipod
    False
    """
    model = orientations(instance, max_dp_use, max_pp_use)[0]
    if model.size > MAX_TYPED_CELLS or time_limit <= 0:
        return None
    found = model.solve(time_limit)
    if found is None or found is False:
        return found
    placement = model.placement(instance, *found)
    if placement is None or not within_targets(instance, placement, max_dp_use, max_pp_use):
        return None
    return placement
