"""Family ``parallelconfig``: data- and pipeline-parallel configuration inside one cluster
(SpiderFlow's TPA, intra-cluster level).

SpiderFlow §4.2: a cluster gives ``r`` GPUs (on nodes) to a job; the intra-cluster ILP chooses
the data-parallel degree ``d`` and the pipeline depth ``p`` (``d·p <= r``; tensor parallelism
is 1, §2.2) and which GPU runs which (replica, stage), minimising ``T_comp + alpha·T_dp +
beta·T_pp`` (:mod:`topoopt.parallelconfig.solution` states the cost model).

Solvers (``topoopt.solvers_for("parallelconfig")``): the exact segment ILP per ``(d, p)`` and
level of runs (``parallelconfig/mip``), the paper's cell-to-node ILP (``parallelconfig/paper-mip``),
a greedy packing baseline and the enumeration oracle.
"""

from topoopt.core.family import Family, ReportSection, Sense
from topoopt.parallelconfig import generate
from topoopt.parallelconfig import solution as _solution
from topoopt.parallelconfig.instance import Layer, Node, ParallelConfigInstance, TrainingModel
from topoopt.parallelconfig.result import ParallelConfigResult
from topoopt.parallelconfig.schema import LIMITS, SCHEMA
from topoopt.parallelconfig.solution import Breakdown, ParallelConfig, check, evaluate


def _size(instance: ParallelConfigInstance) -> dict[str, int]:
    return {
        "gpus": instance.n_gpus,
        "nodes": instance.n_nodes,
        "layers": instance.model.n_layers,
        "configurations": instance.n_configurations(),
    }


def _tags(instance: ParallelConfigInstance) -> dict[str, str]:
    """Whether ``(d, p)`` is fixed, and the instance's labels."""
    return {"parallelism": "fixed" if instance.parallelism else "free", **instance.labels}


FAMILY = Family(
    name="parallelconfig",
    sense=Sense.MINIMIZE,
    instance_type=ParallelConfigInstance,
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
    solver_modules=("topoopt.parallelconfig.solvers",),
    oracle="parallelconfig/enumerate",
    tags=_tags,
    report_sections=(
        ReportSection(
            "Parallel configuration: (d, p) and the parts of the cost (SpiderFlow §4.2)",
            "topoopt.parallelconfig.report:configuration_section",
        ),
    ),
    result_type=ParallelConfigResult,
    schema=SCHEMA,
    limits=LIMITS,
    size_figure="gpus",
)

__all__ = [
    "FAMILY",
    "Breakdown",
    "Layer",
    "Node",
    "ParallelConfig",
    "ParallelConfigInstance",
    "ParallelConfigResult",
    "TrainingModel",
    "check",
    "evaluate",
]
