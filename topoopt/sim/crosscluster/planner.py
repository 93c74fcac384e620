"""How a job runs on the GPUs its policy gave it: a configuration ``(d, p)`` and the GPU of
every (replica, stage).

* :func:`naive_plan` — no parallelism automation: the shallowest pipeline the model's memory
  allows (pure data parallelism for the models that fit one GPU, the configuration of
  SpiderFlow's own motivation runs, Fig. 1 and A.2), ranks laid over the GPUs in order
  (clusters, then nodes, then indices) with data parallelism innermost, Megatron-LM's rank
  order: stage ``s`` of replica ``j`` is rank ``s · d + j`` (a *contiguous split*).
* :func:`tpa_plan` — SpiderFlow's two-level TPA (§4.2) on the cost model: for every pipeline
  depth ``p`` the model allows (divisors of the GPUs, :meth:`Model.stage_choices
  <topoopt.sim.crosscluster.models.Model.stage_choices>`) the job is the grid graph of its
  ``d × p`` GPUs — pipeline edges between consecutive stages of a replica (``m · A`` bytes a
  step), a ring of data-parallel edges around each stage's replicas (``2 (d - 1) / d · g_s``
  bytes, what each ring link carries) — and a partition solver cuts it: first across the
  clusters (capacity: the GPUs the job has there; costs ``1 / β``, eq. 9), then, inside every
  cluster where the job has several nodes, across those nodes (costs ``1 / inter-node``). The
  configuration with the shortest step (:func:`~topoopt.sim.crosscluster.cost.step_time`)
  wins; a depth whose compute alone is no shorter than the best step so far is skipped.
  ``partition/greedy-lowcut`` is SpiderFlow's inter-cluster heuristic (the first level of
  ``partition/heuristic-ilp``); ``partition/genetic`` the DT-FM-style baseline.

The intra-cluster level of ``partition/heuristic-ilp`` (a ``parallelconfig/mip`` per cluster,
each cluster its own ``(d_c, p_c)``) does not fit the uniform ``d × p`` grid the cost model
prices; the depth search with the cost model takes its place (``docs/sim.md``).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topoopt.core.errors import TopooptError
from topoopt.core.registry import get_solver
from topoopt.partition.instance import PartitionInstance
from topoopt.sim.crosscluster.cost import (
    Layout,
    Network,
    StepTime,
    activation_bytes,
    compute_time,
    micro_batches,
    stage_figures,
    step_time,
)
from topoopt.sim.crosscluster.models import Model
from topoopt.sim.crosscluster.state import Gpu


@dataclass(frozen=True)
class Plan:
    """A job's configuration and GPUs.

    Attributes
    ----------
    gpus
        ``gpus[j][s]``: the GPU ``(cluster, node, index)`` of replica ``j``, stage ``s``.
    time
        Its step under the cost model.
    partitioner
        The partition solver that placed it (``None``: the naive contiguous split).
    partition_s
        Wall time spent in the partition solver.
    """

    gpus: tuple[tuple[Gpu, ...], ...]
    time: StepTime
    partitioner: str | None = None
    partition_s: float = 0.0
    tried: tuple[int, ...] = field(default=())
    """The pipeline depths priced."""

    def layout(self) -> Layout:
        """The plan's :class:`~topoopt.sim.crosscluster.cost.Layout`."""
        return layout_of(self.gpus)


def layout_of(grid: Sequence[Sequence[Gpu]]) -> Layout:
    """The layout of a grid of GPUs."""
    cells = np.asarray(grid, dtype=np.int64)
    return Layout(cells[:, :, 0], cells[:, :, 1])


def naive_plan(model: Model, gpus: Sequence[Gpu], net: Network) -> Plan:
    """The naive plan (module docstring); ``gpus`` in cluster, node, index order."""
    total = len(gpus)
    p = model.stage_choices(total)[0]
    d = total // p
    grid = tuple(tuple(gpus[s * d + j] for s in range(p)) for j in range(d))
    return Plan(grid, step_time(model, layout_of(grid), net), tried=(p,))


def _grid_graph(model: Model, d: int, p: int) -> tuple[list[str], list[tuple[str, str, float]]]:
    """Vertices ``s{s}r{j}`` and edges (GB per step) of a ``d × p`` job (module docstring)."""
    names = [f"s{s}r{j}" for s in range(p) for j in range(d)]
    _, grads = stage_figures(model, p)
    pp_gb = micro_batches(d, p) * activation_bytes(model) / 1e9
    dp_gb = 2 * (d - 1) / d * grads / 1e9 if d > 1 else 0.0
    edges = []
    for s in range(p):
        for j in range(d):
            if s + 1 < p:
                edges.append((f"s{s}r{j}", f"s{s + 1}r{j}", pp_gb))
            if d > 2 or (d == 2 and j == 0):
                edges.append((f"s{s}r{j}", f"s{s}r{(j + 1) % d}", dp_gb))
    return names, edges


