"""The baselines of BandPilot Appendix D: Random (Alg. 3), Default (Alg. 4), Topo (Alg. 5).

None of them looks at the bandwidth model; Topo reads the hosts' ``nvidia-smi topo -m``
matrices (the model's, else the paper's Appendix E) with Slurm-style link weights
(:data:`~topoopt.gpuselect.topologies.SLURM_WEIGHTS`). Random and Default are linear in the
pool; Topo shares its work between identical hosts, keeps at most 16 states per host in its
DP and checks the time limit as it goes (returning its best single host so far, or the
Default selection, with termination ``TIME_LIMIT``).
"""

from __future__ import annotations

import itertools
import math

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
    Hosts of one type and size share one matrix, and the best subsets of hosts with the
    same idle GPUs are computed once, so a pool of thousands of identical hosts costs what
    one host does.
    """

    def __init__(self, instance: GpuSelectInstance) -> None:
        self.instance = instance
        self.unknown: set[str] = set()
        self._weights: dict[tuple[str, int], np.ndarray] = {}
        self._best: dict[tuple[str, int, int, int], tuple[float, int]] = {}
        for host in instance.hosts:
            key = (host.type, host.gpus)
            if key in self._weights:
                continue
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
            self._weights[key] = w

    def weights(self, host: int) -> np.ndarray:
        """The weight matrix of host number ``host``."""
        h = self.instance.hosts[host]
        return self._weights[h.type, h.gpus]

    def score(self, host: int, mask: int) -> float:
        """Sum of the pairwise weights inside ``mask`` on ``host`` (Alg. 5 line 3)."""
        idx = indices_of(mask)
        w = self.weights(host)
        return float(sum(w[i, j] for i, j in itertools.combinations(idx, 2)))

    def best(self, host: int, avail: int, size: int) -> tuple[float, int]:
        """Highest-scoring ``size``-subset of ``avail`` on ``host`` (first on ties)."""
        h = self.instance.hosts[host]
        key = (h.type, h.gpus, avail, size)
        if key not in self._best:
            self._best[key] = max(
                ((self.score(host, m), m) for m in submasks(avail, size)), key=lambda sm: sm[0]
            )
        return self._best[key]


def _topo(
    instance: GpuSelectInstance, ctx: SolveContext | None = None
) -> tuple[list[int], set[str], bool]:
    """:func:`topo_selection` and whether it finished within the time limit of ``ctx``
    (otherwise: its best single host so far, or :func:`default_selection`)."""

    def expired() -> bool:
        return ctx is not None and ctx.expired()

    weights = TopoWeights(instance)
    k = instance.k
    masks = [0] * instance.n_hosts
    hosts = fitting_hosts(instance)
    if hosts:
        best_h, (best_score, best_mask) = -1, (-math.inf, 0)
        finished = True
        for h in hosts:
            if best_h >= 0 and expired():
                finished = False
                break
            score, mask = weights.best(h, instance.hosts[h].available_mask, k)
            if best_h < 0 or score > best_score:
                best_h, best_score, best_mask = h, score, mask
        masks[best_h] = best_mask
        return masks, weights.unknown, finished
    pool = fewest_hosts_pool(instance)
    avail = [instance.hosts[h].n_available for h in pool]
    best_of: dict[tuple[int, int], tuple[float, int]] = {}
    for h, a in zip(pool, avail, strict=True):
        if expired():
            return default_selection(instance), weights.unknown, False
        for c in range(a + 1):
            best_of[h, c] = weights.best(h, instance.hosts[h].available_mask, c)
    # rows[j][t]: best score of t GPUs on the first j pool hosts, with the last host's count
    # and the previous t. Only states that can still reach k are kept: the pool holds fewer
    # than min(avail) GPUs beyond k, so each row has at most 16 of them.
    rest = [sum(avail[j:]) for j in range(len(avail) + 1)]
    rows: list[dict[int, tuple[float, int, int]]] = [{0: (0.0, -1, 0)}]
    for j, h in enumerate(pool):
        if expired():
            return default_selection(instance), weights.unknown, False
        row: dict[int, tuple[float, int, int]] = {}
        for t, (score, _, _) in rows[-1].items():
            for c in range(avail[j] + 1):
                if t + c <= k and t + c + rest[j + 1] >= k:
                    cand = score + best_of[h, c][0]
                    if t + c not in row or cand > row[t + c][0]:
                        row[t + c] = (cand, t, c)
        rows.append(row)
    t = k
    for j in range(len(pool), 0, -1):
        _, previous, c = rows[j][t]
        masks[pool[j - 1]] = best_of[pool[j - 1], c][1]
        t = previous
    return masks, weights.unknown, True


def topo_selection(instance: GpuSelectInstance) -> tuple[list[int], set[str]]:
    """Topology compactness (Alg. 5): the highest-scoring ``k``-subset inside one host if any
    fits; otherwise within the fewest hosts, the per-host counts maximising the total score
    (GPUs on different hosts weigh 0), by a DP over the pool's hosts. Returns the masks and
    the host types scored without a matrix."""
    masks, unknown, _ = _topo(instance)
    return masks, unknown


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
        masks, unknown, finished = _topo(instance, ctx)
        note = (
            f"no topology matrix for host types {sorted(unknown)}: scored with uniform weights"
            if unknown
            else ""
        )
        if finished:
            return Attempt(from_masks(instance, masks), TerminationReason.COMPLETED, message=note)
        note = "; ".join(n for n in ("time limit: best so far", note) if n)
        return Attempt(from_masks(instance, masks), TerminationReason.TIME_LIMIT, message=note)
