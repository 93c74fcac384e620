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

All run in ``O(n + M log M)`` for ``n`` nodes and ``M`` minipods: a node-by-node (or
group-by-group) best fit keeps filling the minipod it chose until it is full, so it is the
minipods in increasing order of free nodes, each filled in turn; Slurm's tree takes whole
minipods most-free first. Random-fit draws every random number in one call (the same stream
as a draw per cell) and picks among many least-loaded minipods through a Fenwick tree; on a
time limit it places the cells left without randomness (``time_limit``).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from topoopt.core.errors import TopooptError
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement
from topoopt.placement.solvers._budget import deadline

_CHECK_EVERY = 1024
"""Cells placed between two looks at the clock (random-fit)."""

_POP_LIMIT = 16_384
"""Largest candidate list random-fit edits in place; longer ones go through a Fenwick tree."""


def rank_order_cells(instance: PlacementInstance) -> list[tuple[int, int]]:
    """Cells ``(row, col)`` in Megatron node-rank order (column by column)."""
    return [(r, c) for c in range(instance.cols) for r in range(instance.rows)]


def fill_in_rank_order(instance: PlacementInstance, pods: Sequence[int]) -> Placement:
    """Place the ``k``-th node in rank order into minipod ``pods[k]``.

    Node rank ``k = col * rows + row``, so row ``r`` is ``pods[r::rows]``.
    """
    rows = instance.rows
    if len(pods) != instance.n_nodes:
        raise ValueError(f"{len(pods)} minipods given for {instance.n_nodes} nodes")
    return Placement.from_rows(pods[r::rows] for r in range(rows))


def _sequence(takes: Sequence[tuple[int, int]]) -> list[int]:
    """``[(pod, count), ...]`` -> ``[pod] * count + ...``."""
    return [pod for pod, count in takes for _ in range(count)]


def best_fit_pods(instance: PlacementInstance) -> list[int]:
    """Per node: the minipod with the fewest free nodes left that still has one.

    The chosen minipod stays the one with the fewest free nodes until it is full, so this is
    the minipods by increasing free nodes (ties by index), each filled in turn.
    """
    caps = instance.capacities
    takes, left = [], instance.n_nodes
    for j in sorted((j for j in range(len(caps)) if caps[j] > 0), key=lambda j: (caps[j], j)):
        if left == 0:
            break
        take = min(left, caps[j])
        takes.append((j, take))
        left -= take
    return _sequence(takes)


def packing_pods(instance: PlacementInstance) -> list[int]:
    """As few minipods as possible, largest first, each filled before the next."""
    caps = instance.capacities
    order = sorted(range(len(caps)), key=lambda j: (-caps[j], j))
    takes, left = [], instance.n_nodes
    for j in order:
        if left == 0:
            break
        take = min(left, caps[j])
        takes.append((j, take))
        left -= take
    return _sequence(takes)


def tree_pods(instance: PlacementInstance, free: Sequence[int] | None = None) -> list[int]:
    """Slurm ``topology/tree``: best-fit minipod if one fits, else most-free first.

    A minipod taken whole has no free node left, so the candidates are the untouched
    minipods, most free first: ``O(M log M)`` plus the nodes.
    """
    free = list(instance.capacities if free is None else free)
    order = sorted(range(len(free)), key=lambda j: (-free[j], j))
    takes, left = [], instance.n_nodes
    for k, j in enumerate(order):
        if free[j] >= left:  # some minipod holds the rest: the best fit among them
            fit = j
            for i in order[k:]:
                if free[i] < left:
                    break
                if (free[i], i) < (free[fit], fit):
                    fit = i
            takes.append((fit, left))
            return _sequence(takes)
        if free[j] == 0:
            break
        takes.append((j, free[j]))
        left -= free[j]
    raise TopooptError(f"not enough free nodes for {instance.n_nodes} nodes")


