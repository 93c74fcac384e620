"""``placement/topo-aware``: dual recursive bipartitioning with Fiduccia–Mattheyses refinement.

The topo-aware baseline of Arnold §7.1 (ref. [2], after SCOTCH's dual recursive
bipartitioning, ref. [10], and Fiduccia–Mattheyses, ref. [11]):

1. **Job graph** — one vertex per cell; each DP group (column) is a ring of edges of weight
   ``dp_weight`` (default ``alpha``), each PP group (row) a chain of edges of weight
   ``pp_weight`` (default ``1 - alpha``): the ring all-reduce and the stage-to-stage sends.
2. **Target** — the fewest minipods that hold the job (largest first), as a two-level tree.
3. **Dual recursive bipartitioning** — split the minipods into two halves of nearly equal
   capacity; split the job's vertices in proportion to the halves' capacities (within what
   each half can hold), starting from rank order; refine the cut with FM; recurse on both
   halves until each part maps to one minipod.
4. **FM refinement** — passes of single-vertex moves, highest gain first, each vertex moved at
   most once per pass, sizes kept within the halves' capacities; the best prefix of each pass
   is kept; passes repeat while they improve the cut.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import networkx as nx

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement
from topoopt.placement.solvers.baselines import rank_order_cells

Cell = tuple[int, int]
MAX_PASSES = 8


def job_graph(instance: PlacementInstance, dp_weight: float, pp_weight: float) -> nx.Graph:
    """Cells as vertices, DP rings (columns) and PP chains (rows) as weighted edges."""
    graph = nx.Graph()
    graph.add_nodes_from(rank_order_cells(instance))
    rows, cols = instance.rows, instance.cols
    for c in range(cols):
        ring = [(r, c) for r in range(rows)]
        pairs = itertools.pairwise(ring + ring[:1] if rows > 2 else ring)
        for u, v in pairs:
            _add_weight(graph, u, v, dp_weight)
    for r in range(rows):
        for c in range(cols - 1):
            _add_weight(graph, (r, c), (r, c + 1), pp_weight)
    return graph


def _add_weight(graph: nx.Graph, u: Cell, v: Cell, weight: float) -> None:
    if graph.has_edge(u, v):
        graph[u][v]["weight"] += weight
    else:
        graph.add_edge(u, v, weight=weight)


def fm_refine(graph: nx.Graph, side: dict[Cell, int], size_bounds: tuple[int, int]) -> None:
    """Improve the 2-way cut of ``side`` in place by Fiduccia–Mattheyses passes.

    ``size_bounds = (lo, hi)`` bounds the number of vertices on side 0.
    """
    lo, hi = size_bounds
    order = {v: i for i, v in enumerate(graph.nodes)}
    for _ in range(MAX_PASSES):
        gain = {v: _gain(graph, side, v) for v in graph.nodes}
        size0 = sum(1 for v in graph.nodes if side[v] == 0)
        locked: set[Cell] = set()
        moves: list[Cell] = []
        total, best_total, best_len = 0.0, 0.0, 0
        while len(locked) < len(side):
            allowed = [
                v
                for v in graph.nodes
                if v not in locked and lo <= size0 + (1 if side[v] == 1 else -1) <= hi
            ]
            if not allowed:
                break
            v = max(allowed, key=lambda u: (gain[u], -order[u]))
            total += gain[v]
            size0 += 1 if side[v] == 1 else -1
            side[v] ^= 1
            locked.add(v)
            moves.append(v)
            for u in graph.neighbors(v):
                if u not in locked:
                    gain[u] = _gain(graph, side, u)
            if total > best_total + 1e-12:
                best_total, best_len = total, len(moves)
        for v in moves[best_len:]:
            side[v] ^= 1
        if best_len == 0:
            return


def _gain(graph: nx.Graph, side: dict[Cell, int], v: Cell) -> float:
    """Cut reduction if ``v`` changed sides."""
    return sum(d["weight"] * (1 if side[u] != side[v] else -1) for u, d in graph[v].items())


def _halves(pods: Sequence[int], free: Sequence[int]) -> tuple[list[int], list[int]]:
    """Split minipods into two halves of nearly equal capacity (largest first, greedy)."""
    first: list[int] = []
    second: list[int] = []
    for j in sorted(pods, key=lambda j: (-free[j], j)):
        (first if sum(free[i] for i in first) <= sum(free[i] for i in second) else second).append(j)
    return first, second


def _bipartition(
    graph: nx.Graph, cells: list[Cell], pods: list[int], free: Sequence[int], out: dict[Cell, int]
) -> None:
    if len(pods) == 1:
        for cell in cells:
            out[cell] = pods[0]
        return
    first, second = _halves(pods, free)
    cap0, cap1 = sum(free[j] for j in first), sum(free[j] for j in second)
    lo, hi = max(0, len(cells) - cap1), min(len(cells), cap0)
    target = min(max(round(len(cells) * cap0 / (cap0 + cap1)), lo), hi)
    side = {cell: (0 if k < target else 1) for k, cell in enumerate(cells)}
    fm_refine(graph.subgraph(cells), side, (lo, hi))
    part0 = [c for c in cells if side[c] == 0]
    part1 = [c for c in cells if side[c] == 1]
    if part0:
        _bipartition(graph, part0, first, free, out)
    if part1:
        _bipartition(graph, part1, second, free, out)


@register_solver
class TopoAwareSolver(Solver):
    """Topo-aware: dual recursive bipartitioning with FM refinement (Arnold §7.1, ref. [2])."""

    name = "placement/topo-aware"
    family = "placement"

    def _solve(
        self,
        instance: PlacementInstance,
        ctx: SolveContext,
        *,
        dp_weight: float | None = None,
        pp_weight: float | None = None,
    ) -> Attempt:
        graph = job_graph(
            instance,
            instance.alpha if dp_weight is None else float(dp_weight),
            instance.beta if pp_weight is None else float(pp_weight),
        )
        free = instance.capacities
        chosen: list[int] = []
        for j in sorted(range(instance.n_minipods), key=lambda j: (-free[j], j)):
            if sum(free[i] for i in chosen) >= instance.n_nodes:
                break
            chosen.append(j)
        owner: dict[Cell, int] = {}
        _bipartition(graph, rank_order_cells(instance), chosen, free, owner)
        matrix = [[owner[r, c] for c in range(instance.cols)] for r in range(instance.rows)]
        return Attempt(Placement.from_rows(matrix), TerminationReason.COMPLETED)
