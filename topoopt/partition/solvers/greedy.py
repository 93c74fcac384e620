"""``partition/greedy-lowcut``: SpiderFlow's inter-cluster heuristic (§4.2) with KL/FM refinement.

SpiderFlow §4.2 places "communication-intensive components onto clusters with sufficient
residual capacity and favorable connectivity, while keeping strongly coupled stages within
the same cluster whenever possible", to lower the weighted cut of eq. 9. The paper gives no
more detail; this module makes it concrete as a multilevel greedy-plus-refinement scheme:

1. **Coarsening — keep strongly coupled units together.** Heavy-edge matching
   (:func:`coarsen`): edges by decreasing traffic merge their ends, level after level, into
   coarse vertices of at most ``max(largest vertex, 1.5 · GPUs / coarsen_to)`` GPUs, until
   about ``coarsen_to`` remain. On pipeline × data-parallel jobs the heavy gradient rings of
   each stage merge first, so a coarse vertex is typically a whole stage.
2. **Greedy placement on the coarsest graph** (:func:`construct`):

   * *components*: the connected components of the job (edges with traffic), heaviest
     total traffic first; one that fits the room of a cluster goes there whole (the cluster
     with the least room that holds it, keeping large rooms for large components) and costs
     nothing;
   * *regions*: a component that fits no single cluster is split by growing one region per
     cluster (greedy graph growing, as in METIS's initial partitioning), clusters in a
     *cluster order*: a region starts at the unplaced vertex with the most traffic to those
     already placed (continuing the previous region) or, for the first, at a peripheral
     vertex (:func:`peripheral`), and repeatedly takes the fitting vertex with the highest
     affinity — traffic into the region minus traffic to unplaced vertices (the growth of the
     region's boundary) — until its cluster is full or no vertex fits.

   *Cluster orders* — "clusters with sufficient capacity and favorable connectivity"
   (:func:`cluster_orders`): chains that start at one of the clusters, largest first, and
   append the cluster with the widest path to the last one (consecutive regions border each
   other, as consecutive pipeline stages do), ties by capacity; then the capacity order.
   Each of ``starts`` orders is placed and refined on the coarsest graph, and the ``keep``
   lowest distinct cuts go on.
3. **Uncoarsening with refinement.** Each kept assignment is projected level by level to the
   job and refined at every level by Kernighan–Lin / Fiduccia–Mattheyses passes of single
   moves and pair swaps within the capacities (:meth:`Refiner.refine
   <topoopt.partition.solvers.moves.Refiner.refine>`: each pass a gain-driven sequence with
   the best prefix kept); at coarse levels a move carries a whole group of units.
4. **V-cycles.** Up to ``cycles`` times: coarsen again *within* the clusters of the current
   assignment, refine from the coarsest level down (moving whole blocks first, then single
   units), and keep the result while the cut drops. The lowest cut is returned.

When the greedy placement leaves a vertex without room (coarse vertices or vertices of
different GPU counts), an exact bin packing (:func:`~topoopt.partition.solvers.moves.pack`)
places all vertices, preferring the clusters the greedy chose; on a coarse graph it gets
:data:`COARSE_PACKING` steps, after which placement moves one level finer. On the job itself
the packing is exhaustive, so the solver is complete: it finds an assignment whenever one
exists, though on adversarial bin-packing instances only in exponential time (a time limit
then ends it with no solution and ``time_limit``); it reports ``infeasible`` when the search
proves that no assignment fits.

Each refinement step costs ``O(V · C log V)`` for ``V`` vertices and ``C`` clusters; a pass
has at most ``V`` steps and ends after ``max(50, V / 4)`` steps without improvement. On a
time limit the best assignment so far is returned with ``time_limit``. Everything is
deterministic (the seed is not used).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import TerminationReason
from topoopt.core.validate import option_int
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment
from topoopt.partition.solvers.moves import (
    ArrayHeuristic,
    JobArrays,
    Refiner,
    Stop,
    lower,
    pack,
)

UNPLACED = -1
COARSE_PACKING = 10_000
"""Search steps of the bin packing on a coarse graph before going one level finer (on the
job itself the packing is exhaustive)."""


def components(arrays: JobArrays) -> list[np.ndarray]:
    """The vertex sets of the connected components of the edges with traffic, by decreasing
    total traffic (then by first vertex).

    Examples
    --------
    >>> from topoopt.partition.instance import PartitionInstance
    >>> inst = PartitionInstance(
    ...     "two", clusters=[("c0", 4)], links=[],
    ...     vertices=[("a", 1), ("b", 1), ("c", 1), ("d", 1)],
    ...     edges=[("a", "c", 1.0), ("b", "d", 3.0)])
    >>> [c.tolist() for c in components(JobArrays.of(inst))]
    [[1, 3], [0, 2]]
    """
    n = arrays.n
    label = np.full(n, UNPLACED, dtype=np.int64)
    heavy = arrays.data > 0
    groups: list[np.ndarray] = []
    for root in range(n):
        if label[root] != UNPLACED:
            continue
        label[root] = len(groups)
        members, queue = [root], deque([root])
        while queue:
            x = queue.popleft()
            s = slice(arrays.indptr[x], arrays.indptr[x + 1])
            for y in arrays.indices[s][heavy[s]]:
                if label[y] == UNPLACED:
                    label[y] = len(groups)
                    members.append(int(y))
                    queue.append(int(y))
        groups.append(np.array(sorted(members), dtype=np.int64))
    weight = np.bincount(label[arrays.u], arrays.traffic, len(groups))
    order = sorted(range(len(groups)), key=lambda g: (-weight[g], groups[g][0]))
    return [groups[g] for g in order]


def cluster_orders(arrays: JobArrays, count: int) -> list[list[int]]:
    """Up to ``count`` distinct cluster orders for the regions (module docstring): the chains
    from the largest clusters down, then the capacity order.

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> cluster_orders(JobArrays.of(examples()[0]), 4)
    [[0, 1, 2], [1, 2, 0], [2, 1, 0]]
    """
    k, cap, w = arrays.k, arrays.capacity, arrays.weights
    by_size = sorted(range(k), key=lambda c: (-cap[c], w[c].sum(), c))
    orders: list[list[int]] = []
    for first in by_size:
        chain = [first]
        rest = set(range(k)) - {first}
        while rest:
            last = chain[-1]
            nearest = min(rest, key=lambda c: (w[last, c], -cap[c], c))
            chain.append(nearest)
            rest.discard(nearest)
        orders.append(chain)
    orders.append(by_size)
    distinct: list[list[int]] = []
    for order in orders:
        if order not in distinct:
            distinct.append(order)
    return distinct[:count]


def peripheral(arrays: JobArrays, members: np.ndarray) -> int:
    """A far end of ``members``: breadth-first search over the heaviest edges of each vertex
    (its edges of at least half its largest traffic) from the member of least total traffic,
    twice; the last vertex reached (ties: least traffic)."""
    inside = np.zeros(arrays.n, dtype=bool)
    inside[members] = True
    degree = arrays.degree()
    start = int(members[np.argmin(degree[members])])
    for _ in range(2):
        depth = {start: 0}
        queue = deque([start])
        while queue:
            x = queue.popleft()
            nbrs, traffic = arrays.neighbours(x)
            if len(traffic):
                keep = (traffic >= 0.5 * traffic.max()) & inside[nbrs]
                for y in nbrs[keep]:
                    if int(y) not in depth:
                        depth[int(y)] = depth[x] + 1
                        queue.append(int(y))
        far = max(depth.values())
        start = min((x for x, d in depth.items() if d == far), key=lambda x: (degree[x], x))
    return start


def grow(
    arrays: JobArrays, part: np.ndarray, room: np.ndarray, members: np.ndarray, order: list[int]
) -> None:
    """Place the vertices ``members`` region by region over the clusters in ``order``
    (module docstring, step 2, *regions*), in place in ``part`` and ``room``; vertices that
    fit nowhere stay :data:`UNPLACED`."""
    n = arrays.n
    todo = np.zeros(n, dtype=bool)
    todo[members] = True
    outside = np.zeros(n)  # traffic to unplaced members
    for x in members:
        nbrs, traffic = arrays.neighbours(int(x))
        outside[x] = traffic[todo[nbrs]].sum()
    placed = np.zeros(n)  # traffic to vertices already placed
    for x in members:
        nbrs, traffic = arrays.neighbours(int(x))
        placed[x] = traffic[part[nbrs] != UNPLACED].sum()
    first_seed = peripheral(arrays, members)
    for c in order:
        inside = np.zeros(n)  # traffic into the region of c
        while True:
            fits = todo & (arrays.gpus <= room[c])
            if not fits.any():
                break
            if (inside[fits] > 0).any():
                x = int(np.argmax(np.where(fits, inside - outside, -np.inf)))
            elif (placed[fits] > 0).any():
                x = int(np.argmax(np.where(fits, placed, -np.inf)))
            elif fits[first_seed]:
                x = first_seed
            else:
                x = int(np.argmax(fits))
            part[x] = c
            room[c] -= arrays.gpus[x]
            todo[x] = False
            nbrs, traffic = arrays.neighbours(x)
            inside[nbrs] += traffic
            outside[nbrs] -= traffic
            placed[nbrs] += traffic
        if not todo.any():
            return


def construct(arrays: JobArrays, order: list[int]) -> np.ndarray:
    """The greedy placement (module docstring, step 2) with the clusters in ``order``: the
    cluster of every vertex, :data:`UNPLACED` where nothing fitted."""
    part = np.full(arrays.n, UNPLACED, dtype=np.int64)
    room = arrays.capacity.copy()
    for members in components(arrays):
        need = int(arrays.gpus[members].sum())
        holds = [c for c in range(arrays.k) if room[c] >= need]
        if holds:
            c = min(holds, key=lambda c: (room[c], order.index(c)))
            part[members] = c
            room[c] -= need
        else:
            grow(arrays, part, room, members, order)
    return part


def coarsen(
    arrays: JobArrays,
    limit: int,
    part: np.ndarray | None = None,
    priority: np.ndarray | None = None,
) -> tuple[JobArrays, np.ndarray]:
    """One level of heavy-edge matching: the edges by decreasing traffic (or by decreasing
    ``priority``, one value per edge), each merging its two ends when neither is merged yet,
    together they have at most ``limit`` GPUs and (given an assignment ``part``) they sit in
    the same cluster. Returns the coarse graph (GPUs summed, parallel edges summed, inner
    edges dropped) and the coarse vertex of every vertex. A cut of the coarse graph is the cut
    of its projection.

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> arrays = JobArrays.of(examples()[0])
    >>> coarse, of = coarsen(arrays, 4)
    >>> of.tolist(), coarse.gpus.tolist(), coarse.traffic.tolist()
    ([0, 0, 1, 1], [4, 4], [2.0])
    >>> coarsen(arrays, 4, part=np.array([0, 1, 0, 1]))[1].tolist()
    [0, 1, 0, 1]
    """
    gpus = arrays.gpus
    same = np.ones(len(arrays.u), dtype=bool) if part is None else part[arrays.u] == part[arrays.v]
    mate = np.arange(arrays.n)
    order = arrays.traffic if priority is None else priority
    for e in np.argsort(-order, kind="stable"):
        x, y = int(arrays.u[e]), int(arrays.v[e])
        if (
            mate[x] == x
            and mate[y] == y
            and same[e]
            and arrays.traffic[e] > 0
            and gpus[x] + gpus[y] <= limit
        ):
            mate[x], mate[y] = y, x
    rep = np.minimum(np.arange(arrays.n), mate)
    _, of = np.unique(rep, return_inverse=True)
    nc = int(of.max()) + 1
    cu, cv = of[arrays.u], of[arrays.v]
    keep = cu != cv
    lo, hi = np.minimum(cu, cv)[keep], np.maximum(cu, cv)[keep]
    keys, inverse = np.unique(lo * nc + hi, return_inverse=True)
    traffic = np.bincount(inverse, arrays.traffic[keep], len(keys))
    coarse = JobArrays.build(
        np.bincount(of, gpus, nc).astype(np.int64),
        arrays.capacity,
        arrays.weights,
        keys // nc,
        keys % nc,
        traffic,
    )
    return coarse, of


def complete(
    arrays: JobArrays, part: np.ndarray, stop: Stop, budget: int | None = None
) -> np.ndarray | None:
    """``part`` if it places every vertex, else an exact packing preferring its clusters
    (:func:`~topoopt.partition.solvers.moves.pack`, at most ``budget`` search steps); ``None``
    if none exists, the budget is spent or ``stop()``."""
    if (part != UNPLACED).all():
        return part
    prefer = np.where(part == UNPLACED, int(np.argmax(arrays.capacity)), part)
    return pack(arrays, prefer, stop, budget=budget)


@dataclass
class Hierarchy:
    """A multilevel hierarchy: the graphs, finest first, and the map of each level's vertices
    onto the next level's."""

    graphs: list[JobArrays]
    maps: list[np.ndarray]

    @classmethod
    def of(
        cls,
        arrays: JobArrays,
        coarsen_to: int,
        part: np.ndarray | None = None,
        noise: tuple[np.random.Generator, float] | None = None,
    ) -> Hierarchy:
        """``arrays`` and its coarsenings (:func:`coarsen`, within the clusters of ``part`` if
        given) while there are more than ``coarsen_to`` vertices and a level removes at least a
        tenth of them; coarse vertices have at most ``max(largest vertex, 1.5 · GPUs /
        coarsen_to)`` GPUs. ``coarsen_to = 0``: no coarsening. With ``noise = (rng, σ)`` the
        matching takes the edges by decreasing traffic times a log-normal factor
        ``exp(σ · N(0, 1))`` per edge and level (a randomized hierarchy); the coarse graphs
        keep the true traffic."""
        graphs: list[JobArrays] = [arrays]
        maps: list[np.ndarray] = []
        if coarsen_to == 0:
            return cls(graphs, maps)
        limit = max(int(arrays.gpus.max()), math.ceil(1.5 * arrays.gpus.sum() / coarsen_to))
        while graphs[-1].n > coarsen_to:
            priority = None
            if noise is not None:
                rng, sigma = noise
                graph = graphs[-1]
                priority = graph.traffic * np.exp(sigma * rng.standard_normal(len(graph.traffic)))
            coarse, of = coarsen(graphs[-1], limit, part, priority)
            if coarse.n > 0.9 * graphs[-1].n:
                break
            graphs.append(coarse)
            maps.append(of)
            if part is not None:
                coarse_part = np.empty(coarse.n, dtype=np.int64)
                coarse_part[of] = part
                part = coarse_part
        return cls(graphs, maps)

    def restrict(self, part: np.ndarray, level: int) -> np.ndarray:
        """The assignment of level 0 carried up to ``level`` (every coarse vertex lies in one
        cluster; the hierarchy must respect ``part``)."""
        for of, graph in zip(self.maps[:level], self.graphs[1 : level + 1], strict=True):
            coarse = np.empty(graph.n, dtype=np.int64)
            coarse[of] = part
            part = coarse
        return part


