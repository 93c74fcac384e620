"""``partition/metis``: METIS k-way partitioning (through ``pymetis``), mapped onto the clusters
and repaired to their capacities.

METIS (Karypis & Kumar 1998) minimises the *plain* edge cut under balance targets; it knows
neither the cluster graph nor eq. 9's cost ``w(a, b)``. The baseline therefore runs in three
steps:

1. **Partition.** One part per cluster that holds the smallest vertex with GPUs (others can
   take only vertices without GPUs; METIS reports such degenerate targets), k-way multilevel
   partitioning (``recursive=False``) with

   * vertex weights = the vertices' GPUs;
   * target part weights ``tpwgts`` = the clusters' capacities over their sum;
   * edge weights = traffic scaled to integers: ``max(1, round(traffic · s))`` with
     ``s = min(EDGE_RESOLUTION / max traffic, 2**30 / (2 · total traffic))``, so the largest
     traffic becomes :data:`EDGE_RESOLUTION` (relative rounding error of a small edge at most
     ``1 / (2 · EDGE_RESOLUTION)`` of the largest) and METIS's 32-bit sums cannot overflow.
     Edges without traffic are left out (METIS needs positive weights);
   * load imbalance ``ufactor`` (thousandths over the target): by default the job's slack,
     ``floor(1000 · (capacity / GPUs - 1))``, so that a part at its allowed maximum just fills
     its cluster (``target · (1 + ufactor / 1000) = capacity``); at least 1.
   * METIS's seed = the call's seed (``stochastic``).

2. **Mapping.** The parts were sized for the clusters in order, but any permutation of the
   clusters is a candidate: the one minimising first the overflow (GPUs over capacity) and
   then the eq. 9 cut of the part graph is chosen — by enumeration of all ``k!`` permutations
   for up to :data:`MAX_ENUMERATED` clusters, else by pairwise exchanges from the identity
   until none improves (a local search of this quadratic assignment problem).

3. **Repair.** While a cluster is over capacity, the vertex of an over-full cluster whose move
   into a cluster with room increases the cut least is moved
   (:func:`~topoopt.partition.solvers.moves.repair`); if no such move exists (vertices of
   different sizes), an exact bin packing preferring the current clusters
   (:func:`~topoopt.partition.solvers.moves.pack`) is used. With ``refine=True``, FM passes
   (:meth:`~topoopt.partition.solvers.moves.Refiner.refine`) follow.

If ``pymetis`` cannot be imported, :meth:`MetisSolver.unsupported_reason` says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import itertools
import math
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.core.validate import option_int
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment
from topoopt.partition.solvers.moves import JobArrays, Refiner, Stop, pack, repair, too_large

EDGE_RESOLUTION = 10_000
"""Integer edge weight of the largest traffic."""
MAX_ENUMERATED = 8
"""Most clusters whose permutations are all tried by the mapping step (8! = 40,320)."""
_BATCH = 20_000


def edge_weights(traffic: np.ndarray) -> np.ndarray:
    """Positive integer edge weights proportional to ``traffic`` (module docstring).

    Examples
    --------
    >>> edge_weights(np.array([12.0, 0.1, 3.0])).tolist()
    [10000, 83, 2500]
    """
    if not len(traffic):
        return np.zeros(0, dtype=np.int64)
    scale = min(EDGE_RESOLUTION / traffic.max(), 2**30 / (2.0 * traffic.sum()))
    return np.maximum(1, np.rint(traffic * scale)).astype(np.int64)


def default_ufactor(arrays: JobArrays) -> int:
    """The imbalance (in thousandths) at which a part may just fill its cluster.

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> default_ufactor(JobArrays.of(examples()[0]))  # 16 GPUs of capacity for 8
    1000
    """
    gpus = int(arrays.gpus.sum())
    if gpus == 0:
        return 1
    return max(1, math.floor(1000 * (int(arrays.capacity.sum()) / gpus - 1)))


def usable_clusters(arrays: JobArrays) -> np.ndarray:
    """The clusters that get a METIS part: those that hold the smallest vertex with GPUs
    (smaller ones could only take vertices without GPUs, and METIS reports degenerate targets).

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> usable_clusters(JobArrays.of(examples()[0])).tolist()
    [0, 1, 2]
    """
    sizes = arrays.gpus[arrays.gpus > 0]
    if not len(sizes):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(arrays.capacity >= sizes.min())


def _flush_c_stdout() -> None:
    with contextlib.suppress(OSError, AttributeError, TypeError):  # no C library (Windows)
        ctypes.CDLL(None).fflush(None)


@contextmanager
def captured_stdout() -> Iterator[list[str]]:
    """Capture what C code writes to the process's standard output (file descriptor 1) while
    the block runs; the text is appended to the yielded list. METIS prints diagnostics on
    degenerate inputs (e.g. more parts than it can fill), which would otherwise corrupt a
    command's JSON output."""
    captured: list[str] = []
    sys.stdout.flush()
    _flush_c_stdout()
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(1)
        try:
            os.dup2(sink.fileno(), 1)
            yield captured
        finally:
            _flush_c_stdout()
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            captured.append(sink.read().decode(errors="replace"))


