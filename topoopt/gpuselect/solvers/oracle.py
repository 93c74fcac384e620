"""The enumeration oracle of the gpuselect family (``gpuselect/enumerate``).

Two exact methods:

* **brute force** — every ``k``-subset of the idle GPUs (``C(|A|, k)``, BandPilot's
  "Oracle", §5.1.3), evaluated in vectorised batches; any bandwidth model;
* **fast path** for structured models (:mod:`topoopt.gpuselect.structure`): the optimum is
  the best count vector, found exactly without enumerating subsets.

  - *bottleneck / topology* (inter term ``min_h cap(c_h)``): binary search on the answer
    ``t`` over the finitely many term values; ``t`` is achievable iff some count vector with
    ``sum c = k`` touching >= 2 hosts has every used host's ``c_h`` allowed (``c_h = 1`` or
    ``best_h(c_h) >= t``, and ``cap(c_h) >= t``) — a reachability DP over hosts with bitsets;
  - *table with a cross table*: for every realisable spanning key (all must be in the table),
    the key's value capped by the best matching of its parts to distinct hosts (bottleneck
    assignment, by threshold and augmenting paths).

``method="auto"`` uses the fast path for structured models and brute force otherwise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from topoopt.core.errors import InvalidOptionError, TopooptError
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.models import BATCH_CELLS, CapBound, ProfileBound, StructuredBound
from topoopt.gpuselect.solution import Selection, from_masks
from topoopt.gpuselect.structure import Decomposition, check_profiles_complete, iter_required_keys

BATCH = 20_000
"""Subsets per batch of the brute force (fewer on pools of many hosts: at most
:data:`~topoopt.gpuselect.models.BATCH_CELLS` masks per batch)."""


def brute_force(
    instance: GpuSelectInstance, ctx: SolveContext | None = None
) -> tuple[float, list[int], bool]:
    """Best subset over all ``C(|A|, k)`` subsets: ``(value, masks, complete)``.

    ``complete`` is False when the time limit of ``ctx`` stopped the enumeration.
    """
    gpus = [(h, 1 << i) for h, host in enumerate(instance.hosts) for i in host.available]
    combos = itertools.combinations(range(len(gpus)), instance.k)
    host_of = np.array([h for h, _ in gpus], dtype=np.int64)
    bit_of = np.array([b for _, b in gpus], dtype=np.int64)
    best_value, best_row = -math.inf, np.zeros(instance.n_hosts, dtype=np.int64)
    rows_per_batch = max(1, min(BATCH, BATCH_CELLS // instance.n_hosts))
    first = True
    while True:
        chunk = np.array(list(itertools.islice(combos, rows_per_batch)), dtype=np.int64)
        if chunk.size == 0:
            return best_value, best_row.tolist(), True
        if not first and ctx is not None and ctx.expired():
            return best_value, best_row.tolist(), False
        first = False
        rows = np.zeros((len(chunk), instance.n_hosts), dtype=np.int64)
        for col in range(instance.k):
            np.bitwise_or.at(
                rows, (np.arange(len(chunk)), host_of[chunk[:, col]]), bit_of[chunk[:, col]]
            )
        values = instance.bound.batch(rows)
        j = int(np.argmax(values))
        if values[j] > best_value:
            best_value, best_row = float(values[j]), rows[j]


def _step(state: tuple[int, int], counts: Sequence[int], full: int) -> tuple[int, int]:
    """One host of the reachability DP: bitsets of sums reachable with exactly one / >= 2
    hosts, after a host that may contribute any of ``counts``."""
    one, many = state
    new_one, new_many = one, many
    for c in counts:
        new_one |= (1 << c) & full
        new_many |= ((one << c) | (many << c)) & full
    return new_one, new_many


def _final(allowed: Sequence[Sequence[int]], k: int) -> tuple[int, int]:
    """The DP's state after the last host (no state kept on the way)."""
    full = (1 << (k + 1)) - 1
    state = (0, 0)
    for counts in allowed:
        state = _step(state, counts, full)
    return state


