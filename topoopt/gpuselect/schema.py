"""The JSON Schema of a gpuselect instance file and the family's size limits.

``topoopt instances schema gpuselect`` prints :data:`SCHEMA`; ``topoopt.load`` enforces it
before the constructors (:class:`~topoopt.gpuselect.host.Host`,
:class:`~topoopt.gpuselect.instance.GpuSelectInstance`, the models of
:mod:`topoopt.gpuselect.models`) check the rules a schema cannot state: ``k`` at most the idle
GPUs, idle indices below ``gpus`` and not repeated, unique host names, mask names of GPUs
below 16, a table or topology for every host type, the files a model names.

The ``bandwidth`` object depends on its ``"model"``: one closed object per kind, chosen by
``if``/``then`` on ``"model"`` so that an error names the field of that kind. A value that may
take several forms (an intra table, a CSV path or a list of them; a topology given as text, a
file or rows of link tokens) is dispatched on its JSON type the same way.

:data:`LIMITS` bound the size of an instance; the constructors check them before allocating
anything in proportion (``topoopt.set_limits(gpuselect_hosts=...)`` or the environment
variable ``TOPOOPT_LIMIT_GPUSELECT_HOSTS`` raise one).
"""

from __future__ import annotations

from typing import Any

from topoopt.core.limits import MAX_INTEGER
from topoopt.core.schema import NAME, array, instance_schema, integer, number, obj
from topoopt.gpuselect.masks import MAX_GPUS_PER_HOST
from topoopt.gpuselect.models.learned import FORMAT as LEARNED_FORMAT

LIMITS = {
    "gpuselect_hosts": (131_072, "hosts of a gpuselect instance"),
    "gpuselect_gpus": (1_048_576, "GPUs of a gpuselect instance (busy and idle, all hosts)"),
    "gpuselect_host_types": (
        256,
        "distinct host types of a gpuselect instance (each is bound to a dense table of "
        "2**gpus bandwidths)",
    ),
    "gpuselect_table_entries": (
        1_048_576,
        "entries of a gpuselect bandwidth model: intra-host and cross-host table entries, "
        "topology matrix cells and link overrides, and the data rows of one CSV file",
    ),
}
"""Size limits ``{name: (default, what it bounds)}``, checked by the constructors before
anything proportional is allocated. The defaults admit pools of a million GPUs (131,072
8-GPU hosts); every solver's memory is bounded by the instance's size. Declared by
:mod:`topoopt.gpuselect.instance` when the family is imported."""

MODEL_KINDS = ("table", "bottleneck", "topology", "learned")
"""The ``"model"`` values of the built-in bandwidth models."""

MASK_NAME = r"^\s*[0-9]+(\s*,\s*[0-9]+)*\s*$"
"""Pattern of an intra-table key: concatenated indices (``"0123"``) or a comma-separated list
(``"0,1,12"``), as nccl-tests names GPU subsets."""

LINK_TOKEN = r"^(X|NV[0-9]+|PIX|PXB|PHB|NODE|SYS|SOC)$"
"""Pattern of an ``nvidia-smi topo -m`` link token."""


def _by_type(**forms: dict[str, Any]) -> dict[str, Any]:
    """A value taking one form per JSON type (``object=..., array=..., string=...``).

    Each form applies only to values of its type (nested ``if``/``then``/``else``), so an
    error names the part of the chosen form that is wrong; any other type gets one error
    listing the accepted types.
    """
    out: dict[str, Any] = {"type": list(forms)}
    branch = out
    for i, (kind, schema) in enumerate(forms.items()):
        branch["if"] = {"type": kind}
        branch["then"] = schema
        if i < len(forms) - 1:
            branch["else"] = {}
            branch = branch["else"]
    return out


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


HOST_TYPE = {
    "type": "string",
    "minLength": 1,
    "maxLength": 1000,
    "description": 'Host type (e.g. "H100"); bandwidth tables and topologies are keyed by it. '
    'Always a string: write a numeric type in quotes ("4090").',
}

HOST = obj(
    {
        "name": {**NAME, "description": "Host name, unique within the instance."},
        "type": _ref("host_type"),
        "gpus": integer(1, MAX_GPUS_PER_HOST, "GPUs of the host, local indices 0..gpus-1."),
        "available": array(
            integer(0, MAX_GPUS_PER_HOST - 1),
            maxItems=MAX_GPUS_PER_HOST,
            description="Idle local indices, each below gpus and listed once (default: all).",
        ),
    },
    ["name", "type", "gpus"],
    "A server: its GPUs and which of them are idle.",
)

INTRA_TABLE = {
    "type": "object",
    "description": "Bandwidth (GB/s) of GPU subsets of one host, keyed by nccl-tests name: "
    f'concatenated indices ("0123") or a comma-separated list ("0,1,12"), {MASK_NAME}, '
    f"indices below {MAX_GPUS_PER_HOST} (checked when the instance is read, with a message "
    "naming the key).",
    "additionalProperties": number(0.0),
}

FILE_PATH = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "A file, relative to the instance file's folder (absolute paths and .. "
    "escapes need allow_paths).",
}

INTRA_SOURCE = _by_type(
    object=_ref("intra_table"),
    string={**_ref("file"), "description": "An nccl-tests CSV file."},
    array=array(
        _by_type(object=_ref("intra_table"), string=_ref("file")),
        min_items=1,
        description="Tables or CSV files of the same host type, averaged entry by entry.",
    ),
)

