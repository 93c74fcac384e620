"""Family ``gpuselect``: choose k GPUs from an available pool to maximise bandwidth (BandPilot).

Zhang et al., "BandPilot: Towards Performance-Aware GPU Dispatching in AI Clusters". An
instance is a cluster's hosts with their idle GPUs, a request ``k`` and a bandwidth model
``B(S)`` (:mod:`topoopt.gpuselect.models`); a solution is the chosen ``(host, GPU)`` pairs; the
objective ``B(S)`` in GB/s is maximised (eq. 2). GBE (eq. 4) is ``B(S) / max B``.

Solvers (``topoopt.solvers_for("gpuselect")``): the paper's EHA (Alg. 1), PTS (Alg. 2) and
their hybrid, the baselines of Appendix D (random, default, topo), an exact MIP, the
enumeration oracle and ``gpuselect/auto`` (the oracle's proven optimum where the model is
structured, the hybrid elsewhere: what a scheduler calls).
"""

from topoopt.core.family import Family, ReportSection, Sense
from topoopt.gpuselect import generate
from topoopt.gpuselect import solution as _solution
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.importer import IMPORTER
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.models import (
    BandwidthModel,
    BottleneckModel,
    BoundModel,
    CallableModel,
    MissingEntryError,
    StructuredModel,
    TableModel,
    TopologyModel,
    model_from_dict,
)
from topoopt.gpuselect.result import GpuSelectResult
from topoopt.gpuselect.schema import LIMITS, SCHEMA
from topoopt.gpuselect.solution import Selection, check, evaluate


def _size(instance: GpuSelectInstance) -> dict[str, int]:
    return {
        "k": instance.k,
        "gpus": instance.total_gpus,
        "available": instance.total_available,
        "hosts": instance.n_hosts,
    }


def _tags(instance: GpuSelectInstance) -> dict[str, str]:
    """The instance's labels, its ``cluster`` (when named) and its bandwidth model kind."""
    tags = {"model": instance.bandwidth.kind, **instance.labels}
    if instance.cluster is not None:
        tags["cluster"] = instance.cluster
    return tags


def _launch_lines(instance: GpuSelectInstance, selection: Selection) -> list[str]:
    """``host CUDA_VISIBLE_DEVICES=i,j`` for every host the selection uses."""
    from topoopt.gpuselect.pool import devices_lines

    return devices_lines(_solution.to_dict(instance, selection)["gpus"])


FAMILY = Family(
    name="gpuselect",
    sense=Sense.MAXIMIZE,
    instance_type=GpuSelectInstance,
    evaluate=evaluate,
    check=check,
    solution_to_dict=_solution.to_dict,
    solution_from_dict=_solution.from_dict,
    metrics=_solution.metrics,
    size=_size,
    describe=_solution.describe,
    examples=generate.examples,
    slow_examples=generate.slow_examples,
    generators=generate.GENERATORS,
    solver_modules=("topoopt.gpuselect.solvers",),
    oracle="gpuselect/enumerate",
    tags=_tags,
    report_sections=(
        ReportSection(
            "GPU selection: GBE (BandPilot Table 2, Fig. 6)", "topoopt.gpuselect.report:gbe_section"
        ),
    ),
    result_type=GpuSelectResult,
    schema=SCHEMA,
    limits=LIMITS,
    importer=IMPORTER,
    launch_lines=_launch_lines,
    size_figure="available",
)

__all__ = [
    "FAMILY",
    "BandwidthModel",
    "BottleneckModel",
    "BoundModel",
    "CallableModel",
    "GpuSelectInstance",
    "GpuSelectResult",
    "Host",
    "MissingEntryError",
    "Selection",
    "StructuredModel",
    "TableModel",
    "TopologyModel",
    "check",
    "evaluate",
    "model_from_dict",
]
