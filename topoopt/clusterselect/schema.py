"""The JSON Schema of a clusterselect instance file and the family's size limits.

``topoopt instances schema clusterselect`` prints :data:`SCHEMA`; ``topoopt.load`` enforces it
before :class:`~topoopt.clusterselect.instance.ClusterSelectInstance` checks what a schema
cannot state: unique cluster names, links between known and distinct clusters, one link per
pair, latency on every link or none, a connected graph, ``source`` a cluster and ``demand`` at
most the free GPUs.
"""

from __future__ import annotations

from topoopt.core.schema import NAME, array, instance_schema, integer, number, obj

LIMITS = {
    "clusterselect_clusters": (1_000_000, "clusters of a clusterselect instance"),
    "clusterselect_links": (10_000_000, "links of a clusterselect instance"),
}
"""Size limits ``{name: (default, what it bounds)}``, checked by the instance constructor before
the graph is built (``topoopt.set_limits(clusterselect_clusters=...)`` raises one)."""

CLUSTER = obj(
    {
        "name": NAME,
        "free_gpus": integer(0, description="GPUs free for the task in this cluster (g_i)."),
    },
    ["name", "free_gpus"],
    "A cluster and its free GPUs.",
)

LINK = obj(
    {
        "a": NAME,
        "b": NAME,
        "bandwidth_gbps": number(description="Link bandwidth b_ab in Gb/s, > 0."),
        "latency_ms": number(0.0, description="Link latency in ms (on every link or none)."),
    },
    ["a", "b", "bandwidth_gbps"],
    "An undirected link between two clusters.",
)

SCHEMA = instance_schema(
    "clusterselect",
    "topoopt clusterselect instance (SpiderFlow SpinSearch): choose clusters for a task",
    {
        "clusters": array(CLUSTER, min_items=1, description="The clusters, names unique."),
        "links": array(LINK, description="The links; the graph must be connected."),
        "demand": integer(1, description="GPUs the task needs (d_t), at most the free GPUs."),
        "source": {**NAME, "description": "The cluster the task arrives at (optional)."},
    },
    ["clusters", "links", "demand"],
)
"""The JSON Schema (draft 2020-12) of the family's instance file."""

__all__ = ["LIMITS", "SCHEMA"]
