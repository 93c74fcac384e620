r"""The segment ILP of the intra-cluster level of TPA (SpiderFlow §4.2): ``(d, p)`` and the
node of every (replica, stage), with replicas and GPUs aggregated away.

The cost of a configuration (:mod:`topoopt.parallelconfig.solution`) depends on the node of
each cell only through two things: which stages have all ``d`` cells on one node (``T_dp``) and
the largest number of node changes along a replica (``T_pp = m·A·((p-1)/B_intra + c·Δ)`` with
``c`` that number and ``Δ = 1/B_cross - 1/B_intra >= 0``). Cut every replica into its *runs*
(maximal stretches of consecutive stages on one node): a run is a *segment* ``[a, a+ℓ)`` of
stages with a node, ``ℓ <= g_n``; a replica of ``c + 1`` runs has ``c`` node changes. Replicas
are interchangeable, so a configuration is described by *how many* replicas have their
``h``-th run at ``[a, a+ℓ)`` and *how many* segments ``[a, a+ℓ)`` lie on node ``n``, with no
replica index and no GPU index (the paper's model, :mod:`~topoopt.parallelconfig.formulations.
grid_mip`, has a binary per replica, stage and node, and as many symmetric copies of each
solution as there are replica permutations).

Data: configurations ``k`` with ``(d_k, p_k)``; nodes ``n`` with ``g_n`` GPUs, ``G = max_n
g_n``; segments ``σ = (a, ℓ)``, ``0 <= a < p_k``, ``1 <= ℓ <= min(G, p_k - a)``; run numbers
``h = 0 .. H_k - 1`` (``H_k`` the most runs a replica may have, from the cutoff, below); the
constants of :mod:`~topoopt.parallelconfig.formulations.grid_mip`: ``C_k`` (``T_comp``),
``D_ks``, ``E_ks`` (all-reduce of stage ``s`` across nodes and what one node saves), and
``F_k = m_k A Δ`` (one more node change on the slowest replica), ``T⁰_k = m_k A (p_k-1)/B_intra``.

Variables: ``z_k ∈ {0,1}``; ``f_{khσ} ∈ Z_{>=0}`` (replicas whose run ``h`` is ``σ``);
``q_{kσn} ∈ Z_{>=0}`` (segments ``σ`` on node ``n``, ``ℓ <= g_n``); ``u_{ksn} ∈ {0,1}`` (stage
``s`` entirely on node ``n``, ``d_k >= 2``, ``g_n >= d_k``); ``y_{kh} ∈ {0,1}`` (some replica
has a run ``h``, ``h >= 1``); ``τdp_k >= 0``.

.. math::

    \sum_k z_k = 1,\qquad \sum_ℓ f_{k0(0,ℓ)} = d_k z_k                                   (1)

    \sum_{ℓ} f_{k,h-1,(a-ℓ,ℓ)} = \sum_{ℓ} f_{k,h,(a,ℓ)}   \quad 0 < a < p_k,\ 1 <= h <= H_k
        \quad (f_{k H_k ·} = 0)                                                            (2)

    \sum_n q_{kσn} = \sum_h f_{khσ}                                                        (3)

    \sum_{σ} ℓ\, q_{kσn} <= g_n z_k                                                       (4)

    \sum_{σ \ni s} q_{kσn} >= d_k u_{ksn},\qquad \sum_n u_{ksn} <= z_k                     (5)

    \sum_σ f_{khσ} <= d_k y_{kh},\qquad y_{kh} <= y_{k,h-1},\ y_{k1} <= z_k                (6)

    τdp_k >= D_{ks} z_k - E_{ks} \sum_n u_{ksn}                                           (7)

    \min\ \Big(\sum_k (C_k + β T⁰_k - o) z_k + α τdp_k + β F_k \sum_{h>=1} y_{kh}\Big) / σ

(1)–(2): the runs of the ``d_k`` replicas form a flow from stage 0 to stage ``p_k`` through
the layers ``h`` (a run ending at ``a`` is followed by run ``h+1`` starting at ``a``); an
integer flow of value ``d_k`` in this acyclic layered graph splits into ``d_k`` paths, the
replicas, each of at most ``H_k`` runs. (3)–(4): every segment is put on a node with room for
it. (5): stage ``s`` is inside node ``n`` when the ``d_k`` segments covering it (one per
replica) all lie on ``n``. (6): ``\sum_{h>=1} y_{kh}`` is at least the most runs of a replica
minus one. (7) is the maximum over stages of :mod:`grid_mip`'s (3).

**Exactness.** A configuration gives a solution of the model of the same cost: its runs are
segments (a run on node ``n`` has at most ``g_n <= G`` stages), ``u`` marks its single-node
stages, ``y`` its longest replica. Conversely, from integer ``f, q`` :func:`extract` splits the
flow into replicas and hands each segment a node from the counts ``q``; every cell gets one
GPU of its node (4); a stage with ``u_{ksn} = 1`` has its ``d_k`` cells on ``n`` (5, the
segments covering ``s`` are exactly ``d_k``); a replica of at most ``1 + \sum y`` segments
changes node at most ``\sum y`` times (two consecutive segments on the same node are one run:
fewer changes). So the cost of the extracted configuration (``evaluate``) is at most the
model's objective, and the optimum of the model is the optimum.

**Run limit.** With ``cutoff = U`` (``parallelconfig/mip`` sets its incumbent) a replica of
``k``'s needs ``C_k + α L^{dp}_k + β (T⁰_k + F_k c) <= U`` (``L^{dp}_k`` the lower bound of
:mod:`topoopt.parallelconfig.bounds` on ``T_dp``), hence ``c <= ⌊(U - C_k - α L^{dp}_k - β
T⁰_k) / (β F_k)⌋`` and ``H_k = c + 1`` (capped at ``p_k``) layers suffice; ``y_{kh} = 1`` is
fixed for ``h < K_k``, ``K_k = min {K : the K largest g_n sum to >= p_k}`` (a replica's runs on
distinct nodes hold its ``p_k`` stages). When a node change costs nothing (``β F_k = 0``) the
layers are dropped (``H_k = 1`` with (2) inside layer 0: ``\sum_ℓ f_{k0(a-ℓ,ℓ)} = \sum_ℓ
f_{k0(a,ℓ)}``) and ``y`` too. With a cutoff the model also has :mod:`grid_mip`'s (9),
objective ``<= (U - o)/σ``. The offset ``o`` and the scale ``σ`` are :mod:`grid_mip`'s. A
layer ``h`` holds only the segments a replica of at most ``H_k`` runs can have there (``h <= a
<= h·G`` and ``a + ℓ + (H_k - 1 - h)·G >= p_k``); a segment no layer holds gets no variables.

**Levels and option B** (what ``parallelconfig/mip``'s split search builds, one configuration
at a time): ``runs = H`` sets ``H_k = K_k = H``, so every ``y`` is 1 and ``T_pp`` the constant
``T⁰_k + F_k (H - 1)``; configurations with fewer runs are over-priced here but were priced
exactly at their own level. ``across=True`` keeps the configurations with a stage across
nodes (option B of :mod:`topoopt.parallelconfig.bounds`; option A, every stage inside a node,
is solved exactly there): ``\sum_{s,n} u_{ksn} <= (p_k - 1) z_k`` and ``τdp_k >= L^{dp}_k z_k``
with ``L^{dp}_k`` option B's bound on ``T_dp``.

**Symmetry** (``symmetry=True``): nodes of equal GPU count ``n < n'`` (consecutive of one
count) hold non-increasing amounts, ``\sum_σ ℓ q_{kσn} >= \sum_σ ℓ q_{kσn'}``; any solution is
mapped to one satisfying it by relabelling the nodes of each count by decreasing use, which
keeps the cost (:func:`warm_start` does it). Replicas need no symmetry breaking: the model
has none of their permutations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyomo.environ as pyo

from topoopt.parallelconfig.bounds import lower_bound, min_runs, split_bound
from topoopt.parallelconfig.formulations.grid_mip import (  # the same scaling and reading
    MIN_SCALE,
    configuration,
    relabel_nodes,
    twins,
)
from topoopt.parallelconfig.formulations.grid_mip import cost_of as cost_of  # the protocol's
from topoopt.parallelconfig.instance import ParallelConfigInstance
from topoopt.parallelconfig.solution import (
    ParallelConfig,
    from_nodes,
    micro_batches_per_replica,
    node_grid,
)

RUN_SLACK = 1e-9
"""Relative tolerance of the run limit derived from the cutoff (a start exactly at the cutoff
keeps its runs)."""


def runs_of(row: Sequence[int]) -> list[tuple[int, int, int]]:
    """The runs ``(start, length, node)`` of one replica's node sequence.

    Examples
    --------
    >>> runs_of([0, 0, 1, 0])
    [(0, 2, 0), (2, 1, 1), (3, 1, 0)]
    """
    out: list[tuple[int, int, int]] = []
    for s, n in enumerate(row):
        if out and out[-1][2] == n:
            a, length, _ = out[-1]
            out[-1] = (a, length + 1, n)
        else:
            out.append((s, 1, n))
    return out


def run_limit(instance: ParallelConfigInstance, d: int, p: int, cutoff: float | None) -> int | None:
    """``H``: the most runs a replica of ``(d, p)`` can have in a configuration of cost at most
    ``cutoff`` (module docstring), ``None`` when node changes cost nothing (no layers).

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import worked
    >>> run_limit(worked(), 2, 4, None), run_limit(worked(), 2, 4, 0.193)
    (4, 2)
    """
    m = micro_batches_per_replica(instance, d)
    delta = 1 / instance.cross_bps - 1 / instance.intra_bps
    change = instance.beta * m * instance.model.activation_bytes * delta
    if p == 1 or change <= 0:
        return None
    if cutoff is None or not math.isfinite(cutoff):
        return p
    bound = lower_bound(instance, d, p)
    fixed = bound.t_comp_s + instance.alpha * bound.t_dp_s
    fixed += instance.beta * m * instance.model.activation_bytes * (p - 1) / instance.intra_bps
    room = cutoff - fixed
    changes = math.floor((room + RUN_SLACK * max(abs(cutoff), 1e-300)) / change)
    return max(1, min(p, changes + 1))


# --- rules (module level, so that the model pickles) -----------------------------------------


def _one_config_rule(m: Any) -> Any:
    return sum(m.z[k] for k in m.K) == 1


def _start_rule(m: Any, k: int) -> Any:
    return sum(m.f[kk, h, a, ln] for kk, h, a, ln in m.STARTS[k]) == m.d[k] * m.z[k]


def _flow_rule(m: Any, k: int, h: int, a: int) -> Any:
    inflow = sum(m.f[key] for key in m.ENDING[k, h, a])
    outflow = sum(m.f[key] for key in m.BEGINNING[k, h, a])
    if isinstance(inflow, int) and isinstance(outflow, int):
        return pyo.Constraint.Skip
    return inflow == outflow


def _link_rule(m: Any, k: int, a: int, ln: int) -> Any:
    placed = sum(m.q[k, a, ln, n] for n in m.FITS[k, a, ln])
    return placed == sum(m.f[k, h, a, ln] for h in m.LAYERS_OF[k, a, ln])


def _capacity_rule(m: Any, k: int, n: int) -> Any:
    return sum(ln * m.q[k, a, ln, n] for a, ln in m.ON_NODE[k, n]) <= m.cap[n] * m.z[k]


def _column_rule(m: Any, k: int, s: int, n: int) -> Any:
    return sum(m.q[k, a, ln, n] for a, ln in m.COVER[k, s, n]) >= m.d[k] * m.u[k, s, n]


def _column_one_rule(m: Any, k: int, s: int) -> Any:
    nodes = [n for n in m.N if (k, s, n) in m.U]
    if not nodes:
        return pyo.Constraint.Skip
    return sum(m.u[k, s, n] for n in nodes) <= m.z[k]


def _layer_rule(m: Any, k: int, h: int) -> Any:
    return sum(m.f[key] for key in m.IN_LAYER[k, h]) <= m.d[k] * m.y[k, h]


def _layer_order_rule(m: Any, k: int, h: int) -> Any:
    return m.y[k, h] <= (m.y[k, h - 1] if h > 1 else m.z[k])


def _dp_need(m: Any, k: int, s: int) -> Any:
    """The right-hand side of (7): the all-reduce time of stage ``s``."""
    inside = sum(m.u[k, s, n] for n in m.N if (k, s, n) in m.U)
    return m.dp_cross[k, s] * m.z[k] - m.dp_saving[k, s] * inside


def _dp_rule(m: Any, k: int, s: int) -> Any:
    return m.tdp[k] >= _dp_need(m, k, s)


def _dp_floor_rule(m: Any, k: int) -> Any:
    if not pyo.value(m.across) or m.dp_floor[k] <= 0:
        return pyo.Constraint.Skip
    return m.tdp[k] >= m.dp_floor[k] * m.z[k]


def _some_across_rule(m: Any, k: int) -> Any:
    inside = [m.u[k, s, n] for s in range(m.p[k]) for n in m.N if (k, s, n) in m.U]
    if not pyo.value(m.across) or len(inside) == 0:
        return pyo.Constraint.Skip
    return sum(inside) <= (m.p[k] - 1) * m.z[k]


def _use(m: Any, k: int, n: int) -> Any:
    return sum(ln * m.q[k, a, ln, n] for a, ln in m.ON_NODE[k, n])


def _node_order_rule(m: Any, k: int, n: int, twin: int) -> Any:
    first, second = _use(m, k, n), _use(m, k, twin)
    if isinstance(first, int) and isinstance(second, int):  # no segment fits either node
        return pyo.Constraint.Skip
    return first >= second


def _scaled_cost_rule(m: Any) -> Any:
    total = sum(
        (m.tcomp[k] + m.beta * m.tpp_base[k] - m.offset) * m.z[k] + m.alpha * m.tdp[k] for k in m.K
    )
    total += sum(m.beta * m.change[k] * m.y[k, h] for k, h in m.Y)
    return total / m.scale


def _cutoff_rule(m: Any) -> Any:
    return m.scaled_cost <= m.cutoff


def _q_bounds(m: Any, k: int, a: int, ln: int, n: int) -> tuple[int, int]:
    return 0, min(m.d[k], m.cap[n] // ln)


def _f_bounds(m: Any, k: int, h: int, a: int, ln: int) -> tuple[int, int]:
    return 0, m.d[k]


def _fewest_runs_rule(m: Any, k: int, h: int) -> Any:
    if h >= m.min_runs[k]:
        return pyo.Constraint.Skip
    return m.y[k, h] >= m.z[k]


# --- build ----------------------------------------------------------------------------------


def _full(keys: Sequence[Any], lists: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
    """``lists`` with an empty list for every key of ``keys`` it lacks (an indexed set's
    initial values, one per index)."""
    return {key: lists.get(key, []) for key in keys}


def _segments(p: int, largest: int) -> list[tuple[int, int]]:
    return [(a, ln) for a in range(p) for ln in range(1, min(largest, p - a) + 1)]


def _reachable(a: int, ln: int, h: int, layers: int, p: int, largest: int) -> bool:
    """Whether run ``h`` can be ``[a, a+ln)`` in a replica of at most ``layers`` runs."""
    if h > a or a > h * largest:
        return False
    return a + ln + (layers - 1 - h) * largest >= p


def build(
    instance: ParallelConfigInstance,
    configs: Sequence[tuple[int, int]] | None = None,
    symmetry: bool = True,
    cutoff: float | None = None,
    runs: int | None = None,
    across: bool = False,
) -> pyo.ConcreteModel:
    r"""The model over ``configs`` (default: every admissible ``(d, p)``), with the symmetry
    breaking constraints when ``symmetry`` and with ``cost <= cutoff`` (seconds, which also
    limits the runs per replica) when a cutoff is given.

    ``runs = H`` (one configuration only, whose node changes cost something) fixes the level:
    at most ``H`` runs per replica and ``y = 1`` throughout, so that ``T_pp`` is priced at
    ``H - 1`` node changes (a constant; ``parallelconfig/mip`` visits the levels ``H`` in
    increasing order, so configurations of fewer runs were priced at their own level).

    ``across=True`` keeps only the configurations with a stage across nodes (option B of
    :mod:`topoopt.parallelconfig.bounds`; ``parallelconfig/mip`` settles option A exactly):
    ``\sum_{s,n} u_{ksn} <= (p_k - 1) z_k`` and ``τdp_k >= L^{dp}_k z_k`` with ``L^{dp}_k``
    the option's bound on ``T_dp``."""
    if runs is not None and (configs is None or len(configs) != 1):
        raise ValueError("runs needs exactly one configuration")
    chosen = (
        list(instance.configurations())
        if configs is None
        else [(int(d), int(p)) for d, p in configs]
    )
    capacities = instance.capacities
    largest = max(capacities)
    intra, cross = instance.intra_bps, instance.cross_bps
    activation = instance.model.activation_bytes
    m = pyo.ConcreteModel(name=f"parallelconfig-segments-{instance.name}")
    m.K = pyo.RangeSet(0, len(chosen) - 1)
    m.N = pyo.RangeSet(0, instance.n_nodes - 1)
    m.d = pyo.Param(m.K, initialize={k: c[0] for k, c in enumerate(chosen)})
    m.p = pyo.Param(m.K, initialize={k: c[1] for k, c in enumerate(chosen)})
    m.cap = pyo.Param(m.N, initialize=dict(enumerate(capacities)))
    m.node_name = pyo.Param(
        m.N, initialize={n: node.name for n, node in enumerate(instance.nodes)}, within=pyo.Any
    )
    flows, places, columns, us, ys = [], [], [], [], []
    starts: dict[int, list[tuple[int, int, int, int]]] = {}
    ending: dict[tuple[int, int, int], list[tuple[int, int, int, int]]] = {}
    beginning: dict[tuple[int, int, int], list[tuple[int, int, int, int]]] = {}
    fits: dict[tuple[int, int, int], list[int]] = {}
    layers_of: dict[tuple[int, int, int], list[int]] = {}
    on_node: dict[tuple[int, int], list[tuple[int, int]]] = {}
    cover: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    in_layer: dict[tuple[int, int], list[tuple[int, int, int, int]]] = {}
    flow_keys: list[tuple[int, int, int]] = []
    tcomp, tpp_base, change, dp_cross, dp_saving, bounds, fewest = {}, {}, {}, {}, {}, [], {}
    dp_floor: dict[int, float] = {}
    layered_of: dict[int, bool] = {}
    for k, (d, p) in enumerate(chosen):
        compute, params = instance.model.stages(p)
        micro = micro_batches_per_replica(instance, d)
        tcomp[k] = (micro + p - 1) * max(compute)
        tpp_base[k] = micro * activation * (p - 1) / intra
        change[k] = micro * activation * (1 / cross - 1 / intra)
        if across:
            option = split_bound(instance, d, p, (compute, params))
            dp_floor[k] = option.t_dp_s
            bounds.append(option.objective)
        else:
            dp_floor[k] = 0.0
            bounds.append(lower_bound(instance, d, p, (compute, params)).objective)
        limit = run_limit(instance, d, p, cutoff)
        layered = limit is not None
        if layered and runs is not None:
            limit = runs
        layered_of[k] = layered
        layers = limit if limit is not None else 1
        fewest[k] = min_runs(capacities, p) if runs is None else runs
        segs = _segments(p, largest)
        starts[k] = []
        for a, ln in segs:
            hs = (
                [h for h in range(layers) if _reachable(a, ln, h, layers, p, largest)]
                if layered
                else [0]
            )
            if not hs:  # no replica of at most `layers` runs has this run: no variables
                continue
            layers_of[k, a, ln] = hs
            fits[k, a, ln] = [n for n, g in enumerate(capacities) if ln <= g]
            for n in fits[k, a, ln]:
                places.append((k, a, ln, n))
                on_node.setdefault((k, n), []).append((a, ln))
                for s in range(a, a + ln):
                    cover.setdefault((k, s, n), []).append((a, ln))
            for h in hs:
                key = (k, h, a, ln)
                flows.append(key)
                if a == 0:
                    starts[k].append(key)
                else:
                    beginning.setdefault((k, h, a), []).append(key)
                if a + ln < p:
                    ending.setdefault((k, h + 1 if layered else 0, a + ln), []).append(key)
                if layered and h >= 1:
                    in_layer.setdefault((k, h), []).append(key)
        flow_keys += [
            (k, h, a) for h in (range(1, layers + 1) if layered else [0]) for a in range(1, p)
        ]
        if layered:
            ys += [(k, h) for h in range(1, layers)]
        if d > 1:
            factor = 2 * (d - 1) / d
            for s in range(p):
                columns.append((k, s))
                dp_cross[k, s] = factor * params[s] / cross
                dp_saving[k, s] = factor * params[s] * (1 / cross - 1 / intra)
                us += [(k, s, n) for n, g in enumerate(capacities) if g >= d]
    offset = min(tcomp[k] + instance.beta * tpp_base[k] for k in tcomp)
    m.FLOWS = pyo.Set(initialize=flows, dimen=4)
    m.PLACES = pyo.Set(initialize=places, dimen=4)
    m.SEGS = pyo.Set(initialize=sorted(layers_of), dimen=3)
    m.FLOW_KEYS = pyo.Set(initialize=flow_keys, dimen=3)
    m.COLUMNS = pyo.Set(initialize=columns, dimen=2)
    m.U = pyo.Set(initialize=us, dimen=3)
    m.Y = pyo.Set(initialize=ys, dimen=2)
    kn = [(k, n) for k in range(len(chosen)) for n in range(len(capacities))]
    m.KN = pyo.Set(initialize=kn, dimen=2)
    m.STARTS = pyo.Set(m.K, initialize=starts, dimen=4)
    m.ENDING = pyo.Set(m.FLOW_KEYS, initialize=_full(flow_keys, ending), dimen=4)
    m.BEGINNING = pyo.Set(m.FLOW_KEYS, initialize=_full(flow_keys, beginning), dimen=4)
    m.FITS = pyo.Set(m.SEGS, initialize=fits)
    m.LAYERS_OF = pyo.Set(m.SEGS, initialize=layers_of)
    m.ON_NODE = pyo.Set(m.KN, initialize=_full(kn, on_node), dimen=2)
    m.COVER = pyo.Set(m.U, initialize=_full(us, cover), dimen=2)
    m.IN_LAYER = pyo.Set(m.Y, initialize=_full(ys, in_layer), dimen=4)
    m.TWINS = pyo.Set(
        initialize=[(k, a, b) for k in range(len(chosen)) for a, b in twins(capacities)]
        if symmetry
        else [],
        dimen=3,
    )
    m.tcomp = pyo.Param(m.K, initialize=tcomp)
    m.tpp_base = pyo.Param(m.K, initialize=tpp_base)
    m.change = pyo.Param(m.K, initialize=change)
    m.min_runs = pyo.Param(m.K, initialize=fewest)
    m.layered = pyo.Param(m.K, initialize=layered_of, within=pyo.Boolean)
    m.dp_floor = pyo.Param(m.K, initialize=dp_floor)
    m.across = pyo.Param(initialize=across, within=pyo.Boolean)
    m.dp_cross = pyo.Param(m.COLUMNS, initialize=dp_cross)
    m.dp_saving = pyo.Param(m.COLUMNS, initialize=dp_saving)
    m.alpha = pyo.Param(initialize=instance.alpha)
    m.beta = pyo.Param(initialize=instance.beta)
    m.offset = pyo.Param(initialize=offset)
    m.scale = pyo.Param(initialize=max(min(bounds) - offset, MIN_SCALE * offset, MIN_SCALE))
    m.symmetry = pyo.Param(initialize=symmetry, within=pyo.Boolean)

    m.z = pyo.Var(m.K, domain=pyo.Binary)
    m.f = pyo.Var(m.FLOWS, domain=pyo.NonNegativeIntegers, bounds=_f_bounds)
    m.q = pyo.Var(m.PLACES, domain=pyo.NonNegativeIntegers, bounds=_q_bounds)
    m.u = pyo.Var(m.U, domain=pyo.Binary)
    m.y = pyo.Var(m.Y, domain=pyo.Binary)
    m.tdp = pyo.Var(m.K, domain=pyo.NonNegativeReals)

    m.one_config = pyo.Constraint(rule=_one_config_rule)
    m.start = pyo.Constraint(m.K, rule=_start_rule)
    m.flow = pyo.Constraint(m.FLOW_KEYS, rule=_flow_rule)
    m.link = pyo.Constraint(m.SEGS, rule=_link_rule)
    m.capacity = pyo.Constraint(m.KN, rule=_capacity_rule)
    m.column = pyo.Constraint(m.U, rule=_column_rule)
    m.column_one = pyo.Constraint(m.COLUMNS, rule=_column_one_rule)
    m.layer = pyo.Constraint(m.Y, rule=_layer_rule)
    m.layer_order = pyo.Constraint(m.Y, rule=_layer_order_rule)
    m.fewest_runs = pyo.Constraint(m.Y, rule=_fewest_runs_rule)
    m.dp_time = pyo.Constraint(m.COLUMNS, rule=_dp_rule)
    m.dp_least = pyo.Constraint(m.K, rule=_dp_floor_rule)
    m.some_across = pyo.Constraint(m.K, rule=_some_across_rule)
    m.node_order = pyo.Constraint(m.TWINS, rule=_node_order_rule)
    m.scaled_cost = pyo.Expression(rule=_scaled_cost_rule)
    m.cost = pyo.Objective(expr=m.scaled_cost, sense=pyo.minimize)
    if cutoff is not None:
        m.cutoff = pyo.Param(initialize=(cutoff - offset) / pyo.value(m.scale))
        m.beat_cutoff = pyo.Constraint(rule=_cutoff_rule)
    return m