def metis_parts(
    arrays: JobArrays, clusters: np.ndarray, ufactor: int, seed: int
) -> tuple[np.ndarray, str]:
    """The METIS part of every vertex, part ``i`` sized for cluster ``clusters[i]``, and what
    METIS printed (diagnostics, usually nothing)."""
    import pymetis

    nparts = len(clusters)
    if nparts == 1:
        return np.zeros(arrays.n, dtype=np.int64), ""
    heavy = arrays.traffic > 0
    sub = JobArrays.build(
        arrays.gpus,
        arrays.capacity,
        arrays.weights,
        arrays.u[heavy],
        arrays.v[heavy],
        arrays.traffic[heavy],
    )
    capacity = arrays.capacity[clusters].astype(float)
    options = pymetis.Options(seed=int(seed) % 2**31, ufactor=int(ufactor))
    graph: dict[str, Any]
    if hasattr(pymetis, "CSRAdjacency"):  # pymetis >= 2025.2
        graph = {"adjacency": pymetis.CSRAdjacency(sub.indptr.tolist(), sub.indices.tolist())}
    else:
        graph = {"xadj": sub.indptr.tolist(), "adjncy": sub.indices.tolist()}
    with captured_stdout() as printed:
        _, membership = pymetis.part_graph(
            nparts,
            **graph,
            vweights=sub.gpus.tolist(),
            eweights=edge_weights(sub.data).tolist(),
            tpwgts=(capacity / capacity.sum()).tolist(),
            recursive=False,
            options=options,
        )
    said = " ".join(line.strip(" \t*") for line in "".join(printed).splitlines() if line.strip())
    return np.asarray(membership, dtype=np.int64), said


