"""Incremental evaluation of a group's communication time: the per-pod decomposition of the
exact phase evaluator, so that moving one job costs the pods it touches, not the whole round.

**Per-pod decomposition** (``docs/ocs.md``, "The key structure"). For a communicating group with
pair demands ``T_ab``, a time ``τ`` is reachable iff every pod's circuits fit:
``Σ_b ⌈T_ab / (τ B_oxc)⌉ ≤ C_a``. Each pod's condition involves only the pairs at that pod and
is monotone in ``τ``, so the reachable set is the intersection of the pods' up-sets
``[τ_a, ∞)`` and the least OXC time is

    τ* = max over pods a of τ_a,    τ_a = least τ with Σ_b ⌈T_ab / (τ B_oxc)⌉ ≤ C_a

(the circuits ``L_ab = ⌈T_ab / (τ* B_oxc)⌉`` fit at both ends, since ``τ* ≥ τ_a, τ_b``). With
the ToR bound, which is per pod too, the group's communication time is the largest **pod
value** ``v_a = max(τ_a, max(sent_a, received_a) / B_a)`` (:func:`pod_oxc_time`,
:meth:`Group.comm`). A job's traffic touches only its own pods, so adding, removing or
re-routing a job changes ``v_a`` at those pods only (:meth:`Group.values_after`); the rest of
the round (paper eq. 1, the four-phase table) follows from the two groups' maxima.

``τ_a`` is the least max of ``T_ab / (n_b B_oxc)`` over integer ``n_b ≥ 1`` with
``Σ n_b ≤ C_a``: water-filling (give the next circuit to the pair with the largest
``T / n``) is exact for it, started from a feasible allocation below the optimum
(:func:`pod_oxc_time`). :func:`topoopt.ocs.phases.min_circuits` (a binary search over the
candidate times of all pairs) stays the reference; the tests check that both agree on many
random demands and groupings.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from topoopt.ocs.choices import Choice
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.phases import TIGHT

PodDelta = tuple[tuple[tuple[int, float], ...], float, float]
"""One job's traffic at one pod: ``((other pod, bytes), ...)``, bytes sent, bytes received."""


def pod_oxc_time(demands: Sequence[float], budget: int, circuit_bps: float) -> float:
    """``τ_a``: the least OXC time of one pod whose pairs carry ``demands`` (bytes, all
    positive) with ``budget`` circuits (``inf`` when it has more pairs than circuits).

    Water-filling: every pair starts with the circuits it needs at an upper bound of the
    optimum (from the proportional allocation ``1 + ⌊T_b (C - d) / ΣT⌋``, which fits), then
    each spare circuit goes to the pair with the largest ``T / n``. Starting below the optimal
    counts, each step raises a count that the optimum also needs, so the end is optimal.

    Examples
    --------
    Pod 0 of :func:`topoopt.ocs.phases.min_circuits`'s example: 6 and 2 bytes, 4 circuits.

    >>> pod_oxc_time([6.0, 2.0], 4, 1.0), pod_oxc_time([6.0, 2.0], 1, 1.0), pod_oxc_time([], 0, 1.0)
    (2.0, inf, 0.0)
    """
    d = len(demands)
    if d == 0:
        return 0.0
    if d > budget:
        return math.inf
    if d == 1:
        return demands[0] / (budget * circuit_bps)
    spare = budget - d
    counts = [1] * d
    if spare > 2 * d:
        total = math.fsum(demands)
        upper = max(t / (1 + math.floor(t * spare / total)) for t in demands)
        counts = [max(1, math.ceil(t / upper * (1 - TIGHT))) for t in demands]
        spare = budget - sum(counts)
    heap = [(-t / n, i) for i, (t, n) in enumerate(zip(demands, counts, strict=True))]
    heapq.heapify(heap)
    for _ in range(spare):
        i = heap[0][1]
        counts[i] += 1
        heapq.heapreplace(heap, (-demands[i] / counts[i], i))
    return -heap[0][0] / circuit_bps


def footprint(instance: OcsInstance, job: int, choice: Choice) -> dict[int, PodDelta]:
    """``job``'s traffic in one communication phase with ``choice``, pod by pod (the bytes of
    :func:`topoopt.ocs.choices.demand`, without its arrays over every pod)."""
    spec = instance.jobs[job]
    f = spec.traffic_bytes
    gpus = [(instance.pod_index[p], g) for p, g in spec.gpus]
    pairs: dict[tuple[int, int], float] = {}
    sent: dict[int, float] = {}
    received: dict[int, float] = {}

    def add(a: int, b: int, amount: float) -> None:
        if amount > 0:
            key = (a, b) if a < b else (b, a)
            pairs[key] = pairs.get(key, 0.0) + amount

    if spec.type == "PS":
        if not isinstance(choice, int):
            raise ValueError(f"job {spec.name!r}: a PS choice is a server pod, got {choice!r}")
        for pod, g in gpus:
            sent[pod] = sent.get(pod, 0.0) + g * f
            if pod != choice:
                add(pod, choice, g * f)
        received[choice] = received.get(choice, 0.0) + spec.total_gpus * f
    elif spec.type == "RAR":
        if not isinstance(choice, tuple):
            raise ValueError(f"job {spec.name!r}: a RAR choice is a ring, got {choice!r}")
        k = len(choice)
        if k >= 2:
            for t in range(k):
                add(choice[t], choice[(t + 1) % k], 2 * f)
        for pod, g in gpus:
            sent[pod] = sent.get(pod, 0.0) + 2 * g * f
            received[pod] = received.get(pod, 0.0) + 2 * g * f
    else:
        share = f / (spec.total_gpus - 1)
        for x, (a, ga) in enumerate(gpus):
            sent[a] = sent.get(a, 0.0) + ga * f
            received[a] = received.get(a, 0.0) + ga * f
            for b, gb in gpus[x + 1 :]:
                add(a, b, 2 * ga * gb * share)
    at: dict[int, list[tuple[int, float]]] = {}
    for (a, b), amount in pairs.items():
        at.setdefault(a, []).append((b, amount))
        at.setdefault(b, []).append((a, amount))
    pods = set(at) | set(sent) | set(received)
    return {i: (tuple(at.get(i, ())), sent.get(i, 0.0), received.get(i, 0.0)) for i in sorted(pods)}


