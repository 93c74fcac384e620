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
   most once per pass, sizes kept within the halves' capacities; a pass stops after
   ``moves`` moves in a row that do not improve its best cut (option ``moves``, default
   :data:`MOVES` = 300, after SCOTCH's ``move`` parameter; ``moves=0``: every vertex
   moves, the textbook pass); the best prefix of each pass is
   kept; passes repeat (at most :data:`MAX_PASSES`) while they improve the cut.

The job graph is implicit (a cell's neighbours follow from its position; a part's induced
edges are listed once per bipartition). FM keeps one heap of ``(-gain, position)`` per side
that lives across the passes of a bipartition: a move pushes the new gains of its neighbours,
the end of a pass recomputes only the gains of the vertices it moved and of their neighbours,
and stale entries are dropped when they reach the top. A bipartition of ``n`` cells therefore
costs ``O(n)`` to set up plus ``O(log n)`` per move, and with the move limit a pass that
improves nothing costs ``O(moves log n)`` instead of ``O(n log n)``; memory is ``O(n + M)``.
Ties between moves of equal gain go to the vertex that comes first in the order networkx's
subgraph view lists a part's vertices (see :func:`part_order`), the order of the first
implementation, which built the graph with networkx: with ``moves=0`` the placements are
exactly that implementation's (a property test checks it against a networkx reference).

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
MOVES = 300
"""Moves in a row without improving the best cut after which an FM pass stops (SCOTCH's
``move`` parameter; its default bipartitioning FM uses 120, which measured 3.8 % worse in
mean score than no limit on a mixed ``uneven`` class, 300 as good: see ``docs/placement.md``);
``0`` lets every pass move every vertex."""
_CHECK_EVERY = 256
_NO_EDGES: list[tuple[int, float]] = []
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

    def __init__(
        self, graph: JobGraph, n: int, out_of_time: Callable[[], bool], moves: int = MOVES
    ) -> None:
        self.graph = graph
        self.n = n
        self.out_of_time = out_of_time
        self.moves = moves
        self.side = [0] * n
        self.gain = [0.0] * n
        self.part = [-1] * n
        self.pos = [0] * n
        self.locked = bytearray(n)
        self.adj: list[list[tuple[int, float]]] = [_NO_EDGES] * n  # a part's, while refined
        self.parts = 0
        self.expired = False

    def _gain(self, v: int) -> float:
        """Cut reduction if ``v`` changed sides (edges inside ``v``'s part only)."""
        side = self.side
        sv = side[v]
        return sum(w if side[u] != sv else -w for u, w in self.adj[v])

    def refine(self, cells: list[int], size_bounds: tuple[int, int]) -> None:
        """Improve the 2-way cut of ``side`` on ``cells`` in place by FM passes.

        ``size_bounds = (lo, hi)`` bounds the number of vertices on side 0. A pass stops
        after :attr:`moves` moves in a row that do not improve its best cut (``0``: only when
        every vertex has moved). Sets :attr:`expired` when the time limit passes (the best
        prefix of the current pass is kept).
        """
        lo, hi = size_bounds
        side, gain, part, pos, locked = self.side, self.gain, self.part, self.pos, self.locked
        self.parts += 1
        label = self.parts
        for v in cells:
            part[v] = label
        adj, neighbours = self.adj, self.graph.neighbours
        for i, v in enumerate(cells):  # the part's induced subgraph, as JobGraph.neighbours
            if i % _CHECK_EVERY == 0 and self.out_of_time():
                self.expired = True
                return
            adj[v] = [(u, w) for u, w in neighbours(v) if part[u] == label]
        verts = part_order(cells, self.graph.rows, self.n)
        for i, v in enumerate(verts):
            pos[v] = i
        expired = self.out_of_time
        limit = self.moves or len(verts)
        for i, v in enumerate(verts):
            if i % _CHECK_EVERY == 0 and expired():
                self.expired = True
                return
            sv = side[v]
            g = 0.0
            for u, w in adj[v]:
                g += w if side[u] != sv else -w
            gain[v] = g
        # heaps[s]: (-gain, position) of the vertices on side s, best first; an entry is
        # current while its vertex is unlocked, on side s and of that gain (stale entries are
        # dropped when they reach the top), and every unlocked vertex has a current entry
        heaps: list[list[tuple[float, int]]] = [[], []]
        for v in verts:
            heaps[side[v]].append((-gain[v], pos[v]))
        heapq.heapify(heaps[0])
        heapq.heapify(heaps[1])
        size0 = len(heaps[0])
        heappush, heappop = heapq.heappush, heapq.heappop
        n_verts = len(verts)
        for stamp in range(1, MAX_PASSES + 1):  # locked[v] == stamp: v moved in this pass
            moves: list[int] = []
            total, best_total, best_len, done = 0.0, 0.0, 0, 0
            while done < n_verts and done - best_len < limit:
                if done % _CHECK_EVERY == 0 and expired():
                    self.expired = True
                    break
                best: tuple[float, int] | None = None
                chosen = 0
                for s in (0, 1):
                    if not lo <= (size0 - 1 if s == 0 else size0 + 1) <= hi:
                        continue
                    heap = heaps[s]
                    while heap:
                        top = heap[0]
                        u = verts[top[1]]
                        if locked[u] == stamp or side[u] != s or gain[u] != -top[0]:
                            heappop(heap)
                        else:
                            if best is None or top < best:
                                best, chosen = top, s
                            break
                if best is None:
                    break
                heappop(heaps[chosen])  # its entry goes stale now
                v = verts[best[1]]
                total += gain[v]
                size0 += 1 if chosen == 1 else -1
                side[v] = 1 - chosen
                locked[v] = stamp
                moves.append(v)
                done += 1
                for u, _w in adj[v]:
                    if locked[u] != stamp:
                        su = side[u]
                        g = 0.0  # the sum of _gain, term by term
                        for x, w in adj[u]:
                            g += w if side[x] != su else -w
                        if g != gain[u]:
                            gain[u] = g
                            heappush(heaps[su], (-g, pos[u]))
                if total > best_total + 1e-12:
                    best_total, best_len = total, done
            for v in moves[best_len:]:
                side[v] ^= 1
                size0 += 1 if side[v] == 0 else -1
            if best_len == 0 or self.expired:
                break
            # the gains the pass changed: the moved vertices and their neighbours
            touched = {u for v in moves for u, _w in adj[v]}.union(moves)
            for u in touched:
                su = side[u]
                g = 0.0
                for x, w in adj[u]:
                    g += w if side[x] != su else -w
                gain[u] = g
                heapq.heappush(heaps[su], (-g, pos[u]))
        for v in cells:
            locked[v] = 0
            adj[v] = _NO_EDGES

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


