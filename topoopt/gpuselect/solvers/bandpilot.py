"""BandPilot's search algorithms (§4.3): EHA (Alg. 1), PTS (Alg. 2) and their hybrid.

All three query the bandwidth model only through its batch evaluations
(:class:`~topoopt.gpuselect.models.BoundModel`), as the paper's dispatcher queries its
surrogate ``B^``: EHA streams its candidates in bounded chunks
(:class:`~topoopt.gpuselect.solvers.common.Search`); PTS evaluates the removals of one step
as replacements of one host's mask (:meth:`~topoopt.gpuselect.models.BoundModel.batch_replace`,
``O(|S| + hosts)`` per step for the structured models). Memory stays within the instance's
size plus one chunk on any pool.

Each checks the time limit between chunks and steps; when it passes, EHA returns its best
candidate so far and PTS completes its current set (larger than ``k``) to ``k`` GPUs on the
fewest hosts of that set, both with termination ``TIME_LIMIT``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from topoopt.core.errors import InvalidOptionError
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.masks import MAX_GPUS_PER_HOST, POPCOUNT, submask_array
from topoopt.gpuselect.models import BoundModel, CapBound, ProfileBound, StructuredBound
from topoopt.gpuselect.solution import from_masks
from topoopt.gpuselect.solvers.common import (
    BestByCount,
    Block,
    Search,
    best_single_host,
    best_subset_of_host,
    better,
    fitting_hosts,
)

MAX_HOST_COMBINATIONS = 2000
"""Default bound on the host combinations EHA tries (see :func:`eha`)."""
MAX_SPLITS = 64
"""Balanced distributions tried per host combination (ways to place the remainder)."""
MAX_DELTA = 4
"""Largest transfer of EHA's split variants (the reference code moves 1 to 4 GPUs)."""
MAX_VARIANTS = 256
"""Split variants (beyond the balanced splits) tried per host combination."""
SPLIT_SETS = ("variants", "balanced")
"""EHA's candidate sets: ``"variants"`` (default, the reference code's) or ``"balanced"``
(the balanced splits only, as the paper's text describes Alg. 1 line 10)."""


def balanced_splits(caps: Sequence[int], k: int, limit: int = MAX_SPLITS) -> Iterator[list[int]]:
    """Distributions of ``k`` GPUs over hosts with ``caps`` idle GPUs, as even as possible.

    Water-filling: every host gets ``min(cap, L)`` for the lowest level ``L`` that fits
    ``k``; the remainder ``r`` goes one each to ``r`` of the hosts that still have room
    (every choice, at most ``limit`` of them, in lexicographic order).

    Examples
    --------
    >>> list(balanced_splits([8, 8, 8], 8))
    [[3, 3, 2], [3, 2, 3], [2, 3, 3]]
    >>> list(balanced_splits([1, 8], 6)), list(balanced_splits([2, 3], 5))
    ([[1, 5]], [[2, 3]])
    """
    if sum(caps) < k:
        return
    level = 0
    while level < max(caps) and sum(min(c, level + 1) for c in caps) <= k:
        level += 1
    base = [min(c, level) for c in caps]
    rest = k - sum(base)
    room = [h for h, c in enumerate(caps) if c > level]
    for chosen in itertools.islice(itertools.combinations(room, rest), limit):
        split = list(base)
        for h in chosen:
            split[h] += 1
        yield split


def even_splits(caps: Sequence[int], k: int, limit: int = MAX_SPLITS) -> Iterator[list[int]]:
    """The even split of ``k`` over ``len(caps)`` hosts regardless of their idle GPUs —
    ``k // m`` each and one more on ``k % m`` of them — in every arrangement that fits
    ``caps`` (at most ``limit``, lexicographic). The reference code's base allocation and its
    permutations; it differs from :func:`balanced_splits` only when a cap binds.

    Examples
    --------
    >>> list(even_splits([8, 6, 8], 20)), list(even_splits([8, 5, 8], 20))
    ([[7, 6, 7]], [])
    """
    m = len(caps)
    if m == 0:
        return
    q, r = divmod(k, m)
    if min(caps) < q:
        return
    room = [h for h, c in enumerate(caps) if c > q]
    if len(room) < r:
        return
    for chosen in itertools.islice(itertools.combinations(room, r), limit):
        split = [q] * m
        for h in chosen:
            split[h] += 1
        yield split


