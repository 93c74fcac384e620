"""``partition/genetic``: a DT-FM-style genetic search over assignments (seeded baseline).

DT-FM (Yuan et al., "Decentralized training of foundation models in heterogeneous
environments", NeurIPS 2022, §3) schedules training over heterogeneous, decentralised devices
with a hybrid genetic algorithm: a population of partitions evolved by crossover and mutation,
each child improved by a local search. SpiderFlow (§5.4.2, Table 2) uses it as the baseline of
its inter-cluster partitioning (eq. 9). This implementation (a memetic algorithm in the
manner of Bui & Moon's genetic graph partitioning, on which DT-FM builds):

* **Individuals** are assignments, a cluster per vertex, always within the capacities.
* **Initial population**: ``population`` random assignments (each vertex in a cluster drawn
  with probability proportional to its capacity), repaired and improved by the local search.
* **Generation**: ``population`` children, each from two parents picked by binary tournament
  (the lower cut wins); *two-point crossover* along a breadth-first order of the job graph
  (the child takes a contiguous stretch of that order, a connected piece of the job, from the
  second parent and the rest from the first), then *mutation* (each vertex moves to a random
  cluster with probability ``mutation``), *repair* to the capacities
  (:func:`~topoopt.partition.solvers.moves.repair`, least cut increase; an exact packing as
  the fallback) and ``local_passes`` Fiduccia–Mattheyses passes of moves and pair swaps
  (:meth:`~topoopt.partition.solvers.moves.Refiner.refine`).
* **Replacement**: the ``population`` best distinct assignments of parents and children
  survive (elitist).

It stops after ``generations`` generations, after ``patience`` generations in a row that do
not improve the best cut, or on the time limit, and returns the best
assignment found (``time_limit`` when the limit cut the run short). All randomness comes from
the seed, so a seed gives the same answer whenever the run is not cut short by the clock.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from topoopt.core.errors import InvalidOptionError
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
    pack,
    repair,
)


def bfs_order(arrays: JobArrays) -> np.ndarray:
    """The vertices in breadth-first order (from vertex 0, then from the first unvisited one
    of each further component), neighbours by decreasing traffic.

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> bfs_order(JobArrays.of(examples()[0])).tolist()
    [0, 1, 2, 3]
    """
    seen = np.zeros(arrays.n, dtype=bool)
    out: list[int] = []
    for root in range(arrays.n):
        if seen[root]:
            continue
        seen[root] = True
        queue = deque([root])
        while queue:
            x = queue.popleft()
            out.append(x)
            nbrs, traffic = arrays.neighbours(x)
            for y in nbrs[np.argsort(-traffic, kind="stable")]:
                if not seen[y]:
                    seen[y] = True
                    queue.append(int(y))
    return np.array(out, dtype=np.int64)


def make_feasible(arrays: JobArrays, part: np.ndarray, stop: Stop) -> np.ndarray | None:
    """``part`` repaired to the capacities (:func:`~.moves.repair`), or, when repair is
    stuck, an exact packing preferring ``part``'s clusters; ``None`` if neither works."""
    fixed = repair(arrays, part, stop)
    if fixed is None and not stop():
        fixed = pack(arrays, part, stop)
    return fixed


class Evolution:
    """The population and the operators (module docstring)."""

    def __init__(
        self,
        arrays: JobArrays,
        rng: np.random.Generator,
        stop: Stop,
        *,
        mutation: float,
        local_passes: int,
    ) -> None:
        self.arrays, self.rng, self.stop = arrays, rng, stop
        self.mutation, self.local_passes = mutation, local_passes
        self.order = bfs_order(arrays)
        self.members: list[tuple[float, bytes, np.ndarray]] = []

    def improve(self, part: np.ndarray) -> tuple[float, np.ndarray] | None:
        """Repair and local search: ``(cut, part)``, ``None`` when no repair is found."""
        fixed = make_feasible(self.arrays, part, self.stop)
        if fixed is None:
            return None
        refiner = Refiner(self.arrays, fixed)
        if self.local_passes and not self.stop():
            refiner.refine(self.stop, max_passes=self.local_passes)
        return refiner.cut(), refiner.part

    def random_member(self) -> np.ndarray:
        """A random assignment (cluster probability proportional to capacity, uniform when
        no cluster has any)."""
        capacity = self.arrays.capacity.astype(float)
        share = capacity / capacity.sum() if capacity.sum() > 0 else None
        return self.rng.choice(self.arrays.k, size=self.arrays.n, p=share).astype(np.int64)

    def tournament(self) -> np.ndarray:
        """Binary tournament: the better of two random members."""
        i, j = (int(x) for x in self.rng.integers(0, len(self.members), size=2))
        return self.members[min(i, j)][2]  # members are sorted by cut

    def child(self) -> np.ndarray:
        """Crossover of two tournament winners, then mutation (module docstring)."""
        first, second = self.tournament(), self.tournament()
        n = self.arrays.n
        a, b = sorted(int(x) for x in self.rng.integers(0, n + 1, size=2))
        out = first.copy()
        piece = self.order[a:b]
        out[piece] = second[piece]
        flip = self.rng.random(n) < self.mutation
        out[flip] = self.rng.integers(0, self.arrays.k, size=int(flip.sum()))
        return out

    def survive(self, offspring: list[tuple[float, np.ndarray]], size: int) -> None:
        """Keep the ``size`` best distinct assignments of members and ``offspring``."""
        pool = {key: (cut, key, part) for cut, key, part in self.members}
        for cut, part in offspring:
            key = part.tobytes()
            pool.setdefault(key, (cut, key, part))
        self.members = sorted(pool.values(), key=lambda m: (m[0], m[1]))[:size]


