"""The exact phase evaluator: the best circuits of one communication phase, and the round.

For a fixed grouping, PS servers and rings, a communication phase has fixed pair demands
``T_ab`` (bytes, both directions) and the OXC part of its time is

    tau(L) = max over pairs with T_ab > 0 of T_ab / (L_ab · B_oxc)

for a symmetric integer circuit matrix ``L`` with ``sum_b L_ab <= C_a`` (``C_a`` the pod's
circuit budget). **Key structure** (spec ``ocs.md``): ``tau`` is reachable iff the fewest
circuits each pair needs for it, ``L_ab(tau) = ceil(T_ab / (tau · B_oxc))``, fit every budget;
this is monotone in ``tau``, and at the optimum some pair is tight, ``tau = T_ab / (n · B_oxc)``
with ``n = L_ab``. So the least ``tau`` is found exactly by a binary search over the finite set
of candidates ``T_ab / (n · B_oxc)``, ``1 <= n <= min(C_a, C_b)``
(:func:`min_circuits`). The phase's communication time adds the ToR bound
``max_i max(sent_i, received_i) / B_i`` (:func:`comm_time`).

The round (paper eq. 1, Fig. 5; spec table) of groups 1 and 2 is the sum of four phases::

    phase 1: max(train_1,  comm_2 + delta_2)      group 1 trains,   group 2 communicates
    phase 2: max(train_2,  comm_1 + delta_1)      group 2 trains,   group 1 communicates
    phase 3: max(second_1, comm_2 + delta_2)      group 1 aggregates (PS) or trains again
    phase 4: max(second_2, comm_1 + delta_1)

with ``train_g`` / ``second_g`` the largest ``t_train`` / ``t_agg`` (PS) or ``t_train`` (others)
of group ``g``, and ``delta_g = delta`` when group ``g`` has jobs, else 0 (an empty group neither
communicates nor reconfigures). :func:`round_phases` computes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from topoopt.ocs.traffic import Demand, Pair

if TYPE_CHECKING:
    from topoopt.ocs.instance import OcsInstance

VECTOR_PAIRS = 48
"""From this many pairs with traffic on, :func:`min_circuits` tests a candidate time with NumPy
arrays (the same floating-point operations, so the same answer) instead of a Python loop."""

TIGHT = 1e-12
"""Relative slack when a pair's demand is compared with a candidate time (float division of
``T / (n · B)`` by ``B`` again must give ``n``, not ``n + 1e-16``)."""


def circuits_for(traffic: float, tau: float, circuit_bps: float) -> int:
    """The fewest circuits that carry ``traffic`` bytes within ``tau`` seconds.

    Examples
    --------
    >>> circuits_for(10.0, 2.5, 1.0), circuits_for(10.0, 10.0 / 3, 1.0), circuits_for(0.0, 1.0, 1.0)
    (4, 3, 0)
    """
    if traffic <= 0:
        return 0
    return max(1, math.ceil(traffic / (tau * circuit_bps) * (1 - TIGHT)))


def oxc_time(
    pairs: Mapping[Pair, float], circuits: Mapping[Pair, int], circuit_bps: float
) -> float:
    """``tau(L)``: the slowest pair's ``T_ab / (L_ab · B_oxc)`` (``inf`` when a pair with traffic
    has no circuit; 0 without traffic)."""
    worst = 0.0
    for key, traffic in pairs.items():
        if traffic <= 0:
            continue
        n = circuits.get(key, 0)
        if n <= 0:
            return math.inf
        worst = max(worst, traffic / (n * circuit_bps))
    return worst


def _fits(
    active: Sequence[tuple[int, int, float]], tau: float, budget: Sequence[int], bps: float
) -> bool:
    used = [0] * len(budget)
    for a, b, traffic in active:
        n = circuits_for(traffic, tau, bps)
        used[a] += n
        used[b] += n
        if used[a] > budget[a] or used[b] > budget[b]:
            return False
    return True


def _vector_search(
    active: Sequence[tuple[int, int, float]], budget: Sequence[int], bps: float
) -> tuple[list[float], Callable[[float], bool]]:
    """The candidate times and the test of :func:`_fits` on NumPy arrays, for many pairs."""
    a, b, traffic = (np.array(column) for column in zip(*active, strict=True))
    caps = np.asarray(budget, dtype=np.int64)
    most = np.minimum(caps[a], caps[b])
    counts = np.arange(1, int(most.max()) + 1)
    per_pair = traffic[:, None] / (counts[None, :] * bps)
    candidates = np.unique(per_pair[counts[None, :] <= most[:, None]]).tolist()

    def fits(tau: float) -> bool:
        n = np.maximum(1, np.ceil(traffic / (tau * bps) * (1 - TIGHT))).astype(np.int64)
        used = np.bincount(a, n, minlength=len(caps)) + np.bincount(b, n, minlength=len(caps))
        return bool(np.all(used <= caps))

    return candidates, fits


def min_circuits(
    pairs: Mapping[Pair, float], budget: Sequence[int], circuit_bps: float
) -> tuple[float, dict[Pair, int]] | None:
    """The least OXC time of a phase and circuits that reach it, or ``None`` when no circuit
    matrix serves every pair with traffic (a pod talks to more pods than it has circuits).

    Exact (module docstring): binary search over the candidate times ``T_ab / (n · B_oxc)``.

    Parameters
    ----------
    pairs
        ``T_ab``: bytes between pods ``a < b``, both directions summed.
    budget
        ``C_i``: circuits each pod can terminate.
    circuit_bps
        ``B_oxc`` in bytes/s.

    Returns
    -------
    (tau, circuits)
        ``tau = max T_ab / (L_ab · B_oxc)`` and ``L`` (pairs with traffic only).

    Examples
    --------
    Pod 0 talks to pods 1 (6 bytes) and 2 (2 bytes) with 4 circuits: 3 + 1 circuits give 2 s.

    >>> min_circuits({(0, 1): 6.0, (0, 2): 2.0}, [4, 4, 4], 1.0)
    (2.0, {(0, 1): 3, (0, 2): 1})
    >>> min_circuits({(0, 1): 6.0, (0, 2): 2.0}, [1, 4, 4], 1.0) is None
    True
    """
    active = [(a, b, t) for (a, b), t in pairs.items() if t > 0]
    if not active:
        return 0.0, {}
    degree = [0] * len(budget)
    for a, b, _ in active:
        degree[a] += 1
        degree[b] += 1
    if any(d > c for d, c in zip(degree, budget, strict=True)):
        return None
    candidates: Sequence[float]
    if len(active) >= VECTOR_PAIRS:
        candidates, fits = _vector_search(active, budget, circuit_bps)
    else:
        candidates = sorted(
            {
                t / (n * circuit_bps)
                for a, b, t in active
                for n in range(1, min(budget[a], budget[b]) + 1)
            }
        )

        def fits(tau: float) -> bool:
            return _fits(active, tau, budget, circuit_bps)

    low, high = 0, len(candidates) - 1  # candidates[-1] (one circuit per pair) fits
    while low < high:
        mid = (low + high) // 2
        if fits(candidates[mid]):
            high = mid
        else:
            low = mid + 1
    tau = candidates[low]
    circuits = {(a, b): circuits_for(t, tau, circuit_bps) for a, b, t in active}
    return oxc_time(pairs, circuits, circuit_bps), circuits


def tor_time(demand: Demand, tor_bps: Sequence[float]) -> float:
    """``max_i max(sent_i, received_i) / B_i``: the busiest ToR's time."""
    return max(
        (load / bps for load, bps in zip(demand.tor_bytes(), tor_bps, strict=True)), default=0.0
    )


