"""Arnold's coarse MIP (eq. 4–10): communication groups, not nodes, are the scheduling unit.

With ``unit="pp"`` (the paper's choice) the units ``i`` are the PP groups (rows, ``cols``
nodes each); with ``unit="dp"`` they are the DP groups (columns, ``rows`` nodes each).

Variables: ``y[j]`` minipod ``j`` used (eq. 9); ``s[i,j]`` unit ``i`` touches ``j``;
``n[i,j]`` nodes of unit ``i`` in ``j``; ``T`` the largest number of minipods a unit touches.

* (5) ``sum_j s[i,j] <= T``
* (6) ``sum_i n[i,j] <= f_j * y[j]``
* (7) ``sum_j n[i,j] = size``
* (8) ``n[i,j] <= size * s[i,j]``
* objective (4): ``w_y * sum_j y[j] + w_T * T`` with ``(w_y, w_T) = (alpha, beta)`` for
  PP units and ``(beta, alpha)`` for DP units.

One valid inequality is added, the **whole-unit cut**: minipod ``j`` can hold at most
``floor(f_j / size)`` units whole, every other unit touches at least two minipods, so
``sum_ij s[i,j] >= 2 N - sum_j floor(f_j / size) y[j]`` (``N`` units); with ``T`` integer it
lets the LP see that more minipods or a larger ``T`` are needed. It removes no integer
solution and cut the solve of Arnold setting (iii) from about 15 s to about 1 s.

A second valid inequality bounds the objective from below (**capacity bound**,
:func:`lower_bound`): a solution with ``T = 1`` keeps every unit whole, so it uses at least
``k_1`` minipods, the fewest whose ``floor(f_j / size)`` sum to ``N``; any other solution
has ``T >= 2`` and uses at least ``k_2`` minipods, the fewest whose free nodes sum to
``N * size``. Hence ``objective >= min(w_y k_1 + w_T, w_y k_2 + 2 w_T)``. Together with a MIP
start built in closed form (:func:`start_solution`: whole units in the largest minipods, or
units laid end to end through them; :func:`warm_start` sets the variables from it) the solver
can stop at the root whenever the start meets the bound; on setting (iii) this brings the solve
from about 1 s to tens of milliseconds.

The paper's share ``p[i,j]`` in [0, 1] with normalised capacity ``c_j = f_j / size`` is
``n[i,j] / size``; topoopt makes ``n[i,j]`` an **integer**, so every unit is split into
whole nodes and the placement is integral without repair.

:func:`extract` then does the **rank assignment**: each unit lists its minipods in one global
order (most used first) and gives them consecutive positions (stages for PP units, DP
ranks for DP units), the paper's "continuous rank indices per minipod", so units with the
same split line up and the other kind of group touches few minipods.

The model has ``N * M`` pairs ``(i, j)`` (each with ``s``, ``n`` and a selection constraint),
about 5–8 KB and 0.15 ms each to build and hand to HiGHS; :func:`model_size` counts them and
``placement/coarse-mip`` builds no model with more than :data:`MAX_PAIRS`. The closed-form
start is computed sparsely (``O(N * size + M log M)``), so it is available on any instance.

The module follows the formulation protocol of :mod:`topoopt.core.formulation`
(:func:`build`, :func:`extract`, :func:`warm_start`; data as ``Param`` s, module-level rules).
"""

from __future__ import annotations

from collections import Counter

import pyomo.environ as pyo

from topoopt.core.errors import InvalidOptionError
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement

UNITS = ("pp", "dp")

MAX_PAIRS = 100_000
"""Largest model ``placement/coarse-mip`` builds, in unit-minipod pairs (:func:`model_size`);
about 0.7 GB and 15 s to build and translate at the limit. Raise it by assigning
``topoopt.placement.formulations.coarse.MAX_PAIRS``."""


def model_size(instance: PlacementInstance, unit: str) -> int:
    """Unit-minipod pairs ``(i, j)`` of the model of ``unit`` (its size, see :data:`MAX_PAIRS`).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", (Minipod("a", 8), Minipod("b", 8)), dp=4, tp=8, pp=2,
    ...                          alpha=0.5)
    >>> model_size(inst, "pp"), model_size(inst, "dp")
    (8, 4)
    """
    return _shape(instance, unit)[0] * instance.n_minipods


