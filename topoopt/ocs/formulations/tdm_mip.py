r"""The MILP of the OCS TDM round (paper eq. 1-6 read as in ``docs/ocs.md``): grouping, PS
servers, ring orders and the circuits of every phase, minimising the round time.

Data (times in seconds; a byte count ``X`` on the OXC is written as ``X / B_oxc``, its time on
one circuit, and on pod ``i``'s ToR as ``X / B_i``): jobs ``j`` with ``t_j`` (training),
``a_j`` (second compute phase: ``t_agg`` for PS, ``t_train`` otherwise); pods ``i`` with
circuit budgets ``C_i``; the pairs ``(a, b)`` that some choice of some job loads, with
``U_ab = min(C_a, C_b)`` and ``M_ab`` the most any grouping and choices can put on them;
``delta``. Jobs whose traffic is fixed (A2A, fixed servers and rings, rings of at most three
pods) have constant pair times ``c_jab`` and ToR times ``o_ji`` (sent), ``q_ji`` (received);
a free PS job has worker times ``w_ji = G_ji F_j / B_oxc``; a free RAR job has the ring time
``ρ_j = 2 F_j / B_oxc`` per ring edge.

Variables: ``x_j ∈ {0,1}`` (job ``j`` in group 2), ``y_j^g`` its membership of group ``g``
(``y^1 = 1 - x``, ``y^2 = x``); ``s^g_ji ∈ {0,1}`` (free PS job ``j`` in group ``g`` with its
server on pod ``i``); ``r^g_je ∈ {0,1}`` (free RAR job ``j`` in group ``g`` uses ring edge ``e``
between two of its pods); ``z^g_abn ∈ {0,1}`` (``n`` circuits between ``a`` and ``b`` in the
phases where group ``g`` communicates, ``0 <= n <= U_ab``); ``τ^g >= 0`` (group ``g``'s
communication time), ``e^g ∈ [0,1]`` (group ``g`` has jobs), ``d_p >= 0`` (phase durations).

The traffic of group ``g`` on pair ``(a, b)`` (time on one circuit) and its ToR times are linear:

.. math::

    T^g_{ab} = \sum_{j \text{ fixed}} c_{jab} y^g_j
             + \sum_{j \text{ free PS}} (w_{ja} s^g_{jb} + w_{jb} s^g_{ja})
             + \sum_{j \text{ free RAR}} ρ_j r^g_{jab}

    S^g_i = \sum_j o_{ji} y^g_j, \qquad
    R^g_i = \sum_{j \text{ not free PS}} q_{ji} y^g_j
          + \sum_{j \text{ free PS}} (G_j F_j / B_i) s^g_{ji}

(the products ``x_j s_ji`` and ``x_j r_je`` of the paper's bilinear traffic are disaggregated
into ``s^g``, ``r^g``: their one-hot and degree rows below carry ``y^g_j`` on the right-hand side,
which is the McCormick envelope made exact by integrality). Constraints:

.. math::

    \sum_{i \in P_j} s^g_{ji} = y^g_j, \qquad
    \sum_{e \ni i} r^g_{je} = 2 y^g_j \;\; (i \in P_j), \qquad
    \sum_g \sum_{e \subseteq S} r^g_{je} \le |S| - 1 \;\; (S \subset P_j, 3 \le |S| \le |P_j| / 2)
                                                                                   \quad (1)

    \sum_n z^g_{abn} = 1, \qquad \sum_{b} \sum_n n \, z^g_{abn} \le C_a             \quad (2)

    τ^g \ge T^g_{ab} / n - (M_{ab} / n)(1 - z^g_{abn}) \;\; (n \ge 1), \qquad
    T^g_{ab} \le M_{ab} (1 - z^g_{ab0})                                             \quad (3)

    τ^g \ge S^g_i / B_i, \qquad τ^g \ge R^g_i / B_i                                  \quad (4)

    τ^g \ge T^g_{ab} / U_{ab}, \qquad τ^g \ge \sum_b T^g_{ab} / C_a                  \quad (5)

    e^g \ge y^g_j, \qquad
    d_1 \ge t_j y^1_j, \; d_2 \ge t_j y^2_j, \; d_3 \ge a_j y^1_j, \; d_4 \ge a_j y^2_j  \quad (6)

    d_1, d_3 \ge τ^2 + δ e^2, \qquad d_2, d_4 \ge τ^1 + δ e^1                        \quad (7)

    \min \; d_1 + d_2 + d_3 + d_4

(1): one server per free PS job, a 2-regular edge set per free RAR job in its group, no
subtour (a 2-regular graph with a subtour on ``S`` also has one on the complement, so
``|S| <= |P_j| / 2`` suffices; rings of 4 or 5 pods need none). (2): one circuit count per pair
and phase, port budgets. (3): the reciprocal ``T / (L B_oxc)`` with integer ``L = sum n z`` is
exact through the one-hot choice of ``n`` (big-M ``M_ab / n`` is the tightest constant: the
largest value ``T / n`` can take); a pair without circuits carries nothing. (4): ToR bound
(full duplex; a PS push phase and its pull phase swap ``S`` and ``R``, so both rows together
cover both phases). (5): valid inequalities (``L_ab <= U_ab`` and ``sum_b L_ab <= C_a`` with
``T_ab <= τ L_ab``) that give the relaxation a bound. (6)-(7): the phase durations of the round
(epigraph of the max); ``delta`` is charged when the communicating group has jobs. Phases 1 and
3 (2 and 4) carry the same pair traffic, so one circuit matrix per group serves both.

Symmetry breaking (``symmetry=True``): swapping the two groups maps a round onto one of the same
duration (phases 1-2 and 3-4 trade places), so the first job is put in group 1 (``x_0 = 0``).
"""

