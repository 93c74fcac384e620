"""Machinery shared by the partition heuristics: the job graph as arrays, the eq. 9 cut, and
capacity-respecting moves (Kernighan–Lin / Fiduccia–Mattheyses refinement, repair, packing).

* :class:`JobArrays` — the instance as numpy arrays: GPUs, capacities, the cost matrix ``w``
  (:attr:`PartitionInstance.weights <topoopt.partition.instance.PartitionInstance.weights>`),
  the edges and a symmetric CSR adjacency.
* :class:`Refiner` — an assignment with its cluster loads and the *cost matrix*
  ``D[v, c] = sum over neighbours u of traffic(u, v) · w(c, π(u))``, the eq. 9 cost of the
  edges of ``v`` if ``v`` sat in ``c``. Moving ``v`` from ``a`` to ``b`` gains
  ``D[v, a] - D[v, b]``; swapping ``u ∈ a`` and ``v ∈ b`` gains the two move gains minus
  ``2 · traffic(u, v) · w(a, b)`` (their common edge stays cut). A move updates the rows of
  the neighbours of the moved vertex only (``O(deg · C)``).
* :meth:`Refiner.refine` — FM passes (Fiduccia & Mattheyses 1982, with the pair swaps of
  Kernighan & Lin 1970): each pass is a sequence of the best capacity-feasible single move or
  pair swap among the unlocked vertices, negative gains allowed (hill climbing); moved vertices
  are locked; the best prefix of the sequence is kept and the rest undone. Passes repeat while
  they improve the cut. A step costs ``O(V · C log V)`` (the gain matrix and, for swaps, the
  best few candidates of every cluster towards every other cluster).
* :func:`repair` — moves vertices out of over-full clusters, each time the move of least cut
  increase into a cluster with room, until the capacities hold.
* :func:`pack` — exact bin packing of the vertices' GPUs by depth-first search (largest vertex
  first, a preferred cluster tried first), the fallback when the greedy steps cannot place
  every vertex.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from topoopt.core.solver import Solver
from topoopt.partition.instance import PartitionInstance

Stop = Callable[[], bool]
"""Says whether the caller's time is up."""

TOL = 1e-9
"""Relative improvement a pass must make to count."""
SWAP_CANDIDATES = 3
"""Best vertices of each cluster towards each other cluster paired up in the swap search."""
MAX_CELLS = 50_000_000
"""Most vertices × clusters a heuristic keeps the dense cost matrix ``D`` for."""


def too_large(instance: PartitionInstance) -> str | None:
    """Why the cost matrix of ``instance`` is too large to keep (see :data:`MAX_CELLS`)."""
    cells = instance.n_vertices * instance.n_clusters
    if cells > MAX_CELLS:
        return (
            f"{instance.n_vertices} vertices x {instance.n_clusters} clusters exceed the "
            f"{MAX_CELLS:,} cells of the cost matrix"
        )
    return None


def lower(cut: float, than: float) -> bool:
    """Whether ``cut`` is lower than ``than`` by more than rounding (:data:`TOL`, relative)."""
    return cut < than - TOL * max(1.0, than)


class ArrayHeuristic(Solver):
    """Base of the partition heuristics that keep the dense cost matrix of :class:`Refiner`
    (greedy-lowcut, its iterated search, the genetic search)."""

    @classmethod
    def unsupported_reason(cls, instance: PartitionInstance) -> str | None:
        """Refuses instances whose cost matrix is too large (:data:`MAX_CELLS`)."""
        return too_large(instance)


