"""The JSON Schema of a placement instance file and the family's size limits.

``topoopt instances schema placement`` prints :data:`SCHEMA`; ``topoopt.load`` enforces it
before :class:`~topoopt.placement.instance.PlacementInstance` checks the rules a schema cannot
state (``tp`` divides ``gpus_per_node``, enough free nodes, node names unique).
"""

from __future__ import annotations

from topoopt.core.schema import NAME, array, instance_schema, integer, number, obj

LIMITS = {
    "placement_minipods": (100_000, "minipods of a placement instance"),
    "placement_free_nodes": (1_000_000, "free nodes of a placement instance, over all minipods"),
}
"""Size limits, checked by the instance constructor before anything is allocated."""

LEAF = obj(
    {
        "name": NAME,
        "nodes": array(NAME, description="Names of the leaf's free nodes."),
        "path": array(
            NAME,
            description="Switches between the minipod and the leaf, top first (the same "
            "number for every leaf; omitted when empty).",
        ),
    },
    ["nodes"],
    "A leaf (rack) switch and the names of its free nodes.",
)

MINIPOD = obj(
    {
        "name": NAME,
        "free_nodes": integer(0, description="Free nodes (the leaves' total when they are given)."),
        "leaves": array(LEAF),
    },
    description="A minipod; free_nodes may be left out when leaves are given.",
)

OBJECTIVE = obj(
    {
        "levels": {
            "enum": ["top", "lex", "weighted"],
            "description": "top: Arnold eq. 2 at the minipods (default); lex: the levels' "
            "scores lexicographically from the top; weighted: sum of weights[l] * score_l.",
        },
        "weights": array(
            number(0.0, description="Weight of one level's score."),
            description="For levels 'weighted': one weight per level, top first.",
        ),
    },
    ["levels"],
    "How the scores of the levels combine (docs/levels.md).",
)

LEVEL = {
    "anyOf": [NAME, integer(-1000, 1000)],
    "description": "A level: its name, or its index (0 = the minipods, negative from the leaves).",
}

CONSTRAINTS = obj(
    {
        "required_level": {
            **LEVEL,
            "description": "Kueue podset-required-topology: the whole job in one switch of it.",
        },
        "preferred_level": {
            **LEVEL,
            "description": "Kueue podset-preferred-topology: one switch of it, else of the "
            "level above, ...",
        },
        "slice_size": integer(1, description="Kueue podset-slice-size: ranks per slice."),
        "slice_level": {
            **LEVEL,
            "description": "Kueue podset-slice-required-topology: each slice in one switch of "
            "it (default: the leaves).",
        },
        "slice_layers": array(
            obj(
                {
                    "size": integer(1, description="Ranks per slice of this layer."),
                    "level": {**LEVEL, "description": "Each slice in one switch of it."},
                },
                ("size", "level"),
            ),
            1,
            description="Kueue podset-slice-required-topology-constraints: slice layers, "
            "coarsest first, each level below and each size dividing the one before.",
        ),
        "segment": integer(1, description="Slurm --segment: ranks per leaf-level segment."),
        "max_switches": integer(1, description="Slurm --switches: most leaves in all."),
        "block": {
            "type": "boolean",
            "description": "Slurm topology/block: the job (each segment) in one block of the "
            "smallest BlockSizes size that holds it.",
        },
    },
    (),
    "Rules the placement must respect (docs/levels.md).",
)

SCHEMA = instance_schema(
    "placement",
    "topoopt placement instance (Arnold): one LLM job's nodes into the minipods of a fat-tree",
    {
        "topology": obj(
            {
                "gpus_per_node": integer(1, 4096, "GPUs per node (default 8)."),
                "minipods": array(
                    {"anyOf": [integer(0, description="Free nodes of minipod mp<i>."), MINIPOD]},
                    min_items=1,
                ),
                "level_names": array(
                    NAME,
                    description="Names of the levels, top first: the minipods, each level of "
                    "the leaves' paths, the leaves.",
                ),
                "block_sizes": array(
                    integer(1),
                    description="Slurm BlockSizes, one per level, the leaves' (base blocks) first.",
                ),
            },
            ["minipods"],
        ),
        "job": obj(
            {
                "dp": integer(1, description="Data-parallel degree."),
                "tp": integer(1, description="Tensor-parallel degree (divides gpus_per_node)."),
                "pp": integer(1, description="Pipeline-parallel degree."),
            },
            ["dp", "tp", "pp"],
        ),
        "alpha": number(0.0, 1.0, "Weight of the DP spread; 1 - alpha weighs the PP spread."),
        "objective": OBJECTIVE,
        "constraints": CONSTRAINTS,
    },
    ["topology", "job", "alpha"],
)
"""The JSON Schema (draft 2020-12) of the family's instance file."""
