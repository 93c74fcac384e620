"""Helpers shared by the gpuselect solvers: candidate batches and per-host best subsets."""

from __future__ import annotations

import numpy as np

from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.masks import submasks


def single_host_rows(instance: GpuSelectInstance, host: int, size: int) -> np.ndarray:
    """Every ``size``-subset of host ``host``'s idle GPUs as rows of per-host masks."""
    subs = np.fromiter(submasks(instance.hosts[host].available_mask, size), dtype=np.int64)
    rows = np.zeros((len(subs), instance.n_hosts), dtype=np.int64)
    rows[:, host] = subs
    return rows


def argmax_row(instance: GpuSelectInstance, rows: np.ndarray) -> tuple[float, np.ndarray]:
    """The best row of ``rows`` by the model's batch evaluation (first on ties)."""
    values = instance.bound.batch(rows)
    j = int(np.argmax(values))
    return float(values[j]), rows[j]


def fitting_hosts(instance: GpuSelectInstance) -> list[int]:
    """Hosts with at least ``k`` idle GPUs (BandPilot's ``N_single``)."""
    return [h for h, host in enumerate(instance.hosts) if host.n_available >= instance.k]


def best_single_host(instance: GpuSelectInstance) -> tuple[float, np.ndarray] | None:
    """Best ``k``-subset inside one host (Alg. 1 lines 4–7), one batch over all fitting hosts."""
    hosts = fitting_hosts(instance)
    if not hosts:
        return None
    rows = np.concatenate([single_host_rows(instance, h, instance.k) for h in hosts])
    return argmax_row(instance, rows)


class BestByCount:
    """Per host and count ``c``, the ``c``-subset with the highest single-host ``B`` (lazy).

    Single GPUs take the lowest idle index (a lone GPU adds no intra-host term).
    """

    def __init__(self, instance: GpuSelectInstance) -> None:
        self.instance = instance
        self._cache: dict[tuple[int, int], int] = {}

    def mask(self, host: int, count: int) -> int:
        key = (host, count)
        if key not in self._cache:
            if count == 0:
                self._cache[key] = 0
            elif count == 1:
                avail = self.instance.hosts[host].available_mask
                self._cache[key] = avail & -avail
            else:
                _, row = argmax_row(self.instance, single_host_rows(self.instance, host, count))
                self._cache[key] = int(row[host])
        return self._cache[key]

    def rows(self, distributions: list[dict[int, int]]) -> np.ndarray:
        """Candidate rows: for each ``{host: count}``, the best subset of each count."""
        out = np.zeros((len(distributions), self.instance.n_hosts), dtype=np.int64)
        for r, dist in enumerate(distributions):
            for h, c in dist.items():
                out[r, h] = self.mask(h, c)
        return out