class Footprints:
    """:func:`footprint` of every (job, choice) met, computed once."""

    def __init__(self, instance: OcsInstance) -> None:
        self.instance = instance
        self._cache: dict[tuple[int, Choice], dict[int, PodDelta]] = {}

    def __call__(self, job: int, choice: Choice) -> dict[int, PodDelta]:
        key = (job, choice)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = footprint(self.instance, job, choice)
        return found


Change = tuple[int, dict[int, PodDelta]]
"""``(+1 or -1, footprint)``: a job's traffic added to or removed from a group."""


class Group:
    """The traffic of one communicating group, pod by pod, with every pod's value
    ``v_a = max(τ_a, max(sent_a, received_a) / B_a)`` (module docstring).

    A pair's demand keeps the number of jobs on it, so that it leaves the pod exactly when
    its last job does (floating-point sums do not return to zero). ``version[a]`` counts the
    changes at pod ``a``: a value computed for a pod stays valid while its version does.
    """

    def __init__(self, instance: OcsInstance) -> None:
        n = instance.n_pods
        self.budget = instance.circuit_budget
        self.bps = instance.circuit_bps
        self.tor = instance.tor_bps
        self.rows: list[dict[int, list[float]]] = [{} for _ in range(n)]
        self.sent = [0.0] * n
        self.received = [0.0] * n
        self.value = [0.0] * n
        self.version = [0] * n
        self._order: list[int] | None = list(range(n))

    def pod_value(self, a: int, changes: Iterable[tuple[int, PodDelta]] = ()) -> float:
        """``v_a`` with ``changes`` (``(sign, the job's traffic at a)``) applied."""
        row = self.rows[a]
        sent, received = self.sent[a], self.received[a]
        mods: dict[int, list[float]] = {}
        for sign, (pairs, s, r) in changes:
            sent += sign * s
            received += sign * r
            for b, t in pairs:
                mod = mods.setdefault(b, [0.0, 0.0])
                mod[0] += sign * t
                mod[1] += sign
        if mods:
            demands = []
            for b, (t, c) in row.items():
                change = mods.get(b)
                if change is None:
                    demands.append(t)
                elif c + change[1] > 0:
                    demands.append(max(t + change[0], 0.0))
            for b, (t, c) in mods.items():
                if b not in row and c > 0:
                    demands.append(t)
        else:
            demands = [t for t, _ in row.values()]
        oxc = pod_oxc_time(demands, self.budget[a], self.bps)
        return max(oxc, max(sent, received) / self.tor[a])

    def values_after(self, changes: Sequence[Change]) -> dict[int, float]:
        """The new value of every pod the ``changes`` touch."""
        at: dict[int, list[tuple[int, PodDelta]]] = {}
        for sign, prints in changes:
            for a, delta in prints.items():
                at.setdefault(a, []).append((sign, delta))
        return {a: self.pod_value(a, deltas) for a, deltas in at.items()}

    def apply(self, sign: int, prints: Mapping[int, PodDelta]) -> None:
        """Add (``sign = 1``) or remove (``-1``) a job's traffic."""
        for a, (pairs, s, r) in prints.items():
            row = self.rows[a]
            self.sent[a] += sign * s
            self.received[a] += sign * r
            for b, t in pairs:
                entry = row.get(b)
                if entry is None:
                    row[b] = [t, 1]
                elif entry[1] + sign <= 0:
                    del row[b]
                else:
                    entry[0] += sign * t
                    entry[1] += sign
        for a in prints:
            self.value[a] = self.pod_value(a)
            self.version[a] += 1
        self._order = None

    def order(self) -> list[int]:
        """The pods by decreasing value."""
        if self._order is None:
            value = self.value
            self._order = sorted(range(len(value)), key=lambda a: -value[a])
        return self._order

    def comm(self, new: Mapping[int, float] | None = None) -> float:
        """The group's communication time, with the pods of ``new`` at those values."""
        best = max(new.values()) if new else 0.0
        value = self.value
        for a in self.order():
            if new is None or a not in new:
                return max(best, value[a])
        return best

    def existing(self) -> list[tuple[int, int]]:
        """The pairs that carry traffic (Algorithm 3's existing connections)."""
        return [(a, b) for a, row in enumerate(self.rows) for b in row if a < b]


@dataclass(frozen=True)
class Round:
    """One group's share of the round: its slowest training and second compute, its
    communication time and whether it has jobs."""

    train_s: float
    second_s: float
    comm_s: float
    active: bool


def round_time(one: Round, two: Round, reconfig_s: float) -> float:
    """The round (paper eq. 1; :func:`topoopt.ocs.phases.round_phases`) of two groups."""
    c1 = one.comm_s + reconfig_s if one.active else 0.0
    c2 = two.comm_s + reconfig_s if two.active else 0.0
    return (
        max(one.train_s, c2) + max(two.train_s, c1) + max(one.second_s, c2) + max(two.second_s, c1)
    )


__all__ = [
    "Footprints",
    "Group",
    "Round",
    "footprint",
    "pod_oxc_time",
    "round_time",
]