class _States:
    """The DP's state before each host, ``states[h]`` for ``h`` in ``0..len(allowed)``.

    Only every ``stride``-th state is stored (``stride`` about the square root of the hosts);
    the others are recomputed one segment at a time, so a backward walk over all states costs
    one more forward pass and ``O(sqrt(hosts))`` bitsets of ``k`` bits, not one per host.
    """

    def __init__(self, allowed: Sequence[Sequence[int]], k: int) -> None:
        self.allowed = allowed
        self.full = (1 << (k + 1)) - 1
        self.stride = max(1, math.isqrt(len(allowed)))
        self.checkpoints = [(0, 0)]
        state = (0, 0)
        for h, counts in enumerate(allowed, start=1):
            state = _step(state, counts, self.full)
            if h % self.stride == 0:
                self.checkpoints.append(state)
        self.last = state
        self._segment = -1
        self._cached: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self.allowed) + 1

    def __getitem__(self, h: int) -> tuple[int, int]:
        if h == len(self.allowed):
            return self.last
        segment = h // self.stride
        if segment != self._segment:
            state = self.checkpoints[segment]
            start = segment * self.stride
            self._cached = [state]
            for counts in self.allowed[start : start + self.stride - 1]:
                state = _step(state, counts, self.full)
                self._cached.append(state)
            self._segment = segment
        return self._cached[h - segment * self.stride]


def _reachable(allowed: Sequence[Sequence[int]], k: int) -> _States:
    """Forward DP: before each host and after the last, bitsets of sums reachable with
    exactly one / >= 2 hosts (:class:`_States`, stored in ``O(sqrt(hosts))`` bitsets)."""
    return _States(allowed, k)


def _backtrack(allowed: Sequence[Sequence[int]], states: _States, k: int) -> list[int]:
    """A count vector realising sum ``k`` with >= 2 hosts from the DP ``states``."""
    counts = [0] * len(allowed)
    total, need_many = k, True  # need_many: the prefix must use >= 2 hosts (else exactly 1)
    for h in range(len(allowed) - 1, -1, -1):
        one, many = states[h]
        target = many if need_many else one
        if target >> total & 1 and not (need_many is False and total == 0):
            continue  # host h unused
        for c in allowed[h]:
            rest = total - c
            if rest < 0:
                continue
            if need_many and (many >> rest & 1 or one >> rest & 1):
                counts[h], total, need_many = c, rest, bool(many >> rest & 1)
                break
            if not need_many and rest == 0:
                counts[h], total = c, 0
                break
        else:
            raise AssertionError("DP state without a predecessor")
        if total == 0 and not need_many:
            break
    return counts


def _fast_cap(dec: Decomposition, bound: CapBound) -> tuple[float, list[int]] | None:
    """Best spanning count vector under a per-host-capped inter term (module docstring)."""
    k, n = dec.k, len(dec.avail)
    values = {bound.cap(c) for c in range(1, k + 1)}
    values |= {dec.intra(h, c) for h in range(n) for c in range(2, dec.avail[h] + 1)}
    thresholds = sorted(v for v in values if math.isfinite(v))

    def allowed_at(t: float) -> list[list[int]]:
        return [
            [
                c
                for c in range(1, min(dec.avail[h], k) + 1)
                if dec.intra(h, c) >= t and bound.cap(c) >= t
            ]
            for h in range(n)
        ]

    def feasible(t: float) -> bool:
        return bool(_final(allowed_at(t), k)[1] >> k & 1)

    if not thresholds or not feasible(thresholds[0]):
        return None
    lo, hi = 0, len(thresholds) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if feasible(thresholds[mid]) else (lo, mid - 1)
    allowed = allowed_at(thresholds[lo])
    counts = _backtrack(allowed, _reachable(allowed, k), k)
    return dec.spanning_value(counts), counts