def _count(var: Any) -> int:
    value = var.value
    return 0 if value is None else round(value)


def extract(model: pyo.ConcreteModel, instance: ParallelConfigInstance) -> ParallelConfig:
    """The configuration of the loaded ``z``, ``f`` and ``q``: the flow split into replicas
    (run after run), each segment given a node from the counts ``q``, each node's GPUs in
    row-major order."""
    k = configuration(model)
    d, p = model.d[k], model.p[k]
    left = {key: _count(model.f[key]) for key in model.FLOWS if key[0] == k}
    nodes_of: dict[tuple[int, int], list[int]] = {}
    for kk, a, ln, n in model.PLACES:
        if kk == k:
            nodes_of.setdefault((a, ln), []).extend([n] * _count(model.q[kk, a, ln, n]))
    layered = bool(pyo.value(model.layered[k]))
    runs: dict[tuple[int, int], list[int]] = {}  # (h, a) -> a length per run left
    for (_, h, a, ln), count in sorted(left.items()):
        runs.setdefault((h, a), []).extend([ln] * count)
    grid: list[list[int]] = []
    for _ in range(d):
        row: list[int] = []
        h = 0
        while len(row) < p:
            a = len(row)
            ln = runs[h, a].pop()
            row.extend([nodes_of[a, ln].pop()] * ln)
            h = h + 1 if layered else 0
        grid.append(row)
    return from_nodes(instance, grid)