def _groups_best_fit(capacities: Sequence[int], size: int, count: int) -> list[int] | None:
    """Pods for ``count`` groups of ``size`` nodes, each whole in one pod, best fit.

    The best-fit minipod stays the best fit until it cannot hold another group, so this is
    the minipods that hold a group by increasing free nodes (ties by index), each taking
    ``free // size`` groups in turn.
    """
    fitting = sorted(
        (j for j in range(len(capacities)) if capacities[j] >= size),
        key=lambda j: (capacities[j], j),
    )
    owners: list[int] = []
    for j in fitting:
        if len(owners) == count:
            break
        owners += [j] * min(capacities[j] // size, count - len(owners))
    return owners if len(owners) == count else None


def _no_constraints(instance: PlacementInstance) -> str | None:
    from topoopt.placement.constraints import unhonoured_reason

    return unhonoured_reason(instance)


class _RankOrderBaseline(Solver):
    """A deterministic baseline given by a pod sequence in rank order."""

    family = "placement"

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """Constraints are not honoured."""
        return _no_constraints(instance)

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

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """Constraints are not honoured."""
        return _no_constraints(instance)

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


def _level_sizes(caps: Sequence[int], steps: int) -> np.ndarray:
    """``high[t]``: how many minipods random-fit chooses from at step ``t``.

    Minipods are chosen among the open ones with the least load, so the load levels are
    exhausted one after the other: at level ``l`` every minipod with more than ``l`` free
    nodes is chosen once, in random order, from a list that shrinks by one each step.
    """
    ordered = np.sort(np.asarray(caps, dtype=np.int64))
    levels = np.arange(int(ordered[-1]), dtype=np.int64)
    sizes = len(ordered) - np.searchsorted(ordered, levels, side="right")
    ends = np.cumsum(sizes)
    used = int(np.searchsorted(ends, steps, side="left")) + 1  # levels that the steps reach
    sizes, ends = sizes[:used], ends[:used]
    level_of = np.repeat(np.arange(used), sizes)[:steps]
    return sizes[level_of] - (np.arange(steps) - (ends - sizes)[level_of])


class _Remaining:
    """The not yet chosen members of a sorted list; ``take(i)`` removes the ``i``-th.

    Short lists are edited in place; long ones keep a Fenwick tree of the members left so
    that each ``take`` is ``O(log n)``.
    """

    def __init__(self, members: list[int]) -> None:
        self.members = members
        self.size = len(members)
        self.tree: list[int] | None = None
        if self.size > _POP_LIMIT:
            tree = [0] + [1] * self.size
            for i in range(1, self.size + 1):  # linear-time build
                parent = i + (i & -i)
                if parent <= self.size:
                    tree[parent] += tree[i]
            self.tree = tree
            self.left = bytearray(b"\x01") * self.size
            self.top = 1 << (self.size.bit_length() - 1)

    def take(self, i: int) -> int:
        """Remove and return the ``i``-th member left."""
        tree = self.tree
        if tree is None:
            return self.members.pop(i)
        pos, rest, step = 0, i + 1, self.top
        while step:
            nxt = pos + step
            if nxt <= self.size and tree[nxt] < rest:
                pos, rest = nxt, rest - tree[nxt]
            step >>= 1
        k = pos + 1
        while k <= self.size:
            tree[k] -= 1
            k += k & -k
        self.left[pos] = 0
        return self.members[pos]

    def remaining(self) -> list[int]:
        """Members not taken yet, in order."""
        if self.tree is None:
            return self.members
        return [m for m, left in zip(self.members, self.left, strict=True) if left]


@register_solver
class RandomFitSolver(Solver):
    """Random-fit: random cells to random least-loaded minipods (Arnold §7.1), seeded.

    On a time limit the cells left go to the least-loaded minipods in index order (no longer
    random) and the result says ``time_limit``.
    """

    name = "placement/random-fit"
    family = "placement"
    stochastic = True

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """Constraints are not honoured."""
        return _no_constraints(instance)

    def _solve(self, instance: PlacementInstance, ctx: SolveContext) -> Attempt:
        rng = ctx.rng
        out_of_time = deadline(ctx, instance)
        caps = instance.capacities
        rows, n = instance.rows, instance.n_nodes
        cells = rng.permutation(n).tolist()  # rank-order positions k = col * rows + row
        # the draws of the step-by-step rule (one integers(len(candidates)) per cell) in one call
        picks = rng.integers(0, _level_sizes(caps, n)).tolist()
        matrix = [[-1] * instance.cols for _ in range(rows)]
        expired = False
        t, level = 0, 0
        level_pods = [j for j in range(len(caps)) if caps[j] > 0]  # open, in index order
        while t < n:
            left = level_pods
            if not expired:
                remaining = _Remaining(list(level_pods))
                for _ in range(len(level_pods)):
                    if t == n:
                        break
                    if t % _CHECK_EVERY == 0 and out_of_time():
                        expired = True
                        break
                    c, r = divmod(cells[t], rows)
                    matrix[r][c] = remaining.take(picks[t])
                    t += 1
                left = remaining.remaining() if expired else []
            for j in left:  # out of time: the rest of the level in order
                if t == n:
                    break
                c, r = divmod(cells[t], rows)
                matrix[r][c] = j
                t += 1
            level += 1
            level_pods = [j for j in level_pods if caps[j] > level]
        termination = TerminationReason.TIME_LIMIT if expired else TerminationReason.COMPLETED
        message = "time limit: the last cells went to the least-loaded minipods in order"
        return Attempt(Placement.from_rows(matrix), termination, message=message if expired else "")
