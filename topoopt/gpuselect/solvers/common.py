"""Helpers shared by the gpuselect solvers: streamed candidate search, per-host best subsets.

Memory: candidates are never stacked into one array over all of them, nor given one mask per
host of the instance. A candidate subset is *sparse* — the few hosts it touches and their
masks — and a :class:`Search` evaluates a stream of them in chunks of
:meth:`~topoopt.gpuselect.models.BoundModel.chunk_rows` rows
(:meth:`~topoopt.gpuselect.models.BoundModel.batch_sparse`), keeping the best so far. A
solver's memory is therefore the instance's size plus one chunk, however many candidates it
tries.

Time: a :class:`Search` given the solve's :class:`~topoopt.core.solver.SolveContext` stops
after the first chunk evaluated once the time limit has passed; the solver then returns the
best candidate so far with termination ``TIME_LIMIT``.

Ties go to the first candidate in stream order and a ``nan`` value wins as for
:func:`numpy.argmax`, so a streamed search returns exactly what one ``argmax`` over all the
candidates did.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import numpy as np

from topoopt.core.solver import SolveContext
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.masks import submask_array

Block = tuple[np.ndarray, np.ndarray]
"""Sparse candidates: ``(hosts, masks)``, both of shape ``(n, w)`` (see
:meth:`~topoopt.gpuselect.models.BoundModel.batch_sparse`)."""


def single_host_block(instance: GpuSelectInstance, host: int, size: int) -> Block:
    """Every ``size``-subset of host ``host``'s idle GPUs as sparse candidates of width 1."""
    masks = submask_array(instance.hosts[host].available_mask, size)
    return np.full((len(masks), 1), host, dtype=np.int64), masks[:, None]


def better(value: float, best: float) -> bool:
    """Whether ``value`` replaces ``best`` in a search that keeps the first maximum (``nan``
    ranks above every number, as for :func:`numpy.argmax`)."""
    if math.isnan(value):
        return not math.isnan(best)
    return value > best


def _rechunk(blocks: Iterable[Block], rows: int) -> Iterator[Block]:
    """The candidates of ``blocks`` regrouped into blocks of ``rows`` rows (the last fewer)."""
    hosts: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    held = 0
    for block_hosts, block_masks in blocks:
        start = 0
        while start < len(block_hosts):
            take = min(rows - held, len(block_hosts) - start)
            hosts.append(block_hosts[start : start + take])
            masks.append(block_masks[start : start + take])
            held += take
            start += take
            if held == rows:
                yield np.concatenate(hosts), np.concatenate(masks)
                hosts, masks, held = [], [], 0
    if held:
        yield np.concatenate(hosts), np.concatenate(masks)


class Search:
    """The best of a stream of sparse candidates (first on ties), within the time limit.

    Attributes
    ----------
    value
        ``B`` of the best candidate (``-inf`` before any).
    masks
        The best candidate as one mask per host, or ``None`` before any.
    stopped
        Whether the time limit stopped a call of :meth:`scan` before its stream ended.
    """

    def __init__(self, instance: GpuSelectInstance, ctx: SolveContext | None = None) -> None:
        self.instance = instance
        self.bound = instance.bound
        self.ctx = ctx
        self.value = -math.inf
        self.masks: np.ndarray | None = None
        self.stopped = False

    def expired(self) -> bool:
        """Whether the time limit has passed (never without a context)."""
        return self.ctx is not None and self.ctx.expired()

    def offer(self, values: np.ndarray, hosts: np.ndarray, masks: np.ndarray) -> None:
        """Keep the best of the evaluated candidates ``values`` if it beats the incumbent."""
        if not len(values):
            return
        j = int(np.argmax(values))
        if self.masks is None or better(float(values[j]), self.value):
            dense = np.zeros(self.instance.n_hosts, dtype=np.int64)
            dense[hosts[j]] = masks[j]
            self.value, self.masks = float(values[j]), dense

    def scan(self, blocks: Iterable[Block], width: int, ceiling: float | None = None) -> bool:
        """Evaluate the candidates of ``blocks`` (rows of ``width`` hosts) in chunks.

        Returns ``False`` when the time limit stopped the scan before a chunk (never before
        the first one, so that a scan always leaves a candidate), ``True`` when every
        candidate was seen or, given an upper bound ``ceiling`` on every candidate's value,
        once the best so far reaches it (the rest could only tie, and ties go to the first;
        the blocks are then evaluated one by one, not merged into chunks).
        """
        rows = self.bound.chunk_rows(width)
        if ceiling is None:
            chunks = _rechunk(blocks, rows)
        else:  # block by block, to stop as early as possible
            chunks = (chunk for block in blocks for chunk in _rechunk([block], rows))
        for hosts, masks in chunks:
            if self.masks is not None and self.expired():
                self.stopped = True
                return False
            self.offer(self.bound.batch_sparse(hosts, masks), hosts, masks)
            if ceiling is not None and self.value >= ceiling:
                return True
        return True

    def result(self) -> tuple[float, np.ndarray]:
        """``(value, masks)`` of the best candidate."""
        assert self.masks is not None, "no candidate was evaluated"
        return self.value, self.masks


def fitting_hosts(instance: GpuSelectInstance) -> list[int]:
    """Hosts with at least ``k`` idle GPUs (BandPilot's ``N_single``)."""
    return [h for h, host in enumerate(instance.hosts) if host.n_available >= instance.k]


def best_single_host(instance: GpuSelectInstance, ctx: SolveContext | None = None) -> Search | None:
    """Best ``k``-subset inside one host (Alg. 1 lines 4–7), streamed over the fitting hosts;
    ``None`` when no host fits. The search's ``stopped`` says whether the time limit cut it."""
    hosts = fitting_hosts(instance)
    if not hosts:
        return None
    search = Search(instance, ctx)
    search.scan((single_host_block(instance, h, instance.k) for h in hosts), width=1)
    return search


def best_subset_of_host(instance: GpuSelectInstance, host: int, size: int) -> tuple[float, int]:
    """The ``size``-subset of host ``host``'s idle GPUs with the highest single-host ``B``
    (first on ties) and its value."""
    hosts, masks = single_host_block(instance, host, size)
    values = instance.bound.batch_sparse(hosts, masks)
    j = int(np.argmax(values))
    return float(values[j]), int(masks[j, 0])


class BestByCount:
    """Per host and count ``c``, the ``c``-subset with the highest single-host ``B`` (lazy).

    Single GPUs take the lowest idle index (a lone GPU adds no intra-host term).
    """

    def __init__(self, instance: GpuSelectInstance) -> None:
        self.instance = instance
        self._cache: dict[tuple[int, int], int] = {}

    def mask(self, host: int, count: int) -> int:
        """The best ``count``-subset of host ``host`` (computed once)."""
        key = (host, count)
        if key not in self._cache:
            if count == 0:
                self._cache[key] = 0
            elif count == 1:
                avail = self.instance.hosts[host].available_mask
                self._cache[key] = avail & -avail
            else:
                self._cache[key] = best_subset_of_host(self.instance, host, count)[1]
        return self._cache[key]


__all__ = [
    "BestByCount",
    "Block",
    "Search",
    "best_single_host",
    "best_subset_of_host",
    "better",
    "fitting_hosts",
    "single_host_block",
]
