"""The baselines of BandPilot Appendix D: Random (Alg. 3), Default (Alg. 4), Topo (Alg. 5).

None of them looks at the bandwidth model; Topo reads the hosts' ``nvidia-smi topo -m``
matrices (the model's, else the paper's Appendix E) with Slurm-style link weights
(:data:`~topoopt.gpuselect.topologies.SLURM_WEIGHTS`).
"""

from __future__ import annotations

import itertools

import numpy as np

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.masks import indices_of, submasks
from topoopt.gpuselect.solution import Selection, from_masks
from topoopt.gpuselect.solvers.bandpilot import min_hosts
from topoopt.gpuselect.solvers.common import fitting_hosts
from topoopt.gpuselect.topologies import slurm_weight


def fewest_hosts_pool(instance: GpuSelectInstance) -> list[int]:
    """Alg. 4/5 lines 9–11: hosts sorted by idle GPUs (decreasing, stable), the first ``m``
    that together hold ``k``."""
    avail = [h.n_available for h in instance.hosts]
    order = sorted(range(len(avail)), key=lambda h: (-avail[h], h))
    return order[: min_hosts(avail, instance.k)]


def default_selection(instance: GpuSelectInstance) -> list[int]:
    """NUMA proximity (Alg. 4): the first host with ``k`` idle GPUs, else the fewest hosts
    by free count; GPUs are taken in local index order (NUMA node 0 first), host by host."""
    hosts = fitting_hosts(instance)
    pool = hosts[:1] if hosts else fewest_hosts_pool(instance)
    masks, left = [0] * instance.n_hosts, instance.k
    for h in pool:
        take = instance.hosts[h].available[:left]
        masks[h] = sum(1 << i for i in take)
        left -= len(take)
    return masks


class TopoWeights:
    """Pairwise link weights ``T`` of every host (Alg. 5), from its topology matrix.

    Hosts whose type has no known matrix get weight 1 for every pair (plain compactness).
    """

    def __init__(self, instance: GpuSelectInstance) -> None:
        self.unknown: set[str] = set()
        self.weights = []
        for host in instance.hosts:
            matrix = instance.bandwidth.host_topology(host.type)
            if matrix is None or len(matrix) < host.gpus:
                self.unknown.add(host.type)
                w = np.ones((host.gpus, host.gpus))
            else:
                w = np.array(
                    [
                        [slurm_weight(matrix[i][j]) for j in range(host.gpus)]
                        for i in range(host.gpus)
                    ]
                )
            np.fill_diagonal(w, 0.0)
            self.weights.append(w)

    def score(self, host: int, mask: int) -> float:
        """Sum of the pairwise weights inside ``mask`` on ``host`` (Alg. 5 line 3)."""
        idx = indices_of(mask)
        w = self.weights[host]
        return float(sum(w[i, j] for i, j in itertools.combinations(idx, 2)))

    def best(self, host: int, avail: int, size: int) -> tuple[float, int]:
        """Highest-scoring ``size``-subset of ``avail`` on ``host`` (first on ties)."""
        return max(((self.score(host, m), m) for m in submasks(avail, size)), key=lambda sm: sm[0])


def topo_selection(instance: GpuSelectInstance) -> tuple[list[int], set[str]]:
    """Topology compactness (Alg. 5): the highest-scoring ``k``-subset inside one host if any
    fits; otherwise within the fewest hosts, the per-host counts maximising the total score
    (GPUs on different hosts weigh 0), by a DP over the pool's hosts. Returns the masks and
    the host types scored without a matrix."""
    weights = TopoWeights(instance)
    k = instance.k
    masks = [0] * instance.n_hosts
    hosts = fitting_hosts(instance)
    if hosts:
        options = [(weights.best(h, instance.hosts[h].available_mask, k), h) for h in hosts]
        (_, mask), h = max(options, key=lambda o: o[0][0])
        masks[h] = mask
        return masks, weights.unknown
    pool = fewest_hosts_pool(instance)
    best_of = {
        (h, c): weights.best(h, instance.hosts[h].available_mask, c)
        for h in pool
        for c in range(instance.hosts[h].n_available + 1)
    }
    # table[j][t]: best score using the first j pool hosts with t GPUs, and the counts
    table: list[dict[int, tuple[float, tuple[int, ...]]]] = [{0: (0.0, ())}]
    for h in pool:
        row: dict[int, tuple[float, tuple[int, ...]]] = {}
        for t, (score, counts) in table[-1].items():
            for c in range(instance.hosts[h].n_available + 1):
                if t + c <= k:
                    cand = (score + best_of[h, c][0], (*counts, c))
                    if t + c not in row or cand[0] > row[t + c][0]:
                        row[t + c] = cand
        table.append(row)
    for h, c in zip(pool, table[-1][k][1], strict=True):
        masks[h] = best_of[h, c][1]
    return masks, weights.unknown


@register_solver
class RandomSolver(Solver):
    """Naive random choice (BandPilot Alg. 3): a uniformly random k-subset, seeded."""

    name = "gpuselect/random"
    family = "gpuselect"
    stochastic = True

    def _solve(self, instance: GpuSelectInstance, ctx: SolveContext) -> Attempt:
        gpus = [(h.name, i) for h in instance.hosts for i in h.available]
        chosen = sorted(ctx.rng.choice(len(gpus), size=instance.k, replace=False).tolist())
        return Attempt(Selection(tuple(gpus[j] for j in chosen)), TerminationReason.COMPLETED)


@register_solver
class DefaultSolver(Solver):
    """NUMA proximity heuristic, BandPilot Alg. 4 (one host if it fits, else fewest hosts)."""

    name = "gpuselect/default"
    family = "gpuselect"

    def _solve(self, instance: GpuSelectInstance, ctx: SolveContext) -> Attempt:
        return Attempt(
            from_masks(instance, default_selection(instance)), TerminationReason.COMPLETED
        )


@register_solver
class TopoSolver(Solver):
    """Topology-compactness heuristic, BandPilot Alg. 5 (Slurm-like link weights)."""

    name = "gpuselect/topo"
    family = "gpuselect"

    def _solve(self, instance: GpuSelectInstance, ctx: SolveContext) -> Attempt:
        masks, unknown = topo_selection(instance)
        note = (
            f"no topology matrix for host types {sorted(unknown)}: scored with uniform weights"
            if unknown
            else ""
        )
        return Attempt(from_masks(instance, masks), TerminationReason.COMPLETED, message=note)
