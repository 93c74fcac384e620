"""The JSON Schema of a parallelconfig instance file, the family's size limits and value ranges.

``topoopt instances schema parallelconfig`` prints :data:`SCHEMA`; ``topoopt.load`` enforces it
before :class:`~topoopt.parallelconfig.instance.ParallelConfigInstance` checks what the schema
leaves to it: unique node names without ``/``, bandwidths and compute times strictly positive,
and a fixed ``parallelism`` that fits the GPUs (``d·p <= r``), the layers (``p <= L``) and the
micro-batches (``d <= M``).
"""

from __future__ import annotations

from topoopt.core.schema import NAME, array, instance_schema, integer, number, obj

LIMITS = {
    "parallelconfig_nodes": (100_000, "nodes of a parallelconfig instance"),
    "parallelconfig_gpus": (1_000_000, "GPUs of a parallelconfig instance"),
    "parallelconfig_layers": (1_000_000, "layers of a parallelconfig model"),
}
"""Size limits ``{name: (default, what it bounds)}``, checked by the instance constructor before
anything is built from the counts (``topoopt.set_limits(parallelconfig_gpus=...)`` raises one)."""

GBPS_RANGE = (1e-6, 1e9)
"""Accepted bandwidths (Gb/s): positive, in a range that keeps every time finite."""
MAX_COMPUTE_S = 1e6
"""Largest compute time of one layer (s)."""
MAX_BYTES = 1e18
"""Largest byte count (gradients of a layer, activations per micro-batch)."""
MAX_WEIGHT = 1e6
"""Largest ``alpha`` / ``beta``."""

NODE = obj(
    {
        "name": {**NAME, "description": "Node name, unique, without '/' (GPUs are 'name/k')."},
        "gpus": integer(1, description="GPUs of this node given to the job (>= 1)."),
    },
    ["name", "gpus"],
    "A node of the cluster and the GPUs it gives to the job.",
)

LAYER = obj(
    {
        "compute_s": number(
            maximum=MAX_COMPUTE_S,
            description="Forward + backward time of the layer for one micro-batch, s, > 0.",
        ),
        "param_bytes": number(
            0.0, MAX_BYTES, description="Gradient bytes the layer all-reduces per iteration."
        ),
    },
    ["compute_s", "param_bytes"],
    "One layer of the model.",
)

MODEL = obj(
    {
        "layers": array(LAYER, min_items=1, description="The layers in pipeline order (L)."),
        "activation_bytes": number(
            0.0,
            MAX_BYTES,
            description="Bytes crossing one stage boundary per micro-batch (forward activations "
            "plus backward gradients).",
        ),
        "micro_batches": integer(
            1, description="Micro-batches per iteration over all replicas (M)."
        ),
    },
    ["layers", "activation_bytes", "micro_batches"],
    "The model to train.",
)

PARALLELISM = obj(
    {
        "d": integer(1, description="Data-parallel degree (replicas)."),
        "p": integer(1, description="Pipeline depth (stages)."),
    },
    ["d", "p"],
    "A fixed (d, p): the solvers then choose the GPUs only.",
)

SCHEMA = instance_schema(
    "parallelconfig",
    "topoopt parallelconfig instance (SpiderFlow TPA, intra-cluster level): choose DP x PP and "
    "the GPU of every (replica, stage)",
    {
        "nodes": array(NODE, min_items=1, description="The nodes and their GPUs (r in all)."),
        "intra_node_gbps": number(
            maximum=GBPS_RANGE[1],
            description=f"GPU-to-GPU bandwidth inside a node, Gb/s, >= {GBPS_RANGE[0]:g}.",
        ),
        "inter_node_gbps": number(
            maximum=GBPS_RANGE[1],
            description=f"GPU-to-GPU bandwidth between nodes, Gb/s, >= {GBPS_RANGE[0]:g}.",
        ),
        "model": MODEL,
        "alpha": number(0.0, MAX_WEIGHT, description="Weight of T_dp (default 1)."),
        "beta": number(0.0, MAX_WEIGHT, description="Weight of T_pp (default 1)."),
        "parallelism": PARALLELISM,
    },
    ["nodes", "intra_node_gbps", "inter_node_gbps", "model"],
)
"""The JSON Schema (draft 2020-12) of the family's instance file."""

__all__ = ["GBPS_RANGE", "LIMITS", "MAX_BYTES", "MAX_COMPUTE_S", "MAX_WEIGHT", "SCHEMA"]