def residual_split(caps: Sequence[int], k: int) -> list[int]:
    """The reference code's "remaining-resource balance": each of the ``k`` GPUs in turn goes
    to the host with the most idle GPUs left (the first on ties), so the GPUs left idle end
    as even as possible. Computed in closed form: the idle GPUs left on host ``h`` are
    ``min(cap_h, L)`` for the lowest level ``L`` keeping ``sum(caps) - k`` of them, minus one
    on the first hosts at that level.

    Examples
    --------
    >>> residual_split([8, 6, 8, 8], 27), residual_split([8, 3], 8)
    ([8, 5, 7, 7], [7, 1])
    """
    left = sum(caps) - k
    if left < 0:
        raise ValueError("k exceeds the idle GPUs")
    level = 0
    while sum(min(c, level) for c in caps) < left:
        level += 1
    extra = sum(min(c, level) for c in caps) - left
    keep = [min(c, level) for c in caps]
    for h, c in enumerate(caps):
        if extra and c >= level:
            keep[h] -= 1
            extra -= 1
    return [c - r for c, r in zip(caps, keep, strict=True)]


def packed_split(caps: Sequence[int], k: int) -> list[int]:
    """Hosts filled whole in decreasing order of idle GPUs (the first on ties), the last one
    with what is left (the reference code's greedy seed).

    Examples
    --------
    >>> packed_split([6, 8, 8], 20)
    [4, 8, 8]
    """
    split = [0] * len(caps)
    left = k
    for h in sorted(range(len(caps)), key=lambda h: (-caps[h], h)):
        split[h] = min(caps[h], left)
        left -= split[h]
    return split


def transfers(split: Sequence[int], caps: Sequence[int], delta: int) -> Iterator[list[int]]:
    """``split`` with ``delta`` GPUs moved from one host to another, for every ordered pair
    of hosts (giver outer, lowest first), when the result stays within ``0..caps``.

    Examples
    --------
    >>> list(transfers([2, 2], [3, 8], 1))
    [[1, 3], [3, 1]]
    """
    m = len(split)
    takers = [i for i in range(m) if split[i] + delta <= caps[i]]
    for j in range(m):
        if split[j] < delta:
            continue
        for i in takers:
            if i != j:
                out = list(split)
                out[i] += delta
                out[j] -= delta
                yield out


def eha_splits(
    caps: Sequence[int],
    k: int,
    splits: str = "variants",
    limit: int = MAX_SPLITS,
    max_variants: int = MAX_VARIANTS,
) -> list[tuple[int, ...]]:
    """EHA's distributions of ``k`` GPUs over one combination of hosts with ``caps`` idle
    GPUs, distinct, in the order tried.

    1. :func:`balanced_splits` — Alg. 1 line 10 as the paper states it (§4.3.2, "distributing
       the k GPUs evenly across combinations of m hosts");
    2. with ``splits="variants"`` (the candidate set of BandPilot's public code,
       ``algorithms/eha.py``), at most ``max_variants`` more: the :func:`even_splits`, the
       :func:`residual_split`, the :func:`packed_split`, then :func:`transfers` of 1, 2, 3
       and 4 GPUs (:data:`MAX_DELTA`) applied to every balanced and even split, smaller
       transfers first.

    Every split is feasible: non-negative, within ``caps``, summing to ``k``.

    Examples
    --------
    >>> eha_splits([8, 8], 10, "balanced")
    [(5, 5)]
    >>> eha_splits([8, 8], 10)
    [(5, 5), (8, 2), (4, 6), (6, 4), (3, 7), (7, 3), (2, 8)]
    """
    base = [tuple(s) for s in balanced_splits(caps, k, limit)]
    out = dict.fromkeys(base)
    if splits == "balanced" or not base:
        return list(out)
    budget = len(out) + max_variants
    evens = [tuple(s) for s in even_splits(caps, k, limit)]
    for split in [*evens, tuple(residual_split(caps, k)), tuple(packed_split(caps, k))]:
        out.setdefault(split)
    for delta in range(1, MAX_DELTA + 1):
        for start in dict.fromkeys([*base, *evens]):
            for moved in transfers(start, caps, delta):
                out.setdefault(tuple(moved))
                if len(out) >= budget:
                    return list(out)[:budget]
    return list(out)[:budget]


