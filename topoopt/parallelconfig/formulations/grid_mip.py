r"""The ILP of the intra-cluster level of TPA (SpiderFlow §4.2): ``(d, p)`` and the node of
every (replica, stage).

Data: configurations ``k`` (admissible ``(d_k, p_k)``; one per model when
``parallelconfig/mip`` solves them one by one, all of them in the joint model), nodes ``n``
with ``g_n`` GPUs, the cells ``(k, j, s)`` (replica ``j < d_k``, stage ``s < p_k``), the
constants of the cost model (:mod:`topoopt.parallelconfig.solution`, times in seconds):

* ``C_k = (m_k + p_k - 1) max_s c_s`` (``T_comp``, fixed by the configuration);
* ``D_{ks} = 2(d_k - 1)/d_k · P_s / B_cross`` and ``E_{ks} = 2(d_k - 1)/d_k · P_s · (1/B_cross -
  1/B_intra)``: the all-reduce time of stage ``s`` across nodes, and what keeping it in one node
  saves (``d_k >= 2`` only);
* ``F_k = m_k A / B_cross`` and ``H_k = m_k A (1/B_cross - 1/B_intra)``: the sends of one stage
  boundary of one replica across nodes, and what keeping it in one node saves (``p_k >= 2``).

GPUs of one node are interchangeable, so a cell is assigned to a node, not to a GPU. Variables:
``z_k ∈ {0,1}`` (configuration chosen), ``x_{kjsn} ∈ {0,1}`` (cell on node ``n``),
``u_{ksn} ∈ [0,1]`` (all ``d_k`` cells of stage ``s`` on node ``n``), ``v_{kjsn} ∈ [0,1]``
(cells ``s`` and ``s+1`` of replica ``j`` both on node ``n``), ``τ^dp_k, τ^pp_k >= 0``.

.. math::

    \sum_k z_k = 1, \qquad \sum_n x_{kjsn} = z_k, \qquad
    \sum_{j,s} x_{kjsn} \le g_n z_k                                              \quad (1)

    u_{ksn} \le x_{kjsn} \;\; \forall j, \qquad
    v_{kjsn} \le x_{kjsn}, \quad v_{kjsn} \le x_{kj(s+1)n}                          \quad (2)

    τ^{dp}_k \ge D_{ks} z_k - E_{ks} \sum_n u_{ksn} \;\; \forall s                  \quad (3)

    τ^{pp}_k \ge \sum_{s < p_k - 1} \big(F_k z_k - H_k \sum_n v_{kjsn}\big) \;\; \forall j \quad (4)

    \min \; \Big(\sum_k (C_k - o) z_k + α τ^{dp}_k + β τ^{pp}_k\Big) / σ

(2) linearises ``u_{ksn} = min_j x_{kjsn}`` and ``v_{kjsn} = x_{kjsn} x_{kj(s+1)n}`` from above
only. That suffices: for a fixed integer ``x`` the objective does not increase when ``u`` and
``v`` grow (``E, H >= 0`` as ``B_cross <= B_intra``), so its minimum over ``u, v`` is reached at
``u = min x``, ``v = x x'`` and equals the cost of ``x``; at most one ``n`` has ``u_{ksn} > 0``
with integer ``x`` (as ``\sum_n x_{k0sn} = z_k``). (3) and (4) are the maxima over stages and
replicas (epigraph form); with ``z_k = 0`` all of a configuration's terms vanish. The objective
is the cost minus the constant ``o = min_k C_k``, divided by ``σ = max(L - o, 10^{-6} o) > 0``
(``L`` the smallest lower bound of :mod:`topoopt.parallelconfig.bounds`), so that its optimum is
of order 1 and the backend's absolute gap is a relative one; the family's objective is
``o + σ ·`` (the model's), :func:`cost_of`.

Valid inequalities that tighten the relaxation (each holds for every integer solution):

.. math::

    u_{ksn} = 0 \text{ if } g_n < d_k, \qquad v_{kjsn} = 0 \text{ if } g_n = 1      \quad (5)

    \sum_s u_{ksn} \le \lfloor g_n / d_k \rfloor z_k                                 \quad (6)

    \sum_{j,s} v_{kjsn} + \frac{d_k - 1}{\lfloor g_n / d_k \rfloor} \sum_s u_{ksn}
        \le (g_n - 1) z_k                                                             \quad (7)

    \sum_{s,n} v_{kjsn} \le (p_k - \lceil p_k / g_{max} \rceil) z_k
        \text{ if } p_k > g_{max}                                                     \quad (8)

(5)–(6): a stage inside node ``n`` takes ``d_k`` of its GPUs. (7) (the ``u`` term only when
``2 <= d_k <= g_n``): the sends inside ``n`` number the cells on ``n`` minus their runs
(maximal stretches of one replica's consecutive stages on ``n``), at most ``g_n`` minus the
runs; a stage inside ``n`` puts a cell of every replica there, so then there are at least
``d_k`` runs, and ``\sum_s u_{ksn} / \lfloor g_n / d_k \rfloor`` is at most 1 and 0 when no
stage is inside ``n``. (8): a replica's runs hold at most ``g_max`` stages each. Without (7)
the relaxation puts every stage "inside a node" and every send too (``x = 1/N``); with it a
node full of one stage has no sends inside.

With ``cutoff=U`` the model also requires a cost of at most ``U``:

.. math::

    \Big(\sum_k (C_k - o) z_k + α τ^{dp}_k + β τ^{pp}_k\Big) / σ \le (U - o) / σ     \quad (9)

``parallelconfig/mip`` sets ``U`` to its incumbent: a configuration that cannot beat it is then
an infeasible model, which the backend proves as soon as its search tree's bound passes ``U``
(no need to find the configuration's own optimum).

Symmetry breaking (``symmetry=True``), valid because permuting replicas or relabelling nodes of
equal GPU count maps a solution to one of the same cost: replicas ordered by the node of their
first stage, ``\sum_n n x_{kj0n} <= \sum_n n x_{k(j+1)0n}``, and nodes of equal GPU count
``n < n'`` (consecutive) used in non-increasing amounts, ``\sum_{j,s} x_{kjsn} >= \sum_{j,s}
x_{kjsn'}``. Any solution is mapped to one satisfying both by first relabelling the nodes of
each GPU count by decreasing use, then sorting the replicas (which keeps every node's use);
:func:`warm_start` does exactly that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyomo.environ as pyo

from topoopt.parallelconfig.bounds import lower_bound
from topoopt.parallelconfig.instance import ParallelConfigInstance
from topoopt.parallelconfig.solution import ParallelConfig, from_nodes, micro_batches_per_replica

MIN_SCALE = 1e-6
"""Smallest ``σ / o``: keeps the objective's coefficients bounded when a lower bound is ``o``."""


