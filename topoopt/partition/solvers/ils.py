"""``partition/ils``: iterated multilevel search — greedy-lowcut, then randomized V-cycles and
restarts until the time is up.

``partition/greedy-lowcut`` ends in a local optimum of its refinement: its V-cycles coarsen
within the clusters by heavy-edge matching, which is deterministic, so a second cycle from the
same assignment finds the same coarse graph and the same moves. This solver iterates it, in the
manner of the iterated multilevel schemes of graph partitioning (Walshaw's iterated
multilevel refinement; KaFFPa's strong V-cycles), on eq. 9 with the clusters' capacities:

1. **Start** from greedy-lowcut's assignment (the incumbent).
2. **Randomized V-cycles** (:func:`vcycle`): coarsen *within the clusters of the incumbent*
   with the matching taking the edges by decreasing traffic times a log-normal factor
   ``exp(σ · N(0, 1))`` (``noise`` = σ; per edge and level, the coarse graphs keep the true
   traffic), refine from the coarsest level down (FM moves and pair swaps of
   :meth:`~topoopt.partition.solvers.moves.Refiner.refine`, whole coarse vertices first). A
   coarse vertex lies in one cluster, so the projection keeps the incumbent's cut and every
   refinement step only lowers it: a cycle never returns a worse assignment, and a different
   matching lets other groups of units move together. A lower cut becomes the incumbent.
3. **Restarts** (:func:`restart`), after ``patience`` cycles in a row without a lower cut: a
   randomized hierarchy of the whole job (the same noise, no assignment), greedy-lowcut's
   construction on the coarsest graph with one of its cluster orders drawn at random
   (:func:`~topoopt.partition.solvers.greedy.cluster_orders`), refinement while uncoarsening,
   then randomized V-cycles from it until ``patience`` fail in a row. The restart's result
   replaces the incumbent when its cut is lower.

It stops after ``restarts`` restarts or at the time limit and returns the lowest cut found
(``time_limit`` when the clock ended it). All randomness comes from the seed, so a seed gives
the same answer whenever the clock does not end the run.

Measured (``docs/partition.md``, "Iterated V-cycles"): on the Table 2 files at 512 units,
60 s lower greedy-lowcut's cut by 0.4–6 %; ``partition/mip`` warm starts from it.
"""

from __future__ import annotations

import math

import numpy as np

from topoopt.core.errors import InvalidOptionError
from topoopt.core.registry import get_solver, register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import TerminationReason
from topoopt.core.validate import option_int
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment, evaluate
from topoopt.partition.solvers.greedy import (
    COARSE_PACKING,
    Hierarchy,
    Search,
    cluster_orders,
    complete,
    construct,
)
from topoopt.partition.solvers.moves import ArrayHeuristic, JobArrays, lower

COARSEN_TO = 16
"""Vertices at which the coarsening of a cycle or restart stops (greedy-lowcut's default)."""
ORDERS = 16
"""Cluster orders a restart draws from (greedy-lowcut's ``starts``)."""
PATIENCE = 50
"""Default ``patience``: randomized V-cycles in a row without a lower cut before a restart."""
NOISE = 0.5
"""Default ``noise``: the σ of the matching's log-normal factor."""
MAX_PASSES = 32
"""FM passes of each refinement (greedy-lowcut's ``max_passes``)."""
RESTARTS = 8
"""Default ``restarts``: restarts at most (each one ends after ``patience`` failed cycles)."""


def vcycle(
    search: Search, arrays: JobArrays, part: np.ndarray, rng: np.random.Generator, noise: float
) -> np.ndarray:
    """One randomized V-cycle of ``part`` (module docstring, step 2): never a higher cut."""
    return search.vcycle(arrays, part, COARSEN_TO, noise=(rng, noise))


def restart(
    search: Search, arrays: JobArrays, rng: np.random.Generator, noise: float
) -> np.ndarray | None:
    """A new assignment from a randomized hierarchy and a random cluster order (module
    docstring, step 3, before its V-cycles); ``None`` when the coarsest graph does not pack
    within :data:`~topoopt.partition.solvers.greedy.COARSE_PACKING` steps."""
    hierarchy = Hierarchy.of(arrays, COARSEN_TO, noise=(rng, noise))
    top = len(hierarchy.graphs) - 1
    coarsest = hierarchy.graphs[top]
    orders = cluster_orders(coarsest, ORDERS)
    order = orders[int(rng.integers(len(orders)))]
    part = complete(coarsest, construct(coarsest, order), search.stop, COARSE_PACKING)
    if part is None:
        return None
    return search.uncoarsen(hierarchy, search.refine(coarsest, part), top)


