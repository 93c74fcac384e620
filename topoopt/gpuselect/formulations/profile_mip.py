"""Exact MIP for structured bandwidth models: per-host one-hot choices and an epigraph min.

For ``B(S) = min(min_h intra_h(S ∩ h), inter(c))`` (table, bottleneck, topology models;
:mod:`topoopt.gpuselect.structure`). Every host ``h`` picks exactly one option ``o`` from
``O_h`` — with ``choice="count"`` the best ``c``-subset of its idle GPUs for each count
``c = 0 .. a_h``, with ``choice="subset"`` every subset of its idle GPUs — and ``y`` is an
epigraph variable below every term that applies:

* ``sum_o x[h,o] = 1`` (one option per host); ``sum_{h,o} c_o x[h,o] = k``;
* ``s`` = 1 iff ``S`` spans >= 2 hosts: ``sum_h u_h <= 1 + (H - 1) s``, ``sum_h u_h >= 2 s``
  with ``u_h = 1 - x[h, empty]``;
* intra: ``y <= v_o + M (1 - x[h,o])`` for options of >= 2 GPUs (and single GPUs when
  ``k = 1``, the only case a lone GPU is the whole subset);
* inter, capped models: ``y <= cap(c_o) + M (1 - x[h,o]) + M (1 - s)`` for ``c_o >= 1``;
* inter, cross table: one key ``r`` chosen, ``sum_r z_r = s``, ``y <= v_r + M (1 - z_r)``;
  the chosen key equals the counts — interchangeable hosts: for every count ``c``,
  ``sum_h sum_{o: c_o = c} x[h,o] = sum_r mult_r(c) z_r + (1 - s) [c = k]``; ordered hosts:
  ``|c_h - sum_r key_r[h] z_r| <= k (1 - s)``;
* maximise ``y``; ``M`` is the largest finite term value and ``0 <= y <= M``.

This is BandPilot's problem ``S* = argmax_{S in C} B(S)`` (eq. 2) over ``C = {S ⊆ A : |S| = k}``
(eq. 1), linearised for structured ``B``; ``docs/gpuselect.md`` writes it out. The module
follows the formulation protocol of :mod:`topoopt.core.formulation` (:func:`build`,
:func:`extract`, :func:`warm_start`; data as ``Param`` s and ``Set`` s, module-level rules).
"""

from __future__ import annotations

import math

import pyomo.environ as pyo

from topoopt.core.errors import InvalidOptionError
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.masks import popcount, submasks
from topoopt.gpuselect.models import CapBound, ProfileBound
from topoopt.gpuselect.solution import Selection, from_masks
from topoopt.gpuselect.structure import Decomposition, check_profiles_complete, required_keys

CHOICES = ("count", "subset")


def host_options(dec: Decomposition, choice: str) -> list[list[tuple[int, float]]]:
    """``options[h]`` = ``[(mask, intra value), ...]`` of at most ``k`` GPUs, empty first."""
    if choice not in CHOICES:
        raise InvalidOptionError(f"choice: must be one of {', '.join(CHOICES)}, got {choice!r}")
    options = []
    for h, host in enumerate(dec.instance.hosts):
        if choice == "count":
            row = [(mask, value) for value, mask in dec.best[h]]
        else:
            table = dec.bound.tables[dec.bound.type_index[h]]
            row = [(m, float(table[m]) if m else math.inf) for m in submasks(host.available_mask)]
        options.append([(mask, value) for mask, value in row if popcount(mask) <= dec.k])
    return options


