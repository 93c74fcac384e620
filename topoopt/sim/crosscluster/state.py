"""The free GPUs of a multi-cluster while jobs come and go.

Every node of every cluster keeps its free local GPU indices; a running job holds a list of
``(cluster, node, index)`` GPUs. :meth:`FreeGpus.take` gives a job the GPUs a decision chose
and :meth:`FreeGpus.release` takes them back, each checking what it changes (a GPU taken twice,
one not free, a job started twice or released unknown raises :class:`StateError`), so no GPU
is ever held by two jobs and every GPU a job took comes back.

Inside a cluster, the GPUs of a job's share go on as few nodes as possible
(:meth:`FreeGpus.nodes_for`): the node with the fewest free GPUs that holds the share (best
fit), else the node with the most free GPUs whole and the rest again — SpinSearch's
first-fit-decreasing (eq. 4, :func:`~topoopt.clusterselect.solvers.spinsearch.fill`) over the
nodes; on a node, the lowest free indices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from topoopt.clusterselect.solvers.spinsearch import fill
from topoopt.core.errors import TopooptError

if TYPE_CHECKING:
    from topoopt.crosscluster.multicluster import MultiCluster

Gpu = tuple[int, int, int]
"""``(cluster index, node number, local GPU index)``; node numbers run over the whole
description (cluster by cluster, in node order)."""


class StateError(TopooptError):
    """An invariant of the free-GPU state broke (a bug in a policy or the engine)."""


class FreeGpus:
    """Free GPUs per cluster and node (module docstring).

    Examples
    --------
    >>> from topoopt.crosscluster.settings import uniform
    >>> state = FreeGpus(uniform("u", clusters=2, nodes=2, gpus_per_node=4))
    >>> state.nodes_for(0, 6)
    [(0, 4), (1, 2)]
    >>> state.take("j", [(0, 0, 0), (0, 0, 1)]); state.free_in_cluster.tolist()
    [6, 8]
    >>> _ = state.release("j"); state.free_total
    16
    """

    def __init__(self, mc: MultiCluster) -> None:
        self.clusters = tuple(c.name for c in mc.clusters)
        self.node_names: list[str] = []
        self.node_cluster: list[int] = []
        self.node_gpus: list[int] = []
        self.free: list[set[int]] = []
        self.initial: list[frozenset[int]] = []
        self.cluster_nodes: list[list[int]] = []
        for c, site in enumerate(mc.clusters):
            numbers = []
            for node in site.nodes:
                numbers.append(len(self.node_names))
                self.node_names.append(f"{site.name}/{node.name}")
                self.node_cluster.append(c)
                self.node_gpus.append(node.gpus)
                self.free.append(set(node.free))
                self.initial.append(frozenset(node.free))
            self.cluster_nodes.append(numbers)
        self.free_count = np.array([len(f) for f in self.free], dtype=np.int64)
        self.free_in_cluster = np.array(
            [int(self.free_count[nodes].sum()) for nodes in self.cluster_nodes], dtype=np.int64
        )
        self.total_gpus = int(self.free_count.sum())
        """GPUs free at time 0, the most a job can get (the others are held by what the
        simulation does not know and never come back)."""
        self.held: dict[str, list[Gpu]] = {}

    @property
    def free_total(self) -> int:
        """Free GPUs of the whole description."""
        return int(self.free_in_cluster.sum())

    @property
    def busy_gpus(self) -> int:
        """GPUs held by jobs."""
        return sum(len(gpus) for gpus in self.held.values())

    def nodes_for(self, cluster: int, count: int) -> list[tuple[int, int]]:
        """``(node, GPUs)`` pairs taking ``count`` free GPUs of ``cluster`` on as few nodes as
        possible (module docstring), in node order."""
        nodes = self.cluster_nodes[cluster]
        free = [int(self.free_count[n]) for n in nodes]
        if count > sum(free):
            raise StateError(
                f"cluster {self.clusters[cluster]!r} has {sum(free)} free GPUs, not {count}"
            )
        order = sorted(range(len(nodes)), key=lambda k: (free[k], k))
        take = fill(order, free, count)
        return [(nodes[k], t) for k, t in enumerate(take) if t > 0]

    def pick(self, node: int, count: int) -> list[int]:
        """The ``count`` lowest free indices of ``node`` (not taken yet)."""
        return sorted(self.free[node])[:count]

    def take(self, job: str, gpus: list[Gpu]) -> None:
        """Give ``job`` the GPUs ``gpus`` (each free, none twice)."""
        if job in self.held:
            raise StateError(f"invariant: job {job!r} already holds GPUs")
        if len(set(gpus)) != len(gpus):
            raise StateError(f"invariant: job {job!r} takes a GPU twice")
        for c, node, index in gpus:
            if self.node_cluster[node] != c or index not in self.free[node]:
                raise StateError(
                    f"invariant: job {job!r} takes GPU {index} of {self.node_names[node]}, "
                    "which is not free"
                )
        for c, node, index in gpus:
            self.free[node].discard(index)
            self.free_count[node] -= 1
            self.free_in_cluster[c] -= 1
        self.held[job] = list(gpus)

    def release(self, job: str) -> list[Gpu]:
        """Take back every GPU ``job`` holds; returns them."""
        if job not in self.held:
            raise StateError(f"invariant: job {job!r} holds no GPUs")
        gpus = self.held.pop(job)
        for c, node, index in gpus:
            if index in self.free[node]:
                raise StateError(f"invariant: GPU {index} of {self.node_names[node]} freed twice")
            self.free[node].add(index)
            self.free_count[node] += 1
            self.free_in_cluster[c] += 1
        return gpus

    def idle_nodes(self) -> int:
        """Nodes with every GPU free."""
        return int(np.count_nonzero(self.free_count == np.asarray(self.node_gpus)))

    def free_on_idle(self) -> int:
        """Free GPUs on nodes with every GPU free."""
        gpus = np.asarray(self.node_gpus)
        return int(gpus[self.free_count == gpus].sum())

    def check(self) -> None:
        """Verify the whole state: counts agree with the sets, held and free GPUs are disjoint
        and together the GPUs free at time 0."""
        held: dict[int, set[int]] = {}
        for gpus in self.held.values():
            for _, node, index in gpus:
                held.setdefault(node, set()).add(index)
        for node, free in enumerate(self.free):
            mine = held.get(node, set())
            if free & mine or free | mine != self.initial[node]:
                raise StateError(f"invariant: the GPUs of {self.node_names[node]} do not add up")
            if self.free_count[node] != len(free):
                raise StateError(f"invariant: the free count of {self.node_names[node]} is wrong")
        for c, nodes in enumerate(self.cluster_nodes):
            if self.free_in_cluster[c] != self.free_count[nodes].sum():
                raise StateError(f"invariant: the free count of {self.clusters[c]!r} is wrong")


__all__ = ["FreeGpus", "Gpu", "StateError"]
