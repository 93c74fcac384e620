"""Baseline placements: the Arnold paper's (§7.1) and two production schedulers'.

Every baseline decides *which minipod* each node of the job goes to and hands nodes out in
**Megatron rank order** (node rank ``k = col * rows + row``: the DP ranks of one stage on
consecutive nodes), which is what a training framework does when the scheduler gives it a
list of nodes.

* ``placement/best-fit`` (Arnold ref. [32]): every node goes to the minipod with the fewest
  free nodes left that still has one.
* ``placement/random-fit`` (ref. [44]): cells in a random order, each to a random minipod
  among those holding the fewest nodes of the job so far (balanced and fair), seeded.
* ``placement/gpu-packing`` (refs. [43, 45]): the job goes into as few minipods as possible
  (largest first), filled in rank order.
* ``placement/slurm-tree``: Slurm ``topology/tree`` — the lowest switch that fits the job:
  one minipod if any fits (the best fit, i.e. the smallest that does); otherwise, at the
  core switch, take whole minipods most-free first until the rest fits into one, and that
  one by best fit.
* ``placement/koordinator``: Koordinator's network-topology-aware gang cascade — the whole
  job in one minipod; else every PP group (row) inside one minipod; else every DP group
  (column) inside one minipod; else as Slurm's tree. Groups go best-fit.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement


def rank_order_cells(instance: PlacementInstance) -> list[tuple[int, int]]:
    """Cells ``(row, col)`` in Megatron node-rank order (column by column)."""
    return [(r, c) for c in range(instance.cols) for r in range(instance.rows)]


def fill_in_rank_order(instance: PlacementInstance, pods: Sequence[int]) -> Placement:
    """Place the ``k``-th node in rank order into minipod ``pods[k]``."""
    matrix = [[-1] * instance.cols for _ in range(instance.rows)]
    for (r, c), pod in zip(rank_order_cells(instance), pods, strict=True):
        matrix[r][c] = pod
    return Placement.from_rows(matrix)


def _sequence(takes: Sequence[tuple[int, int]]) -> list[int]:
    """``[(pod, count), ...]`` -> ``[pod] * count + ...``."""
    return [pod for pod, count in takes for _ in range(count)]


def best_fit_pods(instance: PlacementInstance) -> list[int]:
    """Per node: the minipod with the fewest free nodes left that still has one."""
    free = list(instance.capacities)
    pods = []
    for _ in range(instance.n_nodes):
        pod = min((j for j in range(len(free)) if free[j] > 0), key=lambda j: (free[j], j))
        free[pod] -= 1
        pods.append(pod)
    return pods


def packing_pods(instance: PlacementInstance) -> list[int]:
    """As few minipods as possible, largest first, each filled before the next."""
    order = sorted(range(instance.n_minipods), key=lambda j: (-instance.capacities[j], j))
    takes, left = [], instance.n_nodes
    for j in order:
        if left == 0:
            break
        take = min(left, instance.capacities[j])
        takes.append((j, take))
        left -= take
    return _sequence(takes)


def tree_pods(instance: PlacementInstance, free: Sequence[int] | None = None) -> list[int]:
    """Slurm ``topology/tree``: best-fit minipod if one fits, else most-free first."""
    free = list(instance.capacities if free is None else free)
    takes, left = [], instance.n_nodes
    while left:
        fitting = [j for j in range(len(free)) if free[j] >= left]
        if fitting:
            j = min(fitting, key=lambda j: (free[j], j))
            take = left
        else:
            j = max(range(len(free)), key=lambda j: (free[j], -j))
            take = free[j]
        takes.append((j, take))
        free[j] -= take
        left -= take
    return _sequence(takes)


def _groups_best_fit(capacities: Sequence[int], size: int, count: int) -> list[int] | None:
    """Pods for ``count`` groups of ``size`` nodes, each whole in one pod, best fit."""
    free = list(capacities)
    owners = []
    for _ in range(count):
        fitting = [j for j in range(len(free)) if free[j] >= size]
        if not fitting:
            return None
        j = min(fitting, key=lambda j: (free[j], j))
        free[j] -= size
        owners.append(j)
    return owners


class _RankOrderBaseline(Solver):
    """A deterministic baseline given by a pod sequence in rank order."""

    family = "placement"

    @abstractmethod
    def pods(self, instance: PlacementInstance) -> list[int]:
        """Minipod of each node, in rank order."""

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        placement = fill_in_rank_order(instance, self.pods(instance))
        return Attempt(placement, TerminationReason.COMPLETED)


@register_solver
class BestFitSolver(_RankOrderBaseline):
    """Best-fit: each node to the minipod with the fewest free nodes left (Arnold §7.1)."""

    name = "placement/best-fit"

    def pods(self, instance: PlacementInstance) -> list[int]:
        return best_fit_pods(instance)


@register_solver
class GpuPackingSolver(_RankOrderBaseline):
    """GPU-packing: the job in as few minipods as possible, largest first (Arnold §7.1)."""

    name = "placement/gpu-packing"

    def pods(self, instance: PlacementInstance) -> list[int]:
        return packing_pods(instance)


@register_solver
class SlurmTreeSolver(_RankOrderBaseline):
    """Slurm topology/tree: lowest switch that fits, then best fit on its children."""

    name = "placement/slurm-tree"

    def pods(self, instance: PlacementInstance) -> list[int]:
        return tree_pods(instance)


@register_solver
class KoordinatorSolver(Solver):
    """Koordinator gang cascade: job, else PP groups, else DP groups within one minipod."""

    name = "placement/koordinator"
    family = "placement"

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        caps = instance.capacities
        whole = _groups_best_fit(caps, instance.n_nodes, 1)
        if whole is not None:
            return self._done(
                Placement.from_rows([[whole[0]] * instance.cols] * instance.rows),
                "whole job in one minipod",
            )
        rows = _groups_best_fit(caps, instance.cols, instance.rows)
        if rows is not None:
            return self._done(
                Placement.from_rows([[j] * instance.cols for j in rows]),
                "each PP group in one minipod",
            )
        cols = _groups_best_fit(caps, instance.rows, instance.cols)
        if cols is not None:
            return self._done(
                Placement.from_rows([cols] * instance.rows), "each DP group in one minipod"
            )
        return self._done(
            fill_in_rank_order(instance, tree_pods(instance)),
            "no group-level fit; topology/tree fallback",
        )

    @staticmethod
    def _done(placement: Placement, how: str) -> Attempt:
        return Attempt(placement, TerminationReason.COMPLETED, message=how)


@register_solver
class RandomFitSolver(Solver):
    """Random-fit: random cells to random least-loaded minipods (Arnold §7.1), seeded."""

    name = "placement/random-fit"
    family = "placement"
    stochastic = True

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        rng = ctx.rng
        free = list(instance.capacities)
        load = [0] * instance.n_minipods
        matrix = [[-1] * instance.cols for _ in range(instance.rows)]
        cells = rank_order_cells(instance)
        for k in rng.permutation(len(cells)):
            r, c = cells[k]
            open_pods = [j for j in range(len(free)) if free[j] > 0]
            least = min(load[j] for j in open_pods)
            candidates = [j for j in open_pods if load[j] == least]
            pod = candidates[int(rng.integers(len(candidates)))]
            matrix[r][c] = pod
            free[pod] -= 1
            load[pod] += 1
        return Attempt(Placement.from_rows(matrix), TerminationReason.COMPLETED)
