"""``ocs/oxc-greedy``: the paper's Algorithms 2 and 3 as a one-pass constructive heuristic.

* **Algorithm 2** (OXC topology of a group): jobs by decreasing traffic; a PS job's server goes
  on the pod with the least OXC traffic so far (lines 5-8; among the job's pods, where its
  workers are); a RAR job's ring is formed by Algorithm 3 (lines 16-18); the group's circuits
  follow from its traffic (lines 20-21, here exact: :func:`topoopt.ocs.phases.comm_time`).
  The GPUs of every job are given by the instance, so lines 10-15 (placing parallel units on
  the least-loaded pod) have nothing to decide; ``docs/ocs.md`` says so.
* **Algorithm 3** (ring formation reusing circuits, :func:`algorithm3_ring`): take the
  connections that already exist between the job's pods, cap every degree at 2 by removing,
  at the busiest pod, the edge to its busiest neighbour (lines 3-8), sever sub-rings that do not
  span all the pods (line 9) and join the resulting paths one after the other into one ring
  (line 10).
* **Grouping** (ours; the paper's Algorithm 1 searches it): jobs by decreasing traffic, each
  put in the group whose round time, with the jobs placed so far, grows least (ties: group 1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import networkx as nx

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.ocs.choices import Choice, demand, fixed_choice, is_free
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.solution import round_of, schedule
from topoopt.ocs.solvers.routing import comm_or_inf
from topoopt.ocs.traffic import Demand


def algorithm3_ring(pods: Sequence[int], existing: Iterable[tuple[int, int]]) -> tuple[int, ...]:
    """A ring over ``pods`` that reuses as many ``existing`` connections as Algorithm 3 keeps
    (module docstring).

    Examples
    --------
    Pods 0-1-2 already form a triangle and 3 hangs off 2: the triangle is cut at the busiest
    pod and the pieces joined.

    >>> algorithm3_ring([0, 1, 2, 3], [(0, 1), (1, 2), (0, 2), (2, 3)])
    (0, 1, 2, 3)
    """
    graph = nx.Graph()
    graph.add_nodes_from(pods)
    members = set(pods)
    graph.add_edges_from((a, b) for a, b in existing if a in members and b in members and a != b)
    while True:  # lines 3-8: degrees at most 2
        over = [n for n in pods if graph.degree(n) > 2]
        if not over:
            break
        node = max(over, key=lambda n: (graph.degree(n), -pods.index(n)))
        neighbour = max(graph.neighbors(node), key=lambda n: (graph.degree(n), -pods.index(n)))
        graph.remove_edge(node, neighbour)
    pieces = []
    for component in sorted(
        nx.connected_components(graph), key=lambda c: min(pods.index(n) for n in c)
    ):
        sub = graph.subgraph(component).copy()
        if len(component) == len(pods) and sub.number_of_edges() == len(pods) > 2:
            return tuple(_walk_cycle(sub, pods))
        if sub.number_of_edges() == len(component) > 2:  # line 9: sever a sub-ring
            first = min(component, key=pods.index)
            sub.remove_edge(first, min(sub.neighbors(first), key=pods.index))
        pieces.append(_walk_path(sub, pods))
    return tuple(n for piece in pieces for n in piece)  # line 10: join the paths in turn


def _walk_path(path: nx.Graph, pods: Sequence[int]) -> list[int]:
    """The nodes of a path graph from one end (the end listed first in ``pods``)."""
    if path.number_of_nodes() == 1:
        return list(path.nodes)
    ends = sorted((n for n in path.nodes if path.degree(n) == 1), key=pods.index)
    return list(nx.dfs_preorder_nodes(path, ends[0]))


def _walk_cycle(cycle: nx.Graph, pods: Sequence[int]) -> list[int]:
    start = min(cycle.nodes, key=pods.index)
    return list(nx.dfs_preorder_nodes(cycle, start))


def propose_rings(instance: OcsInstance, job: int, load: Demand) -> list[tuple[int, ...]]:
    """Algorithm 3's ring for ``job`` given the connections of ``load`` (for the best response
    of :mod:`topoopt.ocs.solvers.routing`)."""
    existing = [key for key, amount in load.pairs.items() if amount > 0]
    return [algorithm3_ring(instance.job_pods(job), existing)]


def by_traffic(instance: OcsInstance, jobs: Iterable[int]) -> list[int]:
    """``jobs`` by decreasing traffic ``F · G`` (Algorithm 2 line 1), ties by job order."""
    return sorted(
        jobs, key=lambda j: (-instance.jobs[j].traffic_bytes * instance.jobs[j].total_gpus, j)
    )


def algorithm2_choice(instance: OcsInstance, job: int, load: Demand) -> Choice:
    """``job``'s server (the job's pod with the least OXC traffic in ``load``) or ring
    (Algorithm 3), or its fixed choice."""
    if not is_free(instance, job):
        return fixed_choice(instance, job)
    if instance.jobs[job].type == "PS":
        oxc = [0.0] * instance.n_pods
        for (a, b), amount in load.pairs.items():
            oxc[a] += amount
            oxc[b] += amount
        return min(instance.job_pods(job), key=lambda p: oxc[p])
    return propose_rings(instance, job, load)[0]


def algorithm2(instance: OcsInstance, jobs: Iterable[int]) -> tuple[dict[int, Choice], Demand]:
    """Algorithm 2 on one group: the choices of ``jobs`` and the group's traffic."""
    load = Demand.empty(instance.n_pods)
    choices: dict[int, Choice] = {}
    for j in by_traffic(instance, jobs):
        choices[j] = algorithm2_choice(instance, j, load)
        load.add(demand(instance, j, choices[j]))
    return choices, load


@register_solver
class OxcGreedySolver(Solver):
    """Algorithms 2 and 3: traffic-sorted servers and rings reusing circuits, greedy grouping."""

    name = "ocs/oxc-greedy"
    family = "ocs"
    complete = False

    def _solve(self, instance: OcsInstance, ctx: SolveContext) -> Attempt:
        groups = [0] * instance.n_jobs
        loads = {1: Demand.empty(instance.n_pods), 2: Demand.empty(instance.n_pods)}
        choices: dict[int, Choice] = {}
        for j in by_traffic(instance, range(instance.n_jobs)):
            best: tuple[float, int, Choice, Demand] | None = None
            for g in (1, 2):
                choice = algorithm2_choice(instance, j, loads[g])
                trial = Demand(dict(loads[g].pairs), list(loads[g].sent), list(loads[g].received))
                trial.add(demand(instance, j, choice))
                comm = {h: comm_or_inf(instance, trial if h == g else loads[h]) for h in (1, 2)}
                placed = [x if i != j else g for i, x in enumerate(groups)]
                value = (
                    round_of(instance, placed, comm)
                    if all(map(math.isfinite, comm.values()))
                    else math.inf
                )
                if best is None or value < best[0]:
                    best = (value, g, choice, trial)
            assert best is not None
            _, g, choice, trial = best
            groups[j], choices[j], loads[g] = g, choice, trial
        found = schedule(instance, groups, choices)
        if found is None:
            return Attempt(
                None,
                TerminationReason.COMPLETED,
                message="the greedy grouping left a group whose traffic the OXC ports cannot serve",
            )
        return Attempt(found, TerminationReason.COMPLETED)