@register_solver
class GeneticSolver(ArrayHeuristic):
    """DT-FM-style genetic search (Yuan et al. 2022): crossover, mutation, repair, FM.

    Options: ``population`` size, ``generations`` (at most), ``patience`` (generations without
    improvement before stopping), per-vertex ``mutation`` probability,
    ``local_passes`` FM passes per child (``0``: none). See the module docstring.

    Examples
    --------
    >>> import topoopt
    >>> from topoopt.partition.generate import examples
    >>> result = topoopt.solve(examples()[1], "partition/genetic", seed=0)
    >>> result.objective, result.termination.value
    (0.13578, 'completed')
    """

    name = "partition/genetic"
    family = "partition"
    stochastic = True

    def _solve(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        *,
        population: int = 32,
        generations: int = 100,
        patience: int = 10,
        mutation: float = 0.02,
        local_passes: int = 2,
    ) -> Attempt:
        population = option_int("population", population, 2, 100_000)
        generations = option_int("generations", generations, 0, 10**9)
        patience = option_int("patience", patience, 1, 10**9)
        local_passes = option_int("local_passes", local_passes, 0, 100_000)
        if isinstance(mutation, bool) or not isinstance(mutation, (int, float)):
            raise InvalidOptionError(f"mutation: must be a number in [0, 1], got {mutation!r}")
        if not 0.0 <= mutation <= 1.0:
            raise InvalidOptionError(f"mutation: must be a number in [0, 1], got {mutation!r}")
        stop = ctx.expired
        evo = Evolution(
            JobArrays.of(instance),
            ctx.rng,
            stop,
            mutation=float(mutation),
            local_passes=local_passes,
        )
        start: list[tuple[float, np.ndarray]] = []
        for _ in range(population):
            if start and stop():
                break
            improved = evo.improve(evo.random_member())
            if improved is None:
                break
            start.append(improved)
        evo.survive(start, population)
        if not evo.members:
            if stop():
                return Attempt(
                    None, TerminationReason.TIME_LIMIT, message="time limit before a first member"
                )
            return Attempt(
                None,
                TerminationReason.INFEASIBLE,
                message="no assignment fits the capacities (exhaustive bin packing of the "
                "vertices' GPUs)",
            )
        interrupted = len(start) < population
        done = stale = 0
        while done < generations and stale < patience and not interrupted:
            if stop():
                interrupted = True
                break
            offspring = []
            for _ in range(population):
                if stop():
                    interrupted = True
                    break
                improved = evo.improve(evo.child())
                if improved is not None:
                    offspring.append(improved)
            best_cut = evo.members[0][0]
            evo.survive(offspring, population)
            done += not interrupted
            stale = stale + 1 if evo.members[0][0] >= best_cut else 0
        best = evo.members[0][2]
        message = f"{done} generation(s) of {population}"
        if stale >= patience:
            message += f", the last {patience} without improvement"
        termination = TerminationReason.COMPLETED
        if interrupted or stop():
            termination = TerminationReason.TIME_LIMIT
            message += ", stopped by the time limit"
        return Attempt(
            Assignment.from_indices(instance, best.tolist()), termination, message=message
        )


__all__ = ["GeneticSolver", "bfs_order"]
