"""``parallelconfig/enumerate``: the enumeration oracle.

Every admissible ``(d, p)`` and, for each, every assignment of the ``d·p`` cells (replica ``j``,
stage ``s``) to nodes within their GPU counts, up to three symmetries of the cost
(:mod:`topoopt.parallelconfig.solution`):

1. **GPUs of one node are interchangeable**: the cost depends on the node of each cell only, so
   cells are assigned to nodes and the node's GPUs taken in order (``from_nodes``).
2. **Replicas are interchangeable**: permuting the rows of the grid keeps every stage's set of
   nodes (``T_dp``) and the multiset of rows (``T_pp`` is a maximum over rows).
3. **Nodes with the same GPU count are interchangeable**: relabelling them maps an assignment
   to one of the same cost (bandwidths do not depend on the node).

The group ``G`` these generate acts on node grids read in row-major order. The lexicographically
smallest grid of each orbit ``m`` satisfies ``m <= g(m)`` for every ``g`` in ``G``, in
particular for swapping two adjacent rows (so its rows are in non-decreasing lexicographic
order) and for swapping two nodes of one GPU count (so the nodes of each count are first used in
index order). The search enumerates exactly the grids with both properties — a superset of
the orbit minima, so every cost value is reached — by a depth-first search over the cells in
row-major order. It is exhaustive and exponential; the time limit is checked every
:data:`CHECK_EVERY` grids and :meth:`EnumerateSolver.unsupported_reason` refuses instances whose
estimated number of grids exceeds :data:`MAX_GRIDS`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.parallelconfig.instance import ParallelConfigInstance
from topoopt.parallelconfig.solution import breakdown, from_nodes

MAX_GPUS = 24
"""Largest job (GPUs) the oracle considers at all."""
MAX_GRIDS = 500_000
"""Most grids (estimated by :func:`estimated_grids`) the oracle agrees to enumerate."""
CHECK_EVERY = 2048
"""Grids between two looks at the clock."""


def canonical_grids(capacities: list[int], d: int, p: int) -> Iterator[list[list[int]]]:
    """Every ``d x p`` grid of node numbers within ``capacities`` whose rows are in
    non-decreasing lexicographic order and whose nodes of equal capacity are first used in
    index order (module docstring). The same list is yielded each time, updated in place.

    Examples
    --------
    >>> [str(g) for g in canonical_grids([2, 2], 2, 2)]  # the two nodes look alike
    ['[[0, 0], [1, 1]]', '[[0, 1], [0, 1]]', '[[0, 1], [1, 0]]']
    """
    classes: dict[int, list[int]] = {}
    for node, g in enumerate(capacities):
        classes.setdefault(g, []).append(node)
    twins = [classes[g] for g in capacities]  # the nodes of each node's class, in order
    opened = {g: 0 for g in classes}  # how many nodes of each class are in use
    left = list(capacities)
    grid = [[-1] * p for _ in range(d)]
    cells = d * p

    def place(cell: int, tight: bool) -> Iterator[list[list[int]]]:
        if cell == cells:
            yield grid
            return
        j, s = divmod(cell, p)
        if s == 0:
            tight = j > 0  # row j must not be smaller than row j - 1
        low = grid[j - 1][s] if tight else -1
        choices = [
            n
            for g, members in classes.items()
            for n in members[: opened[g] + 1]  # the nodes in use and the next one
            if left[n] > 0 and n >= low
        ]
        for node in sorted(choices):
            g = capacities[node]
            fresh = twins[node].index(node) == opened[g]
            opened[g] += fresh
            left[node] -= 1
            grid[j][s] = node
            yield from place(cell + 1, tight and node == low)
            left[node] += 1
            opened[g] -= fresh

    yield from place(0, False)


def _restricted_partitions(items: int, blocks: int, size: int) -> list[int]:
    """``S[a]``: ways to split ``a`` labelled items (``a <= items``) into at most ``blocks``
    unlabelled blocks of at most ``size`` items each."""
    exact = [[0] * (blocks + 1) for _ in range(items + 1)]  # exact[a][b]: exactly b blocks
    exact[0][0] = 1
    for a in range(1, items + 1):
        for b in range(1, blocks + 1):
            exact[a][b] = sum(
                math.comb(a - 1, k - 1) * exact[a - k][b - 1] for k in range(1, min(size, a) + 1)
            )
    return [sum(row) for row in exact]


def grid_counts(capacities: list[int], top: int) -> list[int]:
    """``counts[a]``, ``a <= top``: grids of ``a`` cells within ``capacities`` whose nodes of
    equal capacity are first used in index order (exactly: per capacity class, a split of its
    cells into at most as many blocks as nodes, each block within the capacity; the classes'
    cells chosen by a binomial).

    Examples
    --------
    >>> grid_counts([2, 2], 4)  # 4 cells in two alike nodes of 2: 3 ways (C(4, 2) / 2)
    [1, 1, 2, 3, 3]
    """
    classes: dict[int, int] = {}
    for g in capacities:
        classes[g] = classes.get(g, 0) + 1
    counts = [1] + [0] * top
    for g, count in classes.items():
        within = _restricted_partitions(top, count, g)
        counts = [
            sum(counts[a - b] * within[b] * math.comb(a, b) for b in range(a + 1))
            for a in range(top + 1)
        ]
    return counts


def estimated_grids(instance: ParallelConfigInstance) -> int:
    """Grids the oracle visits, estimated: for each ``(d, p)``, :func:`grid_counts` of ``d·p``
    cells divided by ``d!`` (the row order keeps between ``1 / d!`` of them and all)."""
    counts = grid_counts(instance.capacities, instance.n_gpus)
    return sum(counts[d * p] // math.factorial(d) for d, p in instance.configurations())


@register_solver
class EnumerateSolver(Solver):
    """Enumeration oracle: every (d, p) and every assignment of cells to nodes, up to symmetry."""

    name = "parallelconfig/enumerate"
    family = "parallelconfig"
    exact = True
    gives_bound = True

    @classmethod
    def unsupported_reason(cls, instance: ParallelConfigInstance) -> str | None:
        """Why the oracle refuses ``instance`` (more than :data:`MAX_GPUS` GPUs or
        :data:`MAX_GRIDS` estimated grids), or ``None``."""
        if instance.n_gpus > MAX_GPUS:
            return (
                f"{instance.n_gpus} GPUs exceed the oracle's {MAX_GPUS}; use parallelconfig/mip "
                "or parallelconfig/greedy"
            )
        grids = estimated_grids(instance)
        if grids > MAX_GRIDS:
            return (
                f"about {grids} assignments exceed the oracle's {MAX_GRIDS}; use "
                "parallelconfig/mip or parallelconfig/greedy"
            )
        return None

    def _solve(self, instance: ParallelConfigInstance, ctx: SolveContext) -> Attempt:
        capacities = instance.capacities
        best: tuple[float, list[list[int]]] | None = None
        visited = 0
        for d, p in instance.configurations():
            stages = instance.model.stages(p)
            for grid in canonical_grids(capacities, d, p):
                visited += 1
                if visited % CHECK_EVERY == 0 and ctx.expired():
                    return Attempt(
                        None if best is None else from_nodes(instance, best[1]),
                        TerminationReason.TIME_LIMIT,
                        message=f"stopped after {visited} assignments at (d, p) = ({d}, {p})",
                    )
                value = breakdown(instance, d, p, grid, stages).objective
                if best is None or value < best[0]:
                    best = (value, [row[:] for row in grid])
        assert best is not None  # (1, 1) is always admissible
        return Attempt(
            from_nodes(instance, best[1]),
            TerminationReason.OPTIMAL,
            proven_optimal=True,
            message=f"{visited} assignments",
        )