def _moves(value: object) -> int:
    """The ``moves`` option as a non-negative integer (an integral float is accepted)."""
    count: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        count = int(value)
    if count is None or count < 0:
        raise InvalidOptionError(f"moves: must be a non-negative integer, got {value!r}")
    return count


@register_solver
class TopoAwareSolver(Solver):
    """Topo-aware: dual recursive bipartitioning with FM refinement (Arnold §7.1, ref. [2])."""

    name = "placement/topo-aware"
    family = "placement"

    @classmethod
    def unsupported_reason(cls, instance: PlacementInstance) -> str | None:
        """Constraints are not honoured."""
        from topoopt.placement.constraints import unhonoured_reason

        return unhonoured_reason(instance)

    def _solve(
        self,
        instance: PlacementInstance,
        ctx: SolveContext,
        *,
        dp_weight: float | None = None,
        pp_weight: float | None = None,
        moves: int = MOVES,
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
        partitioner = _Partitioner(graph, n, deadline(ctx, instance), _moves(moves))
        partitioner.bipartition(list(range(n)), chosen, free, owner)
        placement = Placement.from_rows(owner[r::rows] for r in range(rows))
        if partitioner.expired:
            return Attempt(
                placement,
                TerminationReason.TIME_LIMIT,
                message="time limit: the parts left were bipartitioned without FM refinement",
            )
        return Attempt(placement, TerminationReason.COMPLETED)