def min_hosts(avail: Sequence[int], k: int) -> int:
    """The fewest hosts whose idle GPUs add up to ``k`` (Alg. 1 line 9)."""
    total = 0
    for m, a in enumerate(sorted(avail, reverse=True), start=1):
        total += a
        if total >= k:
            return m
    raise ValueError("k exceeds the idle GPUs")


def combined_hosts(n_hosts: int, m: int, max_combinations: int) -> int:
    """The largest ``L`` in ``[m, n_hosts]`` with ``C(L, m) <= max_combinations`` (``m`` when
    none), by bisection: ``C(L, m)`` grows with ``L``.

    Examples
    --------
    >>> combined_hosts(3000, 2, 2000), combined_hosts(5, 3, 10**6), combined_hosts(9, 4, 1)
    (63, 5, 4)
    """
    low, high = m, max(m, n_hosts)
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if math.comb(mid, m) <= max_combinations else (low, mid - 1)
    return low


class _Splits:
    """:func:`eha_splits` as arrays, computed once per tuple of caps."""

    def __init__(self, k: int, splits: str) -> None:
        self.k = k
        self.splits = splits
        self._cache: dict[tuple[int, ...], np.ndarray] = {}

    def __call__(self, caps: tuple[int, ...]) -> np.ndarray:
        if caps not in self._cache:
            rows = eha_splits(caps, self.k, self.splits)
            self._cache[caps] = np.array(rows, dtype=np.int64).reshape(len(rows), len(caps))
        return self._cache[caps]


def _combinations(
    avail: Sequence[int], pool: Sequence[int], m: int, splits: str
) -> Iterator[tuple[int, ...]]:
    """The host combinations EHA tries: every ``m`` hosts of ``pool``, then (variants only)
    the ``m + 1`` hosts of ``pool`` with the most idle GPUs (the reference code's
    ``k_min + 1`` probe)."""
    yield from itertools.combinations(pool, m)
    if splits == "variants" and len(pool) > m:
        top = sorted(pool, key=lambda h: (-avail[h], h))[: m + 1]
        yield tuple(sorted(top))


