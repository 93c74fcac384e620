"""The simulated cluster: nodes of a tree network with their GPUs, and who holds them.

:class:`Cluster` is fixed for a run: a :class:`~topoopt.topology.Topology` (from any file
:func:`~topoopt.topology.load_topology` reads, or from :func:`generated_cluster`), the level
whose switches play Arnold's minipods, and the GPUs of every node. :class:`Occupancy` is what
changes: the free GPUs of every node and the GPUs each running job holds. It checks its own
invariants on every change (no GPU held twice, never more than a node has) and, on demand, as
a whole (:meth:`Occupancy.check`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from topoopt.core.errors import TopooptError
from topoopt.topology import Switch, Topology

DEFAULT_GPUS_PER_NODE = 8


@dataclass(frozen=True)
class Cluster:
    """A cluster for the simulator.

    Parameters
    ----------
    topology
        The network down to named nodes.
    pod_level
        The level whose switches are the minipods (depth or name, see
        :meth:`~topoopt.topology.Topology.level`); placement solvers decide among them.
    gpus_per_node
        GPUs of a node the topology gives no count for. Every node must end up with the
        same number (a mixed cluster is refused, naming the counts).
    """

    topology: Topology
    pod_level: int | str = 0
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE
    nodes: tuple[str, ...] = field(init=False)
    node_gpus: np.ndarray = field(init=False, repr=False, compare=False)
    index: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.gpus_per_node, bool) or not isinstance(self.gpus_per_node, int):
            raise TopooptError(f"gpus_per_node: must be an integer, got {self.gpus_per_node!r}")
        if self.gpus_per_node < 1:
            raise TopooptError(f"gpus_per_node: must be >= 1, got {self.gpus_per_node}")
        self.topology.level(self.pod_level)  # an unknown level is an error now, not later
        nodes = self.topology.nodes
        gpus = [self.topology.gpus_of(n) or self.gpus_per_node for n in nodes]
        if len(set(gpus)) > 1:
            raise TopooptError(
                f"cluster: the nodes have different GPU counts {sorted(set(gpus))}; the "
                "simulator needs one node size (Arnold's minipods hold nodes of one size)"
            )
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "node_gpus", np.asarray(gpus, dtype=np.int64))
        object.__setattr__(self, "index", {n: i for i, n in enumerate(nodes)})

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return len(self.nodes)

    @property
    def total_gpus(self) -> int:
        """GPUs of all nodes."""
        return int(self.node_gpus.sum())

    @property
    def node_size(self) -> int:
        """The GPUs of a node (all nodes have the same number)."""
        return int(self.node_gpus[0])

    def describe(self) -> str:
        """One line: nodes, GPUs, minipods."""
        pods = len(self.topology.switches_at(self.pod_level))
        return f"{self.n_nodes} nodes, {self.total_gpus} GPUs, {pods} minipods"


def generated_cluster(
    fanouts: Sequence[int], nodes_per_leaf: int, gpus_per_node: int = DEFAULT_GPUS_PER_NODE
) -> Cluster:
    """A balanced tree: ``fanouts[0]`` minipods, each with ``fanouts[1]`` switches below, ...,
    each lowest switch with ``nodes_per_leaf`` nodes of ``gpus_per_node`` GPUs.

    The minipods are the top level (depth 0). Switches are named by their path (``p3``,
    ``p3s1``), nodes ``n0000``, ``n0001``, ... in tree order.

    Examples
    --------
    >>> cluster = generated_cluster((2, 2), nodes_per_leaf=3)
    >>> cluster.describe(), cluster.nodes[:4]
    ('12 nodes, 96 GPUs, 2 minipods', ('n0000', 'n0001', 'n0002', 'n0003'))
    """
    if not fanouts or any(isinstance(f, bool) or not isinstance(f, int) or f < 1 for f in fanouts):
        raise TopooptError(f"fanouts: must be integers >= 1, top level first, got {fanouts!r}")
    if isinstance(nodes_per_leaf, bool) or not isinstance(nodes_per_leaf, int):
        raise TopooptError(f"nodes_per_leaf: must be an integer, got {nodes_per_leaf!r}")
    if nodes_per_leaf < 1:
        raise TopooptError(f"nodes_per_leaf: must be >= 1, got {nodes_per_leaf}")
    total = int(np.prod(fanouts)) * nodes_per_leaf
    width = max(4, len(str(total - 1)))
    counter = iter(range(total))

    def build(prefix: str, depth: int) -> Switch:
        if depth == len(fanouts) - 1:
            names = tuple(f"n{next(counter):0{width}d}" for _ in range(nodes_per_leaf))
            return Switch(prefix, nodes=names)
        children = tuple(build(f"{prefix}s{i}", depth + 1) for i in range(fanouts[depth + 1]))
        return Switch(prefix, children=children)

    roots = tuple(build(f"p{i}", 0) for i in range(fanouts[0]))
    return Cluster(Topology(roots, default_gpus=gpus_per_node), 0, gpus_per_node)


def parse_shape(text: str) -> Cluster:
    """A generated cluster from ``FANOUT[xFANOUT...]xNODES[:GPUS]``: ``16x2x32:8`` is 16
    minipods of 2 leaf switches of 32 nodes with 8 GPUs each.

    Examples
    --------
    >>> parse_shape("4x2x16:8").describe()
    '128 nodes, 1024 GPUs, 4 minipods'
    """
    sizes, _, gpus = text.partition(":")
    try:
        parts = [int(part) for part in sizes.split("x")]
        per_node = int(gpus) if gpus else DEFAULT_GPUS_PER_NODE
    except ValueError:
        raise TopooptError(
            f"cluster shape: {text!r}: write FANOUT[xFANOUT...]xNODES[:GPUS], e.g. 16x2x32:8"
        ) from None
    if len(parts) < 2:
        raise TopooptError(f"cluster shape: {text!r}: give at least PODSxNODES")
    return generated_cluster(parts[:-1], parts[-1], per_node)


class Occupancy:
    """Which GPUs of every node are free, and which each running job holds.

    ``free`` counts the free GPUs of every node (what fitting asks); ``busy`` marks each GPU
    (node x local index), so a job's record names its devices (``CUDA_VISIBLE_DEVICES``).
    Every change checks what it touches: :meth:`allocate` refuses a job already running, an
    unknown node or more GPUs than a node has free, and gives a job the lowest free indices;
    :meth:`release` refuses a job that holds nothing. :meth:`check` verifies the whole state
    (every GPU held by at most one job, the marks and the counts agree).
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.free = cluster.node_gpus.copy()
        self.busy = np.zeros((cluster.n_nodes, cluster.node_size), dtype=bool)
        self.held: dict[str, dict[int, tuple[int, ...]]] = {}

    def idle_nodes(self) -> np.ndarray:
        """Indices of the nodes with every GPU free."""
        return np.flatnonzero(self.free == self.cluster.node_gpus)

    @property
    def busy_gpus(self) -> int:
        """GPUs held by running jobs."""
        return self.cluster.total_gpus - int(self.free.sum())

    def allocate(
        self,
        job: str,
        gpus_by_node: Mapping[int, int],
        devices: Mapping[int, tuple[int, ...]] | None = None,
    ) -> dict[int, tuple[int, ...]]:
        """Give ``job`` ``{node index: count}`` GPUs: the indices ``devices`` names, else the
        lowest free ones of each node; returns the indices it got."""
        if job in self.held:
            raise TopooptError(f"invariant: job {job!r} is already running")
        if not gpus_by_node:
            raise TopooptError(f"invariant: job {job!r} would hold no GPU")
        for node, count in gpus_by_node.items():
            if not 0 <= node < len(self.free) or count < 1 or count > self.free[node]:
                raise TopooptError(
                    f"invariant: job {job!r} asks {count} GPUs of node {node} with "
                    f"{self.free[node] if 0 <= node < len(self.free) else 'no'} free"
                )
        got: dict[int, tuple[int, ...]] = {}
        for node, count in gpus_by_node.items():
            chosen = np.flatnonzero(~self.busy[node])[:count]
            if devices is not None:
                chosen = np.asarray(devices[node], dtype=np.int64)
                if len(set(chosen.tolist())) != count or self.busy[node, chosen].any():
                    raise TopooptError(
                        f"invariant: job {job!r} asks GPUs {devices[node]} of node {node}, not "
                        f"{count} free ones"
                    )
            got[node] = tuple(int(d) for d in chosen)
        for node, chosen_devices in got.items():
            self.busy[node, list(chosen_devices)] = True
            self.free[node] -= len(chosen_devices)
        self.held[job] = got
        return got

    def release(self, job: str) -> dict[int, tuple[int, ...]]:
        """Free the GPUs of ``job``; returns what it held."""
        held = self.held.pop(job, None)
        if held is None:
            raise TopooptError(f"invariant: job {job!r} holds no GPU")
        for node, devices in held.items():
            self.busy[node, list(devices)] = False
            self.free[node] += len(devices)
        return held

    def check(self) -> None:
        """Verify the whole state.

        Raises
        ------
        TopooptError
            Naming the first GPU held twice, or the first node whose marks, free count and
            held GPUs do not agree.
        """
        owner: dict[tuple[int, int], str] = {}
        for job, held in self.held.items():
            for node, devices in held.items():
                for device in devices:
                    if (node, device) in owner:
                        raise TopooptError(
                            f"invariant: GPU {device} of node {self.cluster.nodes[node]} held "
                            f"by {owner[node, device]!r} and {job!r}"
                        )
                    owner[node, device] = job
        marked = np.zeros_like(self.busy)
        for node, device in owner:
            marked[node, device] = True
        counts = self.cluster.node_gpus - self.busy.sum(axis=1)
        bad = np.flatnonzero((marked != self.busy).any(axis=1) | (counts != self.free))
        if bad.size:
            node = int(bad[0])
            raise TopooptError(
                f"invariant: node {self.cluster.nodes[node]}: {self.free[node]} free, "
                f"{int(self.busy[node].sum())} marked busy, {int(marked[node].sum())} held, "
                f"of {self.cluster.node_gpus[node]} GPUs"
            )
