"""A lower bound on the cost of every assignment of one ``(d, p)``, from the node sizes alone.

The configurations of ``(d, p)``, ``d >= 2``, fall into two options: **A**, every stage inside
one node (:func:`columns_inside` gives its exact optimum and a configuration attaining it), and
**B**, some stage across nodes (:func:`split_bound` bounds it; ``parallelconfig/mip`` solves
its ILPs with that restriction). :func:`lower_bound` is the smaller of the two. For option B:

``parallelconfig/mip`` solves the configurations in increasing order of this bound and skips
those whose bound reaches the incumbent (they cannot improve it). With ``g_max`` the largest
node and ``Q = sum_n floor(g_n / d)``, ``R = sum_n floor(g_n / p)``:

* ``T_comp`` does not depend on the assignment: it is exact.
* ``T_dp``: a stage whose ``d`` GPUs share a node takes ``d`` GPUs of it, so at most ``Q``
  stages are single-node. With ``P_(1) >= P_(2) >= ...`` the stage bytes sorted, every
  assignment has ``T_dp >= 2(d-1)/d · max(P_(1) / B, P_(Q+1) / B_cross)`` where ``B =
  B_intra`` if ``Q >= 1`` else ``B_cross`` (and ``P_(Q+1)`` only when ``Q < p``): the ``Q``
  largest stages are the best ones to keep inside a node. When ``Q >= p`` option B still has
  a stage across nodes, at best the lightest: ``T_dp >= 2(d-1)/d · P_(p) / B_cross``.
* ``T_pp``: a replica's stages fall into runs of consecutive stages on one node; the nodes it
  visits hold its ``p`` stages, so it visits at least ``K = min {k : the k largest g_n sum to
  >= p}`` nodes (:func:`min_runs`) and has at least ``K - 1`` cross-node boundaries; a
  replica without one takes ``p`` GPUs of one node, so when ``R < d`` some replica has at
  least one. With ``k`` the larger of the two (:func:`min_changes`), ``T_pp >= m·A·((p - 1 -
  k) / B_intra + k / B_cross)``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from topoopt.parallelconfig.instance import ParallelConfigInstance
from topoopt.parallelconfig.solution import Breakdown, breakdown, micro_batches_per_replica


@functools.lru_cache(maxsize=64)
def _descending(capacities: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(capacities, reverse=True))


@functools.lru_cache(maxsize=4096)
def fit(capacities: tuple[int, ...], size: int) -> int:
    """``sum_n floor(g_n / size)``: blocks of ``size`` GPUs the nodes hold (cached: the search
    asks it for every configuration).

    Examples
    --------
    >>> fit((4, 3, 2), 2)
    4
    """
    return sum(g // size for g in capacities)


@functools.lru_cache(maxsize=4096)
def _fill_order(capacities: tuple[int, ...], d: int) -> tuple[int, ...]:
    return tuple(sorted(range(len(capacities)), key=lambda n: (-(capacities[n] // d), n)))


def min_runs(capacities: Sequence[int], p: int) -> int:
    """The fewest nodes whose GPUs add up to ``p`` or more: a replica of ``p`` stages visits at
    least that many nodes, so it has at least that many runs.

    Examples
    --------
    >>> min_runs([2, 8, 4, 4], 13), min_runs([2, 8, 4, 4], 1)
    (3, 1)
    """
    total = 0
    for k, g in enumerate(_descending(tuple(capacities)), start=1):
        total += g
        if total >= p:
            return k
    return len(capacities) + 1  # more stages than GPUs: no configuration


def min_changes(capacities: Sequence[int], d: int, p: int) -> int:
    """``k`` of the module docstring: the fewest cross-node boundaries of the slowest replica
    of ``d`` replicas of ``p`` stages.

    Examples
    --------
    >>> min_changes([4, 4], 2, 4), min_changes([4, 4], 3, 2), min_changes([4, 4], 3, 3)
    (0, 0, 1)
    """
    crossings = min_runs(capacities, p) - 1
    if p > 1 and fit(tuple(capacities), p) < d:
        crossings = max(crossings, 1)
    return crossings


def columns_inside(
    instance: ParallelConfigInstance, d: int, p: int
) -> tuple[Breakdown, list[list[int]]] | None:
    """The best configuration of ``(d, p)`` with every stage inside one node (option A of the
    module docstring), with its node grid; ``None`` when ``d = 1`` (every stage is trivially
    inside a node: nothing to split) or the nodes hold fewer than ``p`` stages of ``d`` GPUs.

    All replicas then visit the same nodes, so each changes node where two consecutive stages
    lie on different nodes: at least ``b - 1`` times, ``b`` the fewest nodes whose
    ``floor(g_n / d)`` add up to ``p`` (a node's stages are best kept consecutive). The grid
    puts the stages in order on the nodes by decreasing ``floor(g_n / d)``, each full before the
    next: exactly ``b - 1`` changes, so the value is exact.

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import worked
    >>> value, grid = columns_inside(worked(), 2, 4)
    >>> grid, round(value.objective, 6)
    ([[0, 0, 1, 1], [0, 0, 1, 1]], 0.193)
    """
    capacities = instance.gpu_counts
    if d < 2 or fit(capacities, d) < p:
        return None
    column_nodes: list[int] = []
    for n in _fill_order(capacities, d):
        column_nodes += [n] * min(capacities[n] // d, p - len(column_nodes))
        if len(column_nodes) == p:
            break
    grid = [list(column_nodes) for _ in range(d)]
    return breakdown(instance, d, p, grid), grid


def lower_bound(
    instance: ParallelConfigInstance,
    d: int,
    p: int,
    stages: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
) -> Breakdown:
    """The bound of the module docstring, as a :class:`Breakdown` (its ``objective`` is the
    bound on ``T_comp + alpha·T_dp + beta·T_pp``): the smaller of option A's exact value
    (:func:`columns_inside`) and option B's bound (:func:`split_bound`).

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import worked
    >>> b = lower_bound(worked(), 8, 1)  # no node holds 8 GPUs: the all-reduce crosses nodes
    >>> round(b.t_dp_s, 6), b.t_pp_s
    (0.35, 0.0)
    """
    inside = columns_inside(instance, d, p)
    other = split_bound(instance, d, p, stages)
    if inside is not None and inside[0].objective < other.objective:
        return inside[0]
    return other


def split_bound(
    instance: ParallelConfigInstance,
    d: int,
    p: int,
    stages: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
) -> Breakdown:
    """Option B's bound (module docstring): every configuration of ``(d, p)`` with a stage
    across nodes (when ``d >= 2`` and the nodes could hold every stage inside one node; every
    configuration otherwise) costs at least this :class:`Breakdown`'s ``objective``."""
    compute, params = instance.model.stages(p) if stages is None else stages
    m = micro_batches_per_replica(instance, d)
    intra, cross = instance.intra_bps, instance.cross_bps
    capacities = instance.gpu_counts
    t_comp = (m + p - 1) * max(compute)
    t_dp = 0.0
    if d > 1:
        single = fit(capacities, d)
        ranked = sorted(params, reverse=True)
        factor = 2 * (d - 1) / d
        t_dp = factor * ranked[0] / (intra if single >= 1 else cross)
        if single < p:
            t_dp = max(t_dp, factor * ranked[single] / cross)
        else:  # option B: some stage crosses nodes, at best the lightest
            t_dp = max(t_dp, factor * ranked[-1] / cross)
    crossings = min_changes(capacities, d, p)
    activation = instance.model.activation_bytes
    t_pp = m * ((p - 1 - crossings) * activation / intra + crossings * activation / cross)
    return Breakdown(d, p, m, t_comp, t_dp, t_pp, instance.alpha, instance.beta)
