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

The job graph is implicit (a cell's neighbours follow from its position), and each FM pass
keeps the movable vertices in gain buckets, so a pass costs ``O(n log n)`` for ``n`` cells
and memory is ``O(n + M)``. Ties between moves of equal gain go to the vertex that comes
first in the order networkx's subgraph view lists a part's vertices (see :func:`part_order`),
the order of the first implementation, which built the graph with networkx; results are
unchanged by the rewrite.

On a time limit FM stops (keeping the best prefix of the pass in progress) and the remaining
parts are bipartitioned without refinement, which takes ``O(n log M)``; the result then says
``time_limit``.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from topoopt.core.errors import InvalidOptionError
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import Placement
from topoopt.placement.solvers._budget import deadline
from topoopt.placement.solvers.baselines import rank_order_cells

if TYPE_CHECKING:
    import networkx as nx

Cell = tuple[int, int]
MAX_PASSES = 8
_CHECK_EVERY = 256
"""FM moves between two looks at the clock."""


def job_graph(instance: PlacementInstance, dp_weight: float, pp_weight: float) -> nx.Graph:
    """Cells as vertices, DP rings (columns) and PP chains (rows) as weighted edges.

    The solver does not build this graph (see :class:`JobGraph`); it is here to inspect the
    job graph with networkx, on small instances.
    """
    import networkx as nx

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


class JobGraph:
    """The job graph of :func:`job_graph` without storing it.

    Vertex ``k`` is the cell of node rank ``k``, ``(k % rows, k // rows)``. Its neighbours
    are listed in the order :func:`job_graph` inserts them (the column ring, then the row
    chain), which fixes the order in which gains are summed.

    Parameters
    ----------
    rows, cols
        Shape of the communication matrix.
    dp_weight, pp_weight
        Weights of the DP ring edges and of the PP chain edges.

    Examples
    --------
    >>> JobGraph(3, 2, 0.5, 0.25).neighbours(0)   # cell (0, 0)
    [(1, 0.5), (2, 0.5), (3, 0.25)]
    """

    def __init__(self, rows: int, cols: int, dp_weight: float, pp_weight: float) -> None:
        self.rows, self.cols = rows, cols
        self.dp_weight, self.pp_weight = dp_weight, pp_weight

    def neighbours(self, k: int) -> list[tuple[int, float]]:
        """``(vertex, weight)`` of every edge at vertex ``k``."""
        rows, cols = self.rows, self.cols
        c, r = divmod(k, rows)
        base, dp = c * rows, self.dp_weight
        out: list[tuple[int, float]] = []
        if rows == 2:
            out.append((base + 1 - r, dp))
        elif rows > 2:  # a ring: 0-1, 1-2, ..., (rows-1)-0
            if r == 0:
                out += [(base + 1, dp), (base + rows - 1, dp)]
            elif r == rows - 1:
                out += [(base + rows - 2, dp), (base, dp)]
            else:
                out += [(base + r - 1, dp), (base + r + 1, dp)]
        if c > 0:
            out.append((k - rows, self.pp_weight))
        if c < cols - 1:
            out.append((k + rows, self.pp_weight))
        return out


def part_order(cells: list[int], rows: int, n_total: int) -> list[int]:
    """The order networkx's ``graph.subgraph(cells).nodes`` lists the vertices ``cells``.

    A networkx subgraph view iterates the set of its nodes when they are fewer than half of
    the graph's and the graph's own order (rank order) otherwise; FM breaks ties between
    moves of equal gain by this order.
    """
    if 2 * len(cells) < n_total:
        return [c * rows + r for r, c in {(k % rows, k // rows) for k in cells}]
    return list(cells)


class _Partitioner:
    """Dual recursive bipartitioning with FM refinement over a :class:`JobGraph`.

    Per-vertex state lives in flat lists indexed by vertex (parts are disjoint):
    ``side`` (0 or 1 in the current bipartition), ``gain``, ``part`` (which part a vertex is
    in, so that a part's induced subgraph is implicit) and ``pos`` (its place in the part's
    :func:`part_order`, the tie-break).
    """

    def __init__(self, graph: JobGraph, n: int, out_of_time: Callable[[], bool]) -> None:
        self.graph = graph
        self.n = n
        self.out_of_time = out_of_time
        self.side = [0] * n
        self.gain = [0.0] * n
        self.part = [-1] * n
        self.pos = [0] * n
        self.locked = bytearray(n)
        self.parts = 0
        self.expired = False

    def _gain(self, v: int) -> float:
        """Cut reduction if ``v`` changed sides (edges inside ``v``'s part only)."""
        side, part = self.side, self.part
        sv, pv = side[v], part[v]
        return sum(
            w * (1 if side[u] != sv else -1) for u, w in self.graph.neighbours(v) if part[u] == pv
        )

    def refine(self, cells: list[int], size_bounds: tuple[int, int]) -> None:
        """Improve the 2-way cut of ``side`` on ``cells`` in place by FM passes.

        ``size_bounds = (lo, hi)`` bounds the number of vertices on side 0. Sets
        :attr:`expired` when the time limit passes (the best prefix of the current pass is
        kept).
        """
        lo, hi = size_bounds
        side, gain, part, pos, locked = self.side, self.gain, self.part, self.pos, self.locked
        self.parts += 1
        label = self.parts
        for v in cells:
            part[v] = label
        verts = part_order(cells, self.graph.rows, self.n)
        for i, v in enumerate(verts):
            pos[v] = i
        expired = self.out_of_time
        for _ in range(MAX_PASSES):
            for i, v in enumerate(verts):
                if i % _CHECK_EVERY == 0 and expired():
                    self.expired = True
                    return
                gain[v] = self._gain(v)
                locked[v] = 0
            size0 = sum(1 for v in verts if side[v] == 0)
            # buckets[s][g]: heap of positions of unlocked vertices on side s with gain g
            # (entries go stale when the vertex is locked or its gain changes)
            buckets: list[dict[float, list[int]]] = [{}, {}]
            for v in verts:  # positions increase along verts: every list is already a heap
                buckets[side[v]].setdefault(gain[v], []).append(pos[v])
            moves: list[int] = []
            total, best_total, best_len = 0.0, 0.0, 0
            while len(moves) < len(verts):
                if len(moves) % _CHECK_EVERY == 0 and expired():
                    self.expired = True
                    break
                best: tuple[float, int] | None = None
                for s, allowed in ((0, lo <= size0 - 1 <= hi), (1, lo <= size0 + 1 <= hi)):
                    if allowed:
                        top = self._top(buckets[s], verts)
                        if top is not None and (
                            best is None or (top[0], -top[1]) > (best[0], -best[1])
                        ):
                            best = top
                if best is None:
                    break
                v = verts[best[1]]
                total += gain[v]
                size0 += 1 if side[v] == 1 else -1
                side[v] ^= 1
                locked[v] = 1
                moves.append(v)
                for u, _w in self.graph.neighbours(v):
                    if part[u] == label and not locked[u]:
                        g = self._gain(u)
                        if g != gain[u]:
                            gain[u] = g
                            heapq.heappush(buckets[side[u]].setdefault(g, []), pos[u])
                if total > best_total + 1e-12:
                    best_total, best_len = total, len(moves)
            for v in moves[best_len:]:
                side[v] ^= 1
            if best_len == 0 or self.expired:
                return

    def _top(self, buckets: dict[float, list[int]], verts: list[int]) -> tuple[float, int] | None:
        """``(gain, position)`` of the best unlocked vertex in ``buckets``, or ``None``."""
        gain, locked = self.gain, self.locked
        for g in sorted(buckets, reverse=True):
            heap = buckets[g]
            while heap and (locked[verts[heap[0]]] or gain[verts[heap[0]]] != g):
                heapq.heappop(heap)
            if heap:
                return g, heap[0]
            del buckets[g]
        return None

    def bipartition(
        self, cells: list[int], pods: list[int], free: Sequence[int], out: list[int]
    ) -> None:
        """Map ``cells`` onto ``pods`` (``out[v]`` = minipod of vertex ``v``)."""
        stack = [(cells, sorted(pods, key=lambda j: (-free[j], j)))]
        while stack:
            cells, pods = stack.pop()
            if len(pods) == 1:
                for v in cells:
                    out[v] = pods[0]
                continue
            first, second, cap0, cap1 = _halves(pods, free)
            lo, hi = max(0, len(cells) - cap1), min(len(cells), cap0)
            target = min(max(round(len(cells) * cap0 / (cap0 + cap1)), lo), hi)
            if self.expired:  # no time to refine: the initial split
                part0, part1 = cells[:target], cells[target:]
            else:
                for k, v in enumerate(cells):
                    self.side[v] = 0 if k < target else 1
                self.refine(cells, (lo, hi))
                part0 = [v for v in cells if self.side[v] == 0]
                part1 = [v for v in cells if self.side[v] == 1]
            if part1:
                stack.append((part1, second))
            if part0:
                stack.append((part0, first))


def _halves(pods: Sequence[int], free: Sequence[int]) -> tuple[list[int], list[int], int, int]:
    """Split minipods into two halves of nearly equal capacity (largest first, greedy).

    ``pods`` must be sorted by decreasing free nodes (ties by index); so are both halves.
    Returns the halves and their capacities.
    """
    first: list[int] = []
    second: list[int] = []
    cap_first = cap_second = 0
    for j in pods:
        if cap_first <= cap_second:
            first.append(j)
            cap_first += free[j]
        else:
            second.append(j)
            cap_second += free[j]
    return first, second, cap_first, cap_second


def _weight(value: object, name: str) -> float:
    """An edge weight option as a finite float."""
    try:
        weight = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        weight = math.nan
    if not math.isfinite(weight):
        raise InvalidOptionError(f"{name}: must be a finite number, got {value!r}")
    return weight


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
        rows, n = instance.rows, instance.n_nodes
        graph = JobGraph(
            rows,
            instance.cols,
            instance.alpha if dp_weight is None else _weight(dp_weight, "dp_weight"),
            instance.beta if pp_weight is None else _weight(pp_weight, "pp_weight"),
        )
        free = instance.capacities
        chosen: list[int] = []
        held = 0
        for j in sorted(range(instance.n_minipods), key=lambda j: (-free[j], j)):
            if held >= n:
                break
            chosen.append(j)
            held += free[j]
        owner = [0] * n
        partitioner = _Partitioner(graph, n, deadline(ctx, instance))
        partitioner.bipartition(list(range(n)), chosen, free, owner)
        placement = Placement.from_rows(owner[r::rows] for r in range(rows))
        if partitioner.expired:
            return Attempt(
                placement,
                TerminationReason.TIME_LIMIT,
                message="time limit: the parts left were bipartitioned without FM refinement",
            )
        return Attempt(placement, TerminationReason.COMPLETED)