def build(instance: GpuSelectInstance, choice: str = "count") -> pyo.ConcreteModel:
    """The model of the module docstring (raises for missing table entries it would need).

    Parameters
    ----------
    instance
        An instance with a structured bandwidth model.
    choice
        ``"count"`` (each host picks a count, its best subset of that size) or ``"subset"``.

    Returns
    -------
    pyomo.environ.ConcreteModel
        Data as ``Param`` s and ``Set`` s (``O``, ``mask``, ``count``, ``intra_value``, ``cap``,
        ``key_gbps``, ...), variables ``x, s, y`` (and ``z`` for a cross table).
    """
    dec = Decomposition(instance)
    bound = dec.bound
    k = instance.k
    if k == 1:
        dec.single_host()  # raises when a single-GPU entry is missing
    options = host_options(dec, choice)
    keys: list[tuple[int, ...]] = []
    if isinstance(bound, ProfileBound) and dec.spanning_possible():
        if bound.profiles is None:
            bound.inter([1, k - 1])  # raises: no cross-host table
        check_profiles_complete(dec)
        keys = required_keys(dec)
    key_values = [bound.inter(list(key)) for key in keys]
    caps = {c: bound.cap(c) for c in range(1, k + 1)} if isinstance(bound, CapBound) else {}
    finite = [v for row in options for _, v in row if math.isfinite(v)]
    big_m = max([1.0, *finite, *key_values, *caps.values()])
    index = [(h, o) for h in range(instance.n_hosts) for o in range(len(options[h]))]
    count = {(h, o): popcount(options[h][o][0]) for h, o in index}

    m = pyo.ConcreteModel(name=f"gpuselect-{choice}-{instance.name}")
    m.choice = pyo.Param(initialize=choice, within=pyo.Any)
    m.k = pyo.Param(initialize=k, within=pyo.PositiveIntegers)
    m.big_m = pyo.Param(initialize=big_m, within=pyo.Reals)
    m.H = pyo.RangeSet(0, instance.n_hosts - 1)
    m.host_name = pyo.Param(
        m.H, initialize=dict(enumerate(h.name for h in instance.hosts)), within=pyo.Any
    )
    m.n_options = pyo.Param(
        m.H, initialize={h: len(options[h]) for h in m.H}, within=pyo.PositiveIntegers
    )
    m.O = pyo.Set(dimen=2, initialize=index)
    m.mask = pyo.Param(
        m.O, initialize={(h, o): options[h][o][0] for h, o in index}, within=pyo.NonNegativeIntegers
    )
    m.count = pyo.Param(m.O, initialize=count, within=pyo.NonNegativeIntegers)
    m.counts = pyo.RangeSet(1, k)
    m.INTRA = pyo.Set(
        dimen=2,
        within=m.O,
        initialize=[i for i in index if count[i] >= 2 or (k == 1 and count[i] == 1)],
    )
    m.intra_value = pyo.Param(
        m.INTRA, initialize={(h, o): options[h][o][1] for h, o in m.INTRA}, within=pyo.Any
    )
    m.capped = pyo.Param(initialize=bool(caps), within=pyo.Boolean)
    m.cap = pyo.Param(m.counts, initialize=caps, within=pyo.Any)
    m.x = pyo.Var(m.O, domain=pyo.Binary)
    m.s = pyo.Var(domain=pyo.Binary)
    m.y = pyo.Var(bounds=(0.0, big_m))
    m.one_option = pyo.Constraint(m.H, rule=_one_option_rule)
    m.total = pyo.Constraint(rule=_total_rule)
    m.span_upper = pyo.Constraint(rule=_span_upper_rule)
    m.span_lower = pyo.Constraint(rule=_span_lower_rule)
    m.intra = pyo.Constraint(m.H, rule=_intra_rule)
    if caps:
        m.inter = pyo.Constraint(m.H, rule=_inter_cap_rule)
        m.inter_all = pyo.Constraint(rule=_inter_all_rule)
    m.cross = pyo.Param(initialize=bool(keys), within=pyo.Boolean)
    if keys and isinstance(bound, ProfileBound):
        _cross_constraints(m, keys, key_values, bound.interchangeable)
    m.objective = pyo.Objective(rule=_objective_rule, sense=pyo.maximize)
    return m


