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

**Aggregation** (:func:`build`; the per-unit model of the paper is :func:`build_per_unit`,
kept as the reference of the tests). The per-unit model has ``N * M`` pairs ``(i, j)`` (each
with ``s``, ``n`` and a selection constraint), about 5–8 KB and 0.15 ms each to build and
hand to HiGHS, and ``N!`` symmetric copies of every solution. Two facts keep its optimum in a
much smaller model:

* some optimal solution uses the ``k`` largest minipods (moving a used minipod's load to a
  larger unused one changes neither term), and ``w_y k + w_T <=`` the start's objective, so
  only the ``k_max`` largest are candidates (:func:`candidate_pods`), ``y`` non-increasing;
* some optimal solution is a forest (no cycle in its unit-minipod graph: shifting one node
  alternately in and out along a cycle keeps every sum, until an edge empties), so it splits
  at most ``k - 1`` units. ``P = min(N, k_max - 1)`` units are modelled one by one, the other
  ``N - P`` are **whole units counted per minipod** (integer ``whole[j]``), and the forest
  bound ``sum_i (sum_j s[i,j] - 1) <= sum_j y[j] - 1`` is a constraint.

At 64 minipods the model has a few hundred pairs instead of 16,000–32,000.
:func:`model_size` counts the pairs and ``placement/coarse-mip`` builds no model with more
than :data:`MAX_PAIRS`. The closed-form start is computed sparsely
(``O(N * size + M log M)``), so it is available on any instance.

