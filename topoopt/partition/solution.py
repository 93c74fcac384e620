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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topoopt.core.errors import InvalidSolutionError
from topoopt.partition.instance import PartitionInstance


@dataclass(frozen=True)
class Assignment:
    """The cluster of every vertex, as ``(vertex, cluster)`` pairs.

    Examples
    --------
    >>> Assignment.of({"s0": "c0", "s1": "c1"}).as_dict()
    {'s0': 'c0', 's1': 'c1'}
    """

    assign: tuple[tuple[str, str], ...]

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
    return problems


def evaluate(instance: PartitionInstance, assignment: Assignment) -> float:
    """``cut(π)`` of eq. 9 (module docstring), to minimise."""
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
    ``clusters_used``."""
    where = assignment.as_dict()
    cut = [e for e in instance.edges if where[e.u] != where[e.v]]
    return {
        "cut_edges": float(len(cut)),
        "cut_traffic": sum(e.traffic for e in cut),
        "clusters_used": float(len(set(where.values()))),
    }


def to_dict(instance: PartitionInstance, assignment: Assignment) -> dict[str, Any]:
    """JSON form ``{"assign": {"s0r0": "c0", ...}}``."""
    return {"assign": assignment.as_dict()}


def from_dict(instance: PartitionInstance, data: Mapping[str, Any]) -> Assignment:
    """Read ``{"assign": {"s0r0": "c0", ...}}``."""
    assign = data.get("assign") if isinstance(data, Mapping) else None
    if not isinstance(assign, Mapping) or not all(
        isinstance(u, str) and isinstance(c, str) for u, c in assign.items()
    ):
        raise InvalidSolutionError("solution.assign: must map vertex names to cluster names")
    return Assignment.of(assign)


def describe(instance: PartitionInstance, assignment: Assignment) -> str:
    """One line per used cluster (vertices and GPUs against capacity), then the cut.

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> inst = examples()[0]
    >>> print(describe(inst, Assignment.of({u.name: "c0" for u in inst.vertices})))
    c0: 4 vertices, 8 of 8 GPUs (s0r0, s0r1, s1r0, s1r1)
    cut = 0 (traffic x 1/widest-path bandwidth over edges between clusters; 0 edges cut)
    """
    where = assignment.as_dict()
    lines = []
    for cluster in instance.clusters:
        members = [u for u in instance.vertices if where.get(u.name) == cluster.name]
        if members:
            names = ", ".join(u.name for u in members[:8]) + (" ..." if len(members) > 8 else "")
            used = sum(u.gpus for u in members)
            lines.append(
                f"{cluster.name}: {len(members)} vertices, {used} of {cluster.capacity_gpus} "
                f"GPUs ({names})"
            )
    cut = metrics(instance, assignment)["cut_edges"]
    lines.append(
        f"cut = {evaluate(instance, assignment):g} (traffic x 1/widest-path bandwidth over "
        f"edges between clusters; {cut:g} edges cut)"
    )
    return "\n".join(lines)