def best_mapping(
    traffic: np.ndarray, loads: np.ndarray, clusters: np.ndarray, arrays: JobArrays
) -> np.ndarray:
    """The cluster of every part: the permutation of ``clusters`` of least (overflow, cut)
    (module docstring), with ``traffic[p, q]`` the traffic between parts and ``loads`` their
    GPUs.

    Examples
    --------
    Two parts, the heavier one should go to the larger cluster:

    >>> from topoopt.partition.generate import examples
    >>> arrays = JobArrays.of(examples()[0])  # capacities 8, 4, 4
    >>> t = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> best_mapping(t, np.array([2, 6]), np.array([1, 0]), arrays).tolist()
    [1, 0]
    """
    p = len(clusters)
    cap, w = arrays.capacity, arrays.weights

    def score(perms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        chosen = clusters[perms]  # (batch, p): cluster of every part
        over = np.maximum(0, loads[None, :] - cap[chosen]).sum(axis=1)
        cost = (w[chosen[:, :, None], chosen[:, None, :]] * traffic[None]).sum(axis=(1, 2)) / 2
        return over, cost

    if p <= MAX_ENUMERATED:
        best: tuple[float, float, int] | None = None
        best_perm = np.arange(p)
        perms_iter = itertools.permutations(range(p))
        while batch := list(itertools.islice(perms_iter, _BATCH)):
            perms = np.array(batch, dtype=np.int64)
            over, cost = score(perms)
            i = int(np.lexsort((cost, over))[0])
            if best is None or (over[i], cost[i]) < best[:2]:
                best, best_perm = (float(over[i]), float(cost[i]), i), perms[i]
        return clusters[best_perm]
    perm = np.arange(p)
    over, cost = score(perm[None])
    current = (float(over[0]), float(cost[0]))
    improved = True
    while improved:
        improved = False
        for i, j in itertools.combinations(range(p), 2):
            trial = perm.copy()
            trial[i], trial[j] = trial[j], trial[i]
            over, cost = score(trial[None])
            if (float(over[0]), float(cost[0])) < current:
                perm, current, improved = trial, (float(over[0]), float(cost[0])), True
    return clusters[perm]


def to_clusters(
    arrays: JobArrays, parts: np.ndarray, clusters: np.ndarray, stop: Stop
) -> np.ndarray | None:
    """The METIS parts mapped onto clusters (:func:`best_mapping`) and repaired to the
    capacities: a cluster per vertex, ``None`` if no repair exists or ``stop()``.

    Examples
    --------
    Everything in one part, more than any cluster holds: repair spreads it.

    >>> from topoopt.partition.generate import examples
    >>> arrays = JobArrays.of(examples()[0])
    >>> part = to_clusters(arrays, np.zeros(4, dtype=np.int64), np.array([1]), lambda: False)
    >>> arrays.feasible(part)
    True
    """
    nparts = len(clusters)
    loads = np.bincount(parts, weights=arrays.gpus, minlength=nparts).astype(np.int64)
    between = np.zeros((nparts, nparts))
    np.add.at(between, (parts[arrays.u], parts[arrays.v]), arrays.traffic)
    between = between + between.T
    np.fill_diagonal(between, 0.0)
    mapping = best_mapping(between, loads, clusters, arrays)
    part = mapping[parts]
    fixed = repair(arrays, part, stop)
    if fixed is None and not stop():
        fixed = pack(arrays, part, stop)
    return fixed


@register_solver
class MetisSolver(Solver):
    """METIS k-way partition (pymetis) sized by capacity, mapped onto clusters, repaired.

    Options: ``ufactor`` METIS load imbalance in thousandths (``None``: the job's slack, see
    the module docstring); ``refine`` adds FM passes after the repair.

    Examples
    --------
    >>> import topoopt
    >>> from topoopt.partition.generate import examples
    >>> result = topoopt.solve(examples()[1], "partition/metis", seed=0)
    >>> result.objective >= 0.13578  # the optimum; METIS spreads over all 4 clusters
    True
    """

    name = "partition/metis"
    family = "partition"
    stochastic = True

    @classmethod
    def unsupported_reason(cls, instance: PartitionInstance) -> str | None:
        """Why METIS cannot run: ``pymetis`` missing, or the cost matrix too large."""
        if importlib.util.find_spec("pymetis") is None:
            return "the pymetis package is not installed (pip install pymetis)"
        return too_large(instance)

    def _solve(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        *,
        ufactor: int | None = None,
        refine: bool = False,
    ) -> Attempt:
        arrays = JobArrays.of(instance)
        if ufactor is None:
            ufactor = default_ufactor(arrays)
        ufactor = option_int("ufactor", ufactor, 1, 10**6)
        clusters = usable_clusters(arrays)
        stop = ctx.expired
        if not len(clusters):  # then no vertex has GPUs: one cluster holds them all
            return Attempt(
                Assignment.from_indices(instance, [0] * arrays.n),
                TerminationReason.COMPLETED,
                message="no vertex has GPUs: all in the first cluster",
            )
        parts, said = metis_parts(arrays, clusters, ufactor, ctx.seed)
        part = to_clusters(arrays, parts, clusters, stop)
        if part is None:
            if stop():
                return Attempt(
                    None, TerminationReason.TIME_LIMIT, message="time limit during the repair"
                )
            return Attempt(
                None,
                TerminationReason.INFEASIBLE,
                message="no assignment fits the capacities (exhaustive bin packing of the "
                "vertices' GPUs)",
            )
        message = f"METIS into {len(clusters)} part(s), ufactor {ufactor}"
        if said:
            message += f" (METIS said: {said})"
        termination = TerminationReason.COMPLETED
        if refine:
            refiner = Refiner(arrays, part)
            if refiner.refine(stop):
                termination = TerminationReason.TIME_LIMIT
                message += ", refinement stopped by the time limit"
            part = refiner.part
        return Attempt(
            Assignment.from_indices(instance, part.tolist()), termination, message=message
        )


__all__ = ["MetisSolver", "best_mapping", "edge_weights", "to_clusters", "usable_clusters"]
