"""The JSON Schema of an ocs instance file, the family's size limits and value ranges.

``topoopt instances schema ocs`` prints :data:`SCHEMA`; ``topoopt.load`` enforces it before
:class:`~topoopt.ocs.instance.OcsInstance` checks what the schema leaves to it: unique names,
jobs on known pods, even port counts when a circuit takes two ports, a PS job on two pods or
more with its server among them, a fixed ring that visits each of the job's pods once, and
that every job can be given circuits at all (``docs/ocs.md``, "Input rules").
"""

from __future__ import annotations

from typing import Any

from topoopt.core.schema import NAME, array, instance_schema, integer, number, obj

LIMITS = {
    "ocs_pods": (1_000, "pods of an ocs network"),
    "ocs_jobs": (10_000, "jobs of an ocs instance"),
    "ocs_job_pods": (1_000, "pods one ocs job spans"),
}
"""Size limits ``{name: (default, what it bounds)}``, checked by the instance constructor before
anything is built from the counts (``topoopt.set_limits(ocs_pods=...)`` raises one)."""

JOB_TYPES = ("PS", "RAR", "A2A")
"""Parameter server, ring all-reduce, all-to-all (expert parallelism)."""
GBPS_RANGE = (1e-6, 1e9)
"""Accepted bandwidths (Gb/s): positive, in a range that keeps every time finite."""
MAX_SECONDS = 1e6
"""Largest time field (s)."""
MAX_BYTES = 1e18
"""Largest traffic size (bytes)."""
MAX_PORTS = 100_000
"""Most OXC ports of one pod."""
MAX_GPUS = 1_000_000
"""Most GPUs of one job on one pod."""

POD = obj(
    {
        "name": {**NAME, "description": "Pod name, unique."},
        "oxc_ports": integer(
            0,
            MAX_PORTS,
            description="N_i: OXC ports of the pod's ToR (even when a circuit takes two ports).",
        ),
        "tor_gbps": number(
            maximum=GBPS_RANGE[1],
            description=f"B_i: ToR <-> servers bandwidth of the pod per direction, Gb/s, "
            f">= {GBPS_RANGE[0]:g}.",
        ),
        "gpus": integer(
            1,
            MAX_GPUS,
            description="GPUs of the pod (optional; when given, the jobs' GPUs on "
            "the pod must fit).",
        ),
    },
    ["name", "oxc_ports", "tor_gbps"],
    "A pod: its ToR switch, the OXC ports of the ToR and the ToR's server-side bandwidth.",
)

NETWORK = obj(
    {
        "oxc_port_gbps": number(
            maximum=GBPS_RANGE[1],
            description=f"B_oxc: bandwidth of one OXC port (one circuit), Gb/s, "
            f">= {GBPS_RANGE[0]:g}.",
        ),
        "reconfig_s": number(
            0.0,
            MAX_SECONDS,
            description="delta: OXC reconfiguration delay charged to every communication phase, s.",
        ),
        "ports_per_circuit": {
            "enum": [1, 2],
            "description": "OXC ports one circuit takes at each end: 1 (default; bidirectional "
            "ports) or 2 (a transmit and a receive fibre port; then oxc_ports must be even).",
        },
        "pods": array(POD, min_items=1, description="The pods (P)."),
    },
    ["oxc_port_gbps", "reconfig_s", "pods"],
    "The optical data-center network.",
)

COMPUTE = obj(
    {
        "tokens": number(
            0.0, MAX_BYTES, description="Tokens one GPU processes per iteration (> 0)."
        ),
        "parameters": number(0.0, MAX_BYTES, description="Phi: model parameters (> 0)."),
        "gpu_flops": number(0.0, MAX_BYTES, description="F_GPU: peak FLOP/s of one GPU (> 0)."),
        "efficiency": number(0.0, 1.0, description="Fraction of the peak reached, in (0, 1]."),
        "recomputation": {
            "type": "boolean",
            "description": "Activation recomputation: K = 8 instead of 6 (default false).",
        },
    },
    ["tokens", "parameters", "gpu_flops", "efficiency"],
    "The inputs of paper eq. 7, t_train = K·tokens·Phi / (F_GPU·efficiency).",
)

JOB = obj(
    {
        "name": {**NAME, "description": "Job name, unique."},
        "type": {"enum": list(JOB_TYPES), "description": "PS, RAR or A2A."},
        "gpus": {
            "type": "object",
            "description": "G_{i,j}: GPUs of the job on each pod it spans (pod name -> count).",
            "minProperties": 1,
            "propertyNames": {"minLength": 1, "maxLength": 1000},
            "additionalProperties": integer(1, MAX_GPUS),
        },
        "t_train_s": number(
            0.0,
            MAX_SECONDS,
            description="Local training time per iteration, s (> 0); or give 'compute'.",
        ),
        "compute": COMPUTE,
        "traffic_bytes": number(
            0.0,
            MAX_BYTES,
            description="F: bytes per GPU and iteration (model size for PS and "
            "RAR, tokens x hidden bytes for A2A).",
        ),
        "t_agg_s": number(
            0.0, MAX_SECONDS, description="PS only: the server's aggregation time, s (default 0)."
        ),
        "server_pod": {
            **NAME,
            "description": "PS only: the pod of the parameter server "
            "(one of the job's pods); omitted, the solver chooses.",
        },
        "ring": {
            "type": "array",
            "items": NAME,
            "description": "RAR only: the order of the job's pods on the ring; omitted, the "
            "solver chooses.",
        },
        "units": integer(
            1,
            MAX_GPUS,
            description="Instead of gpus: parallel units the solver places on pods "
            "(paper Algorithm 2).",
        ),
        "unit_gpus": integer(1, MAX_GPUS, description="GPUs of one unit (default 1)."),
    },
    ["name", "type", "traffic_bytes"],
    "A training job, its GPUs per pod and its traffic.",
)

SCHEMA: dict[str, Any] = instance_schema(
    "ocs",
    "topoopt ocs instance (OCS TDM): split jobs into two TDM groups and set the OXC circuits "
    "of four phases",
    {
        "network": NETWORK,
        "jobs": array(JOB, min_items=1, description="The jobs (J)."),
    },
    ["network", "jobs"],
)
"""The JSON Schema (draft 2020-12) of the family's instance file."""

__all__ = [
    "GBPS_RANGE",
    "JOB_TYPES",
    "LIMITS",
    "MAX_BYTES",
    "MAX_GPUS",
    "MAX_PORTS",
    "MAX_SECONDS",
    "SCHEMA",
]