@dataclass
class Search:
    """One greedy low-cut run (the options of :class:`GreedyLowCutSolver`)."""

    stop: Stop
    swaps: bool
    max_passes: int
    interrupted: bool = False

    def refine(self, arrays: JobArrays, part: np.ndarray) -> np.ndarray:
        """FM refinement of ``part`` (nothing once the time is up)."""
        if self.stop():
            self.interrupted = True
            return part
        refiner = Refiner(arrays, part)
        if refiner.refine(self.stop, swaps=self.swaps, max_passes=self.max_passes):
            self.interrupted = True
        return refiner.part

    def initial(
        self, arrays: JobArrays, starts: int, keep: int, budget: int | None
    ) -> list[np.ndarray] | None:
        """The ``keep`` best refined constructions of ``arrays`` over ``starts`` cluster
        orders (distinct cuts), ``None`` when no packing exists (within ``budget`` steps of
        the packing search) or the time is up first."""
        found: list[tuple[float, int, np.ndarray]] = []
        for i, order in enumerate(cluster_orders(arrays, starts)):
            if found and self.stop():
                self.interrupted = True
                break
            part = complete(arrays, construct(arrays, order), self.stop, budget)
            if part is None:
                return None
            part = self.refine(arrays, part)
            cut = arrays.cut(part)
            if all(abs(cut - other) > 1e-9 * max(1.0, cut) for other, _, _ in found):
                found.append((cut, i, part))
        found.sort(key=lambda item: item[:2])
        return [part for _, _, part in found[:keep]]

    def uncoarsen(self, hierarchy: Hierarchy, part: np.ndarray, top: int) -> np.ndarray:
        """``part`` of level ``top`` projected level by level to the job, refined at each."""
        for level in range(top - 1, -1, -1):
            part = self.refine(hierarchy.graphs[level], part[hierarchy.maps[level]])
        return part

    def vcycle(
        self,
        arrays: JobArrays,
        part: np.ndarray,
        coarsen_to: int,
        noise: tuple[np.random.Generator, float] | None = None,
    ) -> np.ndarray:
        """One V-cycle: coarsen within the clusters of ``part`` (randomized with ``noise``,
        :meth:`Hierarchy.of`), refine from the coarsest level down (moving whole coarse
        vertices first). A coarse vertex lies in one cluster, so the cut never rises."""
        hierarchy = Hierarchy.of(arrays, coarsen_to, part, noise=noise)
        top = len(hierarchy.graphs) - 1
        coarse = self.refine(hierarchy.graphs[top], hierarchy.restrict(part, top))
        return self.uncoarsen(hierarchy, coarse, top)

    def cycles(
        self, arrays: JobArrays, part: np.ndarray, coarsen_to: int, count: int
    ) -> np.ndarray:
        """Up to ``count`` V-cycles (:meth:`vcycle`), kept while the cut drops."""
        cut = arrays.cut(part)
        for _ in range(count):
            if self.stop():
                break
            trial = self.vcycle(arrays, part, coarsen_to)
            trial_cut = arrays.cut(trial)
            if not lower(trial_cut, cut):
                break
            part, cut = trial, trial_cut
        return part


