"""Family ``partition``: map a job's communication graph onto clusters (SpiderFlow TPA, eq. 9).

SpiderFlow §4.2, the inter-cluster level of Topology-aware Parallelism Automation: the job's
compute units (pipeline stages × data-parallel replicas, with their GPUs) are assigned to
clusters with capacities, minimising the traffic of the edges between clusters weighted by the
reciprocal widest-path bandwidth (:mod:`topoopt.partition.solution`).

Solvers (``topoopt.solvers_for("partition")``): the exact MIP, SpiderFlow's greedy low-cut
heuristic and its iterated search (``partition/ils``), a DT-FM-style genetic search, METIS, the
two-level Heuristic-ILP and the enumeration oracle.

``partition/heuristic-ilp`` is SpiderFlow's two-level TPA (Table 2's Heuristic-ILP): greedy
low-cut between the clusters, then the ``parallelconfig`` ILP inside each cluster. It needs the
optional intra-cluster data of the instance (nodes per cluster, a block of layers per vertex, the
training figures; :attr:`PartitionInstance.has_intra`), builds each cluster's sub-problem with
:mod:`topoopt.partition.intra` and returns the assignment with a configuration per cluster
(:attr:`Assignment.configs`); the objective stays eq. 9, the metrics add the per-cluster times and
a step-time estimate.
"""

from topoopt.core.family import Family, ReportSection, Sense
from topoopt.partition import generate
from topoopt.partition import solution as _solution
from topoopt.partition.instance import Cluster, Edge, PartitionInstance, Training, Vertex
from topoopt.partition.result import PartitionResult
from topoopt.partition.schema import LIMITS, SCHEMA
from topoopt.partition.solution import Assignment, check, evaluate


def _size(instance: PartitionInstance) -> dict[str, int]:
    return {
        "vertices": instance.n_vertices,
        "edges": len(instance.edges),
        "clusters": instance.n_clusters,
        "gpus": instance.total_gpus,
    }


def _tags(instance: PartitionInstance) -> dict[str, str]:
    """The job graph's ``size`` (``vertices/edges``) and the instance's labels."""
    return {"size": f"{instance.n_vertices}/{len(instance.edges)}", **instance.labels}


FAMILY = Family(
    name="partition",
    sense=Sense.MINIMIZE,
    instance_type=PartitionInstance,
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
    solver_modules=("topoopt.partition.solvers",),
    oracle="partition/enumerate",
    tags=_tags,
    report_sections=(
        ReportSection(
            "Graph partitioning: SpiderFlow Table 2", "topoopt.partition.report:table2_section"
        ),
    ),
    result_type=PartitionResult,
    schema=SCHEMA,
    limits=LIMITS,
    size_figure="vertices",
)

__all__ = [
    "FAMILY",
    "Assignment",
    "Cluster",
    "Edge",
    "PartitionInstance",
    "PartitionResult",
    "Training",
    "Vertex",
    "check",
    "evaluate",
]