def _one_config_rule(m: Any) -> Any:
    return sum(m.z[k] for k in m.K) == 1


def _assign_rule(m: Any, k: int, j: int, s: int) -> Any:
    return sum(m.x[k, j, s, n] for n in m.N) == m.z[k]


def _cells(m: Any, k: int) -> list[tuple[int, int]]:
    return [(j, s) for j in range(m.d[k]) for s in range(m.p[k])]


def _capacity_rule(m: Any, k: int, n: int) -> Any:
    return sum(m.x[k, j, s, n] for j, s in _cells(m, k)) <= m.cap[n] * m.z[k]


def _column_rule(m: Any, k: int, s: int, j: int, n: int) -> Any:
    return m.u[k, s, n] <= m.x[k, j, s, n]


def _link_from_rule(m: Any, k: int, j: int, s: int, n: int) -> Any:
    return m.v[k, j, s, n] <= m.x[k, j, s, n]


def _link_to_rule(m: Any, k: int, j: int, s: int, n: int) -> Any:
    return m.v[k, j, s, n] <= m.x[k, j, s + 1, n]


def _column_capacity_rule(m: Any, k: int, n: int) -> Any:
    return sum(m.u[k, s, n] for s in range(m.p[k])) <= (m.cap[n] // m.d[k]) * m.z[k]


def _link_capacity_rule(m: Any, k: int, n: int) -> Any:
    d, p, g = m.d[k], m.p[k], m.cap[n]
    links = sum(m.v[k, j, s, n] for j in range(d) for s in range(p - 1))
    if 2 <= d <= g:  # a stage inside node n puts a run of every replica there
        links += (d - 1) / (g // d) * sum(m.u[k, s, n] for s in range(p))
    return links <= (g - 1) * m.z[k]


def _row_links_rule(m: Any, k: int, j: int) -> Any:
    runs = -(-m.p[k] // max(m.cap[n] for n in m.N))
    links = sum(m.v[k, j, s, n] for s in range(m.p[k] - 1) for n in m.N)
    return links <= (m.p[k] - runs) * m.z[k]


def _u_bounds(m: Any, k: int, s: int, n: int) -> tuple[int, int]:
    return 0, 1 if m.cap[n] >= m.d[k] else 0


def _v_bounds(m: Any, k: int, j: int, s: int, n: int) -> tuple[int, int]:
    return 0, 1 if m.cap[n] >= 2 else 0


def _dp_need(m: Any, k: int, s: int) -> Any:
    """The right-hand side of (3): the all-reduce time of stage ``s``."""
    return m.dp_cross[k, s] * m.z[k] - m.dp_saving[k, s] * sum(m.u[k, s, n] for n in m.N)


def _dp_rule(m: Any, k: int, s: int) -> Any:
    return m.tdp[k] >= _dp_need(m, k, s)


def _pp_need(m: Any, k: int, j: int) -> Any:
    """The right-hand side of (4): the send time of replica ``j``."""
    return sum(
        m.pp_cross[k] * m.z[k] - m.pp_saving[k] * sum(m.v[k, j, s, n] for n in m.N)
        for s in range(m.p[k] - 1)
    )


def _pp_rule(m: Any, k: int, j: int) -> Any:
    return m.tpp[k] >= _pp_need(m, k, j)


def _row_order_rule(m: Any, k: int, j: int) -> Any:
    return sum(n * m.x[k, j, 0, n] for n in m.N) <= sum(n * m.x[k, j + 1, 0, n] for n in m.N)


def _use(m: Any, k: int, n: int) -> Any:
    return sum(m.x[k, j, s, n] for j, s in _cells(m, k))


def _node_order_rule(m: Any, k: int, n: int, twin: int) -> Any:
    return _use(m, k, n) >= _use(m, k, twin)


def _scaled_cost_rule(m: Any) -> Any:
    total = sum(
        (m.tcomp[k] - m.offset) * m.z[k] + m.alpha * m.tdp[k] + m.beta * m.tpp[k] for k in m.K
    )
    return total / m.scale


def _cutoff_rule(m: Any) -> Any:
    return m.scaled_cost <= m.cutoff


def twins(capacities: Sequence[int]) -> list[tuple[int, int]]:
    """Pairs ``(n, n')`` of consecutive nodes (in index order) with the same GPU count.

    Examples
    --------
    >>> twins([4, 2, 4, 4, 2])
    [(0, 2), (2, 3), (1, 4)]
    """
    last: dict[int, int] = {}
    pairs = []
    for n, g in enumerate(capacities):
        if g in last:
            pairs.append((last[g], n))
        last[g] = n
    return pairs


def build(
    instance: ParallelConfigInstance,
    configs: Sequence[tuple[int, int]] | None = None,
    symmetry: bool = True,
    cutoff: float | None = None,
) -> pyo.ConcreteModel:
    """The model over ``configs`` (default: every admissible ``(d, p)``), with the symmetry
    breaking constraints when ``symmetry``, and with ``cost <= cutoff`` (seconds) when a cutoff
    is given (the model is then infeasible when no configuration beats ``cutoff``)."""
    chosen = (
        list(instance.configurations())
        if configs is None
        else [(int(d), int(p)) for d, p in configs]
    )
    capacities = instance.capacities
    intra, cross = instance.intra_bps, instance.cross_bps
    activation = instance.model.activation_bytes
    m = pyo.ConcreteModel(name=f"parallelconfig-{instance.name}")
    m.K = pyo.RangeSet(0, len(chosen) - 1)
    m.N = pyo.RangeSet(0, instance.n_nodes - 1)
    m.d = pyo.Param(m.K, initialize={k: c[0] for k, c in enumerate(chosen)})
    m.p = pyo.Param(m.K, initialize={k: c[1] for k, c in enumerate(chosen)})
    m.cap = pyo.Param(m.N, initialize=dict(enumerate(capacities)))
    m.node_name = pyo.Param(
        m.N, initialize={n: node.name for n, node in enumerate(instance.nodes)}, within=pyo.Any
    )
    cells, columns, column_cells, links, rows, ordered = [], [], [], [], [], []
    dp_nodes, pp_nodes, long_rows = [], [], []
    largest = max(capacities)
    tcomp, dp_cross, dp_saving, pp_cross, pp_saving, bounds = {}, {}, {}, {}, {}, []
    for k, (d, p) in enumerate(chosen):
        compute, params = instance.model.stages(p)
        micro = micro_batches_per_replica(instance, d)
        tcomp[k] = (micro + p - 1) * max(compute)
        bounds.append(lower_bound(instance, d, p, (compute, params)).objective)
        cells += [(k, j, s) for j in range(d) for s in range(p)]
        links += [(k, j, s) for j in range(d) for s in range(p - 1)]
        if p > 1:
            rows += [(k, j) for j in range(d)]
            pp_nodes += [(k, n) for n, g in enumerate(capacities) if g >= 2]
        if p > largest:
            long_rows += [(k, j) for j in range(d)]
        ordered += [(k, j) for j in range(d - 1)]
        pp_cross[k] = micro * activation / cross
        pp_saving[k] = micro * activation * (1 / cross - 1 / intra)
        if d > 1:
            dp_nodes += [(k, n) for n, g in enumerate(capacities) if d <= g]
            factor = 2 * (d - 1) / d
            for s in range(p):
                columns.append((k, s))
                column_cells += [(k, s, j) for j in range(d)]
                dp_cross[k, s] = factor * params[s] / cross
                dp_saving[k, s] = factor * params[s] * (1 / cross - 1 / intra)
    offset = min(tcomp.values())
    m.CELLS = pyo.Set(initialize=cells, dimen=3)
    m.COLUMNS = pyo.Set(initialize=columns, dimen=2)
    m.COLUMN_CELLS = pyo.Set(initialize=column_cells, dimen=3)
    m.LINKS = pyo.Set(initialize=links, dimen=3)
    m.ROWS = pyo.Set(initialize=rows, dimen=2)
    m.DP_NODES = pyo.Set(initialize=dp_nodes, dimen=2)
    m.PP_NODES = pyo.Set(initialize=pp_nodes, dimen=2)
    m.LONG_ROWS = pyo.Set(initialize=long_rows, dimen=2)
    m.ORDERED = pyo.Set(initialize=ordered if symmetry else [], dimen=2)
    m.TWINS = pyo.Set(
        initialize=[(k, a, b) for k in range(len(chosen)) for a, b in twins(capacities)]
        if symmetry
        else [],
        dimen=3,
    )
    m.tcomp = pyo.Param(m.K, initialize=tcomp)
    m.dp_cross = pyo.Param(m.COLUMNS, initialize=dp_cross)
    m.dp_saving = pyo.Param(m.COLUMNS, initialize=dp_saving)
    m.pp_cross = pyo.Param(m.K, initialize=pp_cross)
    m.pp_saving = pyo.Param(m.K, initialize=pp_saving)
    m.alpha = pyo.Param(initialize=instance.alpha)
    m.beta = pyo.Param(initialize=instance.beta)
    m.offset = pyo.Param(initialize=offset)
    m.scale = pyo.Param(initialize=max(min(bounds) - offset, MIN_SCALE * offset))
    m.symmetry = pyo.Param(initialize=symmetry, within=pyo.Boolean)

    m.z = pyo.Var(m.K, domain=pyo.Binary)
    m.x = pyo.Var(m.CELLS, m.N, domain=pyo.Binary)
    m.u = pyo.Var(m.COLUMNS, m.N, bounds=_u_bounds)
    m.v = pyo.Var(m.LINKS, m.N, bounds=_v_bounds)
    m.tdp = pyo.Var(m.K, domain=pyo.NonNegativeReals)
    m.tpp = pyo.Var(m.K, domain=pyo.NonNegativeReals)

    m.one_config = pyo.Constraint(rule=_one_config_rule)
    m.assign = pyo.Constraint(m.CELLS, rule=_assign_rule)
    m.capacity = pyo.Constraint(m.K, m.N, rule=_capacity_rule)
    m.column = pyo.Constraint(m.COLUMN_CELLS, m.N, rule=_column_rule)
    m.link_from = pyo.Constraint(m.LINKS, m.N, rule=_link_from_rule)
    m.link_to = pyo.Constraint(m.LINKS, m.N, rule=_link_to_rule)
    m.column_capacity = pyo.Constraint(m.DP_NODES, rule=_column_capacity_rule)
    m.link_capacity = pyo.Constraint(m.PP_NODES, rule=_link_capacity_rule)
    m.row_links = pyo.Constraint(m.LONG_ROWS, rule=_row_links_rule)
    m.dp_time = pyo.Constraint(m.COLUMNS, rule=_dp_rule)
    m.pp_time = pyo.Constraint(m.ROWS, rule=_pp_rule)
    m.row_order = pyo.Constraint(m.ORDERED, rule=_row_order_rule)
    m.node_order = pyo.Constraint(m.TWINS, rule=_node_order_rule)
    m.scaled_cost = pyo.Expression(rule=_scaled_cost_rule)
    m.cost = pyo.Objective(expr=m.scaled_cost, sense=pyo.minimize)
    if cutoff is not None:
        m.cutoff = pyo.Param(initialize=(cutoff - offset) / pyo.value(m.scale))
        m.beat_cutoff = pyo.Constraint(rule=_cutoff_rule)
    return m


def cost_of(model: pyo.ConcreteModel, value: float) -> float:
    """The family's objective (seconds) of the model's objective value ``value``."""
    return float(pyo.value(model.offset) + pyo.value(model.scale) * value)


def configuration(model: pyo.ConcreteModel) -> int:
    """The configuration ``k`` chosen by the loaded values."""
    return max(model.K, key=lambda k: pyo.value(model.z[k]))


def extract(model: pyo.ConcreteModel, instance: ParallelConfigInstance) -> ParallelConfig:
    """The configuration of the loaded ``z`` and ``x``, each node's GPUs in row-major order."""
    k = configuration(model)
    nodes = [
        [max(model.N, key=lambda n: pyo.value(model.x[k, j, s, n])) for s in range(model.p[k])]
        for j in range(model.d[k])
    ]
    return from_nodes(instance, nodes)


def relabel_nodes(capacities: Sequence[int], nodes: list[list[int]]) -> list[list[int]]:
    """``nodes`` with the nodes of each GPU count relabelled by decreasing use (stable): nodes
    of one size are interchangeable, and the symmetry breaking constraints order them so.

    Examples
    --------
    >>> relabel_nodes([2, 2, 2], [[2, 2], [1, 2]])
    [[0, 0], [1, 0]]
    """
    use = [0] * len(capacities)
    for row in nodes:
        for n in row:
            use[n] += 1
    relabel: dict[int, int] = {}
    for g in sorted(set(capacities)):
        members = [n for n, c in enumerate(capacities) if c == g]
        by_use = sorted(members, key=lambda n: -use[n])
        relabel.update(zip(by_use, members, strict=True))
    return [[relabel[n] for n in row] for row in nodes]


def canonical(capacities: Sequence[int], nodes: list[list[int]]) -> list[list[int]]:
    """:func:`relabel_nodes`, then the replicas sorted by the node of their first stage
    (stable): the representative the symmetry breaking constraints admit.

    Examples
    --------
    >>> canonical([2, 2, 2], [[2, 2], [1, 2]])
    [[0, 0], [1, 0]]
    """
    return sorted(relabel_nodes(capacities, nodes), key=lambda row: row[0])


def warm_start(model: pyo.ConcreteModel, solution: ParallelConfig) -> None:
    """Set every variable from ``solution`` (in the form :func:`canonical` gives when the
    model breaks symmetry).

    Raises
    ------
    ValueError
        When the solution's ``(d, p)`` is not one of the model's configurations.
    """
    chosen = [k for k in model.K if (model.d[k], model.p[k]) == (solution.d, solution.p)]
    if not chosen:
        raise ValueError(
            f"(d, p) = ({solution.d}, {solution.p}) is not a configuration of the model"
        )
    k0 = chosen[0]
    index = {model.node_name[n]: n for n in model.N}
    nodes = [[index[gpu.rpartition("/")[0]] for gpu in row] for row in solution.grid]
    if pyo.value(model.symmetry):
        nodes = canonical([model.cap[n] for n in model.N], nodes)
    for k in model.K:
        model.z[k].set_value(1 if k == k0 else 0)
        model.tdp[k].set_value(0.0)
        model.tpp[k].set_value(0.0)
    for k, j, s in model.CELLS:
        for n in model.N:
            model.x[k, j, s, n].set_value(1 if k == k0 and nodes[j][s] == n else 0)
    for k, s in model.COLUMNS:
        single = k == k0 and len({row[s] for row in nodes}) == 1
        for n in model.N:
            model.u[k, s, n].set_value(1 if single and nodes[0][s] == n else 0)
    for k, j, s in model.LINKS:
        same = k == k0 and nodes[j][s] == nodes[j][s + 1]
        for n in model.N:
            model.v[k, j, s, n].set_value(1 if same and nodes[j][s] == n else 0)
    dp = [pyo.value(_dp_need(model, k, s)) for k, s in model.COLUMNS if k == k0]
    pp = [pyo.value(_pp_need(model, k, j)) for k, j in model.ROWS if k == k0]
    model.tdp[k0].set_value(max(dp, default=0.0))
    model.tpp[k0].set_value(max(pp, default=0.0))
