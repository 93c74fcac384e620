"""Choosing servers and rings for a set of jobs: Algorithm 3's ring formation and a greedy best
response (shared by the heuristics and by the no-TDM baseline of :mod:`topoopt.ocs.solution`).

* :func:`algorithm3_ring` (paper Algorithm 3, ring formation reusing circuits): take the
  connections that already exist between the job's pods, cap every degree at 2 by removing,
  at the busiest pod, the edge to its busiest neighbour (lines 3-8), sever sub-rings that do not
  span all the pods (line 9) and join the resulting paths one after the other into one ring
  (line 10).
* :func:`best_response`: jobs whose choice is free are taken by decreasing traffic; each takes
  the option that gives the group's traffic so far (the fixed jobs and the jobs already decided)
  the least exact communication time (the largest pod value of
  :class:`topoopt.ocs.incremental.Group`, which is :func:`topoopt.ocs.phases.network_comm`'s
  time), an option that cannot be served counting as infinitely slow; then, in up to
  ``passes`` rounds, each free job in turn moves to its best option against all the others
  when that is strictly faster. A RAR job over more than :data:`MAX_RING_OPTIONS` distinct
  rings only tries its pods' order and Algorithm 3's ring.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from topoopt.ocs.choices import Choice, demand, fixed_choice, is_free, option_count, options
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.phases import network_comm
from topoopt.ocs.traffic import Demand

if TYPE_CHECKING:
    import networkx as nx

MAX_RING_OPTIONS = 60
"""Most rings of one job the best response tries one by one (six pods have 60)."""


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
    import networkx as nx  # imported here: loading any instance imports this module

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
    import networkx as nx

    ends = sorted((n for n in path.nodes if path.degree(n) == 1), key=pods.index)
    return list(nx.dfs_preorder_nodes(path, ends[0]))


def _walk_cycle(cycle: nx.Graph, pods: Sequence[int]) -> list[int]:
    import networkx as nx

    start = min(cycle.nodes, key=pods.index)
    return list(nx.dfs_preorder_nodes(cycle, start))


def propose_rings(instance: OcsInstance, job: int, load: Demand) -> list[tuple[int, ...]]:
    """Algorithm 3's ring for ``job`` given the connections of ``load``."""
    existing = [key for key, amount in load.pairs.items() if amount > 0]
    return [algorithm3_ring(instance.job_pods(job), existing)]


def comm_or_inf(instance: OcsInstance, load: Demand) -> float:
    """The exact communication time of ``load`` (``inf`` when it cannot be served)."""
    comm = network_comm(instance, load)
    return math.inf if comm is None else comm.time_s


def candidates(
    instance: OcsInstance, job: int, existing: Iterable[tuple[int, int]] = ()
) -> list[Choice]:
    """The options the best response tries for ``job``: all of them, or for a ring with more
    than :data:`MAX_RING_OPTIONS` the pods' order and Algorithm 3's ring over the ``existing``
    connections."""
    if option_count(instance, job) <= MAX_RING_OPTIONS:
        return options(instance, job)
    pods = instance.job_pods(job)
    proposed: list[Choice] = [pods]
    ring = algorithm3_ring(pods, existing)
    if ring not in proposed:
        proposed.append(ring)
    return proposed


def by_traffic(instance: OcsInstance, jobs: Iterable[int]) -> list[int]:
    """``jobs`` by decreasing traffic ``F · G`` (Algorithm 2 line 1), ties by job order."""
    return sorted(
        jobs, key=lambda j: (-instance.jobs[j].traffic_bytes * instance.jobs[j].total_gpus, j)
    )


def best_response(
    instance: OcsInstance,
    jobs: Iterable[int],
    passes: int = 2,
    start: Mapping[int, Choice] | None = None,
    deadline: float | None = None,
) -> dict[int, Choice]:
    """Choices for ``jobs`` (one group): greedily by decreasing traffic, then up to ``passes``
    rounds in which each free job in turn takes its best option against all the others (module
    docstring). Jobs with a choice in ``start`` keep it instead of the greedy step (the passes
    still revise it): how a neighbouring group's choices are reused. The passes stop when
    ``time.perf_counter()`` passes ``deadline`` (the choices made so far are kept).

    Each option is scored incrementally (:class:`topoopt.ocs.incremental.Group`): the group's
    communication time is its largest pod value, and an option changes only its job's pods.
    """
    from topoopt.ocs.incremental import Footprints, Group

    jobs = list(jobs)
    start = start or {}
    prints = Footprints(instance)
    group = Group(instance)
    choices: dict[int, Choice] = {}
    for j in jobs:
        if not is_free(instance, j) or j in start:
            choices[j] = fixed_choice(instance, j) if not is_free(instance, j) else start[j]
            group.apply(1, prints(j, choices[j]))

    def best(j: int, incumbent: Choice | None) -> Choice:
        """The option of ``j`` that gives the group the least communication time (the
        incumbent, already in the group, unless another is strictly better)."""
        existing = group.existing() if option_count(instance, j) > MAX_RING_OPTIONS else []
        tried = candidates(instance, j, existing)
        if incumbent is not None and incumbent in tried:
            tried = [incumbent, *(o for o in tried if o != incumbent)]
        found: tuple[float, Choice] | None = None
        for option in tried:
            if incumbent is None:
                changes = [(1, prints(j, option))]
            else:
                changes = [(-1, prints(j, incumbent)), (1, prints(j, option))]
            value = group.comm(group.values_after(changes))
            if found is None or value < found[0]:
                found = (value, option)
        assert found is not None
        return found[1]

    free = by_traffic(instance, (j for j in jobs if is_free(instance, j)))
    for j in free:
        if j not in choices:
            choices[j] = best(j, None)
            group.apply(1, prints(j, choices[j]))
    for _ in range(passes):
        changed = False
        for j in free:
            if deadline is not None and time.perf_counter() > deadline:
                return choices
            option = best(j, choices[j])
            if option != choices[j]:
                group.apply(-1, prints(j, choices[j]))
                group.apply(1, prints(j, option))
                choices[j], changed = option, True
        if not changed:
            break
    return choices


def group_load(instance: OcsInstance, choices: dict[int, Choice]) -> Demand:
    """The traffic of the jobs of ``choices`` with those choices."""
    load = Demand.empty(instance.n_pods)
    for j, choice in choices.items():  # a job sends and receives on its own pods only
        pods = instance.job_pods(j)
        if isinstance(choice, int) and choice not in pods:  # a server elsewhere
            pods = (*pods, choice)
        load.add_at(demand(instance, j, choice), pods)
    return load
