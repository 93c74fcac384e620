"""A lower bound on the cost of every assignment of one ``(d, p)``, from the node sizes alone.

``parallelconfig/mip`` solves the configurations in increasing order of this bound and skips
those whose bound reaches the incumbent (they cannot improve it). With ``g_max`` the largest
node and ``Q = sum_n floor(g_n / d)``, ``R = sum_n floor(g_n / p)``:

* ``T_comp`` does not depend on the assignment: it is exact.
* ``T_dp``: a stage whose ``d`` GPUs share a node takes ``d`` GPUs of it, so at most ``Q``
  stages are single-node. With ``P_(1) >= P_(2) >= ...`` the stage bytes sorted, every
  assignment has ``T_dp >= 2(d-1)/d · max(P_(1) / B, P_(Q+1) / B_cross)`` where ``B =
  B_intra`` if ``Q >= 1`` else ``B_cross`` (and ``P_(Q+1)`` only when ``Q < p``): the ``Q``
  largest stages are the best ones to keep inside a node.
* ``T_pp``: a replica's stages fall into runs of consecutive stages on one node; the nodes it
  visits hold its ``p`` stages, so it visits at least ``K = min {k : the k largest g_n sum to
  >= p}`` nodes (:func:`min_runs`) and has at least ``K - 1`` cross-node boundaries; a replica
  without one takes ``p`` GPUs of one node, so when ``R < d`` some replica has at least one. With ``k`` the larger of the two, ``T_pp >= m·A·((p - 1 - k) / B_intra + k /
  B_cross)``.
"""

from __future__ import annotations

from topoopt.parallelconfig.instance import ParallelConfigInstance
from topoopt.parallelconfig.solution import Breakdown, micro_batches_per_replica


def min_runs(capacities: list[int], p: int) -> int:
    """The fewest nodes whose GPUs add up to ``p`` or more: a replica of ``p`` stages visits at
    least that many nodes, so it has at least that many runs.

    Examples
    --------
    >>> min_runs([2, 8, 4, 4], 13), min_runs([2, 8, 4, 4], 1)
    (3, 1)
    """
    total = 0
    for k, g in enumerate(sorted(capacities, reverse=True), start=1):
        total += g
        if total >= p:
            return k
    return len(capacities) + 1  # more stages than GPUs: no configuration


def lower_bound(
    instance: ParallelConfigInstance,
    d: int,
    p: int,
    stages: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
) -> Breakdown:
    """The bound of the module docstring, as a :class:`Breakdown` (its ``objective`` is the
    bound on ``T_comp + alpha·T_dp + beta·T_pp``).

    Examples
    --------
    >>> from topoopt.parallelconfig.generate import worked
    >>> b = lower_bound(worked(), 8, 1)  # no node holds 8 GPUs: the all-reduce crosses nodes
    >>> round(b.t_dp_s, 6), b.t_pp_s
    (0.35, 0.0)
    """
    compute, params = instance.model.stages(p) if stages is None else stages
    m = micro_batches_per_replica(instance, d)
    intra, cross = instance.intra_bps, instance.cross_bps
    capacities = instance.capacities
    t_comp = (m + p - 1) * max(compute)
    t_dp = 0.0
    if d > 1:
        single = sum(g // d for g in capacities)
        ranked = sorted(params, reverse=True)
        factor = 2 * (d - 1) / d
        t_dp = factor * ranked[0] / (intra if single >= 1 else cross)
        if single < p:
            t_dp = max(t_dp, factor * ranked[single] / cross)
    crossings = min_runs(capacities, p) - 1
    if p > 1 and sum(g // p for g in capacities) < d:
        crossings = max(crossings, 1)
    activation = instance.model.activation_bytes
    t_pp = m * ((p - 1 - crossings) * activation / intra + crossings * activation / cross)
    return Breakdown(d, p, m, t_comp, t_dp, t_pp, instance.alpha, instance.beta)
