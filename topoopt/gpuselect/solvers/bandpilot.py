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
from collections.abc import Iterator, Sequence

import numpy as np

from topoopt.core.errors import InvalidOptionError
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.masks import MAX_GPUS_PER_HOST, POPCOUNT
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


def _distributions(
    avail: Sequence[int], pool: Sequence[int], m: int, k: int
) -> Iterator[tuple[tuple[int, ...], list[int]]]:
    """EHA's candidates as ``(hosts, counts)``: every combination of ``m`` hosts of ``pool``
    and each of its :func:`balanced_splits`, in that order."""
    for combo in itertools.combinations(pool, m):
        for split in balanced_splits([avail[h] for h in combo], k):
            yield combo, split


def _eha(instance: GpuSelectInstance, max_combinations: int, ctx: SolveContext | None) -> Search:
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
    search = Search(instance, ctx)
    # The best subset of every (host, count) first, in the candidates' order (so a table
    # lacking an entry is reported as when all candidates were built at once) ...
    for combo, split in _distributions(avail, pool, m, k):
        for h, c in zip(combo, split, strict=True):
            best.mask(h, c)
        if search.expired():
            break

    # ... then the candidates, streamed in chunks.
    def blocks() -> Iterator[Block]:
        hosts: list[tuple[int, ...]] = []
        masks: list[list[int]] = []
        for combo, split in _distributions(avail, pool, m, k):
            hosts.append(combo)
            masks.append([best.mask(h, c) for h, c in zip(combo, split, strict=True)])
            if len(hosts) == 4096:
                yield np.array(hosts, dtype=np.int64), np.array(masks, dtype=np.int64)
                hosts, masks = [], []
        if hosts:
            yield np.array(hosts, dtype=np.int64), np.array(masks, dtype=np.int64)

    search.scan(blocks(), width=m)
    return search


def eha(
    instance: GpuSelectInstance,
    max_combinations: int = MAX_HOST_COMBINATIONS,
    ctx: SolveContext | None = None,
) -> tuple[float, np.ndarray]:
    """Equilibrium-driven Heuristic (BandPilot Alg. 1): ``(B, masks)`` of its choice.

    If a host has ``k`` idle GPUs, the best ``k``-subset over all such hosts. Otherwise
    ``m`` = :func:`min_hosts`; for combinations of ``m`` hosts holding ``k`` idle GPUs, the
    :func:`balanced_splits` of ``k``, each host contributing its best subset of that size
    (:class:`~topoopt.gpuselect.solvers.common.BestByCount`); the best candidate by ``B``.

    **Bound on big clusters**: when ``C(n, m)`` exceeds ``max_combinations`` for the ``n``
    hosts with idle GPUs, only the ``L`` hosts with the most idle GPUs (ties: lower index)
    are combined, ``L`` the largest with ``C(L, m) <= max_combinations`` (at least ``m``).
    Candidates are evaluated in chunks, so memory does not grow with their number. With
    ``ctx``, the search stops at its time limit with the best candidate so far.
    """
    return _eha(instance, max_combinations, ctx).result()


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
    instance: GpuSelectInstance, prune_k: int, ctx: SolveContext | None
) -> tuple[float, np.ndarray, bool]:
    """:func:`pts` and whether it finished (``False``: stopped by the time limit)."""
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
    chunk = bound.chunk_rows(1)
    finished = True
    while size > k and finished:
        if expired():
            finished = False
            break
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
                finished = False
                break
        else:
            current[hosts_of[best_i]] = removed[best_i]
            value = best_value
            size -= 1
    if size > k:
        current = complete_on_fewest_hosts(current, k)
        value = float(bound.batch(current[None, :])[0])
    return value, current, finished


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


def _check_options(max_combinations: object = 1, prune_k: object = 0) -> None:
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
    """Equilibrium-driven Heuristic, BandPilot Alg. 1 (balanced splits over fewest hosts).

    Option ``max_combinations`` bounds the host combinations tried (see :func:`eha`).
    """

    name = "gpuselect/eha"
    family = "gpuselect"

    def _solve(
        self,
        instance: GpuSelectInstance,
        ctx: SolveContext,
        *,
        max_combinations: int = MAX_HOST_COMBINATIONS,
    ) -> Attempt:
        _check_options(max_combinations=max_combinations)
        search = _eha(instance, max_combinations, ctx)
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
    ) -> Attempt:
        _check_options(max_combinations, prune_k)
        search = _eha(instance, max_combinations, ctx)
        e_value, e_masks = search.result()
        p_value, p_masks, p_finished = _pts(instance, prune_k, ctx)
        finished = p_finished and not search.stopped
        if p_value > e_value:
            message = f"PTS won: {p_value:g} vs EHA {e_value:g} GB/s"
            return _attempt(instance, p_masks, message, finished)
        message = f"EHA won: {e_value:g} vs PTS {p_value:g} GB/s"
        return _attempt(instance, e_masks, message, finished)