The module follows the formulation protocol of :mod:`topoopt.core.formulation`
(:func:`build`, :func:`extract`, :func:`warm_start`; data as ``Param`` s, module-level rules).
"""

from __future__ import annotations

import math
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
    """Unit-minipod pairs ``(i, j)`` of the model of ``unit`` (its size, see :data:`MAX_PAIRS`):
    the explicit units times the candidate minipods (see :func:`build`).

    Examples
    --------
    >>> from topoopt.placement.instance import Minipod
    >>> inst = PlacementInstance("x", (Minipod("a", 8), Minipod("b", 8)), dp=4, tp=8, pp=2,
    ...                          alpha=0.5)
    >>> model_size(inst, "pp"), per_unit_size(inst, "pp")  # one minipod holds every unit
    (1, 8)
    """
    n_units, _, _, _ = _shape(instance, unit)
    pods = candidate_pods(instance, unit)
    return _explicit_units(n_units, len(pods)) * len(pods)


def per_unit_size(instance: PlacementInstance, unit: str) -> int:
    """Unit-minipod pairs ``N * M`` of the per-unit reference model :func:`build_per_unit`."""
    return _shape(instance, unit)[0] * instance.n_minipods


def _explicit_units(n_units: int, n_pods: int) -> int:
    """Units modelled one by one: the at most ``k - 1`` units a forest solution splits."""
    return max(1, min(n_units, n_pods - 1))


def candidate_pods(instance: PlacementInstance, unit: str) -> list[int]:
    """The minipods an optimal coarse solution needs, largest first (ties by index).

    Some optimal solution uses the ``k`` largest minipods (moving the load of a used minipod
    to a larger unused one changes neither objective term), and ``w_y k + w_T <= `` the
    objective of the closed-form start, so only the ``k_max`` largest non-empty minipods are
    candidates (all of them when ``w_y = 0``). When the start meets :func:`lower_bound` it is
    optimal, and the minipods it uses (the largest ones) are the candidates.
    """
    return _candidates(instance, unit, _start_counts(instance, unit))


def _candidates(instance: PlacementInstance, unit: str, start: Counts) -> list[int]:
    """:func:`candidate_pods` given the closed-form start."""
    _, _, w_y, w_t = _shape(instance, unit)
    caps = instance.capacities
    order = sorted((j for j in range(len(caps)) if caps[j] > 0), key=lambda j: (-caps[j], j))
    used = len({j for counts in start for j in counts})  # a prefix of order
    upper = _sparse_objective(start, w_y, w_t)
    if upper <= lower_bound(instance, unit) + 1e-9:  # the start is optimal: its minipods do
        return order[:used]
    if w_y <= 0:
        return order
    k_max = math.floor((upper - w_t) / w_y + 1e-9)
    return order[: max(used, min(k_max, len(order)))]


def build(instance: PlacementInstance, unit: str = "pp") -> pyo.ConcreteModel:
    """The coarse model of eq. 4–10 for scheduling unit ``unit``, aggregated (see
    ``docs/placement.md``): the same optimum as :func:`build_per_unit`, a smaller model.

    Two reductions keep the optimum of eq. 4–10 and shrink the model from ``N * M`` to about
    ``k_max^2`` unit-minipod pairs:

    * only the :func:`candidate_pods` (the ``k_max`` largest minipods) are modelled, with
      ``y`` non-increasing along them;
    * some optimal solution is a **forest** (its unit-minipod graph has no cycle: moving
      nodes around a cycle, alternately one more and one fewer, keeps every sum and can be
      repeated until an edge of the cycle empties), so it splits at most ``k - 1`` units
      (``sum_i (s_i - 1) <= k - 1``). The units are interchangeable: ``P = min(N, k_max - 1)``
      units are modelled one by one (``s``, ``n``), the other ``N - P`` are whole units
      counted per minipod (``whole[j]``, integer), and the forest bound is a constraint.

    Parameters
    ----------
    instance
        The placement instance.
    unit
        ``"pp"`` (PP groups are the units, the paper's choice) or ``"dp"``.

    Returns
    -------
    pyomo.environ.ConcreteModel
        Data as ``Param`` s (``unit``, ``size``, ``w_y``, ``w_T``, ``floor``, ``free``,
        ``pod``, ``whole_units``, ``n_pods``, ``start``: the closed-form start's unit
        counts), variables ``y, s, n, whole, T``.
    """
    if unit not in UNITS:
        raise InvalidOptionError(f"unit: must be one of {', '.join(UNITS)}, got {unit!r}")
    n_units, size, w_y, w_t = _shape(instance, unit)
    closed_form = _start_counts(instance, unit)
    pods = _candidates(instance, unit, closed_form)
    explicit = _explicit_units(n_units, len(pods))
    start = tuple(tuple(sorted(group.items())) for group in closed_form)
    m = pyo.ConcreteModel(name=f"placement-coarse-{unit}-{instance.name}")
    m.start = pyo.Param(initialize=start, within=pyo.Any)
    m.unit = pyo.Param(initialize=unit, within=pyo.Any)
    m.size = pyo.Param(initialize=size, within=pyo.PositiveIntegers)
    m.w_y = pyo.Param(initialize=w_y, within=pyo.NonNegativeReals)
    m.w_T = pyo.Param(initialize=w_t, within=pyo.NonNegativeReals)
    m.floor = pyo.Param(initialize=lower_bound(instance, unit), within=pyo.Reals)
    m.n_pods = pyo.Param(initialize=instance.n_minipods, within=pyo.PositiveIntegers)
    m.whole_units = pyo.Param(initialize=n_units - explicit, within=pyo.NonNegativeIntegers)
    m.I = pyo.RangeSet(0, explicit - 1)
    m.J = pyo.RangeSet(0, len(pods) - 1)
    m.pod = pyo.Param(m.J, initialize=dict(enumerate(pods)), within=pyo.NonNegativeIntegers)
    m.free = pyo.Param(m.J, initialize={k: instance.capacities[j] for k, j in enumerate(pods)})
    m.y = pyo.Var(m.J, domain=pyo.Binary)
    m.s = pyo.Var(m.I, m.J, domain=pyo.Binary)
    m.n = pyo.Var(m.I, m.J, domain=pyo.NonNegativeIntegers, bounds=(0, size))
    m.whole = pyo.Var(m.J, domain=pyo.NonNegativeIntegers, bounds=_whole_bounds)
    m.T = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(1, len(pods)))
    m.max_spread = pyo.Constraint(m.I, rule=_max_spread_rule)
    m.capacity = pyo.Constraint(m.J, rule=_aggregated_capacity_rule)
    m.allocation = pyo.Constraint(m.I, rule=_allocation_rule)
    m.whole_count = pyo.Constraint(rule=_whole_count_rule)
    m.selection = pyo.Constraint(m.I, m.J, rule=_selection_rule)
    m.whole_unit_cut = pyo.Constraint(rule=_aggregated_whole_unit_rule)
    m.forest = pyo.Constraint(rule=_forest_rule)
    m.largest_first = pyo.Constraint(m.J, rule=_largest_first_rule)
    m.objective = pyo.Objective(rule=_objective_rule)
    m.capacity_bound = pyo.Constraint(rule=_capacity_bound_rule)
    return m


def build_per_unit(instance: PlacementInstance, unit: str = "pp") -> pyo.ConcreteModel:
    """The per-unit coarse model of eq. 4–10 (``N * M`` pairs), kept as the reference
    :func:`build` is tested against; variables ``y, s, n, T`` over every unit and minipod."""
    if unit not in UNITS:
        raise InvalidOptionError(f"unit: must be one of {', '.join(UNITS)}, got {unit!r}")
    n_units, size, w_y, w_t = _shape(instance, unit)
    m = pyo.ConcreteModel(name=f"placement-coarse-per-unit-{unit}-{instance.name}")
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


def _whole_bounds(m: pyo.ConcreteModel, j: int) -> tuple[int, int]:
    return 0, min(pyo.value(m.whole_units), pyo.value(m.free[j]) // pyo.value(m.size))


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


def _aggregated_capacity_rule(m: pyo.ConcreteModel, j: int) -> pyo.Expression:
    """Eq. 6 (in nodes), the whole units included."""
    load = pyo.value(m.size) * m.whole[j] + pyo.quicksum(m.n[i, j] for i in m.I)
    return load <= m.free[j] * m.y[j]


def _allocation_rule(m: pyo.ConcreteModel, i: int) -> pyo.Expression:
    """Eq. 7 (in nodes)."""
    return pyo.quicksum(m.n[i, j] for j in m.J) == pyo.value(m.size)


def _whole_count_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """Eq. 7 of the whole units: every unit not modelled one by one is somewhere, whole."""
    return pyo.quicksum(m.whole[j] for j in m.J) == pyo.value(m.whole_units)


def _selection_rule(m: pyo.ConcreteModel, i: int, j: int) -> pyo.Expression:
    """Eq. 8 (in nodes)."""
    return m.n[i, j] <= pyo.value(m.size) * m.s[i, j]


def _whole_unit_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    size = pyo.value(m.size)
    touches = pyo.quicksum(m.s[i, j] for i in m.I for j in m.J)
    whole = pyo.quicksum((m.free[j] // size) * m.y[j] for j in m.J)
    return touches >= 2 * len(m.I) - whole


def _aggregated_whole_unit_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """The whole-unit cut with the ``N - P`` whole units' touches counted (one each)."""
    size = pyo.value(m.size)
    touches = pyo.value(m.whole_units) + pyo.quicksum(m.s[i, j] for i in m.I for j in m.J)
    whole = pyo.quicksum((m.free[j] // size) * m.y[j] for j in m.J)
    return touches >= 2 * (len(m.I) + pyo.value(m.whole_units)) - whole


def _forest_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """A forest over ``k`` used minipods splits units ``sum_i (s_i - 1) <= k - 1`` times."""
    touches = pyo.quicksum(m.s[i, j] for i in m.I for j in m.J)
    return touches - len(m.I) <= pyo.quicksum(m.y[j] for j in m.J) - 1


def _largest_first_rule(m: pyo.ConcreteModel, j: int) -> pyo.Expression:
    """The used minipods are the largest candidates: ``y`` non-increasing."""
    if j == 0:
        return pyo.Constraint.Skip
    return m.y[j - 1] >= m.y[j]


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

    The unit counts of the placement (nodes of each unit in each minipod) give ``s``,
    ``y`` and ``T``; in the aggregated model (:func:`build`) its split units become the
    explicit units (whole units fill the rest) and the other whole units ``whole[j]``. A
    placement the aggregated model cannot hold (a minipod outside the candidates, more split
    units than explicit ones, more splits than the forest bound allows) is replaced by the
    closed-form start (kept in the model as ``start``), which it always holds. Given the
    instance instead of a placement, the start is :func:`start_solution`.
    """
    unit = str(pyo.value(model.unit))
    if isinstance(solution, PlacementInstance):
        solution = start_solution(solution, unit)
    units = solution.matrix if unit == "pp" else solution.columns()
    counts: Counts = [dict(Counter(group)) for group in units]
    if not hasattr(model, "whole"):  # the per-unit reference model
        _set_units(model, counts, {j: j for j in model.J})
        return
    if not _set_aggregated(model, counts):
        closed_form = [dict(group) for group in pyo.value(model.start)]
        if not _set_aggregated(model, closed_form):
            raise AssertionError("the closed-form start always fits the aggregated model")


def _set_aggregated(model: pyo.ConcreteModel, counts: Counts) -> bool:
    """Set the aggregated model's variables from unit counts; ``False`` (nothing set) when
    the model cannot hold them."""
    position = {pyo.value(model.pod[k]): k for k in model.J}
    split = [group for group in counts if len(group) > 1]
    whole = [group for group in counts if len(group) == 1]
    used = {j for group in counts for j in group}
    if (
        len(split) > len(model.I)
        or not used <= position.keys()
        or sum(len(group) - 1 for group in split) > max(position[j] for j in used)
    ):
        return False
    explicit = split + whole[: len(model.I) - len(split)]
    _set_units(model, explicit, position)
    per_pod = Counter(next(iter(group)) for group in whole[len(explicit) - len(split) :])
    for j, k in position.items():
        model.whole[k].set_value(per_pod.get(j, 0), skip_validation=True)
    last = max(position[j] for j in used)  # y non-increasing: every candidate up to the last
    for k, var in model.y.items():
        var.set_value(1 if k <= last else 0, skip_validation=True)
    return True


def _set_units(model: pyo.ConcreteModel, counts: Counts, position: dict[int, int]) -> None:
    """``n``, ``s``, ``y`` and ``T`` of the units modelled one by one."""
    dense = [{position[j]: n for j, n in group.items()} for group in counts]
    for i, group in enumerate(dense):
        for k in model.J:
            n = group.get(k, 0)
            model.n[i, k].set_value(n, skip_validation=True)
            model.s[i, k].set_value(1 if n else 0, skip_validation=True)
    used = {k for group in dense for k in group}
    for k, var in model.y.items():
        var.set_value(1 if k in used else 0, skip_validation=True)
    model.T.set_value(max([1, *(len(group) for group in counts)]))


def _sparse_counts(model: pyo.ConcreteModel) -> Counts:
    """Nodes of each unit in each minipod (instance indices) of the loaded solution."""
    per_unit = not hasattr(model, "whole")
    pod = {k: k if per_unit else pyo.value(model.pod[k]) for k in model.J}
    counts: Counts = []
    for i in model.I:
        values = {pod[k]: round(pyo.value(model.n[i, k])) for k in model.J}
        counts.append({j: n for j, n in values.items() if n})
    if not per_unit:
        size = pyo.value(model.size)
        for k in model.J:
            counts += [{pod[k]: size} for _ in range(round(pyo.value(model.whole[k])))]
    return counts


def unit_counts(model: pyo.ConcreteModel) -> list[list[int]]:
    """``counts[i][j]``: nodes of unit ``i`` in minipod ``j`` (rounded loaded values); in the
    aggregated model the units modelled one by one come first, then the whole units."""
    n_pods = pyo.value(model.n_pods) if hasattr(model, "n_pods") else len(model.J)
    dense = []
    for group in _sparse_counts(model):
        row = [0] * n_pods
        for j, n in group.items():
            row[j] = n
        dense.append(row)
    return dense


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
    return _placement(_contiguous_ranks(_sparse_counts(model)), str(pyo.value(model.unit)))
