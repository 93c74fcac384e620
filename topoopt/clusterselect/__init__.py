"""Family ``clusterselect``: choose the clusters and GPUs of one cross-cluster task (SpiderFlow).

SpiderFlow §4.1: clusters form a graph with free GPUs and link bandwidths; a task of ``d`` GPUs
takes ``Δ_i <= g_i`` GPUs from each cluster, ``sum Δ_i = d``. The lexicographic objective is
the fewest clusters, then the widest bottleneck bandwidth (eq. 1) among them, then the smallest
total pairwise latency (:mod:`topoopt.clusterselect.solution` says how it becomes one number).

Solvers (``topoopt.solvers_for("clusterselect")``): SpinSearch (eq. 2–7), the exact MIP, the
opportunistic and single-cluster (Mast) baselines and the enumeration oracle.
"""

from topoopt.clusterselect import generate
from topoopt.clusterselect import solution as _solution
from topoopt.clusterselect.instance import Cluster, ClusterSelectInstance
from topoopt.clusterselect.result import ClusterSelectResult
from topoopt.clusterselect.schema import LIMITS, SCHEMA
from topoopt.clusterselect.solution import Key, Selection, check, evaluate, key
from topoopt.core.family import Family, ReportSection, Sense
from topoopt.crosscluster.graph import ClusterGraph, Link


def _size(instance: ClusterSelectInstance) -> dict[str, int]:
    return {
        "clusters": instance.n_clusters,
        "links": instance.n_links,
        "demand": instance.demand,
        "free": instance.total_free,
    }


def _tags(instance: ClusterSelectInstance) -> dict[str, str]:
    """The instance's labels and whether the task has a source cluster."""
    return {"source": "given" if instance.source else "none", **instance.labels}


FAMILY = Family(
    name="clusterselect",
    sense=Sense.MINIMIZE,
    instance_type=ClusterSelectInstance,
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
    solver_modules=("topoopt.clusterselect.solvers",),
    oracle="clusterselect/enumerate",
    tags=_tags,
    report_sections=(
        ReportSection(
            "Cluster selection: K, bottleneck and latency (SpiderFlow §4.1)",
            "topoopt.clusterselect.report:selection_section",
        ),
    ),
    result_type=ClusterSelectResult,
    schema=SCHEMA,
    limits=LIMITS,
    size_figure="clusters",
)

__all__ = [
    "FAMILY",
    "Cluster",
    "ClusterGraph",
    "ClusterSelectInstance",
    "ClusterSelectResult",
    "Key",
    "Link",
    "Selection",
    "check",
    "evaluate",
    "key",
]