from __future__ import annotations

import itertools
from typing import Any

import pyomo.environ as pyo

from topoopt.ocs.choices import Choice, demand, fixed_choice, is_free
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.solution import COMMUNICATING, Schedule, matrix, named
from topoopt.ocs.traffic import pair

GROUPS = (1, 2)


def _member(m: Any, j: int, g: int) -> Any:
    return 1 - m.x[j] if g == 1 else m.x[j]


def _traffic_rule(m: Any, a: int, b: int, g: int) -> Any:
    fixed = sum(m.c[j, a, b] * _member(m, j, g) for j in m.fixed_on[a, b])
    servers = sum(m.w[j, a] * m.s[j, b, g] + m.w[j, b] * m.s[j, a, g] for j in m.ps_on[a, b])
    rings = sum(m.rho[j] * m.r[j, a, b, g] for j in m.ring_on[a, b])
    return fixed + servers + rings


def _sent_rule(m: Any, i: int, g: int) -> Any:
    return sum(m.o[j, i] * _member(m, j, g) for j in m.J if (j, i) in m.JP)


def _received_rule(m: Any, i: int, g: int) -> Any:
    fixed = sum(m.q[j, i] * _member(m, j, g) for j in m.J if j not in m.PSF and (j, i) in m.JP)
    servers = sum(m.qs[j, i] * m.s[j, i, g] for j in m.PSF if (j, i) in m.JP)
    return fixed + servers


def _server_rule(m: Any, j: int, g: int) -> Any:
    return sum(m.s[j, i, g] for i in m.pods_of[j]) == _member(m, j, g)


def _degree_rule(m: Any, j: int, i: int, g: int) -> Any:
    edges = [(a, b) for a, b in m.edges_of[j] if i in (a, b)]
    return sum(m.r[j, a, b, g] for a, b in edges) == 2 * _member(m, j, g)


def _subtour_rule(m: Any, j: int, t: int) -> Any:
    members = set(m.subset[j, t])
    inside = [(a, b) for a, b in m.edges_of[j] if a in members and b in members]
    return sum(m.r[j, a, b, g] for a, b in inside for g in GROUPS) <= len(members) - 1