def _cut(
    solver: str,
    bins: Mapping[str, int],
    links: list[tuple[str, str, float]],
    vertices: list[str],
    edges: list[tuple[str, str, float]],
    *,
    seed: int,
    options: Mapping[str, Any],
) -> dict[str, str]:
    """``vertex -> bin`` from ``solver`` on one partition instance (1 GPU per vertex)."""
    if len(bins) == 1:
        only = next(iter(bins))
        return dict.fromkeys(vertices, only)
    keep = set(vertices)
    instance = PartitionInstance(
        "job",
        list(bins.items()),
        links,
        [(v, 1) for v in vertices],
        [e for e in edges if e[0] in keep and e[1] in keep],
    )
    result = get_solver(solver).solve(instance, seed=seed, **options)
    if result.solution is None:
        raise TopooptError(f"{solver} placed no job graph: {result.termination}: {result.message}")
    return result.solution.as_dict()


def _place(
    model: Model,
    d: int,
    p: int,
    gpus: Sequence[Gpu],
    net: Network,
    solver: str,
    seed: int,
    options: Mapping[str, Any],
) -> tuple[tuple[Gpu, ...], ...]:
    """The grid of ``d × p`` cells on ``gpus``: clusters first, then nodes (module
    docstring)."""
    by_node: dict[int, list[Gpu]] = {}
    for gpu in gpus:
        by_node.setdefault(gpu[1], []).append(gpu)
    clusters = sorted({gpu[0] for gpu in gpus})
    vertices, edges = _grid_graph(model, d, p)
    capacity = {str(c): sum(1 for g in gpus if g[0] == c) for c in clusters}
    links = [
        (str(a), str(b), float(net.beta_gbps[a, b]))
        for i, a in enumerate(clusters)
        for b in clusters[i + 1 :]
    ]
    where = _cut(solver, capacity, links, vertices, edges, seed=seed, options=options)
    cell: dict[str, Gpu] = {}
    for c in clusters:
        mine = [v for v in vertices if where[v] == str(c)]
        nodes = sorted({g[1] for g in gpus if g[0] == c})
        bins = {str(n): len(by_node[n]) for n in nodes}
        chain = [(str(a), str(b), float(net.inter_gbps[c])) for a, b in itertools.pairwise(nodes)]
        on = _cut(solver, bins, chain, mine, edges, seed=seed, options=options)
        for n in nodes:
            here = [v for v in mine if on[v] == str(n)]
            cell.update(zip(here, by_node[n], strict=True))
    return tuple(tuple(cell[f"s{s}r{j}"] for s in range(p)) for j in range(d))


def tpa_plan(
    model: Model,
    gpus: Sequence[Gpu],
    net: Network,
    solver: str = "partition/greedy-lowcut",
    *,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
) -> Plan:
    """TPA on the GPUs ``gpus`` (module docstring)."""
    best: tuple[tuple[tuple[Gpu, ...], ...], StepTime] | None = None
    spent = 0.0
    tried = []
    for p in model.stage_choices(len(gpus)):
        d = len(gpus) // p
        if best is not None and compute_time(model, d, p) >= best[1].step_s:
            continue
        started = time.perf_counter()
        grid = _place(model, d, p, gpus, net, solver, seed, options or {})
        spent += time.perf_counter() - started
        tried.append(p)
        cost = step_time(model, layout_of(grid), net)
        if best is None or cost.step_s < best[1].step_s:
            best = (grid, cost)
    assert best is not None  # stage_choices is never empty for a job the simulator runs
    return Plan(best[0], best[1], solver, spent, tuple(tried))


def reference_gpus(gpus: int, node_gpus: int) -> list[Gpu]:
    """``gpus`` GPUs filling nodes of ``node_gpus`` in order, in cluster 0 (the reference
    placement)."""
    return [(0, k // node_gpus, k % node_gpus) for k in range(gpus)]


def reference_network(net: Network) -> Network:
    """One cluster with the best intra-node and inter-node bandwidths of ``net``."""
    return Network(
        ("reference",),
        np.array([net.intra_gbps.max()]),
        np.array([net.inter_gbps.max()]),
        np.array([[math.inf]]),
    )


__all__ = [
    "Plan",
    "layout_of",
    "naive_plan",
    "reference_gpus",
    "reference_network",
    "tpa_plan",
]