def descend(
    search: Search,
    arrays: JobArrays,
    part: np.ndarray,
    rng: np.random.Generator,
    noise: float,
    patience: int,
) -> np.ndarray:
    """Randomized V-cycles from ``part`` until ``patience`` in a row find no lower cut (or the
    time is up); the lowest-cut assignment."""
    cut, failed = arrays.cut(part), 0
    while failed < patience and not search.stop():
        trial = vcycle(search, arrays, part, rng, noise)
        trial_cut = arrays.cut(trial)
        if lower(trial_cut, cut):
            part, cut, failed = trial, trial_cut, 0
        else:
            failed += 1
    return part


def iterate(
    search: Search,
    arrays: JobArrays,
    part: np.ndarray,
    rng: np.random.Generator,
    *,
    restarts: int,
    patience: int,
    noise: float,
) -> tuple[np.ndarray, int]:
    """``part`` improved by randomized V-cycles, then by up to ``restarts`` restarts (module
    docstring, steps 2-3) until the time is up: the lowest-cut assignment found (never above
    ``part``'s cut) and the number of restarts made."""
    best = descend(search, arrays, part, rng, noise, patience)
    best_cut, done = arrays.cut(best), 0
    while done < restarts and not search.stop():
        done += 1
        found = restart(search, arrays, rng, noise)
        if found is None:
            continue
        found = descend(search, arrays, found, rng, noise, patience)
        if lower(arrays.cut(found), best_cut):
            best, best_cut = found, arrays.cut(found)
    return best, done


def improve(
    instance: PartitionInstance,
    start: list[int],
    ctx: SolveContext,
    *,
    restarts: int,
    patience: int = PATIENCE,
    noise: float = NOISE,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, int]:
    """:func:`iterate` from ``start`` (a cluster per vertex) within ``ctx``'s time, drawing
    from ``rng`` (default: a new generator seeded by ``ctx``'s seed; pass one generator to
    runs that continue each other, so that they do not repeat its draws): the lowest-cut
    assignment and the restarts made."""
    search = Search(ctx.expired, swaps=True, max_passes=MAX_PASSES)
    arrays = JobArrays.of(instance)
    return iterate(
        search,
        arrays,
        np.array(start),
        ctx.rng if rng is None else rng,
        restarts=restarts,
        patience=patience,
        noise=noise,
    )


@register_solver
class IteratedSearchSolver(ArrayHeuristic):
    """Iterated multilevel search on eq. 9: greedy-lowcut, randomized V-cycles, restarts.

    Options (module docstring): ``restarts`` (default 8) restarts at most, ``patience``
    (default 50) V-cycles in a row without a lower cut before a restart, ``noise`` (default
    0.5) the σ of the matching's log-normal factor.

    Examples
    --------
    >>> import topoopt
    >>> from topoopt.partition.generate import examples
    >>> result = topoopt.solve(examples()[1], "partition/ils", seed=0, restarts=2)
    >>> result.objective, result.termination.value
    (0.13578, 'completed')
    """

    name = "partition/ils"
    family = "partition"
    stochastic = True

    def _solve(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        *,
        restarts: int = RESTARTS,
        patience: int = PATIENCE,
        noise: float = NOISE,
    ) -> Attempt:
        restarts = option_int("restarts", restarts, 0, 10**9)
        patience = option_int("patience", patience, 0, 10**9)
        if isinstance(noise, bool) or not isinstance(noise, int | float):
            raise InvalidOptionError(f"noise: expected a number, got {noise!r}")
        if not (math.isfinite(noise) and 0.0 <= noise <= 10.0):
            raise InvalidOptionError(f"noise: expected 0 <= noise <= 10, got {noise!r}")
        greedy = get_solver("partition/greedy-lowcut").solve(
            instance, time_limit=None if math.isinf(ctx.time_left()) else ctx.time_left()
        )
        if greedy.solution is None:
            return Attempt(None, greedy.termination, message=f"greedy-lowcut: {greedy.message}")
        best, done = improve(
            instance,
            greedy.solution.indices(instance),
            ctx,
            restarts=restarts,
            patience=patience,
            noise=noise,
        )
        solution = Assignment.from_indices(instance, best.tolist())
        message = (
            f"greedy-lowcut {greedy.objective:.6g}, then {done} restart(s) of randomized "
            f"V-cycles: {evaluate(instance, solution):.6g}"
        )
        if ctx.expired():
            return Attempt(solution, TerminationReason.TIME_LIMIT, message=message + "; time limit")
        return Attempt(solution, TerminationReason.COMPLETED, message=message)


__all__ = ["IteratedSearchSolver", "descend", "improve", "iterate", "restart", "vcycle"]