def _eha(
    instance: GpuSelectInstance,
    max_combinations: int,
    ctx: SolveContext | None,
    splits: str = "variants",
) -> Search:
    """:func:`eha` as a finished :class:`~topoopt.gpuselect.solvers.common.Search`."""
    single = best_single_host(instance, ctx)
    if single is not None:
        return single
    k = instance.k
    avail = [h.n_available for h in instance.hosts]
    m = min_hosts(avail, k)
    pool = sorted((h for h in range(len(avail)) if avail[h]), key=lambda h: (-avail[h], h))
    pool = sorted(pool[: combined_hosts(len(pool), m, max_combinations)])
    best = BestByCount(instance)
    table = np.full((instance.n_hosts, MAX_GPUS_PER_HOST + 1), -1, dtype=np.int64)
    split_rows = _Splits(k, splits)
    search = Search(instance, ctx)

    def candidates() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for combo in _combinations(avail, pool, m, splits):
            counts = split_rows(tuple(avail[h] for h in combo))
            if len(counts):
                yield np.array(combo, dtype=np.int64), counts

    width = m + 1 if splits == "variants" and len(pool) > m else m
    ceiling = _ceiling(instance, pool, -(-k // width))
    if ceiling is not None:
        # No entry can be missing: the best subsets of a combination as it comes, and the
        # search ends once a candidate reaches the ceiling (later ones can only tie).
        def streamed() -> Iterator[Block]:
            for hosts, counts in candidates():
                for h, col in zip(hosts.tolist(), counts.T.tolist(), strict=True):
                    for n in set(col):
                        if table[h, n] < 0:
                            table[h, n] = best.mask(h, n)
                yield _block(hosts, counts, table, width)

        search.scan(streamed(), width=width, ceiling=ceiling)
        return search

    # The best subset of every (host, count) first, in the candidates' order (so a table
    # lacking an entry is reported as when all candidates were built at once) ...
    for hosts, counts in candidates():
        missing = table[hosts[None, :], counts] < 0
        if missing.any():
            rows, cols = np.nonzero(missing)
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
                h, n = int(hosts[c]), int(counts[r, c])
                if table[h, n] < 0:
                    table[h, n] = best.mask(h, n)
        if search.expired():
            break

    # ... then the candidates, streamed in chunks.
    def blocks() -> Iterator[Block]:
        for hosts, counts in candidates():
            if (table[hosts[None, :], counts] < 0).any():  # the first pass hit the time limit
                break
            yield _block(hosts, counts, table, width)

    search.scan(blocks(), width=width)
    return search


def _block(hosts: np.ndarray, counts: np.ndarray, table: np.ndarray, width: int) -> Block:
    """The candidates of one host combination (``counts``: one split per row) with the best
    subsets of ``table``, padded to ``width`` hosts by a leading empty column (which the
    combination's first host fills, so that its real mask wins)."""
    masks = table[hosts[None, :], counts]
    rows = np.broadcast_to(hosts, counts.shape)
    if len(hosts) < width:
        rows = np.hstack([np.repeat(rows[:, :1], width - len(hosts), axis=1), rows])
        masks = np.hstack([np.zeros((len(masks), width - len(hosts)), np.int64), masks])
    return rows, masks


def _ceiling(instance: GpuSelectInstance, pool: Sequence[int], top: int) -> float | None:
    """An upper bound on ``B`` of every EHA candidate over the hosts of ``pool`` (each spans
    at least 2 hosts, the largest count at least ``top``), when none can lack an entry
    (a bottleneck inter term and intra tables complete on those hosts' idle GPUs); ``None``
    otherwise. For :class:`~topoopt.gpuselect.models.CapBound`: the inter term when the
    largest count is ``top``, as it falls with the largest count."""
    bound = instance.bound
    if not isinstance(bound, CapBound):
        return None
    for row, idle in {(int(bound.type_index[h]), instance.hosts[h].available_mask) for h in pool}:
        for size in range(2, int(POPCOUNT[idle]) + 1):
            if np.isnan(bound.tables[row, submask_array(idle, size)]).any():
                return None
    ceiling = float(bound.inter_batch(np.array([[top]], dtype=np.int64))[0])
    return None if math.isnan(ceiling) else ceiling


def eha(
    instance: GpuSelectInstance,
    max_combinations: int = MAX_HOST_COMBINATIONS,
    ctx: SolveContext | None = None,
    splits: str = "variants",
) -> tuple[float, np.ndarray]:
    """Equilibrium-driven Heuristic (BandPilot §4.3.2, Alg. 1): ``(B, masks)`` of its choice.

    If a host has ``k`` idle GPUs, the best ``k``-subset over all such hosts (Alg. 1 lines
    4-7). Otherwise ``m`` = :func:`min_hosts` (line 9); for combinations of ``m`` hosts
    holding ``k`` idle GPUs, the distributions of :func:`eha_splits` (line 10: the balanced
    splits, and with ``splits="variants"`` the reference code's variants of them), each host
    contributing its best subset of that size
    (:class:`~topoopt.gpuselect.solvers.common.BestByCount`); with variants also the ``m + 1``
    hosts with the most idle GPUs; the best candidate by ``B`` (line 11; first on ties).

    **Bound on big clusters**: when ``C(n, m)`` exceeds ``max_combinations`` for the ``n``
    hosts with idle GPUs, only the ``L`` hosts with the most idle GPUs (ties: lower index)
    are combined, ``L`` the largest with ``C(L, m) <= max_combinations`` (at least ``m``);
    per combination at most :data:`MAX_SPLITS` balanced and :data:`MAX_VARIANTS` other
    splits. Candidates are evaluated in chunks, so memory does not grow with their number.
    With ``ctx``, the search stops at its time limit with the best candidate so far.
    """
    return _eha(instance, max_combinations, ctx, splits).result()


BITS = np.arange(MAX_GPUS_PER_HOST, dtype=np.int64)


def complete_on_fewest_hosts(masks: np.ndarray, k: int) -> np.ndarray:
    """``k`` of the GPUs of ``masks`` on as few hosts as possible: hosts by decreasing count
    (ties: lower index), whole, and the lowest indices of the last one.

    Examples
    --------
    >>> complete_on_fewest_hosts(np.array([0b11, 0b1111, 0b111]), 6).tolist()
    [0, 15, 3]
    """
    counts = POPCOUNT[masks]
    out = np.zeros_like(masks)
    left = k
    for h in sorted(np.flatnonzero(counts).tolist(), key=lambda h: (-counts[h], h)):
        if left == 0:
            break
        mask = int(masks[h])
        while POPCOUNT[mask] > left:
            mask &= ~(1 << (mask.bit_length() - 1))  # drop the highest index
        out[h] = mask
        left -= int(POPCOUNT[mask])
    return out


def _pts(
    instance: GpuSelectInstance,
    prune_k: int,
    ctx: SolveContext | None,
    incremental: bool = True,
) -> tuple[float, np.ndarray, bool]:
    """:func:`pts` and whether it finished (``False``: stopped by the time limit).

    ``incremental=False`` evaluates every removal at every step (:func:`_reference_step`),
    the reference the per-host steps (:class:`_Removals`) are tested against."""
    k = instance.k
    bound = instance.bound
    current = instance.available_masks.copy()

    def expired() -> bool:
        return ctx is not None and ctx.expired()

    if k <= prune_k:
        hosts = fitting_hosts(instance)
        if hosts:
            keep, keep_value = hosts[0], -math.inf
            for i, h in enumerate(hosts):
                if i and expired():
                    break
                score = best_subset_of_host(instance, h, k)[0]
                if i == 0 or better(score, keep_value):
                    keep, keep_value = h, score
            current = np.where(np.arange(instance.n_hosts) == keep, current, 0)
    size = int(POPCOUNT[current].sum())
    value = float(bound.batch(current[None, :])[0]) if size == k else -math.inf
    steps = _Removals(bound, current) if incremental and _Removals.applies(bound) else None
    finished = True
    while size > k:
        if expired():
            finished = False
            break
        step = steps.best() if steps is not None else None
        if step is None:
            step = _reference_step(bound, current, expired)
            if step is None:
                finished = False
                break
        host, mask, value = step
        current[host] = mask
        if steps is not None:
            steps.update(host)
        size -= 1
    if size > k:
        current = complete_on_fewest_hosts(current, k)
        value = float(bound.batch(current[None, :])[0])
    return value, current, finished


def _reference_step(
    bound: BoundModel, current: np.ndarray, expired: Callable[[], bool]
) -> tuple[int, int, float] | None:
    """One step of PTS by evaluating every removal: ``(host, new mask, B)`` of the best
    (first by host, then index, on ties), or ``None`` when the time limit cut the step."""
    chunk = bound.chunk_rows(1)
    used = np.flatnonzero(current)
    rows, bits = np.nonzero((current[used, None] >> BITS) & 1)  # hosts, then indices
    hosts_of = used[rows]
    removed = current[hosts_of] ^ (np.int64(1) << bits)
    best_i, best_value = -1, -math.inf
    for start in range(0, len(hosts_of), chunk):
        stop = min(start + chunk, len(hosts_of))
        values = bound.batch_replace(current, hosts_of[start:stop], removed[start:stop])
        j = int(np.argmax(values))
        if best_i < 0 or better(float(values[j]), best_value):
            best_i, best_value = start + j, float(values[j])
        if stop < len(hosts_of) and expired():
            return None
    return int(hosts_of[best_i]), int(removed[best_i]), best_value


class _Removals:
    """PTS's steps for the structured models, per host instead of per GPU.

    With at least 3 hosts in the set, every removal leaves a subset spanning hosts, whose
    ``B`` is ``min(A_h, L(h, b))``: ``L(h, b)`` the intra term of host ``h`` without GPU
    ``b`` (``inf`` under 2 GPUs), ``A_h`` the minimum of the other hosts' intra terms and the
    inter term with ``h``'s count less one (:meth:`~topoopt.gpuselect.models.StructuredBound.
    inter_replace`). The best removal from host ``h`` is worth ``min(A_h, max_b L(h, b))``,
    and is its first GPU with ``L(h, b)`` at least that. Only the changed host's terms are
    recomputed after a step; the step is then ``O(hosts)`` array operations instead of
    ``O(|S|)``, with the same values and ties as :func:`_reference_step`. Any ``nan`` (a
    missing entry), and sets on fewer than 3 hosts, fall back to :func:`_reference_step`
    (which raises the same error).
    """

    def __init__(self, bound: BoundModel, current: np.ndarray) -> None:
        assert isinstance(bound, StructuredBound)
        self.bound = bound
        self.current = current
        self.counts = POPCOUNT[current].astype(np.int64)
        n = len(current)
        self.multi = np.full(n, np.inf)  # the intra term of each host's mask (>= 2 GPUs)
        self.top = np.full(n, -np.inf)  # max_b L(h, b); -inf for unused hosts
        self.n_used = int(np.count_nonzero(current))
        self.missing: set[int] = set()  # hosts with a nan removal term
        self._cache: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        if isinstance(bound, CapBound):  # the inter term by largest count, as batches give it
            counts = np.arange(MAX_GPUS_PER_HOST + 1, dtype=np.int64)[:, None]
            self.caps = bound.inter_batch(counts).tolist()
        for h in np.flatnonzero(current).tolist():
            self.update(h)

    @staticmethod
    def applies(bound: BoundModel) -> bool:
        """Whether the model has the per-host structure (inter term of the counts only)."""
        if isinstance(bound, ProfileBound):
            return bound.interchangeable
        return isinstance(bound, StructuredBound)

    def removals(self, host: int) -> tuple[np.ndarray, np.ndarray]:
        """The masks of host ``host`` without each of its GPUs (lowest first), and ``L``."""
        key = (int(self.bound.type_index[host]), int(self.current[host]))
        if key not in self._cache:
            row, mask = key
            bits = BITS[((mask >> BITS) & 1).astype(bool)]
            removed = mask ^ (np.int64(1) << bits)
            if len(bits) - 1 < 2:
                self._cache[key] = removed, np.full(len(bits), np.inf)
            else:
                self._cache[key] = removed, self.bound.tables[row, removed]
        return self._cache[key]

    def update(self, host: int) -> None:
        """Recompute the terms of host ``host`` after its mask changed."""
        mask = int(self.current[host])
        count = int(POPCOUNT[mask])
        if self.counts[host] and not count:
            self.n_used -= 1
        self.counts[host] = count
        table = self.bound.tables[self.bound.type_index[host]]
        self.multi[host] = table[mask] if count >= 2 else np.inf
        top = float(self.removals(host)[1].max()) if count else -math.inf
        self.top[host] = top
        if math.isnan(top):
            self.missing.add(host)
        else:
            self.missing.discard(host)

    def best(self) -> tuple[int, int, float] | None:
        """``(host, new mask, B)`` of the best removal, or ``None`` to fall back."""
        if self.n_used < 3 or self.missing:
            return None
        multi = self.multi
        first = int(np.argmin(multi))  # the first nan if any
        low = float(multi[first])
        if math.isnan(low):
            return None
        multi[first] = np.inf
        second = float(multi.min())
        multi[first] = low
        if isinstance(self.bound, CapBound):
            host, value = self._best_cap(first, low, second)
        else:
            used = np.flatnonzero(self.counts)
            others = np.where(used == first, second, low)
            inter = self.bound.inter_replace(self.counts, used, self.counts[used] - 1)
            values = np.minimum(np.minimum(others, inter), self.top[used])
            if np.isnan(values).any():
                return None
            j = int(np.argmax(values))
            host, value = int(used[j]), float(values[j])
        removed, terms = self.removals(host)
        b = int(np.argmax(terms >= value))
        return host, int(removed[b]), value

    def _best_cap(self, first: int, low: float, second: float) -> tuple[int, float]:
        """The best removal under a bottleneck inter term ``cap(max count)``: every host's
        removal is worth ``min(low, cap(c_max), top_h)`` but the host ``first`` of the
        lowest intra term (``second`` for it) and the host of the largest count (whose
        removal may lower it)."""
        counts = self.counts
        big = int(np.argmax(counts))
        largest = int(counts[big])
        counts[big] = 0
        runner_up = int(counts.max())
        counts[big] = largest
        inter = self.caps[largest]
        values = np.minimum(self.top, min(low, inter))
        for h in {first, big}:
            if counts[h]:
                others = second if h == first else low
                cap = self.caps[max(runner_up, largest - 1)] if h == big else inter
                values[h] = min(min(others, cap), float(self.top[h]))
        j = int(np.argmax(values))
        return j, float(values[j])


def pts(
    instance: GpuSelectInstance, prune_k: int = 8, ctx: SolveContext | None = None
) -> tuple[float, np.ndarray]:
    """Pruned Tree Search (BandPilot Alg. 2): ``(B, masks)`` of its choice.

    Start from all idle GPUs or, when ``k <= prune_k`` and some host fits ``k``, from the
    idle GPUs of the host with the best ``k``-subset ("node insertion"); then drop, one at a
    time, the GPU whose removal keeps ``B`` highest (ties: the first by host, then index)
    until ``k`` remain: ``sum_{i=k+1}^{|A|} i`` evaluations, ``O(|A|^2 - k^2)``, each step's
    as replacements of one host's mask (linear time and memory per step for the structured
    models). With ``ctx``, a search stopped by its time limit completes its current set on
    the fewest hosts (:func:`complete_on_fewest_hosts`).
    """
    value, masks, _ = _pts(instance, prune_k, ctx)
    return value, masks


def _check_options(
    max_combinations: object = 1, prune_k: object = 0, splits: object = "variants"
) -> None:
    if splits not in SPLIT_SETS:
        raise InvalidOptionError(f"splits: must be 'variants' or 'balanced', got {splits!r}")
    if isinstance(max_combinations, bool) or not isinstance(max_combinations, int):
        max_combinations = 0
    if max_combinations < 1:
        raise InvalidOptionError(
            f"max_combinations: must be a positive integer, got {max_combinations!r}"
        )
    if isinstance(prune_k, bool) or not isinstance(prune_k, int) or prune_k < 0:
        raise InvalidOptionError(f"prune_k: must be a non-negative integer, got {prune_k!r}")


def _attempt(
    instance: GpuSelectInstance, masks: np.ndarray, message: str, finished: bool = True
) -> Attempt:
    if finished:
        termination = TerminationReason.COMPLETED
    else:
        termination = TerminationReason.TIME_LIMIT
        message = f"time limit: best so far; {message}"
    return Attempt(from_masks(instance, masks.tolist()), termination, message=message)


@register_solver
class EhaSolver(Solver):
    """Equilibrium-driven Heuristic, BandPilot Alg. 1 (balanced splits over fewest hosts and
    the reference code's variants of them).

    Options: ``max_combinations`` bounds the host combinations tried; ``splits`` =
    ``"variants"`` (default) or ``"balanced"`` (see :func:`eha_splits`).
    """

    name = "gpuselect/eha"
    family = "gpuselect"

    def _solve(
        self,
        instance: GpuSelectInstance,
        ctx: SolveContext,
        *,
        max_combinations: int = MAX_HOST_COMBINATIONS,
        splits: str = "variants",
    ) -> Attempt:
        _check_options(max_combinations=max_combinations, splits=splits)
        search = _eha(instance, max_combinations, ctx, splits)
        value, masks = search.result()
        return _attempt(instance, masks, f"EHA: B = {value:g} GB/s", not search.stopped)


@register_solver
class PtsSolver(Solver):
    """Pruned Tree Search, BandPilot Alg. 2 (top-down greedy elimination, batched).

    Option ``prune_k``: requests up to this size start from the best single host (paper: 8).
    """

    name = "gpuselect/pts"
    family = "gpuselect"

    def _solve(
        self, instance: GpuSelectInstance, ctx: SolveContext, *, prune_k: int = 8
    ) -> Attempt:
        _check_options(prune_k=prune_k)
        value, masks, finished = _pts(instance, prune_k, ctx)
        return _attempt(instance, masks, f"PTS: B = {value:g} GB/s", finished)


@register_solver
class HybridSolver(Solver):
    """BandPilot's hybrid search (§4.3.1): run EHA and PTS, keep the higher ``B``.

    Options as for ``gpuselect/eha`` and ``gpuselect/pts``; ties go to EHA. Both share the
    time limit: PTS gets what EHA left.
    """

    name = "gpuselect/hybrid"
    family = "gpuselect"

    def _solve(
        self,
        instance: GpuSelectInstance,
        ctx: SolveContext,
        *,
        max_combinations: int = MAX_HOST_COMBINATIONS,
        prune_k: int = 8,
        splits: str = "variants",
    ) -> Attempt:
        _check_options(max_combinations, prune_k, splits)
        search = _eha(instance, max_combinations, ctx, splits)
        e_value, e_masks = search.result()
        p_value, p_masks, p_finished = _pts(instance, prune_k, ctx)
        finished = p_finished and not search.stopped
        if p_value > e_value:
            message = f"PTS won: {p_value:g} vs EHA {e_value:g} GB/s"
            return _attempt(instance, p_masks, message, finished)
        message = f"EHA won: {e_value:g} vs PTS {p_value:g} GB/s"
        return _attempt(instance, e_masks, message, finished)