INTRA = {
    "type": "object",
    "description": "Intra-host bandwidth per host type.",
    "propertyNames": _ref("host_type"),
    "additionalProperties": INTRA_SOURCE,
}

COUNTS = array(
    integer(0), min_items=1, description="GPUs the subset takes from each node of the mapping."
)

CROSS_ROW = _by_type(
    object=obj({"counts": COUNTS, "gbps": number(0.0)}, ["counts", "gbps"]),
    array={
        "type": "array",
        "prefixItems": [COUNTS, number(0.0)],
        "minItems": 2,
        "maxItems": 2,
        "description": "A [counts, gbps] pair.",
    },
)

CROSS = _by_type(
    array=array(CROSS_ROW, description="Cross-host entries; repeated counts are averaged."),
    string={**_ref("file"), "description": "A cross-host nccl-tests CSV file."},
    null={"description": "No cross-host table: subsets spanning hosts have no bandwidth."},
)

MATRIX = _by_type(
    string={
        "type": "string",
        "description": "nvidia-smi topo -m output (raw or Markdown) when it contains GPU0, "
        "else the file holding it.",
    },
    array=array(
        array({"type": "string", "pattern": LINK_TOKEN}, min_items=1, maxItems=MAX_GPUS_PER_HOST),
        min_items=1,
        maxItems=MAX_GPUS_PER_HOST,
        description="Rows of link tokens, X on the diagonal, symmetric.",
    ),
)

LINKS = {
    "type": "object",
    "description": "Link bandwidth overrides (GB/s): {link: GB/s} for every type, or "
    "{type: {link: GB/s}} for one.",
    "additionalProperties": _by_type(
        number=number(0.0),
        object={"type": "object", "additionalProperties": number(0.0)},
    ),
}

INTER_GBPS = number(0.0, description="Per-host inter-host link bandwidth in GB/s.")
GPUS_PER_NIC = {
    "type": ["integer", "null"],
    "minimum": 1,
    "maximum": MAX_INTEGER,
    "description": "GPUs a host's NIC serves at full rate; null for no sharing.",
}

MODELS = {
    "table": obj(
        {
            "model": {"const": "table"},
            "intra": INTRA,
            "cross": CROSS,
            "interchangeable_hosts": {
                "type": "boolean",
                "description": "Cross keys are count profiles (true, default) or count "
                "vectors in host order (false).",
            },
        },
        ["model", "intra"],
        "Measured tables (intra-host per type, optional cross-host).",
    ),
    "bottleneck": obj(
        {
            "model": {"const": "bottleneck"},
            "intra": INTRA,
            "inter_gbps": INTER_GBPS,
            "gpus_per_nic": GPUS_PER_NIC,
        },
        ["model", "intra", "inter_gbps"],
        "The paper's simulator: measured intra-host tables and one inter-host link.",
    ),
    "topology": obj(
        {
            "model": {"const": "topology"},
            "inter_gbps": INTER_GBPS,
            "gpus_per_nic": GPUS_PER_NIC,
            "topology": {
                "type": "object",
                "description": "Link matrix per host type (default: the paper's Appendix E).",
                "propertyNames": _ref("host_type"),
                "additionalProperties": MATRIX,
            },
            "links": LINKS,
        },
        ["model", "inter_gbps"],
        "Intra-host terms from nvidia-smi topo -m matrices, inter-host as bottleneck.",
    ),
    "learned": obj(
        {
            "model": {"const": "learned"},
            "file": {**_ref("file"), "description": "The model file (topoopt learn bandwidth)."},
            "format": {"const": LEARNED_FORMAT},
            "version": integer(1),
            "types": {"type": "object", "description": "Trained host types: GPUs, intra table."},
            "features": array({"type": "string"}),
            "target": {"type": "string"},
            "predictor": {"type": "object", "description": "Trees of the inter-host term."},
            "committee": array({"type": "object"}),
            "training": {"type": "object", "description": "What the model was trained on."},
        },
        ["model"],
        "BandPilot's surrogate: measured intra-host tables and a learned inter-host term, "
        "from its file or inline (the file's content).",
    ),
}

BANDWIDTH = {
    "type": "object",
    "description": "The bandwidth model B(S); its fields depend on model.",
    "required": ["model"],
    "properties": {"model": {"enum": list(MODEL_KINDS)}},
    "allOf": [
        {
            "if": {"properties": {"model": {"const": kind}}, "required": ["model"]},
            "then": schema,
        }
        for kind, schema in MODELS.items()
    ],
}

SCHEMA = {
    **instance_schema(
        "gpuselect",
        "topoopt gpuselect instance (BandPilot): choose k idle GPUs maximising B(S)",
        {
            "cluster": {**NAME, "description": "Cluster name (h100, het-4mix, ...)."},
            "k": integer(1, description="GPUs requested (at most the idle GPUs)."),
            "hosts": array(HOST, min_items=1, description="The hosts, names unique."),
            "bandwidth": BANDWIDTH,
        },
        ["k", "hosts", "bandwidth"],
    ),
    "$defs": {"host_type": HOST_TYPE, "intra_table": INTRA_TABLE, "file": FILE_PATH},
}
"""The JSON Schema (draft 2020-12) of the family's instance file."""

__all__ = ["LIMITS", "MODEL_KINDS", "SCHEMA"]
