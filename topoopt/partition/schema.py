"""The JSON Schema of a partition instance file and the family's size limits.

``topoopt instances schema partition`` prints :data:`SCHEMA`; ``topoopt.load`` enforces it
before :class:`~topoopt.partition.instance.PartitionInstance` checks what a schema cannot state:
unique cluster and vertex names, links between known clusters (one per pair, a connected
graph), edges between known and distinct vertices (one per pair), every vertex fitting some
cluster and all vertices fitting the clusters together; and for the optional intra-cluster
data (Heuristic-ILP): a cluster's ``nodes``, ``intra_node_gbps`` and ``inter_node_gbps``
given together, its nodes holding at least its capacity, a vertex's ``compute_s`` (> 0) and
``param_bytes`` given together, on a vertex of at least one GPU. The intra-cluster fields
reuse the parallelconfig schema's definitions (:mod:`topoopt.parallelconfig.schema`).
"""

from __future__ import annotations

from topoopt.core.schema import NAME, array, instance_schema, integer, number, obj
from topoopt.parallelconfig.schema import LAYER, MODEL, NODE
from topoopt.parallelconfig.schema import SCHEMA as PARALLELCONFIG_SCHEMA

_PC = PARALLELCONFIG_SCHEMA["properties"]

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
        "nodes": array(
            NODE,
            min_items=1,
            description="Optional (Heuristic-ILP): the nodes of the GPUs the job may use, at "
            "least capacity_gpus in all; with intra_node_gbps and inter_node_gbps.",
        ),
        "intra_node_gbps": _PC["intra_node_gbps"],
        "inter_node_gbps": _PC["inter_node_gbps"],
    },
    ["name", "capacity_gpus"],
    "A cluster and the GPUs the job may use there (optionally on which nodes).",
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
    {
        "name": NAME,
        "gpus": integer(0, description="GPUs of this compute unit."),
        "compute_s": LAYER["properties"]["compute_s"],
        "param_bytes": LAYER["properties"]["param_bytes"],
    },
    ["name", "gpus"],
    "A compute unit of the job (e.g. pipeline stage s of DP replica r); with compute_s and "
    "param_bytes (together) a block of layers of the model (Heuristic-ILP).",
)

TRAINING = obj(
    {
        "activation_bytes": MODEL["properties"]["activation_bytes"],
        "micro_batches": MODEL["properties"]["micro_batches"],
        "alpha": _PC["alpha"],
        "beta": _PC["beta"],
    },
    ["activation_bytes", "micro_batches"],
    "Optional (Heuristic-ILP): the training figures of every cluster's sub-problem.",
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
        "training": TRAINING,
    },
    ["clusters", "links", "graph"],
)
"""The JSON Schema (draft 2020-12) of the family's instance file."""

__all__ = ["LIMITS", "SCHEMA"]
