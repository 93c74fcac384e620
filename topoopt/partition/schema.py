"""The JSON Schema of a partition instance file and the family's size limits.

``topoopt instances schema partition`` prints :data:`SCHEMA`; ``topoopt.load`` enforces it
before :class:`~topoopt.partition.instance.PartitionInstance` checks what a schema cannot state:
unique cluster and vertex names, links between known clusters (one per pair, a connected
graph), edges between known and distinct vertices (one per pair), every vertex fitting some
cluster and all vertices fitting the clusters together.
"""

from __future__ import annotations

from topoopt.core.schema import NAME, array, instance_schema, integer, number, obj

LIMITS = {
    "partition_clusters": (100_000, "clusters of a partition instance"),
    "partition_vertices": (1_000_000, "vertices of a partition instance's job graph"),
    "partition_edges": (10_000_000, "edges of a partition instance's job graph plus its links"),
}
"""Size limits ``{name: (default, what it bounds)}``, checked by the instance constructor."""

CLUSTER = obj(
    {
        "name": NAME,
        "capacity_gpus": integer(0, description="GPUs the job may use in this cluster."),
    },
    ["name", "capacity_gpus"],
    "A cluster and the GPUs the job may use there.",
)

LINK = obj(
    {
        "a": NAME,
        "b": NAME,
        "bandwidth_gbps": number(description="Link bandwidth in Gb/s, > 0."),
        "latency_ms": number(0.0, description="Link latency in ms (on every link or none)."),
    },
    ["a", "b", "bandwidth_gbps"],
    "An undirected link between two clusters.",
)

VERTEX = obj(
    {"name": NAME, "gpus": integer(0, description="GPUs of this compute unit.")},
    ["name", "gpus"],
    "A compute unit of the job (e.g. pipeline stage s of DP replica r).",
)

EDGE = obj(
    {
        "u": NAME,
        "v": NAME,
        "traffic": number(0.0, description="Traffic between the two units (e.g. GB per step)."),
    },
    ["u", "v", "traffic"],
    "Communication between two compute units.",
)

SCHEMA = instance_schema(
    "partition",
    "topoopt partition instance (SpiderFlow TPA, eq. 9): map a job graph onto clusters",
    {
        "clusters": array(CLUSTER, min_items=1, description="The clusters, names unique."),
        "links": array(LINK, description="The links; the cluster graph must be connected."),
        "graph": obj(
            {
                "vertices": array(VERTEX, min_items=1, description="Compute units, unique."),
                "edges": array(EDGE, description="Communication edges, one per pair."),
            },
            ["vertices", "edges"],
            "The job's communication graph.",
        ),
    },
    ["clusters", "links", "graph"],
)
"""The JSON Schema (draft 2020-12) of the family's instance file."""

__all__ = ["LIMITS", "SCHEMA"]
