r"""The exact MIP of cluster selection (SpiderFlow §4.1.1), solved lexicographically on a
provably safe reduction of the instance.

Data: clusters ``i`` with ``g_i`` free GPUs, demand ``d``; the *groups* of the cluster graph
(:attr:`ClusterGraph.groups <topoopt.crosscluster.graph.ClusterGraph.groups>`): the clusters
connected through maximum-spanning-tree links of bandwidth at least level ``w_ρ``, with rank
``ρ``. ``q`` levels; ``ℓ_ij`` the shortest-path latency (ms) between clusters ``i < j``.

**Reduction** (:func:`reduce`; ``docs/clusterselect.md``, "The MIP", proves each step):

1. ``K* = k``, the smallest ``k`` whose ``k`` largest clusters hold ``d`` GPUs: no fewer
   clusters hold the task, and any ``k`` clusters that hold it form a selection (the key
   depends on the set only).
2. ``ρ* =`` the smallest rank of a group holding ``d`` GPUs in its ``k`` largest clusters (for
   ``k = 1``, ``ρ* = 0``): a set of ``k`` clusters with a better rank would lie in a group of
   smaller rank holding it. The *hosts* are the groups of rank ``ρ*`` that hold ``d`` GPUs in
   ``k`` clusters (for ``k = 1`` the clusters with ``g_i >= d``); every optimal selection lies
   in one host.
3. In a host ``H``, a member of a ``k``-set holding ``d`` has
   ``g_i >= t_H = d - (the k - 1 largest g in H)``; the others are dropped.

Variables over the *candidates* (the remaining clusters of the hosts): ``x_i ∈ {0, 1}``
(cluster used), ``z_H ∈ {0, 1}`` (the host of the selection), ``p_ij >= 0`` for two candidates
of one host (both used; only when the links carry latencies). The GPUs taken are not variables:
:func:`extract` splits ``d`` over the used clusters (``Δ_i = min(g_i, R)`` after one GPU each,
eq. 4).

.. math::

    \sum_i g_i x_i \ge d, \qquad \sum_H z_H = 1, \qquad x_i \le z_{H(i)}

    p_{ij} \ge x_i + x_j - 1 \qquad (i, j \text{ in one host})

Two stages (hierarchical optimisation):

* stage ``"rank"``: minimise :math:`v = (q + 1) \sum_i x_i + ρ^* \sum_H z_H` (its optimum is
  ``(q + 1) k + ρ*``: the reduction's K and rank, confirmed by the solver);
* stage ``"latency"``: add :math:`v \le v^*` and minimise :math:`λ = \sum ℓ_{ij} p_{ij}`.

The family's scalar objective is then :math:`(v + λ / (1 + λ)) / (q + 1)`. ``build`` makes the
model with both objectives (the ``"rank"`` one active) and :func:`fix_rank` moves it to the
second stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.environ as pyo

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.clusterselect.solution import Selection, fewest_clusters, split


@dataclass(frozen=True)
class Reduction:
    """What every optimal selection satisfies (module docstring, steps 1-3).

    Attributes
    ----------
    clusters
        ``k = K*``.
    rank
        ``ρ*``, the optimal bottleneck rank.
    hosts
        The candidates of every host, as sorted cluster indices (one host per tuple).
    """

    clusters: int
    rank: int
    hosts: tuple[tuple[int, ...], ...]

    @property
    def candidates(self) -> list[int]:
        """Every candidate, sorted."""
        return sorted(i for host in self.hosts for i in host)


def _host(members: list[int], free: np.ndarray, k: int, demand: int) -> tuple[int, ...] | None:
    """The members of a group that can be in a ``k``-set holding ``demand`` (step 3), or
    ``None`` when its ``k`` largest clusters do not hold it."""
    if len(members) < k:
        return None
    sizes = np.sort(free[members])[::-1]
    if sizes[:k].sum() < demand:
        return None
    threshold = demand - sizes[: k - 1].sum()
    return tuple(i for i in sorted(members) if free[i] >= threshold)  # threshold >= 1 (step 1)


def reduce(instance: ClusterSelectInstance) -> Reduction:
    """:class:`Reduction` of ``instance``: ``K*``, ``ρ*`` and the candidates of the hosts."""
    free = np.asarray(instance.free, dtype=np.int64)
    demand = instance.demand
    k = fewest_clusters(instance.free, demand)
    if k == 1:
        return Reduction(1, 0, tuple((int(i),) for i in np.flatnonzero(free >= demand)))
    by_rank: dict[int, list[tuple[int, ...]]] = {}
    for group in instance.graph.groups:
        if by_rank and group.rank > min(by_rank):
            break  # the groups come by rank: the smallest rank that hosts is found
        if len(group.members) < 2:
            continue  # a singleton cannot hold k >= 2 clusters
        host = _host(list(group.members), free, k, demand)
        if host is not None:
            by_rank.setdefault(group.rank, []).append(host)
    rank = min(by_rank)
    return Reduction(k, rank, tuple(by_rank[rank]))


def _demand_rule(m: Any) -> Any:
    return sum(m.free[i] * m.use[i] for i in m.C) >= m.demand


def _one_host_rule(m: Any) -> Any:
    return sum(m.host[h] for h in m.H) == 1


def _inside_rule(m: Any, i: int) -> Any:
    return m.use[i] <= m.host[m.host_of[i]]


def _pair_rule(m: Any, i: int, j: int) -> Any:
    return m.both[i, j] >= m.use[i] + m.use[j] - 1


def _rank_expr(m: Any) -> Any:
    return (m.levels + 1) * sum(m.use[i] for i in m.C) + m.rank * sum(m.host[h] for h in m.H)


def _latency_expr(m: Any) -> Any:
    return sum(m.latency[i, j] * m.both[i, j] for i, j in m.P)


def build(instance: ClusterSelectInstance, reduction: Reduction | None = None) -> pyo.ConcreteModel:
    """The two-stage model of ``instance`` over its :func:`reduce` candidates (stage ``"rank"``
    active)."""
    graph, free = instance.graph, instance.free
    red = reduce(instance) if reduction is None else reduction
    usable = red.candidates
    m = pyo.ConcreteModel(name=f"clusterselect-{instance.name}")
    m.C = pyo.Set(initialize=usable)
    m.H = pyo.RangeSet(0, len(red.hosts) - 1)
    m.host_of = pyo.Param(m.C, initialize={i: h for h, host in enumerate(red.hosts) for i in host})
    m.rank = pyo.Param(initialize=red.rank)
    m.names = pyo.Param(m.C, initialize={i: graph.clusters[i] for i in usable}, within=pyo.Any)
    m.free = pyo.Param(m.C, initialize={i: free[i] for i in usable})
    m.demand = pyo.Param(initialize=instance.demand)
    m.levels = pyo.Param(initialize=len(graph.levels))
    pairs: list[tuple[int, int]] = []
    latency: dict[tuple[int, int], float] = {}
    if graph.has_latency and red.clusters > 1:
        for host in red.hosts:
            graph.keep_latency_rows(host)
            for k, i in enumerate(host):
                row = graph.latency_row(i)
                for j in host[k + 1 :]:
                    pairs.append((i, j))
                    latency[i, j] = float(row[j])
    m.P = pyo.Set(initialize=pairs, dimen=2)
    m.latency = pyo.Param(m.P, initialize=latency, default=0.0)

    m.use = pyo.Var(m.C, domain=pyo.Binary)
    m.host = pyo.Var(m.H, domain=pyo.Binary)
    m.both = pyo.Var(m.P, domain=pyo.NonNegativeReals, bounds=(0, 1))

    m.demand_met = pyo.Constraint(rule=_demand_rule)
    m.one_host = pyo.Constraint(rule=_one_host_rule)
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
    """Set every variable from ``solution`` (a selection outside one host's candidates sets
    the clusters it can and no host: the backend then ignores or repairs the start)."""
    taken = solution.as_dict()
    chosen = {i for i in model.C if taken.get(model.names[i], 0) > 0}
    for i in model.C:
        model.use[i].set_value(1 if i in chosen else 0)
    hosts = {pyo.value(model.host_of[i]) for i in chosen}
    inside = len(hosts) == 1 and len(chosen) == len([g for g in taken.values() if g > 0])
    for h in model.H:
        model.host[h].set_value(1 if inside and h in hosts else 0)
    for i, j in model.P:
        model.both[i, j].set_value(1 if i in chosen and j in chosen else 0)