def admits(
    model: pyo.ConcreteModel, instance: ParallelConfigInstance, config: ParallelConfig
) -> bool:
    """Whether ``config`` is a solution of ``model`` (its ``(d, p)`` is one of the model's and
    no replica has more runs than the model's layers)."""
    chosen = [k for k in model.K if (model.d[k], model.p[k]) == (config.d, config.p)]
    if not chosen:
        return False
    k = chosen[0]
    if not pyo.value(model.layered[k]):
        return True
    layers = 1 + sum(1 for kk, _ in model.Y if kk == k)
    return all(len(runs_of(row)) <= layers for row in node_grid(instance, config))


def warm_start(model: pyo.ConcreteModel, solution: ParallelConfig) -> None:
    """Set every variable from ``solution`` (nodes of one GPU count relabelled by decreasing
    use when the model breaks symmetry).

    Raises
    ------
    ValueError
        When the solution's ``(d, p)`` is not one of the model's configurations, or one of its
        replicas has more runs than the model's layers.
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
        nodes = relabel_nodes([model.cap[n] for n in model.N], nodes)
    layered = bool(pyo.value(model.layered[k0]))
    flows: dict[tuple[int, int, int, int], int] = {}
    places: dict[tuple[int, int, int, int], int] = {}
    longest = 1
    for row in nodes:
        runs = runs_of(row)
        longest = max(longest, len(runs))
        for h, (a, ln, n) in enumerate(runs):
            key = (k0, h if layered else 0, a, ln)
            if key not in model.FLOWS:
                raise ValueError(f"run {h} [{a}, {a + ln}) of the start is not in the model")
            flows[key] = flows.get(key, 0) + 1
            places[k0, a, ln, n] = places.get((k0, a, ln, n), 0) + 1
    for k in model.K:
        model.z[k].set_value(1 if k == k0 else 0)
        model.tdp[k].set_value(0.0)
    for key in model.FLOWS:
        model.f[key].set_value(flows.get(key, 0))
    for key in model.PLACES:
        model.q[key].set_value(places.get(key, 0))
    for k, s, n in model.U:
        inside = k == k0 and all(row[s] == n for row in nodes)
        model.u[k, s, n].set_value(1 if inside else 0)
    longest = max(longest, model.min_runs[k0])  # a level prices its runs even if fewer
    for k, h in model.Y:
        model.y[k, h].set_value(1 if k == k0 and h < longest else 0)
    dp = [pyo.value(_dp_need(model, k, s)) for k, s in model.COLUMNS if k == k0]
    model.tdp[k0].set_value(max(dp, default=0.0))
