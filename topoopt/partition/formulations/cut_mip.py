r"""The exact MIP of capacitated job-graph partitioning (SpiderFlow §4.2, eq. 9).

Data: vertices ``v`` with ``g_v`` GPUs, clusters ``c`` with capacity ``K_c``, edges ``e = (u,
v)`` with traffic ``t_e``; the cost ``w(a, b) = 1 / β(a → b)`` of eq. 9 (eq. 1 widest paths).

**The cut cost is a sum over levels.** Widest-path bandwidths form an ultrametric: with the
levels ``b_1 > … > b_q`` (the spanning tree's distinct bandwidths) and the partitions
``P_0 ⊃ … ⊃ P_{q-1}`` of the clusters (:attr:`ClusterGraph.hierarchy
<topoopt.crosscluster.graph.ClusterGraph.hierarchy>`: ``P_0`` the singletons, ``P_j`` the
components of tree links of bandwidth ``>= b_j``), two clusters ``a != b`` are first together in
``P_j*`` exactly when ``β(a → b) = b_j*``, so

.. math::

    w(a, b) = \sum_{j=0}^{q-1} δ_j \, [a, b \text{ separated by } P_j], \qquad
    δ_0 = 1 / b_1, \quad δ_j = 1 / b_{j+1} - 1 / b_j > 0.

Variables: ``x_{vc} ∈ {0, 1}`` (vertex ``v`` in cluster ``c``) and ``s_{ej} ∈ [0, 1]`` (edge
``e`` separated by ``P_j``), with ``X_{vG} = \sum_{c ∈ G} x_{vc}`` for a group ``G ∈ P_j``:

.. math::

    \min \sum_e t_e \sum_j δ_j s_{ej}

    \sum_c x_{vc} = 1 \quad ∀v, \qquad \sum_v g_v x_{vc} \le K_c \quad ∀c

    s_{ej} \ge X_{uG} - X_{vG}, \quad s_{ej} \ge X_{vG} - X_{uG} \quad ∀e, j, G ∈ P_j

For integral ``x`` the right-hand sides are 1 exactly when ``u`` and ``v`` lie in different
groups of ``P_j``, so minimisation makes ``s_{ej}`` that indicator and the objective is eq. 9
exactly. This needs ``|E| · q`` separation variables instead of the ``|E| · C²`` of a
per-cluster-pair linearisation.

**Symmetry.** Clusters with the same capacity that the hierarchy cannot tell apart (the same
group at every level — *twins*, e.g. two equal clusters behind one switch) are interchangeable:
for consecutive twins ``c < c'`` the model requires the first vertex in ``c'`` to come after the
first vertex in ``c``: ``x_{0c'} = 0`` and ``x_{vc'} \le \sum_{u < v} x_{uc}`` for ``v > 0``.
Renaming the twins of any solution by their first vertices meets these constraints at the same
cost, so one of the equivalent solutions is kept.
"""

from __future__ import annotations

import itertools
from typing import Any

import pyomo.environ as pyo

from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment


def level_steps(levels: tuple[float, ...]) -> list[float]:
    """``δ_j``: ``1 / b_1``, then ``1 / b_{j+1} - 1 / b_j``.

    Examples
    --------
    >>> level_steps((100.0, 25.0, 10.0))
    [0.01, 0.03, 0.06]
    """
    out, previous = [], 0.0
    for level in levels:
        out.append(round(1.0 / level - previous, 15))
        previous = 1.0 / level
    return out


def twins(instance: PartitionInstance) -> list[tuple[int, int]]:
    """Pairs ``(c, c')``, ``c < c'``, of consecutive interchangeable clusters: same capacity and
    the same group at every level but the finest."""
    signature: dict[tuple[Any, ...], list[int]] = {}
    for c, cluster in enumerate(instance.clusters):
        groups = tuple(
            next(k for k, group in enumerate(part) if c in group)
            for part in instance.graph.hierarchy[1:]
        )
        signature.setdefault((cluster.capacity_gpus, groups), []).append(c)
    # same groups at level 1 and up means the same widest path to every other cluster, but the
    # two may still be separated at level 0 (they always are: singletons); w(c, c') itself is
    # the same for every member of the class, so swapping two members keeps every cost.
    return [(a, b) for members in signature.values() for a, b in itertools.pairwise(members)]


def _assign_rule(m: Any, v: int) -> Any:
    return sum(m.x[v, c] for c in m.C) == 1


def _capacity_rule(m: Any, c: int) -> Any:
    return sum(m.gpus[v] * m.x[v, c] for v in m.V) <= m.capacity[c]


def _group_sum(m: Any, v: int, g: int) -> Any:
    return sum(m.x[v, c] for c in m.members[g])


def _sep_up_rule(m: Any, e: int, g: int) -> Any:
    return m.sep[e, m.level[g]] >= _group_sum(m, m.u[e], g) - _group_sum(m, m.w[e], g)


def _sep_down_rule(m: Any, e: int, g: int) -> Any:
    return m.sep[e, m.level[g]] >= _group_sum(m, m.w[e], g) - _group_sum(m, m.u[e], g)


def _twin_rule(m: Any, k: int, v: int) -> Any:
    first, second = m.twin_first[k], m.twin_second[k]
    if v == 0:
        return m.x[v, second] == 0
    return m.x[v, second] <= sum(m.x[u, first] for u in range(v))


def _objective_rule(m: Any) -> Any:
    return sum(m.traffic[e] * m.step[j] * m.sep[e, j] for e in m.E for j in m.J)