def _match(parts: Sequence[int], hosts_ok: Sequence[Sequence[int]]) -> list[int] | None:
    """Assign every part to a distinct host (``hosts_ok[i]`` lists hosts part ``i`` may use);
    returns the host of each part (Kuhn's augmenting paths) or ``None``."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for h in hosts_ok[i]:
            if h in seen:
                continue
            seen.add(h)
            if h not in owner or augment(owner[h], seen):
                owner[h] = i
                return True
        return False

    for i in range(len(parts)):
        if not augment(i, set()):
            return None
    host_of = [0] * len(parts)
    for h, i in owner.items():
        host_of[i] = h
    return host_of


def _fast_profiles(dec: Decomposition, bound: ProfileBound) -> tuple[float, list[int]] | None:
    """Best spanning count vector under a cross table (module docstring)."""
    check_profiles_complete(dec)
    n = len(dec.avail)
    best: tuple[float, list[int]] | None = None
    for key in iter_required_keys(dec):
        if not bound.interchangeable:
            counts = list(key)
            value = dec.spanning_value(counts)
        else:
            cap = bound.inter(list(key))
            levels = sorted(
                {dec.intra(h, p) for h in range(n) for p in set(key) if p <= dec.avail[h]}
                | {math.inf},
                reverse=True,
            )
            found = None
            for t in levels:  # decreasing: the first feasible level is the bottleneck optimum
                ok = [
                    [h for h in range(n) if p <= dec.avail[h] and dec.intra(h, p) >= t] for p in key
                ]
                found = _match(key, ok)
                if found is not None:
                    break
            assert found is not None, "a realisable key always has a matching"
            counts = [0] * n
            for p, h in zip(key, found, strict=True):
                counts[h] = p
            value = min(cap, dec.spanning_value(counts))
        if best is None or value > best[0]:
            best = (value, counts)
    return best


def fast_optimum(instance: GpuSelectInstance) -> tuple[float, list[int]]:
    """Exact optimum ``(B, masks)`` of a structured instance without enumerating subsets."""
    dec = Decomposition(instance)
    bound = dec.bound
    candidates: list[tuple[float, list[int]]] = []
    single = dec.single_host()
    if single is not None:
        value, h = single
        masks = [0] * len(dec.avail)
        masks[h] = dec.best[h][dec.k][1]
        candidates.append((value, masks))
    if dec.spanning_possible():
        if isinstance(bound, CapBound):
            found = _fast_cap(dec, bound)
        elif isinstance(bound, ProfileBound):
            if bound.profiles is None:
                bound.inter([1, dec.k - 1])  # raises: no cross-host table
            found = _fast_profiles(dec, bound)
        else:
            raise TopooptError(f"no fast path for {type(bound).__name__}")
        if found is not None:
            candidates.append((found[0], dec.masks(found[1])))
    return max(candidates, key=lambda vm: vm[0])


@register_solver
class EnumerateSolver(Solver):
    """Enumeration oracle: exact optimum by the structured fast path or brute force.

    Options: ``method`` = ``"auto"`` (fast path for table/bottleneck/topology models, brute
    force otherwise), ``"fast"`` or ``"brute"``. Brute force returns its best subset unproven
    when the time limit stops it.
    """

    name = "gpuselect/enumerate"
    family = "gpuselect"
    exact = True
    gives_bound = True

    def _solve(
        self, instance: GpuSelectInstance, ctx: SolveContext, *, method: str = "auto"
    ) -> Attempt:
        if method not in ("auto", "fast", "brute"):
            raise InvalidOptionError(f"method: must be 'auto', 'fast' or 'brute', got {method!r}")
        structured = isinstance(instance.bound, StructuredBound)
        if method == "fast" or (method == "auto" and structured):
            value, masks = fast_optimum(instance)
            return self._optimal(instance, masks, f"fast path: B* = {value:g} GB/s")
        value, masks, complete = brute_force(instance, ctx)
        if not complete:
            return Attempt(
                from_masks(instance, masks),
                TerminationReason.TIME_LIMIT,
                message="time limit during brute force",
            )
        return self._optimal(instance, masks, f"brute force: B* = {value:g} GB/s")

    @staticmethod
    def _optimal(instance: GpuSelectInstance, masks: list[int], message: str) -> Attempt:
        solution: Selection = from_masks(instance, masks)
        return Attempt(solution, TerminationReason.OPTIMAL, proven_optimal=True, message=message)