def _one_count_rule(m: Any, a: int, b: int, g: int) -> Any:
    return sum(m.z[a, b, g, n] for n in m.counts[a, b]) == 1


def _circuits(m: Any, a: int, b: int, g: int) -> Any:
    return sum(n * m.z[a, b, g, n] for n in m.counts[a, b])


def _budget_rule(m: Any, i: int, g: int) -> Any:
    touching = [(a, b) for a, b in m.A if i in (a, b)]
    if not touching:
        return pyo.Constraint.Skip
    return sum(_circuits(m, a, b, g) for a, b in touching) <= m.budget[i]


def _pair_time_rule(m: Any, a: int, b: int, g: int, n: int) -> Any:
    if n == 0:
        return m.traffic[a, b, g] <= m.most[a, b] * (1 - m.z[a, b, g, 0])
    return m.tau[g] >= (m.traffic[a, b, g] - m.most[a, b] * (1 - m.z[a, b, g, n])) / n


def _widest_rule(m: Any, a: int, b: int, g: int) -> Any:
    return m.tau[g] * m.widest[a, b] >= m.traffic[a, b, g]


def _pod_oxc_rule(m: Any, i: int, g: int) -> Any:
    touching = [(a, b) for a, b in m.A if i in (a, b)]
    if not touching or m.budget[i] == 0:
        return pyo.Constraint.Skip
    return m.tau[g] * m.budget[i] >= sum(m.traffic[a, b, g] for a, b in touching)


def _tor_sent_rule(m: Any, i: int, g: int) -> Any:
    return m.tau[g] >= m.sent[i, g]


def _tor_received_rule(m: Any, i: int, g: int) -> Any:
    return m.tau[g] >= m.received[i, g]


def _active_rule(m: Any, j: int, g: int) -> Any:
    return m.busy[g] >= _member(m, j, g)


def _compute_rule(m: Any, p: int, j: int) -> Any:
    computing = 3 - COMMUNICATING[p - 1]
    time = m.train[j] if p <= 2 else m.second[j]
    return m.d[p] >= time * _member(m, j, computing)


def _comm_phase_rule(m: Any, p: int) -> Any:
    g = COMMUNICATING[p - 1]
    return m.d[p] >= m.tau[g] + m.delta * m.busy[g]


def _symmetry_rule(m: Any) -> Any:
    return m.x[0] == 0


def _round_rule(m: Any) -> Any:
    return sum(m.d[p] for p in m.PH)


