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
            row = [(m, float(table[m]) if m else math.inf)
                   for m in submasks(host.available_mask)]
        options.append([(mask, value) for mask, value in row if popcount(mask) <= dec.k])
    return options


def build(instance: GpuSelectInstance, choice: str = "count") -> pyo.ConcreteModel:
    """The model of the module docstring (raises for missing table entries it would need)."""
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

    m = pyo.ConcreteModel(name=f"gpuselect-{choice}-{instance.name}")
    m.choice = choice
    m.H = pyo.RangeSet(0, instance.n_hosts - 1)
    m.O = pyo.Set(dimen=2, initialize=[(h, o) for h in m.H for o in range(len(options[h]))])
    m.mask = {(h, o): options[h][o][0] for h, o in m.O}
    m.count = {(h, o): popcount(options[h][o][0]) for h, o in m.O}
    m.x = pyo.Var(m.O, domain=pyo.Binary)
    m.s = pyo.Var(domain=pyo.Binary)
    m.y = pyo.Var(bounds=(0.0, big_m))
    m.one_option = pyo.Constraint(
        m.H, rule=lambda m, h: pyo.quicksum(m.x[h, o] for o in range(len(options[h]))) == 1)
    m.total = pyo.Constraint(expr=pyo.quicksum(m.count[i] * m.x[i] for i in m.O) == k)
    used = pyo.quicksum(1 - m.x[h, 0] for h in m.H)
    m.span_upper = pyo.Constraint(expr=used <= 1 + (len(m.H) - 1) * m.s)
    m.span_lower = pyo.Constraint(expr=used >= 2 * m.s)
    intra = [i for i in m.O if m.count[i] >= 2 or (k == 1 and m.count[i] == 1)]
    m.intra = pyo.Constraint(
        intra, rule=lambda m, h, o: m.y <= options[h][o][1] + big_m * (1 - m.x[h, o]))
    if caps:
        m.inter = pyo.Constraint(
            [i for i in m.O if m.count[i] >= 1],
            rule=lambda m, h, o: m.y <= caps[m.count[h, o]] + big_m * (2 - m.x[h, o] - m.s))
    if keys and isinstance(bound, ProfileBound):
        _cross_constraints(m, keys, key_values, big_m, k, bound)
    m.objective = pyo.Objective(expr=m.y, sense=pyo.maximize)
    return m


def _cross_constraints(m: pyo.ConcreteModel, keys: list[tuple[int, ...]], values: list[float],
                       big_m: float, k: int, bound: ProfileBound) -> None:
    m.R = pyo.RangeSet(0, len(keys) - 1)
    m.z = pyo.Var(m.R, domain=pyo.Binary)
    m.one_key = pyo.Constraint(expr=pyo.quicksum(m.z[r] for r in m.R) == m.s)
    m.key_value = pyo.Constraint(m.R, rule=lambda m, r: m.y <= values[r] + big_m * (1 - m.z[r]))
    if bound.interchangeable:
        def profile_rule(m: pyo.ConcreteModel, c: int) -> pyo.Expression:
            lhs = pyo.quicksum(m.x[i] for i in m.O if m.count[i] == c)
            rhs = pyo.quicksum(keys[r].count(c) * m.z[r] for r in m.R)
            return lhs == rhs + ((1 - m.s) if c == k else 0)

        m.profile = pyo.Constraint(pyo.RangeSet(1, k), rule=profile_rule)
    else:
        def count_of(m: pyo.ConcreteModel, h: int) -> pyo.Expression:
            return pyo.quicksum(m.count[h, o] * m.x[h, o] for hh, o in m.O if hh == h)

        m.vector_upper = pyo.Constraint(m.H, rule=lambda m, h: count_of(m, h) - pyo.quicksum(
            keys[r][h] * m.z[r] for r in m.R) <= k * (1 - m.s))
        m.vector_lower = pyo.Constraint(m.H, rule=lambda m, h: count_of(m, h) - pyo.quicksum(
            keys[r][h] * m.z[r] for r in m.R) >= -k * (1 - m.s))


def extract(model: pyo.ConcreteModel, instance: GpuSelectInstance) -> Selection:
    """The selection of the loaded solution (each host's chosen option)."""
    masks = [0] * instance.n_hosts
    for h, o in model.O:
        if pyo.value(model.x[h, o]) > 0.5:
            masks[h] = model.mask[h, o]
    return from_masks(instance, masks)