def _used(m: pyo.ConcreteModel) -> pyo.Expression:
    """``sum_h u_h`` with ``u_h = 1 - x[h, empty]``: the number of hosts used."""
    return pyo.quicksum(1 - m.x[h, 0] for h in m.H)


def _one_option_rule(m: pyo.ConcreteModel, h: int) -> pyo.Expression:
    return pyo.quicksum(m.x[h, o] for o in range(m.n_options[h])) == 1


def _total_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    return pyo.quicksum(m.count[i] * m.x[i] for i in m.O) == pyo.value(m.k)


def _span_upper_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    return _used(m) <= 1 + (len(m.H) - 1) * m.s


def _span_lower_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    return _used(m) >= 2 * m.s


def _intra_rule(m: pyo.ConcreteModel, h: int) -> pyo.Expression:
    """``y <= sum_o a_o x[h, o]``: ``a_o`` the option's intra value, ``M`` for options that
    impose none (the convex hull of the host's disjunction, tighter than one big-M row per
    option)."""
    big_m = pyo.value(m.big_m)
    terms = [
        (m.intra_value[h, o] if (h, o) in m.INTRA else big_m) * m.x[h, o]
        for o in range(m.n_options[h])
    ]
    return m.y <= pyo.quicksum(terms)


def _inter_cap_rule(m: pyo.ConcreteModel, h: int) -> pyo.Expression:
    """``y <= sum_o cap(c_o) x[h, o] + M (1 - s)`` (``M`` for the empty option)."""
    big_m = pyo.value(m.big_m)
    terms = [
        (m.cap[m.count[h, o]] if m.count[h, o] >= 1 else big_m) * m.x[h, o]
        for o in range(m.n_options[h])
    ]
    return m.y <= pyo.quicksum(terms) + big_m * (1 - m.s)


def _inter_all_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """``y <= cap(1) s + M (1 - s)``: a spanning subset is worth at most the uncapped inter
    term (``cap`` is non-increasing); one row that bounds the relaxation once ``s`` is 1."""
    return m.y <= m.cap[1] * m.s + pyo.value(m.big_m) * (1 - m.s)


def _key_all_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    """``y <= sum_r w_r z_r + M (1 - s)`` (the hull of the key disjunction, as
    ``sum_r z_r = s``)."""
    return m.y <= pyo.quicksum(m.key_gbps[r] * m.z[r] for r in m.R) + pyo.value(m.big_m) * (1 - m.s)


def _objective_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    return m.y


def _one_key_rule(m: pyo.ConcreteModel) -> pyo.Expression:
    return pyo.quicksum(m.z[r] for r in m.R) == m.s


def _key_value_rule(m: pyo.ConcreteModel, r: int) -> pyo.Expression:
    return m.y <= m.key_gbps[r] + pyo.value(m.big_m) * (1 - m.z[r])


def _profile_rule(m: pyo.ConcreteModel, c: int) -> pyo.Expression:
    lhs = pyo.quicksum(m.x[i] for i in m.O if m.count[i] == c)
    rhs = pyo.quicksum(m.key_parts[r, c] * m.z[r] for r in m.R)
    return lhs == rhs + ((1 - m.s) if c == pyo.value(m.k) else 0)


def _host_count(m: pyo.ConcreteModel, h: int) -> pyo.Expression:
    return pyo.quicksum(m.count[h, o] * m.x[h, o] for hh, o in m.O if hh == h)


def _key_count(m: pyo.ConcreteModel, h: int) -> pyo.Expression:
    return pyo.quicksum(m.key_counts[r, h] * m.z[r] for r in m.R)


def _vector_upper_rule(m: pyo.ConcreteModel, h: int) -> pyo.Expression:
    return _host_count(m, h) - _key_count(m, h) <= pyo.value(m.k) * (1 - m.s)


