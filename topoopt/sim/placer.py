"""The placement step: where a job that may start now runs.

A job on one node (:class:`~topoopt.sim.jobs.Shape` not exclusive) goes to the node with the
fewest free GPUs that still hold it (best fit; the lowest index on ties). A job of whole nodes
becomes a placement instance of the idle nodes (:func:`topoopt.placement.cluster.from_topology`:
the switches of the cluster's pod level are the minipods) solved by **any placement solver by
name** with the per-decision time limit; the result's rank order names the node of every
node-level rank. Every solver result is checked by the placement family before it is returned,
so an infeasible placement never reaches the cluster.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from topoopt.core.errors import TopooptError
from topoopt.sim.cluster import Cluster, Occupancy
from topoopt.sim.jobs import Job, Shape

DEFAULT_SOLVER = "placement/best-fit"
EXACT_DISPATCH = "gpuselect/auto"
"""The exact gpuselect solver that gives the best bandwidth a dispatch pool offers."""


@dataclass(frozen=True)
class Decision:
    """Where a job runs.

    Attributes
    ----------
    nodes
        Node names in rank order (one per node-level rank; one name for a single-node job).
    gpus_by_node
        GPUs held, by node index.
    solver
        The placement solver that decided (``None`` for the single-node best fit).
    objective
        The placement family's objective of the placement (Arnold eq. 2), when a solver
        decided.
    dp_minipods, pp_minipods
        The most minipods a DP / PP group touches (1 for a single-node job).
    decision_s
        Wall time of the decision.
    devices
        The GPU indices of each node, when the decision chose them (a gpuselect dispatch);
        ``None``: the lowest free ones.
    bandwidth_ratio
        For a gpuselect dispatch: the chosen GPUs' collective bandwidth over the best the
        candidate hosts offered (1 when the dispatcher found the best).
    """

    nodes: tuple[str, ...]
    gpus_by_node: dict[int, int]
    solver: str | None
    objective: float | None
    dp_minipods: int
    pp_minipods: int
    decision_s: float
    devices: dict[int, tuple[int, ...]] | None = None
    bandwidth_ratio: float | None = None


class PlacementFailed(TopooptError):
    """The solver returned no placement although enough nodes were idle (the job is rejected
    with this message)."""


class Placer:
    """Decides where jobs run on ``cluster`` (module docstring).

    Parameters
    ----------
    cluster
        The cluster.
    solver
        A placement solver name (short names as in ``topoopt solve``: ``exact-mip``).
    time_limit
        Seconds per decision (``None``: the solver's own default).
    alpha
        Weight of the DP spread in the placement objective (Arnold eq. 2); the run's
        performance model gives it by default (:meth:`PerformanceModel.alpha
        <topoopt.sim.performance.PerformanceModel.alpha>`).
    seed, backend
        Passed to the solver.
    dispatch
        A gpuselect solver (``gpuselect/eha``, ``gpuselect/auto``, ...) that picks the GPUs of
        jobs of 2 GPUs up to a node's among the free GPUs of the ``pool_hosts`` hosts with the
        most free GPUs (BandPilot's setting; the job may span them); ``None``: best fit on one
        node.
    host_type, inter_gbps
        The hosts' type (its built-in GPU topology, :mod:`topoopt.gpuselect.topologies`) and
        the bandwidth between hosts (GB/s) of the dispatch's bandwidth model.
    host_table
        An nccl-tests per-subset CSV of one host (``data:`` names allowed) to use instead of the
        built-in topology: the dispatch then searches with the measured bandwidths (a
        bottleneck model across hosts, :func:`topoopt.gpuselect.pool.from_cluster`).
    """

    def _bandwidth_model(self, host_table: str | None) -> Any:
        """The dispatch's bandwidth model, built once (from two hosts of ``host_type``)."""
        from topoopt.gpuselect.pool import from_cluster

        tables = None if host_table is None else {self.host_type: host_table}
        hosts = {"h0": self.host_type, "h1": self.host_type}
        pair = from_cluster(hosts, k=1, tables=tables, inter_gbps=self.inter_gbps)
        return pair.bandwidth

    def __init__(
        self,
        cluster: Cluster,
        solver: str = DEFAULT_SOLVER,
        *,
        time_limit: float | None = 1.0,
        alpha: float = 0.5,
        seed: int = 0,
        backend: str | None = None,
        dispatch: str | None = None,
        host_type: str = "H100",
        inter_gbps: float = 50.0,
        pool_hosts: int = 4,
        host_table: str | None = None,
    ) -> None:
        from topoopt.core.registry import resolve_solver

        self.cluster = cluster
        self.solver = resolve_solver(solver, "placement")
        self.dispatch = None if dispatch is None else resolve_solver(dispatch, "gpuselect")
        self.host_type = host_type
        self.inter_gbps = inter_gbps
        if isinstance(pool_hosts, bool) or not isinstance(pool_hosts, int) or pool_hosts < 1:
            raise TopooptError(f"pool_hosts: must be an integer >= 1, got {pool_hosts!r}")
        self.pool_hosts = pool_hosts
        self._model = None if dispatch is None else self._bandwidth_model(host_table)
        self.time_limit = time_limit
        self.alpha = alpha
        self.seed = seed
        self.backend = backend

    def place(
        self,
        job: Job,
        shape: Shape,
        occupancy: Occupancy,
        allowed: np.ndarray | None = None,
    ) -> Decision | None:
        """Where ``job`` runs now, or ``None`` when it does not fit the free GPUs.

        ``allowed`` (a boolean mask over the nodes) restricts the nodes it may use (a
        reservation keeps jobs out of its zone, :mod:`topoopt.sim.reservation`).

        Raises
        ------
        PlacementFailed
            When the solver finds no placement on enough idle nodes.
        """
        start = time.perf_counter()
        if not shape.exclusive and self.dispatch is not None and shape.gpus >= 2:
            return self._dispatch(self.dispatch, shape, occupancy, allowed, start)
        if not shape.exclusive:
            fits = occupancy.free >= shape.gpus
            candidates = np.flatnonzero(fits if allowed is None else fits & allowed)
            if not candidates.size:
                return None
            node = int(candidates[np.argmin(occupancy.free[candidates])])
            return Decision(
                (self.cluster.nodes[node],),
                {node: shape.gpus},
                None,
                None,
                1,
                1,
                time.perf_counter() - start,
            )
        idle = occupancy.idle_nodes()
        if allowed is not None:
            idle = idle[allowed[idle]]
        if len(idle) < shape.nodes:
            return None
        return self._solve(job, shape, idle, start)

    def _dispatch(
        self,
        dispatcher: str,
        shape: Shape,
        occupancy: Occupancy,
        allowed: np.ndarray | None,
        start: float,
    ) -> Decision | None:
        """BandPilot's dispatch: the ``pool_hosts`` hosts with the most free GPUs (the lowest
        index on ties) become a gpuselect instance (their free GPUs, ``k`` = the job's GPUs)
        that the dispatcher solves; ``gpuselect/auto`` (exact) gives the best bandwidth the
        pool offered, for :attr:`Decision.bandwidth_ratio`."""
        import topoopt
        from topoopt.gpuselect.pool import from_cluster

        free = occupancy.free if allowed is None else np.where(allowed, occupancy.free, 0)
        order = np.lexsort((np.arange(len(free)), -free))[: self.pool_hosts]
        pool = [int(n) for n in order if free[n] > 0]
        if int(free[pool].sum()) < shape.gpus:
            return None
        names = [self.cluster.nodes[n] for n in pool]
        instance = from_cluster(
            {name: self.host_type for name in names},
            k=shape.gpus,
            idle={
                name: np.flatnonzero(~occupancy.busy[n]).tolist()
                for name, n in zip(names, pool, strict=True)
            },
            gpus=self.cluster.node_size,
            model=self._model,
            name="dispatch",
        )
        result = topoopt.solve(instance, dispatcher, time_limit=self.time_limit, seed=self.seed)
        if not result.is_ok or result.solution is None or not result.objective:
            raise PlacementFailed(
                f"{dispatcher} found no {shape.gpus} GPUs among {len(pool)} hosts "
                f"({result.termination.value}): {result.message}"
            )
        best = result.objective
        if dispatcher != EXACT_DISPATCH:
            best = max(best, float(topoopt.solve(instance, EXACT_DISPATCH).objective or 0.0))
        devices: dict[int, list[int]] = {}
        for host, gpu in result.to_dict()["solution"]["gpus"]:
            devices.setdefault(self.cluster.index[host], []).append(int(gpu))
        return Decision(
            tuple(self.cluster.nodes[n] for n in devices),
            {n: len(d) for n, d in devices.items()},
            dispatcher,
            result.objective,
            1,
            1,
            time.perf_counter() - start,
            devices={n: tuple(sorted(d)) for n, d in devices.items()},
            bandwidth_ratio=min(1.0, result.objective / best),
        )

    def _solve(self, job: Job, shape: Shape, idle: np.ndarray, start: float) -> Decision:
        import topoopt
        from topoopt.placement.cluster import from_topology
        from topoopt.placement.solution import rank_order

        cluster = self.cluster
        instance = from_topology(
            cluster.topology,
            level=cluster.pod_level,
            free=[cluster.nodes[i] for i in idle.tolist()],
            dp=shape.dp,
            tp=shape.tp,
            pp=shape.pp,
            alpha=self.alpha,
            gpus_per_node=int(cluster.node_gpus[idle[0]]),
            name=f"job-{job.id}",
        )
        result = topoopt.solve(
            instance,
            self.solver,
            time_limit=self.time_limit,
            seed=self.seed,
            backend=self.backend,
        )
        if not result.is_ok or result.solution is None:
            raise PlacementFailed(
                f"{self.solver} found no placement of {shape.nodes} nodes on {len(idle)} idle "
                f"nodes ({result.termination.value}): {result.message}"
            )
        nodes = tuple(rank_order(instance, result.solution))
        index = cluster.index
        return Decision(
            nodes,
            {index[name]: int(cluster.node_gpus[index[name]]) for name in nodes},
            self.solver,
            result.objective,
            max(1, int(result.metrics["dp_spread"])),
            max(1, int(result.metrics["pp_spread"])),
            time.perf_counter() - start,
        )
