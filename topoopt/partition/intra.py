"""The intra-cluster level of SpiderFlow's two-level TPA (Heuristic-ILP, §4.2): one
parallelconfig sub-problem per cluster of an assignment.

With ``π`` an assignment of the job's vertices (blocks of layers, ``compute_s`` and
``param_bytes`` given) to clusters, cluster ``c`` runs the vertices ``π⁻¹(c)`` on

    r_c = Σ_{v: π(v) = c} gpus_v

GPUs. Its sub-problem (:func:`cluster_instance`) is a
:class:`~topoopt.parallelconfig.instance.ParallelConfigInstance`:

* **GPUs**: SpiderFlow's buddy allocator (Appendix A.1,
  :class:`~topoopt.crosscluster.buddy.BuddyAllocator`) takes ``r_c`` GPUs of the cluster's
  nodes, listed node by node with the node as locality level, on a fresh allocator (the
  nodes are the GPUs the job may use); the sub-problem's nodes are the nodes it took GPUs
  from, in node order, each with the GPUs taken there (GPU ``"n/k"`` of the sub-problem is
  the ``k``-th GPU taken on node ``n``; :func:`allocate` gives their names in the cluster);
* **model**: one layer per vertex of ``c``, in the instance's vertex order, with the vertex's
  ``compute_s`` and ``param_bytes``, and the instance's ``training.activation_bytes`` and
  ``training.micro_batches``;
* **weights**: ``training.alpha`` and ``training.beta``; ``(d, p)`` is left free.

It is always a valid instance: ``r_c >= 1`` (a vertex with ``compute_s`` has at least one GPU)
on at least one node, at least one layer, and ``(d, p) = (1, 1)`` is admissible. A cluster that
hosts no vertex has no sub-problem.

Examples
--------
>>> from topoopt.partition.generate import tpa_small
>>> from topoopt.partition.solution import Assignment
>>> inst = tpa_small(seed=0, count=1)[0]
>>> [(c.name, c.capacity_gpus, [n.gpus for n in c.nodes]) for c in inst.clusters]
[('c0', 6, [4, 2]), ('c1', 2, [2]), ('c2', 2, [2])]
>>> [(u.name, u.gpus) for u in inst.vertices]
[('b0', 2), ('b1', 2), ('b2', 2), ('b3', 2)]
>>> pi = Assignment.of({"b0": "c1", "b1": "c0", "b2": "c0", "b3": "c0"})
>>> sub = cluster_instance(inst, pi, "c0")
>>> sub.nodes, sub.model.n_layers, sub.parallelism
((Node(name='n0', gpus=4), Node(name='n1', gpus=2)), 3, None)
>>> cluster_instance(inst, pi, "c2") is None
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from topoopt.core.errors import InvalidSolutionError, TopooptError, UnsupportedInstanceError
from topoopt.crosscluster.buddy import BuddyAllocator
from topoopt.parallelconfig import solution as pc
from topoopt.parallelconfig.instance import ParallelConfigInstance
from topoopt.partition.instance import Cluster, PartitionInstance

if TYPE_CHECKING:
    from topoopt.partition.solution import Assignment

NODE_LEVEL = "node"
"""Name of the buddy allocator's locality level of a node."""


def gpu_demand(instance: PartitionInstance, where: Mapping[str, str]) -> dict[str, int]:
    """``r_c`` of every cluster hosting at least one vertex under ``where`` (``vertex ->
    cluster``, every vertex assigned), in the instance's cluster order.

    Examples
    --------
    >>> from topoopt.partition.generate import examples
    >>> inst = examples()[0]
    >>> gpu_demand(inst, {"s0r0": "c1", "s0r1": "c0", "s1r0": "c0", "s1r1": "c1"})
    {'c0': 4, 'c1': 4}
    """
    load: dict[str, int] = {}
    for unit in instance.vertices:
        load[where[unit.name]] = load.get(where[unit.name], 0) + unit.gpus
    return {c.name: load[c.name] for c in instance.clusters if c.name in load}


def allocate(cluster: Cluster, gpus: int) -> tuple[str, ...]:
    """The ``gpus`` GPUs (``"node/k"``, in node order) that the buddy allocator of ``cluster``'s
    nodes hands out for one request of ``gpus`` (the cluster must have ``nodes``).

    Raises
    ------
    UnsupportedInstanceError
        If the cluster has no ``nodes``.
    AllocationError
        If its nodes hold fewer than ``gpus`` GPUs.

    Examples
    --------
    >>> c = Cluster("c0", 12, nodes=[("a", 8), ("b", 4)], intra_node_gbps=800,
    ...             inter_node_gbps=100)
    >>> allocate(c, 4)
    ('a/0', 'a/1', 'a/2', 'a/3')
    """
    if cluster.nodes is None:
        raise UnsupportedInstanceError(f"cluster {cluster.name!r} has no nodes")
    names = [f"{node.name}/{k}" for node in cluster.nodes for k in range(node.gpus)]
    allocator = BuddyAllocator(names, levels=[(NODE_LEVEL, [n.gpus for n in cluster.nodes])])
    return allocator.allocate(gpus).gpus


