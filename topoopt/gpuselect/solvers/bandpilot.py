"""BandPilot's search algorithms (§4.3): EHA (Alg. 1), PTS (Alg. 2) and their hybrid.

All three query the bandwidth model only through its batch evaluation
(:meth:`~topoopt.gpuselect.models.BoundModel.batch`), one batch per decision step, as the
paper's dispatcher queries its surrogate ``B^``.
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
from topoopt.gpuselect.solution import from_masks
from topoopt.gpuselect.solvers.common import (
    BestByCount,
    argmax_row,
    best_single_host,
    fitting_hosts,
    single_host_rows,
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


def eha(
    instance: GpuSelectInstance, max_combinations: int = MAX_HOST_COMBINATIONS
) -> tuple[float, np.ndarray]:
    """Equilibrium-driven Heuristic (BandPilot Alg. 1).

    If a host has ``k`` idle GPUs, the best ``k``-subset over all such hosts. Otherwise
    ``m`` = :func:`min_hosts`; for combinations of ``m`` hosts holding ``k`` idle GPUs, the
    :func:`balanced_splits` of ``k``, each host contributing its best subset of that size
    (:class:`~topoopt.gpuselect.solvers.common.BestByCount`); the best candidate by ``B``.

    **Bound on big clusters**: when ``C(n, m)`` exceeds ``max_combinations`` for the ``n``
    hosts with idle GPUs, only the ``L`` hosts with the most idle GPUs (ties: lower index)
    are combined, ``L`` the largest with ``C(L, m) <= max_combinations`` (at least ``m``).
    """
    single = best_single_host(instance)
    if single is not None:
        return single
    k = instance.k
    avail = [h.n_available for h in instance.hosts]
    m = min_hosts(avail, k)
    pool = sorted((h for h in range(len(avail)) if avail[h]), key=lambda h: (-avail[h], h))
    size = len(pool)
    while size > m and math.comb(size, m) > max_combinations:
        size -= 1
    pool = sorted(pool[:size])
    best = BestByCount(instance)
    dists = []
    for combo in itertools.combinations(pool, m):
        caps = [avail[h] for h in combo]
        for split in balanced_splits(caps, k):
            dists.append(dict(zip(combo, split, strict=True)))
    return argmax_row(instance, best.rows(dists))


def pts(instance: GpuSelectInstance, prune_k: int = 8) -> tuple[float, np.ndarray]:
    """Pruned Tree Search (BandPilot Alg. 2).

    Start from all idle GPUs or, when ``k <= prune_k`` and some host fits ``k``, from the
    idle GPUs of the host with the best ``k``-subset ("node insertion"); then drop, one at a
    time, the GPU whose removal keeps ``B`` highest (all removals in one batch) until ``k``
    remain: ``sum_{i=k+1}^{|A|} i`` evaluations, ``O(|A|^2 - k^2)``.
    """
    k = instance.k
    current = instance.available_masks.copy()
    if k <= prune_k:
        hosts = fitting_hosts(instance)
        if hosts:
            scores = [argmax_row(instance, single_host_rows(instance, h, k))[0] for h in hosts]
            keep = hosts[int(np.argmax(scores))]
            current = np.where(np.arange(instance.n_hosts) == keep, current, 0)
    size = int(sum(bin(int(m)).count("1") for m in current))
    value = float(instance.bound.batch(current[None, :])[0]) if size == k else -math.inf
    while size > k:
        hosts_of, bits = [], []
        for h, mask in enumerate(current.tolist()):
            while mask:
                low = mask & -mask
                hosts_of.append(h)
                bits.append(low)
                mask ^= low
        rows = np.repeat(current[None, :], size, axis=0)
        rows[np.arange(size), hosts_of] ^= np.array(bits, dtype=np.int64)
        value, current = argmax_row(instance, rows)
        size -= 1
    return value, current


def _attempt(instance: GpuSelectInstance, masks: np.ndarray, message: str) -> Attempt:
    return Attempt(
        from_masks(instance, masks.tolist()), TerminationReason.COMPLETED, message=message
    )


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
        if not isinstance(max_combinations, int) or max_combinations < 1:
            raise InvalidOptionError(
                f"max_combinations: must be a positive integer, got {max_combinations!r}"
            )
        value, masks = eha(instance, max_combinations)
        return _attempt(instance, masks, f"EHA: B = {value:g} GB/s")


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
        if not isinstance(prune_k, int) or prune_k < 0:
            raise InvalidOptionError(f"prune_k: must be a non-negative integer, got {prune_k!r}")
        value, masks = pts(instance, prune_k)
        return _attempt(instance, masks, f"PTS: B = {value:g} GB/s")


@register_solver
class HybridSolver(Solver):
    """BandPilot's hybrid search (§4.3.1): run EHA and PTS, keep the higher ``B``.

    Options as for ``gpuselect/eha`` and ``gpuselect/pts``; ties go to EHA.
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
        e_value, e_masks = eha(instance, max_combinations)
        p_value, p_masks = pts(instance, prune_k)
        if p_value > e_value:
            return _attempt(instance, p_masks, f"PTS won: {p_value:g} vs EHA {e_value:g} GB/s")
        return _attempt(instance, e_masks, f"EHA won: {e_value:g} vs PTS {p_value:g} GB/s")
