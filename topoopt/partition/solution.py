"""Assignments of compute units to clusters, their weighted cut (the objective) and their check.

The root of the family's trust chain. SpiderFlow eq. 9: with ``π(u)`` the cluster of vertex
``u``, minimise ::

    cut(π) = sum over edges (u, v) with π(u) != π(v) of traffic(u, v) · w(π(u), π(v))

with ``w(a, b) = 1 / beta(a -> b)``, the reciprocal of the widest-path bandwidth between the
clusters (eq. 1, in Gb/s): with traffic in GB (gigabytes) per step, ``8 · traffic · w`` is
the seconds one step needs to move that traffic over the best path alone (the objective keeps
``traffic · w``; it is a cost, not a schedule: transfers are not assumed to overlap or queue).
Edges inside a cluster cost nothing. Feasibility: every vertex in exactly one cluster, and the
GPUs of the vertices in a cluster at most its capacity.

Two-level solutions (Heuristic-ILP, :mod:`topoopt.partition.intra`) also carry a parallel
configuration per cluster hosting vertices (:attr:`Assignment.configs`), checked against the
cluster's parallelconfig sub-problem. The objective stays eq. 9; :func:`metrics` then adds the
per-cluster times ``T_c`` and the step-time estimate ``max_c T_c + 8 · cut``
(``docs/partition.md``, "Heuristic-ILP").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topoopt.core.errors import InvalidSolutionError
from topoopt.parallelconfig.solution import ParallelConfig, config_from_json, config_to_json
from topoopt.partition import intra
from topoopt.partition.instance import PartitionInstance

GBIT_PER_GB = 8.0
"""Gigabits in a gigabyte: eq. 9's ``traffic · w`` with traffic in GB and ``w`` in s/Gb, times
this, is seconds."""


@dataclass(frozen=True)
class Assignment:
    """The cluster of every vertex, as ``(vertex, cluster)`` pairs, and optionally a parallel
    configuration per cluster hosting vertices (two-level solutions, ``configs``: ``(cluster,
    ParallelConfig)`` pairs; empty for the one-level solvers).

    Examples
    --------
    >>> Assignment.of({"s0": "c0", "s1": "c1"}).as_dict()
    {'s0': 'c0', 's1': 'c1'}
    """

    assign: tuple[tuple[str, str], ...]
    configs: tuple[tuple[str, ParallelConfig], ...] = ()

    @classmethod
    def of(cls, assign: Mapping[str, str] | Iterable[tuple[str, str]]) -> Assignment:
        """From a mapping or pairs ``vertex -> cluster``."""
        pairs = assign.items() if isinstance(assign, Mapping) else assign
        return cls(tuple((str(u), str(c)) for u, c in pairs))

    @classmethod
    def from_indices(cls, instance: PartitionInstance, clusters: Iterable[int]) -> Assignment:
        """From the cluster index of every vertex, in vertex order."""
        names = instance.graph.clusters
        return cls(
            tuple((u.name, names[int(c)]) for u, c in zip(instance.vertices, clusters, strict=True))
        )

    def as_dict(self) -> dict[str, str]:
        """``{vertex: cluster}``."""
        return dict(self.assign)

    def with_configs(
        self, configs: Mapping[str, ParallelConfig] | Iterable[tuple[str, ParallelConfig]]
    ) -> Assignment:
        """The same assignment with ``configs`` (``cluster -> configuration``) instead of its
        own (``{}`` drops them)."""
        pairs = configs.items() if isinstance(configs, Mapping) else configs
        return Assignment(self.assign, tuple((str(c), config) for c, config in pairs))

    def config_dict(self) -> dict[str, ParallelConfig]:
        """``{cluster: configuration}``."""
        return dict(self.configs)

    def indices(self, instance: PartitionInstance) -> list[int]:
        """The cluster index of every vertex in vertex order (assumes :func:`check` passed)."""
        where = self.as_dict()
        index = instance.graph.index
        return [index[where[u.name]] for u in instance.vertices]


def check(instance: PartitionInstance, assignment: Assignment) -> list[str]:
    """The rules ``assignment`` breaks: every vertex once, known clusters, capacities.

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> inst = examples()[0]
    >>> check(inst, Assignment.of([("zz", "c0"), ("s0r0", "c9")]))[:2]
    ['assigns unknown vertex zz', 'assigns s0r0 to unknown cluster c9']
    """
    problems = []
    capacity = {c.name: c.capacity_gpus for c in instance.clusters}
    gpus = {u.name: u.gpus for u in instance.vertices}
    load = dict.fromkeys(capacity, 0)
    seen: set[str] = set()
    for vertex, cluster in assignment.assign:
        if vertex not in gpus:
            problems.append(f"assigns unknown vertex {vertex}")
        elif vertex in seen:
            problems.append(f"assigns {vertex} twice")
        elif cluster not in capacity:
            problems.append(f"assigns {vertex} to unknown cluster {cluster}")
        else:
            load[cluster] += gpus[vertex]
        seen.add(vertex)
    missing = [u.name for u in instance.vertices if u.name not in seen]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        problems.append(f"leaves {len(missing)} vertex(es) unassigned: {shown}")
    for cluster, used in load.items():
        if used > capacity[cluster]:
            problems.append(f"puts {used} GPUs on {cluster}, which holds {capacity[cluster]}")
    if not problems:
        problems += intra.check_configs(instance, assignment)
    return problems


def evaluate(instance: PartitionInstance, assignment: Assignment) -> float:
    """``cut(π)`` of eq. 9 (module docstring), to minimise (the configurations, if any, do not
    enter it)."""
    where = assignment.as_dict()
    index = instance.graph.index
    total = 0.0
    for edge in instance.edges:
        a, b = index[where[edge.u]], index[where[edge.v]]
        if a != b:
            total += edge.traffic * float(instance.weights[a, b])
    return total


def metrics(instance: PartitionInstance, assignment: Assignment) -> dict[str, float]:
    """``cut_edges`` and ``cut_traffic`` (edges and traffic between clusters) and
    ``clusters_used``; with configurations also ``t_cluster_s.<cluster>`` (``T_c`` of each
    configured cluster, s per iteration), ``t_cluster_max_s`` (their maximum), ``cut_s``
    (``8 · cut``: eq. 9 in seconds, traffic in GB) and ``step_time_s`` (``t_cluster_max_s +
    cut_s``), defined in ``docs/partition.md`` ("Heuristic-ILP")."""
    where = assignment.as_dict()
    cut = [e for e in instance.edges if where[e.u] != where[e.v]]
    out = {
        "cut_edges": float(len(cut)),
        "cut_traffic": sum(e.traffic for e in cut),
        "clusters_used": float(len(set(where.values()))),
    }
    if assignment.configs:
        times = intra.cluster_times(instance, assignment)
        out.update({f"t_cluster_s.{cluster}": t for cluster, t in times.items()})
        slowest = max(times.values())
        cut_s = GBIT_PER_GB * evaluate(instance, assignment)
        out.update({"t_cluster_max_s": slowest, "cut_s": cut_s, "step_time_s": slowest + cut_s})
    return out


def to_dict(instance: PartitionInstance, assignment: Assignment) -> dict[str, Any]:
    """JSON form ``{"assign": {"s0r0": "c0", ...}}``, with ``"configs": {"c0": {"d": 2, "p":
    2, "grid": [...]}, ...}`` (parallelconfig's solution form) when there are any."""
    out: dict[str, Any] = {"assign": assignment.as_dict()}
    if assignment.configs:
        out["configs"] = {c: config_to_json(config) for c, config in assignment.configs}
    return out


def from_dict(instance: PartitionInstance, data: Mapping[str, Any]) -> Assignment:
    """Read ``{"assign": {"s0r0": "c0", ...}}`` and the optional ``"configs"``."""
    assign = data.get("assign") if isinstance(data, Mapping) else None
    if not isinstance(assign, Mapping) or not all(
        isinstance(u, str) and isinstance(c, str) for u, c in assign.items()
    ):
        raise InvalidSolutionError("solution.assign: must map vertex names to cluster names")
    assignment = Assignment.of(assign)
    configs = data.get("configs", {})
    if not isinstance(configs, Mapping) or not all(isinstance(c, str) for c in configs):
        raise InvalidSolutionError(
            "solution.configs: must map cluster names to parallel configurations"
        )
    return assignment.with_configs(
        {c: config_from_json(item, f"solution.configs.{c}") for c, item in configs.items()}
    )


def describe(instance: PartitionInstance, assignment: Assignment) -> str:
    """The objective explained, then one line per used cluster (vertices and GPUs against
    capacity, and its parallel configuration when there is one).

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> inst = examples()[0]
    >>> print(describe(inst, Assignment.of({u.name: "c0" for u in inst.vertices})))
    objective cut = 0 (SpiderFlow eq. 9; lower is better)
      cut: the sum over edges between clusters of traffic / widest-path bandwidth; 0 edges cut
    c0: 4 vertices, 8 of 8 GPUs (s0r0, s0r1, s1r0, s1r1)
    """
    where = assignment.as_dict()
    figures = metrics(instance, assignment)
    configs = assignment.config_dict()
    lines = [
        f"objective cut = {evaluate(instance, assignment):.6g} (SpiderFlow eq. 9; lower is better)",
        "  cut: the sum over edges between clusters of traffic / widest-path bandwidth; "
        f"{figures['cut_edges']:g} edges cut",
    ]
    for cluster in instance.clusters:
        members = [u for u in instance.vertices if where.get(u.name) == cluster.name]
        if members:
            names = ", ".join(u.name for u in members[:8]) + (" ..." if len(members) > 8 else "")
            used = sum(u.gpus for u in members)
            line = (
                f"{cluster.name}: {len(members)} vertices, {used} of {cluster.capacity_gpus} "
                f"GPUs ({names})"
            )
            if cluster.name in configs:
                config = configs[cluster.name]
                t_c = figures[f"t_cluster_s.{cluster.name}"]
                line += f"; (d, p) = ({config.d}, {config.p}), T_c = {t_c:.6g} s"
            lines.append(line)
    if configs:
        lines.append(
            f"step time = max T_c {figures['t_cluster_max_s']:.6g} s + 8 x cut "
            f"{figures['cut_s']:.6g} s = {figures['step_time_s']:.6g} s"
        )
    return "\n".join(lines)