def _vector_lower_rule(m: pyo.ConcreteModel, h: int) -> pyo.Expression:
    return _host_count(m, h) - _key_count(m, h) >= -pyo.value(m.k) * (1 - m.s)


def _cross_constraints(
    m: pyo.ConcreteModel, keys: list[tuple[int, ...]], values: list[float], interchangeable: bool
) -> None:
    m.R = pyo.RangeSet(0, len(keys) - 1)
    m.key_gbps = pyo.Param(m.R, initialize=dict(enumerate(values)), within=pyo.Any)
    m.interchangeable = pyo.Param(initialize=interchangeable, within=pyo.Boolean)
    m.z = pyo.Var(m.R, domain=pyo.Binary)
    m.one_key = pyo.Constraint(rule=_one_key_rule)
    m.key_value = pyo.Constraint(m.R, rule=_key_value_rule)
    m.key_all = pyo.Constraint(rule=_key_all_rule)
    if interchangeable:
        m.key_parts = pyo.Param(
            m.R,
            m.counts,
            within=pyo.NonNegativeIntegers,
            initialize={(r, c): keys[r].count(c) for r in m.R for c in m.counts},
        )
        m.profile = pyo.Constraint(m.counts, rule=_profile_rule)
    else:
        m.key_counts = pyo.Param(
            m.R,
            m.H,
            within=pyo.NonNegativeIntegers,
            initialize={(r, h): keys[r][h] for r in m.R for h in m.H},
        )
        m.vector_upper = pyo.Constraint(m.H, rule=_vector_upper_rule)
        m.vector_lower = pyo.Constraint(m.H, rule=_vector_lower_rule)


def warm_start(model: pyo.ConcreteModel, selection: Selection) -> None:
    """Set every variable of ``model`` from ``selection`` (a complete MIP start).

    Each host takes the option with the selection's GPUs on it, or (``choice="count"``) the
    option of the same size, the best subset of that size; ``s``, ``z`` follow and ``y`` is
    the smallest term that applies (at most ``M``).
    """
    host_of = {model.host_name[h]: h for h in model.H}
    masks = [0] * len(model.H)
    for name, i in selection.gpus:
        masks[host_of[name]] |= 1 << i
    chosen = []
    for h in model.H:
        options = [o for hh, o in model.O if hh == h]
        same = [o for o in options if model.mask[h, o] == masks[h]]
        size = [o for o in options if model.count[h, o] == popcount(masks[h])]
        chosen.append((h, (same or size)[0]))
    for i, var in model.x.items():
        var.set_value(1 if i in chosen else 0)
    spanning = sum(1 for i in chosen if model.count[i] >= 1) >= 2
    model.s.set_value(1 if spanning else 0)
    terms = [pyo.value(model.intra_value[i]) for i in chosen if i in model.INTRA]
    if spanning and pyo.value(model.capped):
        terms += [pyo.value(model.cap[model.count[i]]) for i in chosen if model.count[i] >= 1]
    if pyo.value(model.cross):
        counts = [model.count[i] for i in chosen]
        for r in model.R:
            if pyo.value(model.interchangeable):
                match = all(model.key_parts[r, c] == counts.count(c) for c in model.counts)
            else:
                match = all(model.key_counts[r, h] == counts[h] for h in model.H)
            hit = spanning and match
            model.z[r].set_value(1 if hit else 0)
            if hit:
                terms.append(pyo.value(model.key_gbps[r]))
    big_m = pyo.value(model.big_m)
    model.y.set_value(min(max(0.0, min([big_m, *terms])), big_m))


def extract(model: pyo.ConcreteModel, instance: GpuSelectInstance) -> Selection:
    """The selection of the loaded solution (each host's chosen option)."""
    masks = [0] * instance.n_hosts
    for h, o in model.O:
        if pyo.value(model.x[h, o]) > 0.5:
            masks[h] = model.mask[h, o]
    return from_masks(instance, masks)