def build(instance: PlacementInstance, unit: str = "pp") -> pyo.ConcreteModel:
    """The coarse model of eq. 4–10 for scheduling unit ``unit`` (``"pp"`` or ``"dp"``).

    Parameters
    ----------
    instance
        The placement instance.
    unit
        ``"pp"`` (PP groups are the units, the paper's choice) or ``"dp"``.

    Returns
    -------
    pyomo.environ.ConcreteModel
        Data as ``Param`` s (``unit``, ``size``, ``w_y``, ``w_T``, ``floor``, ``free``),
        variables ``y, s, n, T``.
    """
    if unit not in UNITS:
        raise InvalidOptionError(f"unit: must be one of {', '.join(UNITS)}, got {unit!r}")
    n_units, size, w_y, w_t = _shape(instance, unit)
    m = pyo.ConcreteModel(name=f"placement-coarse-{unit}-{instance.name}")
    m.unit = pyo.Param(initialize=unit, within=pyo.Any)
    m.size = pyo.Param(initialize=size, within=pyo.PositiveIntegers)
    m.w_y = pyo.Param(initialize=w_y, within=pyo.NonNegativeReals)
    m.w_T = pyo.Param(initialize=w_t, within=pyo.NonNegativeReals)
    m.floor = pyo.Param(initialize=lower_bound(instance, unit), within=pyo.Reals)
    m.I = pyo.RangeSet(0, n_units - 1)
    m.J = pyo.RangeSet(0, instance.n_minipods - 1)
    m.free = pyo.Param(m.J, initialize=dict(enumerate(instance.capacities)))
    m.y = pyo.Var(m.J, domain=pyo.Binary)
    m.s = pyo.Var(m.I, m.J, domain=pyo.Binary)
    m.n = pyo.Var(m.I, m.J, domain=pyo.NonNegativeIntegers, bounds=(0, size))
    m.T = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, instance.n_minipods))
    m.max_spread = pyo.Constraint(m.I, rule=_max_spread_rule)
    m.capacity = pyo.Constraint(m.J, rule=_capacity_rule)
    m.allocation = pyo.Constraint(m.I, rule=_allocation_rule)
    m.selection = pyo.Constraint(m.I, m.J, rule=_selection_rule)
    m.whole_unit_cut = pyo.Constraint(rule=_whole_unit_rule)
    m.objective = pyo.Objective(rule=_objective_rule)
    m.capacity_bound = pyo.Constraint(rule=_capacity_bound_rule)
    return m


def _objective_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """Eq. 4: ``w_y * sum_j y[j] + w_T * T``."""
    return pyo.value(m.w_y) * pyo.quicksum(m.y[j] for j in m.J) + pyo.value(m.w_T) * m.T


def _capacity_bound_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    return m.objective.expr >= pyo.value(m.floor)


def _max_spread_rule(m: pyo.ConcreteModel, i: int) -> pyo.Expression:
    """Eq. 5."""
    return pyo.quicksum(m.s[i, j] for j in m.J) <= m.T


def _capacity_rule(m: pyo.ConcreteModel, j: int) -> pyo.Expression:
    """Eq. 6 (in nodes)."""
    return pyo.quicksum(m.n[i, j] for i in m.I) <= m.free[j] * m.y[j]


def _allocation_rule(m: pyo.ConcreteModel, i: int) -> pyo.Expression:
    """Eq. 7 (in nodes)."""
    return pyo.quicksum(m.n[i, j] for j in m.J) == pyo.value(m.size)


def _selection_rule(m: pyo.ConcreteModel, i: int, j: int) -> pyo.Expression:
    """Eq. 8 (in nodes)."""
    return m.n[i, j] <= pyo.value(m.size) * m.s[i, j]