@register_solver
class GreedyLowCutSolver(ArrayHeuristic):
    """SpiderFlow's greedy low-cut heuristic (§4.2, eq. 9): multilevel greedy regions + KL/FM.

    Options (module docstring): ``starts`` cluster orders tried on the coarsest graph,
    ``keep`` best of them carried to the job, ``coarsen_to`` vertices at which coarsening
    stops (``0``: no coarsening and no V-cycles), ``cycles`` V-cycles at most, ``swaps`` adds
    Kernighan–Lin pair swaps to the FM passes, ``max_passes`` bounds the passes of each
    refinement.

    Examples
    --------
    >>> import topoopt
    >>> from topoopt.partition.generate import examples
    >>> result = topoopt.solve(examples()[1], "partition/greedy-lowcut", seed=0)
    >>> result.objective, result.termination.value
    (0.13578, 'completed')
    """

    name = "partition/greedy-lowcut"
    family = "partition"

    def _solve(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        *,
        starts: int = 16,
        keep: int = 2,
        coarsen_to: int = 16,
        cycles: int = 8,
        swaps: bool = True,
        max_passes: int = 32,
    ) -> Attempt:
        starts = option_int("starts", starts, 1, 1000)
        keep = option_int("keep", keep, 1, 1000)
        coarsen_to = option_int("coarsen_to", coarsen_to, 0, 10**9)
        max_passes = option_int("max_passes", max_passes, 0, 100_000)
        cycles = option_int("cycles", cycles, 0, 100_000)
        search = Search(ctx.expired, bool(swaps), max_passes)
        arrays = JobArrays.of(instance)
        hierarchy = Hierarchy.of(arrays, coarsen_to)
        # a coarse graph may not pack where the job does (larger items): go finer until it does
        top = len(hierarchy.graphs) - 1
        while True:
            budget = COARSE_PACKING if top else None
            parts = search.initial(hierarchy.graphs[top], starts, keep, budget)
            if parts is not None or top == 0 or search.stop():
                break
            top -= 1
        if parts is None:
            if search.stop():
                return Attempt(
                    None,
                    TerminationReason.TIME_LIMIT,
                    message="time limit reached while packing the vertices into the clusters",
                )
            return Attempt(
                None,
                TerminationReason.INFEASIBLE,
                message="no assignment fits the capacities (exhaustive bin packing of the "
                "vertices' GPUs)",
            )
        best, best_cut = parts[0], math.inf
        for part in parts:
            part = search.uncoarsen(hierarchy, part, top)
            if coarsen_to:
                part = search.cycles(arrays, part, coarsen_to, cycles)
            cut = arrays.cut(part)
            if cut < best_cut:
                best, best_cut = part, cut
        solution = Assignment.from_indices(instance, best.tolist())
        message = f"{len(hierarchy.graphs)} level(s), starts on {hierarchy.graphs[top].n} vertices"
        if search.interrupted or search.stop():
            return Attempt(solution, TerminationReason.TIME_LIMIT, message=message + "; time limit")
        return Attempt(solution, TerminationReason.COMPLETED, message=message)


__all__ = ["GreedyLowCutSolver", "cluster_orders", "coarsen", "components", "construct"]
