r"""The exact MIP of cluster selection (SpiderFlow §4.1.1), solved lexicographically.

Data: clusters ``i`` with ``g_i`` free GPUs, demand ``d``; the *groups* ``t`` of the cluster
graph (:attr:`ClusterGraph.groups <topoopt.crosscluster.graph.ClusterGraph.groups>`): sets of
clusters connected through maximum-spanning-tree links of bandwidth at least level
``w_{ρ_t}``, with rank ``ρ_t`` (singletons rank 0); only groups holding ``d`` GPUs are kept.
``q`` levels; ``ℓ_ij`` the shortest-path latency (ms) between clusters ``i < j``.

Only clusters with free GPUs take part (``g_i > 0``). Variables: ``x_i ∈ {0, 1}`` (cluster
used), ``z_t ∈ {0, 1}`` (the group that contains the selection), ``p_ij >= 0`` (both ``i`` and
``j`` used). The key depends on the set ``S = {i : x_i = 1}`` only, so the GPUs taken are not
variables: a set can serve the task iff it holds ``d`` GPUs, and :func:`extract` splits ``d``
over it (``Δ_i = min(g_i, R)`` after one GPU each, eq. 4).

.. math::

    \sum_i g_i x_i \ge d

    \sum_t z_t = 1, \qquad x_i \le \sum_{t \ni i} z_t                       \quad (1)

    p_{ij} \ge x_i + x_j - 1

The selection lies in the chosen group, so its bottleneck (eq. 1) is at least ``w_{ρ_t}``; and
the smallest group containing a set has exactly the set's bottleneck rank, so minimising picks
it. The lexicographic key is solved in two stages (hierarchical optimisation):

* stage ``"rank"``: minimise :math:`v = (q + 1) \sum_i x_i + \sum_t ρ_t z_t` (integer; as
  ``ρ <= q - 1``, ``v`` orders by ``K`` first, then by the rank);
* stage ``"latency"``: add :math:`v \le v^*` and minimise :math:`λ = \sum_{i<j} ℓ_{ij} p_{ij}`.

The family's scalar objective is then :math:`(v + λ / (1 + λ)) / (q + 1)`. ``build`` makes the
model with both objectives (the ``"rank"`` one active) and :func:`fix_rank` moves it to the
second stage.
"""

from __future__ import annotations

from typing import Any

import pyomo.environ as pyo

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.clusterselect.solution import Selection, split


def _demand_rule(m: Any) -> Any:
    return sum(m.free[i] * m.use[i] for i in m.C) >= m.demand


def _one_group_rule(m: Any) -> Any:
    return sum(m.group[t] for t in m.T) == 1


def _inside_rule(m: Any, i: int) -> Any:
    containing = [t for t in m.T if i in m.members[t]]
    if not containing:
        return m.use[i] == 0
    return m.use[i] <= sum(m.group[t] for t in containing)


def _pair_rule(m: Any, i: int, j: int) -> Any:
    return m.both[i, j] >= m.use[i] + m.use[j] - 1


def _rank_expr(m: Any) -> Any:
    return (m.levels + 1) * sum(m.use[i] for i in m.C) + sum(m.rank[t] * m.group[t] for t in m.T)


def _latency_expr(m: Any) -> Any:
    return sum(m.latency[i, j] * m.both[i, j] for i, j in m.P)


def build(instance: ClusterSelectInstance) -> pyo.ConcreteModel:
    """The two-stage model of ``instance`` (stage ``"rank"`` active)."""
    graph, free = instance.graph, instance.free
    groups = [g for g in graph.groups if sum(free[i] for i in g.members) >= instance.demand]
    m = pyo.ConcreteModel(name=f"clusterselect-{instance.name}")
    usable = [i for i in range(graph.n) if free[i] > 0]
    m.C = pyo.Set(initialize=usable)
    m.T = pyo.RangeSet(0, len(groups) - 1)
    m.members = pyo.Set(m.T, initialize={t: sorted(g.members) for t, g in enumerate(groups)})
    m.rank = pyo.Param(m.T, initialize={t: g.rank for t, g in enumerate(groups)})
    m.names = pyo.Param(m.C, initialize={i: graph.clusters[i] for i in usable}, within=pyo.Any)
    m.free = pyo.Param(m.C, initialize={i: free[i] for i in usable})
    m.demand = pyo.Param(initialize=instance.demand)
    m.levels = pyo.Param(initialize=len(graph.levels))
    pairs = [(i, j) for k, i in enumerate(usable) for j in usable[k + 1 :]]
    m.P = pyo.Set(initialize=pairs, dimen=2)
    latency = {}
    if graph.has_latency:
        for k, i in enumerate(usable):
            row = graph.latency_from(graph.clusters[i])
            latency.update({(i, j): row[j] for j in usable[k + 1 :]})
    m.latency = pyo.Param(m.P, initialize=latency, default=0.0)

    m.use = pyo.Var(m.C, domain=pyo.Binary)
    m.group = pyo.Var(m.T, domain=pyo.Binary)
    m.both = pyo.Var(m.P, domain=pyo.NonNegativeReals, bounds=(0, 1))

    m.demand_met = pyo.Constraint(rule=_demand_rule)
    m.one_group = pyo.Constraint(rule=_one_group_rule)
    m.inside = pyo.Constraint(m.C, rule=_inside_rule)
    m.pair = pyo.Constraint(m.P, rule=_pair_rule)
    m.rank_value = pyo.Expression(rule=_rank_expr)
    m.latency_value = pyo.Expression(rule=_latency_expr)
    m.rank_objective = pyo.Objective(expr=m.rank_value, sense=pyo.minimize)
    m.latency_objective = pyo.Objective(expr=m.latency_value, sense=pyo.minimize)
    m.latency_objective.deactivate()
    return m


def fix_rank(model: pyo.ConcreteModel, value: int) -> None:
    """Second stage: keep ``v <= value`` and minimise the latency instead."""
    model.rank_fixed = pyo.Constraint(expr=model.rank_value <= value)
    model.rank_objective.deactivate()
    model.latency_objective.activate()


def extract(model: pyo.ConcreteModel, instance: ClusterSelectInstance) -> Selection:
    """The selection of the loaded ``x``: one GPU from each used cluster, then the rest in
    cluster order, ``Δ_i = min(g_i, R)`` (a used cluster left without a GPU is dropped)."""
    used = [i for i in model.C if pyo.value(model.use[i]) > 0.5]
    return Selection.from_counts(instance, split(instance.free, used, instance.demand))


def warm_start(model: pyo.ConcreteModel, solution: Selection) -> None:
    """Set every variable from ``solution`` (the smallest group holding it)."""
    taken = solution.as_dict()
    chosen = {i for i in model.C if taken.get(model.names[i], 0) > 0}
    for i in model.C:
        model.use[i].set_value(1 if i in chosen else 0)
    fitting = [t for t in model.T if chosen <= set(model.members[t])]
    best = min(fitting, key=lambda t: pyo.value(model.rank[t]), default=None)
    for t in model.T:
        model.group[t].set_value(1 if t == best else 0)
    for i, j in model.P:
        model.both[i, j].set_value(1 if i in chosen and j in chosen else 0)