@dataclass(frozen=True)
class Comm:
    """One communication phase at its best: the time (OXC and ToR) and the circuits."""

    time_s: float
    oxc_s: float
    tor_s: float
    circuits: dict[Pair, int]


def comm_time(
    demand: Demand, budget: Sequence[int], circuit_bps: float, tor_bps: Sequence[float]
) -> Comm | None:
    """The least communication time of a phase with ``demand`` and its circuits, or ``None``
    when no circuit matrix serves it."""
    best = min_circuits(demand.pairs, budget, circuit_bps)
    if best is None:
        return None
    oxc, circuits = best
    tor = tor_time(demand, tor_bps)
    return Comm(max(oxc, tor), oxc, tor, circuits)


def network_comm(instance: OcsInstance, demand: Demand) -> Comm | None:
    """:func:`comm_time` of ``demand`` on ``instance``'s network."""
    return comm_time(demand, instance.circuit_budget, instance.circuit_bps, instance.tor_bps)


@dataclass(frozen=True)
class GroupTimes:
    """What the round needs of one group: its two compute times and its communication time.

    ``active`` says whether the group has jobs (then ``delta`` is charged to its phases)."""

    train_s: float
    second_s: float
    comm_s: float
    active: bool


def round_phases(one: GroupTimes, two: GroupTimes, reconfig_s: float) -> tuple[float, ...]:
    """The four phase durations of a round (module docstring).

    Examples
    --------
    >>> g1 = GroupTimes(train_s=5.0, second_s=5.0, comm_s=3.0, active=True)
    >>> g2 = GroupTimes(train_s=2.0, second_s=1.0, comm_s=4.0, active=True)
    >>> round_phases(g1, g2, 0.5)
    (5.0, 3.5, 5.0, 3.5)
    """
    comm_1 = one.comm_s + reconfig_s if one.active else 0.0
    comm_2 = two.comm_s + reconfig_s if two.active else 0.0
    return (
        max(one.train_s, comm_2),
        max(two.train_s, comm_1),
        max(one.second_s, comm_2),
        max(two.second_s, comm_1),
    )


__all__ = [
    "Comm",
    "GroupTimes",
    "circuits_for",
    "comm_time",
    "min_circuits",
    "network_comm",
    "oxc_time",
    "round_phases",
    "tor_time",
]