def _members(instance: PartitionInstance, where: Mapping[str, str], cluster: str) -> list[int]:
    return [i for i, unit in enumerate(instance.vertices) if where.get(unit.name) == cluster]


def cluster_instance(
    instance: PartitionInstance, assignment: Assignment, cluster: str
) -> ParallelConfigInstance | None:
    """The parallelconfig sub-problem of ``cluster`` under ``assignment`` (module docstring),
    ``None`` when the cluster hosts no vertex. The assignment must pass
    :func:`~topoopt.partition.solution.check` (every vertex once, capacities kept).

    Raises
    ------
    InvalidSolutionError
        If ``cluster`` is not a cluster of the instance.
    UnsupportedInstanceError
        If the intra-cluster data it needs is missing (the cluster's ``nodes``, ``training``,
        ``compute_s`` of its vertices).
    """
    index = instance.graph.index
    if cluster not in index:
        raise InvalidSolutionError(f"unknown cluster {cluster!r}")
    members = _members(instance, assignment.as_dict(), cluster)
    if not members:
        return None
    spec = instance.clusters[index[cluster]]
    training = instance.training
    layers = [instance.vertices[i].layer for i in members]
    if training is None or spec.nodes is None or any(layer is None for layer in layers):
        missing = instance.intra_missing or "the intra-cluster data"
        raise UnsupportedInstanceError(
            f"cluster {cluster!r} has no sub-problem without the intra-cluster data ({missing})"
        )
    assert spec.intra_node_gbps is not None and spec.inter_node_gbps is not None
    gpus = allocate(spec, sum(instance.vertices[i].gpus for i in members))
    taken: dict[str, int] = {}
    for gpu in gpus:
        node = gpu.partition("/")[0]
        taken[node] = taken.get(node, 0) + 1
    return ParallelConfigInstance(
        f"{instance.name}/{cluster}",
        [(n.name, taken[n.name]) for n in spec.nodes if n.name in taken],
        spec.intra_node_gbps,
        spec.inter_node_gbps,
        training.model(layers),
        alpha=training.alpha,
        beta=training.beta,
        labels={"partition": instance.name, "cluster": cluster},
    )


def sub_instances(
    instance: PartitionInstance, assignment: Assignment
) -> dict[str, ParallelConfigInstance]:
    """The sub-problem of every cluster hosting vertices, in cluster order (see
    :func:`cluster_instance` for the requirements and errors)."""
    out = {}
    for cluster in gpu_demand(instance, assignment.as_dict()):
        sub = cluster_instance(instance, assignment, cluster)
        assert sub is not None
        out[cluster] = sub
    return out


def check_configs(instance: PartitionInstance, assignment: Assignment) -> list[str]:
    """The rules ``assignment.configs`` breaks, for an assignment that passes the partition
    rules: complete intra-cluster data; configurations only for known clusters hosting
    vertices, at most one each, and one for every such cluster (or none at all); each passes
    parallelconfig's ``check`` on its cluster's sub-problem."""
    if not assignment.configs:
        return []
    missing = instance.intra_missing
    if missing is not None:
        return [
            "has per-cluster configurations but the instance's intra-cluster data is "
            f"incomplete ({missing})"
        ]
    demand = gpu_demand(instance, assignment.as_dict())
    problems: list[str] = []
    seen: set[str] = set()
    for cluster, config in assignment.configs:
        if cluster in seen:
            problems.append(f"configures {cluster} twice")
            continue
        seen.add(cluster)
        if cluster not in instance.graph.index:
            problems.append(f"configures unknown cluster {cluster}")
            continue
        if cluster not in demand:
            problems.append(f"configures {cluster}, which hosts no vertex")
            continue
        try:
            sub = cluster_instance(instance, assignment, cluster)
        except TopooptError as exc:
            problems.append(f"{cluster}: no sub-problem: {exc}")
            continue
        assert sub is not None
        problems += [f"{cluster}: {problem}" for problem in pc.check(sub, config)]
    absent = [c for c in demand if c not in seen]
    if absent:
        shown = ", ".join(absent[:5]) + (" ..." if len(absent) > 5 else "")
        problems.append(
            f"configures {len(demand) - len(absent)} of the {len(demand)} clusters hosting "
            f"vertices, not {shown}: give a configuration for each of them or for none"
        )
    return problems


def cluster_times(instance: PartitionInstance, assignment: Assignment) -> dict[str, float]:
    """``T_c`` (parallelconfig's ``evaluate``, s per iteration) of every configured cluster,
    in the order of ``assignment.configs`` (which must pass :func:`check_configs`)."""
    out = {}
    for cluster, config in assignment.configs:
        sub = cluster_instance(instance, assignment, cluster)
        assert sub is not None
        out[cluster] = pc.evaluate(sub, config)
    return out


__all__ = [
    "allocate",
    "check_configs",
    "cluster_instance",
    "cluster_times",
    "gpu_demand",
    "sub_instances",
]