def _whole_unit_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    size = pyo.value(m.size)
    touches = pyo.quicksum(m.s[i, j] for i in m.I for j in m.J)
    whole = pyo.quicksum((m.free[j] // size) * m.y[j] for j in m.J)
    return touches >= 2 * len(m.I) - whole


def _shape(instance: PlacementInstance, unit: str) -> tuple[int, int, float, float]:
    """``(units, size, w_y, w_T)`` of the coarse model for ``unit``."""
    if unit == "pp":
        return instance.rows, instance.cols, instance.alpha, instance.beta
    return instance.cols, instance.rows, instance.beta, instance.alpha


def _fewest(values: list[int], target: int) -> int | None:
    """Fewest of ``values`` (largest first) whose sum reaches ``target``."""
    total = 0
    for k, value in enumerate(sorted(values, reverse=True), start=1):
        total += value
        if total >= target:
            return k
    return None


def lower_bound(instance: PlacementInstance, unit: str) -> float:
    """The capacity bound on the coarse objective (see the module docstring).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", tuple(Minipod(f"p{j}", 93) for j in range(11)),
    ...                          dp=46, tp=8, pp=8, alpha=0.5)
    >>> lower_bound(inst, "pp")   # 11 whole units per minipod: k_1 = 5, k_2 = 4
    3.0
    """
    n_units, size, w_y, w_t = _shape(instance, unit)
    candidates = []
    k_whole = _fewest([f // size for f in instance.capacities], n_units)
    if k_whole is not None:
        candidates.append(w_y * k_whole + w_t)
    k_any = _fewest(list(instance.capacities), n_units * size)
    if k_any is not None and size > 1:
        candidates.append(w_y * k_any + 2 * w_t)
    return min(candidates)


Counts = list[dict[int, int]]
"""Sparse unit counts: ``counts[i][j]`` nodes of unit ``i`` in minipod ``j`` (zeros left out)."""


def _coarse_objective(counts: list[list[int]], w_y: float, w_t: float) -> float:
    """Eq. 4 of dense counts ``counts[i][j]``."""
    return _sparse_objective([{j: n for j, n in enumerate(unit) if n} for unit in counts], w_y, w_t)


def _sparse_objective(counts: Counts, w_y: float, w_t: float) -> float:
    """Eq. 4 of sparse counts."""
    used = {j for unit in counts for j, n in unit.items() if n}
    return w_y * len(used) + w_t * max(sum(1 for n in unit.values() if n) for unit in counts)


def _start_counts(instance: PlacementInstance, unit: str) -> Counts:
    """:func:`start_counts`, sparse."""
    n_units, size, w_y, w_t = _shape(instance, unit)
    caps = instance.capacities
    order = sorted(range(len(caps)), key=lambda j: (-caps[j], j))
    # units laid end to end through the free nodes of the minipods, largest first
    end_to_end: Counts = [{} for _ in range(n_units)]
    pods = iter(order)
    j, left = -1, 0
    for i in range(n_units):
        need = size
        while need:
            while left == 0:
                j = next(pods)
                left = caps[j]
            take = min(need, left)
            end_to_end[i][j] = end_to_end[i].get(j, 0) + take
            need -= take
            left -= take
    candidates = [end_to_end]
    if sum(caps[j] // size for j in order) >= n_units:  # whole units in the largest minipods
        whole: Counts = []
        for j in order:
            whole += [{j: size} for _ in range(min(caps[j] // size, n_units - len(whole)))]
            if len(whole) == n_units:
                break
        candidates.append(whole)
    return min(candidates, key=lambda counts: _sparse_objective(counts, w_y, w_t))


def start_counts(instance: PlacementInstance, unit: str) -> list[list[int]]:
    """A feasible ``n[i][j]`` in closed form: the better (in the coarse objective) of whole
    units in the largest minipods (when they fit) and units laid end to end through them."""
    dense = []
    for unit_counts in _start_counts(instance, unit):
        row = [0] * instance.n_minipods
        for j, n in unit_counts.items():
            row[j] = n
        dense.append(row)
    return dense


def start_solution(instance: PlacementInstance, unit: str = "pp") -> Placement:
    """The closed-form start :func:`start_counts` as a placement (after rank assignment);
    :func:`warm_start` turns it back into exactly those counts."""
    return _placement(_contiguous_ranks(_start_counts(instance, unit)), unit)


def warm_start(model: pyo.ConcreteModel, solution: Placement | PlacementInstance) -> None:
    """Set every variable of ``model`` from a placement (a complete MIP start).

    ``n[i, j]`` counts the nodes of unit ``i`` in minipod ``j``; ``s``, ``y`` and ``T``
    follow. Given the instance instead of a placement, the start is :func:`start_solution`.
    """
    unit = str(pyo.value(model.unit))
    if isinstance(solution, PlacementInstance):
        solution = start_solution(solution, unit)
    units = solution.matrix if unit == "pp" else solution.columns()
    counts = [Counter(group) for group in units]
    used: set[int] = set()
    for i, group in enumerate(counts):
        for j in model.J:
            n = group.get(j, 0)
            model.n[i, j].set_value(n, skip_validation=True)
            model.s[i, j].set_value(1 if n else 0, skip_validation=True)
        used.update(group)
    for j, var in model.y.items():
        var.set_value(1 if j in used else 0, skip_validation=True)
    model.T.set_value(max(len(group) for group in counts))


def unit_counts(model: pyo.ConcreteModel) -> list[list[int]]:
    """``counts[i][j]``: nodes of unit ``i`` in minipod ``j`` (rounded loaded values)."""
    return [[round(pyo.value(model.n[i, j])) for j in model.J] for i in model.I]


def contiguous_ranks(counts: list[list[int]]) -> list[list[int]]:
    """Rank assignment: each unit's positions, its minipods in one global order.

    The global order puts the most used minipods first (ties by index); unit ``i`` then takes
    ``counts[i][j]`` consecutive positions for each minipod ``j`` in that order.

    Examples
    --------
    >>> contiguous_ranks([[1, 2], [0, 3]])
    [[1, 1, 0], [1, 1, 1]]
    """
    return _contiguous_ranks([{j: n for j, n in enumerate(unit) if n} for unit in counts])


def _contiguous_ranks(counts: Counts) -> list[list[int]]:
    """:func:`contiguous_ranks` of sparse counts (only minipods used matter for the order)."""
    totals: Counter[int] = Counter()
    for unit in counts:
        totals.update(unit)
    rank = {j: k for k, j in enumerate(sorted(totals, key=lambda j: (-totals[j], j)))}
    return [
        [j for j in sorted(unit, key=rank.__getitem__) for _ in range(unit[j])] for unit in counts
    ]


def _placement(units: list[list[int]], unit: str) -> Placement:
    """The placement whose PP groups (``unit="pp"``) or DP groups are ``units``."""
    if unit == "pp":
        return Placement.from_rows(units)
    return Placement.from_rows(list(zip(*units, strict=True)))


def extract(model: pyo.ConcreteModel, instance: PlacementInstance) -> Placement:
    """The placement of the loaded solution after rank assignment."""
    return _placement(contiguous_ranks(unit_counts(model)), str(pyo.value(model.unit)))