@dataclass(frozen=True)
class JobArrays:
    """A partition instance as arrays (vertex and cluster indices in instance order).

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> arrays = JobArrays.of(examples()[0])
    >>> arrays.n, arrays.k, arrays.capacity.tolist()
    (4, 3, [8, 4, 4])
    >>> part = np.array([0, 0, 1, 1])
    >>> arrays.loads(part).tolist(), arrays.cut(part)
    ([4, 4, 0], 0.2)
    """

    gpus: np.ndarray
    capacity: np.ndarray
    weights: np.ndarray
    u: np.ndarray
    v: np.ndarray
    traffic: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    keys: np.ndarray
    key_traffic: np.ndarray

    @classmethod
    def of(cls, instance: PartitionInstance) -> JobArrays:
        """The arrays of ``instance``."""
        u, v, traffic = instance.edge_arrays
        return cls.build(
            np.array([x.gpus for x in instance.vertices], dtype=np.int64),
            np.array([c.capacity_gpus for c in instance.clusters], dtype=np.int64),
            np.asarray(instance.weights, dtype=float),
            u,
            v,
            traffic,
        )

    @classmethod
    def build(
        cls,
        gpus: np.ndarray,
        capacity: np.ndarray,
        weights: np.ndarray,
        u: np.ndarray,
        v: np.ndarray,
        traffic: np.ndarray,
    ) -> JobArrays:
        """The arrays of a graph given by its vertices' GPUs and its edges (one per pair)."""
        n = len(gpus)
        ends = np.concatenate([u, v])
        order = np.argsort(ends, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(ends, minlength=n), out=indptr[1:])
        keys = np.minimum(u, v) * n + np.maximum(u, v)
        by_key = np.argsort(keys)
        return cls(
            gpus=gpus,
            capacity=capacity,
            weights=weights,
            u=u,
            v=v,
            traffic=traffic,
            indptr=indptr,
            indices=np.concatenate([v, u])[order],
            data=np.concatenate([traffic, traffic])[order],
            keys=keys[by_key],
            key_traffic=traffic[by_key],
        )

    @property
    def n(self) -> int:
        """Number of vertices."""
        return len(self.gpus)

    @property
    def k(self) -> int:
        """Number of clusters."""
        return len(self.capacity)

    def neighbours(self, x: int) -> tuple[np.ndarray, np.ndarray]:
        """The neighbours of vertex ``x`` and the traffic to each."""
        s = slice(self.indptr[x], self.indptr[x + 1])
        return self.indices[s], self.data[s]

    def degree(self) -> np.ndarray:
        """Total traffic of every vertex."""
        return np.bincount(self.u, self.traffic, self.n) + np.bincount(self.v, self.traffic, self.n)

    def cut(self, part: np.ndarray) -> float:
        """Eq. 9 of the assignment ``part`` (cluster index per vertex)."""
        return float((self.weights[part[self.u], part[self.v]] * self.traffic).sum())

    def cuts(self, parts: np.ndarray) -> np.ndarray:
        """Eq. 9 of every row of ``parts`` (one assignment per row)."""
        return (self.weights[parts[:, self.u], parts[:, self.v]] * self.traffic).sum(axis=1)

    def loads(self, part: np.ndarray) -> np.ndarray:
        """GPUs placed on every cluster."""
        return np.bincount(part, weights=self.gpus, minlength=self.k).astype(np.int64)

    def feasible(self, part: np.ndarray) -> bool:
        """Whether ``part`` keeps every capacity."""
        return bool((self.loads(part) <= self.capacity).all())

    def costs(self, part: np.ndarray) -> np.ndarray:
        """``D[v, c]``, the eq. 9 cost of ``v``'s edges with ``v`` in ``c`` (module docstring)."""
        n, k = self.n, self.k
        conn = np.bincount(self.u * k + part[self.v], self.traffic, n * k)
        conn += np.bincount(self.v * k + part[self.u], self.traffic, n * k)
        return conn.reshape(n, k) @ self.weights

    def pair_traffic(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Traffic between vertices ``a`` and ``b`` (0 without an edge), elementwise with
        broadcasting."""
        keys = np.minimum(a, b) * self.n + np.maximum(a, b)
        if not len(self.keys):
            return np.zeros(keys.shape)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return np.where(self.keys[at] == keys, self.key_traffic[at], 0.0)


class Refiner:
    """An assignment under refinement: cluster of every vertex, loads and the cost matrix.

    Parameters
    ----------
    arrays
        The instance.
    part
        The starting assignment (copied); it must keep the capacities.

    Examples
    --------
    A 4-cycle with a heavy pair on each side, started crosswise: one pass of moves and swaps
    puts each heavy pair together.

    >>> from topoopt.partition.instance import PartitionInstance
    >>> inst = PartitionInstance(
    ...     "square", clusters=[("c0", 2), ("c1", 2)], links=[("c0", "c1", 1.0)],
    ...     vertices=[(f"x{i}", 1) for i in range(4)],
    ...     edges=[("x0", "x1", 5.0), ("x1", "x2", 1.0), ("x2", "x3", 5.0), ("x3", "x0", 1.0)])
    >>> r = Refiner(JobArrays.of(inst), np.array([0, 1, 0, 1]))
    >>> r.cut()
    12.0
    >>> r.refine(lambda: False)
    False
    >>> r.part.tolist(), r.cut()
    ([1, 1, 0, 0], 2.0)
    """

    def __init__(self, arrays: JobArrays, part: np.ndarray) -> None:
        self.arrays = arrays
        self.part = np.array(part, dtype=np.int64)
        self.load = arrays.loads(self.part)
        self.cost = arrays.costs(self.part)

    def cut(self) -> float:
        """Eq. 9 of the current assignment."""
        return self.arrays.cut(self.part)

    def move(self, x: int, b: int) -> None:
        """Put vertex ``x`` into cluster ``b``, updating loads and its neighbours' costs."""
        arrays, a = self.arrays, int(self.part[x])
        if a == b:
            return
        nbrs, traffic = arrays.neighbours(x)
        self.cost[nbrs] += np.outer(traffic, arrays.weights[b] - arrays.weights[a])
        self.part[x] = b
        self.load[a] -= arrays.gpus[x]
        self.load[b] += arrays.gpus[x]

    def gains(self) -> np.ndarray:
        """``G[v, c] = D[v, π(v)] - D[v, c]``: what moving ``v`` to ``c`` saves."""
        own = self.cost[np.arange(self.arrays.n), self.part]
        return own[:, None] - self.cost

    def best_move(self, gain: np.ndarray, free: np.ndarray) -> tuple[float, int, int]:
        """The single move of highest gain among the vertices ``free`` into clusters with room:
        ``(gain, vertex, cluster)``, gain ``-inf`` when there is none."""
        arrays = self.arrays
        room = arrays.capacity - self.load
        ok = (arrays.gpus[:, None] <= room[None, :]) & free[:, None]
        ok[np.arange(arrays.n), self.part] = False
        masked = np.where(ok, gain, -np.inf)
        at = int(np.argmax(masked))
        x, b = divmod(at, arrays.k)
        return float(masked[x, b]), x, b

    def best_swap(
        self, gain: np.ndarray, free: np.ndarray, above: float = -np.inf
    ) -> tuple[float, int, int]:
        """The capacity-feasible pair swap of highest gain among the vertices ``free``:
        ``(gain, u, v)``, gain ``-inf`` when there is none or none can gain more than
        ``above``.

        For every ordered pair of clusters ``(a, b)`` the :data:`SWAP_CANDIDATES` vertices of
        ``a`` with the highest gain towards ``b`` are paired with those of ``b`` towards ``a``;
        the pair's gain subtracts ``2 · traffic(u, v) · w(a, b)`` (module docstring). The best
        swap of a pair of clusters is missed only when every combination of these candidates
        is adjacent or does not fit. The search is skipped when the best gain of ``a``
        towards ``b`` plus that of ``b`` towards ``a`` (a bound) is at most ``above`` for every
        pair.
        """
        arrays, part = self.arrays, self.part
        n, k, m = arrays.n, arrays.k, SWAP_CANDIDATES
        g = np.where(free[:, None], gain, -np.inf)
        counts = np.bincount(part, minlength=k)
        used = np.flatnonzero(counts)
        if len(used) < 2:
            return -np.inf, 0, 0
        by_part = np.argsort(part, kind="stable")
        start = np.cumsum(counts) - counts
        best_to = np.full((k, k), -np.inf)  # best_to[a, b]: best gain of a vertex of a to b
        best_to[used] = np.maximum.reduceat(g[by_part], start[used], axis=0)
        bound = best_to + best_to.T
        np.fill_diagonal(bound, -np.inf)
        if not bound.max() > above:
            return -np.inf, 0, 0
        # vertices by cluster, then by gain towards column b (descending), for every b at once:
        # one sort of cluster · span - gain, span exceeding the range of the finite gains
        finite = np.isfinite(g)
        if not finite.any():
            return -np.inf, 0, 0
        low, high = g[finite].min(), g[finite].max()
        span = high - low + 2.0
        key = part[:, None] * span - np.where(finite, g, low - 1.0)
        order = np.argsort(key, axis=0).T
        j = np.arange(m)
        valid = j[None, :] < counts[:, None]
        pos = np.minimum(start[:, None] + j[None, :], n - 1)
        cand = order[:, pos].transpose(1, 0, 2)  # cand[a, b, i]: i-th best of a towards b
        cg = np.where(valid[:, None, :], g[cand, np.arange(k)[None, :, None]], -np.inf)
        us, vs = cand[:, :, :, None], cand.transpose(1, 0, 2)[:, :, None, :]
        total = cg[:, :, :, None] + cg.transpose(1, 0, 2)[:, :, None, :]
        total = total - 2.0 * arrays.pair_traffic(us, vs) * arrays.weights[:, :, None, None]
        gu, gv = arrays.gpus[us], arrays.gpus[vs]
        load, cap = self.load, arrays.capacity
        fits = (load[:, None, None, None] - gu + gv <= cap[:, None, None, None]) & (
            load[None, :, None, None] - gv + gu <= cap[None, :, None, None]
        )
        upper = np.triu(np.ones((k, k), dtype=bool), 1)[:, :, None, None]
        total = np.where(fits & upper & np.isfinite(total), total, -np.inf)
        at = np.unravel_index(int(np.argmax(total)), total.shape)
        return float(total[at]), int(us[at[0], at[1], at[2], 0]), int(vs[at[0], at[1], 0, at[3]])

    def fm_pass(self, stop: Stop, *, swaps: bool = True, stall: int | None = None) -> float:
        """One pass (module docstring); returns the gain kept (``>= 0``).

        ``stall`` ends the pass after that many steps without a new best prefix (default
        ``max(50, V // 4)``); ``stop()`` ends it at once. Either way the best prefix is kept.
        """
        arrays = self.arrays
        n = arrays.n
        stall = max(50, n // 4) if stall is None else stall
        self.cost = arrays.costs(self.part)  # no drift from many incremental updates
        free = np.ones(n, dtype=bool)
        log: list[tuple[int, int]] = []
        total, best, best_len, since = 0.0, 0.0, 0, 0
        scale = TOL * max(1.0, float(np.abs(self.cost).sum()))
        while since < stall and not stop():
            gain = self.gains()
            g, x, b = self.best_move(gain, free)
            pair: tuple[int, int] | None = None
            if swaps:
                gs, y, z = self.best_swap(gain, free, above=g)
                if gs > g:
                    g, pair = gs, (y, z)
            if g == -np.inf:
                break
            if pair is None:
                log.append((x, int(self.part[x])))
                self.move(x, b)
                free[x] = False
            else:
                y, z = pair
                ay, az = int(self.part[y]), int(self.part[z])
                log += [(y, ay), (z, az)]
                self.move(y, az)
                self.move(z, ay)
                free[y] = free[z] = False
            total += g
            if total > best + scale:
                best, best_len, since = total, len(log), 0
            else:
                since += 1
        for x, a in reversed(log[best_len:]):
            self.move(x, a)
        return best

    def refine(
        self, stop: Stop, *, swaps: bool = True, max_passes: int = 32, stall: int | None = None
    ) -> bool:
        """FM passes until one gains nothing, ``max_passes`` or ``stop()``; returns whether
        ``stop()`` cut it short."""
        for _ in range(max_passes):
            if stop():
                return True
            if self.fm_pass(stop, swaps=swaps, stall=stall) <= 0.0:
                break
        return stop()


def repair(arrays: JobArrays, part: np.ndarray, stop: Stop) -> np.ndarray | None:
    """``part`` made to keep the capacities by moving vertices out of over-full clusters, each
    time the move of least cut increase (largest gain) into a cluster with room; ``None`` when
    no vertex of an over-full cluster fits elsewhere (or ``stop()``).

    Every move lowers the total overflow and never overfills its target, so at most one move
    per vertex is made.

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> arrays = JobArrays.of(examples()[0])
    >>> repair(arrays, np.array([1, 1, 1, 1]), lambda: False).tolist()  # c1 holds 4 of 8 GPUs
    [2, 2, 1, 1]
    """
    r = Refiner(arrays, part)
    movable = arrays.gpus > 0
    while (over := r.load > arrays.capacity).any():
        if stop():
            return None
        candidates = over[r.part] & movable
        g, x, b = r.best_move(r.gains(), candidates)
        if g == -np.inf:
            return None
        r.move(x, b)
    return r.part


def pack(
    arrays: JobArrays, prefer: np.ndarray | None, stop: Stop, *, budget: int | None = None
) -> np.ndarray | None:
    """A capacity-feasible assignment by exact bin packing, or ``None`` if none exists,
    ``stop()`` ended the search (then ``stop()`` is true) or more than ``budget`` search steps
    (``None``: no bound) did not find one.

    Depth-first search over the vertices by decreasing GPUs; each vertex tries its
    preferred cluster first, then the others by decreasing room, skipping a cluster whose
    room equals one already tried for it (they lead to the same packings). A branch is cut
    when the room that the smallest remaining vertex can still use is less than the GPUs left.
    Vertices without GPUs go to their preferred cluster.

    Examples
    --------
    First fit by decreasing size would put 3 and 3 together and fail; the search does not:

    >>> from topoopt.partition.instance import PartitionInstance
    >>> inst = PartitionInstance(
    ...     "bins", clusters=[("c0", 6), ("c1", 6)], links=[("c0", "c1", 1.0)],
    ...     vertices=[("a", 3), ("b", 3), ("c", 2), ("d", 2), ("e", 2)], edges=[])
    >>> part = pack(JobArrays.of(inst), np.zeros(5, dtype=np.int64), lambda: False)
    >>> JobArrays.of(inst).loads(part).tolist()
    [6, 6]
    """
    n, k = arrays.n, arrays.k
    prefer = np.zeros(n, dtype=np.int64) if prefer is None else np.asarray(prefer, np.int64)
    out = prefer.copy()
    todo = [int(x) for x in np.argsort(-arrays.gpus, kind="stable") if arrays.gpus[x] > 0]
    sizes = [int(arrays.gpus[x]) for x in todo]
    left = [0] * (len(sizes) + 1)
    for i in range(len(sizes) - 1, -1, -1):
        left[i] = left[i + 1] + sizes[i]
    rooms = [int(r) for r in arrays.capacity]

    def options(i: int) -> list[int]:
        x, size = todo[i], sizes[i]
        seen: set[int] = set()
        out_: list[int] = []
        first = int(prefer[x])
        for c in [first, *sorted(range(k), key=lambda c: (-rooms[c], c))]:
            if rooms[c] >= size and rooms[c] not in seen:
                seen.add(rooms[c])
                out_.append(c)
        return out_

    def hopeless(i: int) -> bool:
        if i == len(sizes):
            return False
        smallest = sizes[-1]
        usable = sum(r for r in rooms if r >= smallest)
        return usable < left[i]

    if not todo:
        return out
    if hopeless(0):
        return None
    stack, i, steps = [options(0)], 0, 0
    while stack:
        steps += 1
        if (steps % 1024 == 0 and stop()) or (budget is not None and steps > budget):
            return None
        tries = stack[-1]
        if not tries:
            stack.pop()
            i -= 1
            if i >= 0:
                rooms[int(out[todo[i]])] += sizes[i]
            continue
        c = tries.pop(0)
        out[todo[i]] = c
        rooms[c] -= sizes[i]
        i += 1
        if i == len(todo):
            return out
        if hopeless(i):
            rooms[c] += sizes[i - 1]
            i -= 1
            continue
        stack.append(options(i))
    return None


__all__ = ["JobArrays", "Refiner", "pack", "repair", "too_large"]