def build(instance: PartitionInstance, symmetry: bool = True) -> pyo.ConcreteModel:
    """The model of ``instance``; ``symmetry=False`` leaves out the twin-cluster constraints."""
    graph = instance.graph
    u, w, traffic = instance.edge_arrays
    # one group list per level j = 0..q-1 (P_q, one component, separates nothing)
    groups = [
        (j, sorted(group))
        for j, part in enumerate(graph.hierarchy[: len(graph.levels)])
        for group in part
        if len(part) > 1
    ]
    m = pyo.ConcreteModel(name=f"partition-{instance.name}")
    m.V = pyo.RangeSet(0, instance.n_vertices - 1)
    m.C = pyo.RangeSet(0, instance.n_clusters - 1)
    m.E = pyo.RangeSet(0, len(instance.edges) - 1)
    m.J = pyo.RangeSet(0, len(graph.levels) - 1)
    m.G = pyo.RangeSet(0, len(groups) - 1)
    m.vertex_names = pyo.Param(
        m.V, initialize={i: x.name for i, x in enumerate(instance.vertices)}, within=pyo.Any
    )
    m.cluster_names = pyo.Param(m.C, initialize=dict(enumerate(graph.clusters)), within=pyo.Any)
    m.gpus = pyo.Param(m.V, initialize={i: x.gpus for i, x in enumerate(instance.vertices)})
    m.capacity = pyo.Param(
        m.C, initialize={c: x.capacity_gpus for c, x in enumerate(instance.clusters)}
    )
    m.u = pyo.Param(m.E, initialize=dict(enumerate(u.tolist())))
    m.w = pyo.Param(m.E, initialize=dict(enumerate(w.tolist())))
    m.traffic = pyo.Param(m.E, initialize=dict(enumerate(traffic.tolist())))
    m.step = pyo.Param(m.J, initialize=dict(enumerate(level_steps(graph.levels))))
    m.level = pyo.Param(m.G, initialize={g: j for g, (j, _) in enumerate(groups)})
    m.members = pyo.Set(m.G, initialize={g: members for g, (_, members) in enumerate(groups)})
    pairs = twins(instance) if symmetry else []
    m.T = pyo.RangeSet(0, len(pairs) - 1)
    m.twin_first = pyo.Param(m.T, initialize={k: a for k, (a, _) in enumerate(pairs)})
    m.twin_second = pyo.Param(m.T, initialize={k: b for k, (_, b) in enumerate(pairs)})

    m.x = pyo.Var(m.V, m.C, domain=pyo.Binary)
    m.sep = pyo.Var(m.E, m.J, domain=pyo.NonNegativeReals, bounds=(0, 1))
    m.assign = pyo.Constraint(m.V, rule=_assign_rule)
    m.capacity_limit = pyo.Constraint(m.C, rule=_capacity_rule)
    m.sep_up = pyo.Constraint(m.E, m.G, rule=_sep_up_rule)
    m.sep_down = pyo.Constraint(m.E, m.G, rule=_sep_down_rule)
    m.twin_order = pyo.Constraint(m.T, m.V, rule=_twin_rule)
    m.cut = pyo.Objective(rule=_objective_rule, sense=pyo.minimize)
    return m


def extract(model: pyo.ConcreteModel, instance: PartitionInstance) -> Assignment:
    """The assignment of the loaded ``x`` (the cluster with the largest value per vertex)."""
    clusters = []
    for v in model.V:
        values = [float(pyo.value(model.x[v, c])) for c in model.C]  # clusters 0 .. C-1
        clusters.append(values.index(max(values)))
    return Assignment.from_indices(instance, clusters)


def warm_start(model: pyo.ConcreteModel, solution: Assignment) -> None:
    """Set ``x`` and ``sep`` from ``solution``, twin clusters renamed to meet the symmetry
    constraints (the cost is unchanged: twins have the same capacity and costs)."""
    vertex_of = {model.vertex_names[v]: v for v in model.V}
    cluster_of = {model.cluster_names[c]: c for c in model.C}
    where = [0] * len(model.V)
    for vertex, cluster in solution.assign:
        where[vertex_of[vertex]] = cluster_of[cluster]
    where = canonical(where, [(model.twin_first[k], model.twin_second[k]) for k in model.T])
    for v in model.V:
        for c in model.C:
            model.x[v, c].set_value(1 if where[v] == c else 0)
    separated = {(e, j): 0 for e in model.E for j in model.J}
    for g in model.G:
        members = set(model.members[g])
        for e in model.E:
            if (where[model.u[e]] in members) != (where[model.w[e]] in members):
                separated[e, model.level[g]] = 1
    for (e, j), value in separated.items():
        model.sep[e, j].set_value(value)


def canonical(where: list[int], pairs: list[tuple[int, int]]) -> list[int]:
    """``where`` with the clusters of each twin class renamed so that their first vertices come
    in cluster order (classes are the chains of consecutive ``pairs``).

    Examples
    --------
    >>> canonical([1, 1, 0, 2], [(0, 1), (1, 2)])
    [0, 0, 1, 2]
    """
    classes: list[list[int]] = []
    for a, b in pairs:
        if classes and classes[-1][-1] == a:
            classes[-1].append(b)
        else:
            classes.append([a, b])
    rename = {}
    for members in classes:
        first = {c: next((v for v, x in enumerate(where) if x == c), len(where)) for c in members}
        for target, source in zip(
            members, sorted(members, key=lambda c: (first[c], c)), strict=True
        ):
            rename[source] = target
    return [rename.get(c, c) for c in where]