def subsets(pods: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The pod sets ``S`` of a free ring's subtour constraints: ``3 <= |S| <= |P_j| / 2``.

    Examples
    --------
    >>> len(subsets(tuple(range(6)))), subsets((0, 1, 2, 3, 4))
    (20, [])
    """
    return [s for size in range(3, len(pods) // 2 + 1) for s in itertools.combinations(pods, size)]


def build(instance: OcsInstance, *, symmetry: bool = True) -> pyo.ConcreteModel:
    """The MILP of ``instance`` (module docstring); ``symmetry`` fixes the first job's group."""
    bps = instance.circuit_bps
    tor = instance.tor_bps
    n_jobs, n_pods = instance.n_jobs, instance.n_pods
    free_ps = [j for j in range(n_jobs) if is_free(instance, j) and instance.jobs[j].type == "PS"]
    free_rar = [j for j in range(n_jobs) if is_free(instance, j) and instance.jobs[j].type == "RAR"]
    fixed = [j for j in range(n_jobs) if j not in free_ps and j not in free_rar]

    c: dict[tuple[int, int, int], float] = {}
    o: dict[tuple[int, int], float] = {}
    q: dict[tuple[int, int], float] = {}
    w: dict[tuple[int, int], float] = {}
    qs: dict[tuple[int, int], float] = {}
    rho: dict[int, float] = {}
    most: dict[tuple[int, int], float] = {}
    fixed_on: dict[tuple[int, int], list[int]] = {}
    ps_on: dict[tuple[int, int], list[int]] = {}
    ring_on: dict[tuple[int, int], list[int]] = {}
    job_pods = {j: instance.job_pods(j) for j in range(n_jobs)}
    edges = {j: [pair(a, b) for a, b in itertools.combinations(job_pods[j], 2)] for j in free_rar}

    def load(key: tuple[int, int], amount: float, owner: dict[Any, list[int]], j: int) -> None:
        most[key] = most.get(key, 0.0) + amount
        owner.setdefault(key, []).append(j)

    for j in fixed:
        spec = instance.jobs[j]
        use = demand(instance, j, fixed_choice(instance, j))
        for key, amount in use.pairs.items():
            if amount > 0:
                c[(j, *key)] = amount / bps
                load(key, amount / bps, fixed_on, j)
        for i in job_pods[j]:
            o[j, i] = use.sent[i] / tor[i]
            q[j, i] = use.received[i] / tor[i]
    for j in free_ps:
        spec = instance.jobs[j]
        f = spec.traffic_bytes
        for name, g in spec.gpus:
            i = instance.pod_index[name]
            w[j, i] = g * f / bps
            o[j, i] = g * f / tor[i]
            qs[j, i] = spec.total_gpus * f / tor[i]
        if f > 0:
            for a, b in itertools.combinations(job_pods[j], 2):
                load(pair(a, b), max(w[j, a], w[j, b]), ps_on, j)
    for j in free_rar:
        spec = instance.jobs[j]
        f = spec.traffic_bytes
        rho[j] = 2 * f / bps
        for name, g in spec.gpus:
            i = instance.pod_index[name]
            o[j, i] = 2 * g * f / tor[i]
            q[j, i] = 2 * g * f / tor[i]
        if f > 0:
            for key in edges[j]:
                load(key, rho[j], ring_on, j)
    pairs = sorted(most)
    budget = instance.circuit_budget

    m = pyo.ConcreteModel(name=f"ocs-{instance.name}")
    m.J = pyo.RangeSet(0, n_jobs - 1)
    m.P = pyo.RangeSet(0, n_pods - 1)
    m.G = pyo.Set(initialize=GROUPS)
    m.PH = pyo.RangeSet(1, 4)
    m.FIX = pyo.Set(initialize=fixed)
    m.PSF = pyo.Set(initialize=free_ps)
    m.RF = pyo.Set(initialize=free_rar)
    m.JP = pyo.Set(initialize=[(j, i) for j in range(n_jobs) for i in job_pods[j]], dimen=2)
    m.A = pyo.Set(initialize=pairs, dimen=2)
    m.pods_of = pyo.Set(m.J, initialize={j: list(job_pods[j]) for j in range(n_jobs)})
    m.edges_of = pyo.Set(m.RF, dimen=2, initialize={j: edges[j] for j in free_rar})
    m.RE = pyo.Set(initialize=[(j, a, b) for j in free_rar for a, b in edges[j]], dimen=3)
    sub = {(j, t): list(s) for j in free_rar for t, s in enumerate(subsets(job_pods[j]))}
    m.ST = pyo.Set(initialize=sorted(sub), dimen=2)
    m.subset = pyo.Set(m.ST, initialize=sub)
    m.fixed_on = pyo.Set(m.A, initialize={k: fixed_on.get(k, []) for k in pairs})
    m.ps_on = pyo.Set(m.A, initialize={k: ps_on.get(k, []) for k in pairs})
    m.ring_on = pyo.Set(m.A, initialize={k: ring_on.get(k, []) for k in pairs})
    m.counts = pyo.Set(
        m.A, initialize={(a, b): list(range(min(budget[a], budget[b]) + 1)) for a, b in pairs}
    )
    m.AGN = pyo.Set(
        initialize=[(a, b, g, n) for a, b in pairs for g in GROUPS for n in m.counts[a, b]],
        dimen=4,
    )

    m.c = pyo.Param(pyo.Any, initialize=c, within=pyo.Reals, default=0.0)
    m.o = pyo.Param(m.JP, initialize=o, default=0.0)
    m.q = pyo.Param(m.JP, initialize=q, default=0.0)
    m.w = pyo.Param(m.JP, initialize=w, default=0.0)
    m.qs = pyo.Param(m.JP, initialize=qs, default=0.0)
    m.rho = pyo.Param(m.RF, initialize=rho, default=0.0)
    m.most = pyo.Param(m.A, initialize=most)
    m.widest = pyo.Param(m.A, initialize={(a, b): min(budget[a], budget[b]) for a, b in pairs})
    m.budget = pyo.Param(m.P, initialize=dict(enumerate(budget)))
    m.train = pyo.Param(m.J, initialize={j: s.t_train_s for j, s in enumerate(instance.jobs)})
    m.second = pyo.Param(m.J, initialize={j: s.t_second_s for j, s in enumerate(instance.jobs)})
    m.delta = pyo.Param(initialize=instance.reconfig_s)
    m.names = pyo.Param(
        m.J, initialize={j: s.name for j, s in enumerate(instance.jobs)}, within=pyo.Any
    )
    m.pod_names = pyo.Param(
        m.P, initialize={i: p.name for i, p in enumerate(instance.pods)}, within=pyo.Any
    )

    m.x = pyo.Var(m.J, domain=pyo.Binary)
    m.s = pyo.Var(
        [(j, i, g) for j in free_ps for i in job_pods[j] for g in GROUPS], domain=pyo.Binary
    )
    m.r = pyo.Var([(j, a, b, g) for j, a, b in m.RE for g in GROUPS], domain=pyo.Binary)
    m.z = pyo.Var(m.AGN, domain=pyo.Binary)
    m.tau = pyo.Var(m.G, domain=pyo.NonNegativeReals)
    m.busy = pyo.Var(m.G, bounds=(0, 1))
    m.d = pyo.Var(m.PH, domain=pyo.NonNegativeReals)

    m.traffic = pyo.Expression(m.A, m.G, rule=_traffic_rule)
    m.sent = pyo.Expression(m.P, m.G, rule=_sent_rule)
    m.received = pyo.Expression(m.P, m.G, rule=_received_rule)
    m.server = pyo.Constraint(m.PSF, m.G, rule=_server_rule)
    m.degree = pyo.Constraint(
        [(j, i, g) for j in free_rar for i in job_pods[j] for g in GROUPS], rule=_degree_rule
    )
    m.subtour = pyo.Constraint(m.ST, rule=_subtour_rule)
    m.one_count = pyo.Constraint(m.A, m.G, rule=_one_count_rule)
    m.port_budget = pyo.Constraint(m.P, m.G, rule=_budget_rule)
    m.pair_time = pyo.Constraint(m.AGN, rule=_pair_time_rule)
    m.widest_cut = pyo.Constraint(m.A, m.G, rule=_widest_rule)
    m.pod_oxc_cut = pyo.Constraint(m.P, m.G, rule=_pod_oxc_rule)
    m.tor_sent = pyo.Constraint(m.P, m.G, rule=_tor_sent_rule)
    m.tor_received = pyo.Constraint(m.P, m.G, rule=_tor_received_rule)
    m.has_jobs = pyo.Constraint(m.J, m.G, rule=_active_rule)
    m.compute = pyo.Constraint(m.PH, m.J, rule=_compute_rule)
    m.comm_phase = pyo.Constraint(m.PH, rule=_comm_phase_rule)
    if symmetry:
        m.symmetry = pyo.Constraint(rule=_symmetry_rule)
    m.round = pyo.Objective(rule=_round_rule, sense=pyo.minimize)
    return m


def _ring_from_edges(edges: list[tuple[int, int]], start: int) -> tuple[int, ...]:
    """Walk the cycle of ``edges`` (a 2-regular edge set) from ``start``."""
    neighbours: dict[int, list[int]] = {}
    for a, b in edges:
        neighbours.setdefault(a, []).append(b)
        neighbours.setdefault(b, []).append(a)
    order, previous = [start], None
    while True:
        here = order[-1]
        step = next(n for n in sorted(neighbours[here]) if n != previous)
        if step == start:
            return tuple(order)
        previous = here
        order.append(step)


def extract(model: pyo.ConcreteModel, instance: OcsInstance) -> Schedule:
    """The schedule of the loaded values: groups from ``x``, servers from ``s``, rings from
    ``r`` and each group's circuits from ``z`` (phases 1 and 3: group 2's; 2 and 4: group 1's)."""
    groups = [2 if pyo.value(model.x[j]) > 0.5 else 1 for j in model.J]
    choices: dict[int, Choice] = {}
    for j in model.J:
        if j in model.PSF:
            g = groups[j]
            choices[j] = max(model.pods_of[j], key=lambda i: pyo.value(model.s[j, i, g]))
        elif j in model.RF:
            g = groups[j]
            used = [(a, b) for a, b in model.edges_of[j] if pyo.value(model.r[j, a, b, g]) > 0.5]
            choices[j] = _ring_from_edges(used, instance.job_pods(j)[0])
        else:
            choices[j] = fixed_choice(instance, j)
    per_group = {}
    for g in GROUPS:
        circuits = {}
        for a, b in model.A:
            count = sum(n * round(pyo.value(model.z[a, b, g, n])) for n in model.counts[a, b])
            if count:
                circuits[a, b] = count
        per_group[g] = matrix(instance.n_pods, circuits)
    return named(instance, groups, choices, per_group)


def warm_start(model: pyo.ConcreteModel, solution: Schedule) -> None:
    """Set every variable from ``solution`` (groups swapped first when the model fixes the
    first job in group 1 and ``solution`` has it in group 2; each group's circuits from the
    first phase it communicates in; ``τ``, ``e`` and ``d`` at the smallest values the
    constraints allow)."""
    groups = list(solution.groups)
    circuits = {1: solution.circuits[1], 2: solution.circuits[0]}
    if hasattr(model, "symmetry") and groups[0] == 2:
        groups = [3 - g for g in groups]
        circuits = {1: solution.circuits[0], 2: solution.circuits[1]}
    pod = {pyo.value(model.pod_names[i]): i for i in model.P}
    for j in model.J:
        model.x[j].set_value(1 if groups[j] == 2 else 0)
        name = pyo.value(model.names[j])
        for g in GROUPS:
            if j in model.PSF:
                server = pod[solution.servers[name]]
                for i in model.pods_of[j]:
                    model.s[j, i, g].set_value(1 if g == groups[j] and i == server else 0)
            elif j in model.RF:
                order = [pod[p] for p in solution.rings[name]]
                ring = {pair(order[t], order[(t + 1) % len(order)]) for t in range(len(order))}
                for a, b in model.edges_of[j]:
                    model.r[j, a, b, g].set_value(1 if g == groups[j] and (a, b) in ring else 0)
    for a, b in model.A:
        for g in GROUPS:
            count = min(circuits[g][a][b], max(model.counts[a, b]))
            for n in model.counts[a, b]:
                model.z[a, b, g, n].set_value(1 if n == count else 0)
    for g in GROUPS:
        model.busy[g].set_value(1 if g in groups else 0)
        slowest = 0.0
        for a, b in model.A:
            traffic = pyo.value(model.traffic[a, b, g])
            if traffic > 0:
                count = max(circuits[g][a][b], 1)
                slowest = max(slowest, traffic / count)
        for i in model.P:
            slowest = max(slowest, pyo.value(model.sent[i, g]), pyo.value(model.received[i, g]))
        model.tau[g].set_value(slowest)
    for p in model.PH:
        talking = COMMUNICATING[p - 1]
        computing = 3 - talking
        times = [
            pyo.value(model.train[j] if p <= 2 else model.second[j])
            for j in model.J
            if groups[j] == computing
        ]
        comm = pyo.value(model.tau[talking]) + pyo.value(model.delta) * (talking in groups)
        model.d[p].set_value(max([comm, *times]))
