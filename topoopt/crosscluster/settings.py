"""SpiderFlow's evaluation settings as :class:`~topoopt.crosscluster.multicluster.MultiCluster`
descriptions (§5).

============================  =================================================================
:func:`spiderflow_simulated`  §5.5: 6 clusters x 64 nodes x 8 GPUs (3,072 GPUs); 25 GB/s inside
                              a node, 1 GB/s between nodes, 5 Gb/s between clusters
:func:`spiderflow_scale`      Fig. 12: 1-64 clusters of 7 nodes x 8 GPUs (56 GPUs each), the
                              same bandwidths
:func:`spiderflow_testbed`    §5.1 / Fig. 9: 8 clusters (servers) of 2, 2, 2, 2, 2, 4, 1, 1 A100s;
                              PCIe 4.0 (~4 GB/s) inside servers 1-3, NVLink 25 GB/s inside 4-6;
                              Ethernet of 1-15 Gb/s between them
:func:`uniform`               any number of identical clusters on a full mesh
============================  =================================================================

The paper does not give the inter-cluster graph of its simulator; these settings link every
pair of clusters (a full mesh) at the stated rate, and the testbed draws each link's rate
uniformly in 1-15 Gb/s with a seed. Bandwidths are in Gb/s (25 GB/s = 200 Gb/s).
"""

from __future__ import annotations

import itertools

import numpy as np

from topoopt.crosscluster.graph import Link
from topoopt.crosscluster.multicluster import MultiCluster, Site, SiteNode, sites_from

INTRA_NODE_GBPS = 200.0
"""25 GB/s between GPUs of a node (§5.5)."""

INTER_NODE_GBPS = 8.0
"""1 GB/s between nodes of a cluster (§5.5)."""

INTER_CLUSTER_GBPS = 5.0
"""5 Gb/s between clusters (§5.5)."""


def _mesh(names: list[str], gbps: float) -> tuple[Link, ...]:
    return tuple(Link(a, b, gbps) for a, b in itertools.combinations(names, 2))


def uniform(
    name: str,
    clusters: int,
    nodes: int,
    gpus_per_node: int,
    *,
    intra_node_gbps: float = INTRA_NODE_GBPS,
    inter_node_gbps: float = INTER_NODE_GBPS,
    inter_cluster_gbps: float = INTER_CLUSTER_GBPS,
) -> MultiCluster:
    """``clusters`` identical clusters ``c0, c1, ...`` of ``nodes`` free nodes, a full mesh.

    Examples
    --------
    >>> mc = uniform("u", clusters=2, nodes=1, gpus_per_node=2)
    >>> [(c.name, [n.name for n in c.nodes]) for c in mc.clusters], mc.links[0].bandwidth_gbps
    ([('c0', ['c0-n0']), ('c1', ['c1-n0'])], 5.0)
    """
    names = [f"c{i}" for i in range(clusters)]
    sites = sites_from(names, nodes, gpus_per_node, intra_node_gbps, inter_node_gbps)
    return MultiCluster(name, sites, _mesh(names, inter_cluster_gbps))


def spiderflow_simulated() -> MultiCluster:
    """§5.5's simulator: 6 clusters x 64 nodes x 8 GPUs."""
    return uniform("spiderflow-sim6", clusters=6, nodes=64, gpus_per_node=8)


def spiderflow_scale(clusters: int) -> MultiCluster:
    """Fig. 12: ``clusters`` clusters of 7 nodes x 8 GPUs (56 GPUs each)."""
    return uniform(f"spiderflow-scale{clusters}", clusters=clusters, nodes=7, gpus_per_node=8)


TESTBED_GPUS = (2, 2, 2, 2, 2, 4, 1, 1)
"""GPUs of the testbed's eight servers (§5.1)."""

PCIE_GBPS = 32.0
"""~4 GB/s inside servers 1-3 (PCIe 4.0 as the paper measured it, §5.1)."""

NVLINK_GBPS = 200.0
"""25 GB/s NVLink inside servers 4-6 (§5.1)."""


def spiderflow_testbed(seed: int = 0) -> MultiCluster:
    """§5.1's testbed (Fig. 9's "8 isolated clusters, each equipped with 1-4 A100 GPUs"): one
    single-node cluster per server; links of 1-15 Gb/s drawn with ``seed``. Servers 7 and 8
    (one GPU) have no intra-node traffic; they get the PCIe rate."""
    rng = np.random.default_rng(seed)
    names = [f"s{i + 1}" for i in range(len(TESTBED_GPUS))]
    sites = []
    for i, (name, gpus) in enumerate(zip(names, TESTBED_GPUS, strict=True)):
        intra = NVLINK_GBPS if 3 <= i <= 5 else PCIE_GBPS
        node = SiteNode(f"{name}-n0", gpus, tuple(range(gpus)))
        sites.append(Site(name, (node,), intra, INTER_NODE_GBPS))
    links = tuple(
        Link(a, b, float(rng.integers(1, 16))) for a, b in itertools.combinations(names, 2)
    )
    return MultiCluster(f"spiderflow-testbed-{seed}", tuple(sites), links)


__all__ = [
    "INTER_CLUSTER_GBPS",
    "INTER_NODE_GBPS",
    "INTRA_NODE_GBPS",
    "NVLINK_GBPS",
    "PCIE_GBPS",
    "TESTBED_GPUS",
    "spiderflow_scale",
    "spiderflow_simulated",
    "spiderflow_testbed",
    "uniform",
]
