"""Family ``placement``: communication-aligned placement of an LLM job into minipods (Arnold).

He et al., "Efficient Pre-Training of LLMs via Topology-Aware Communication Alignment on
More Than 9600 GPUs" (Arnold). An instance is a fat-tree's free nodes per minipod plus a job
with degrees DP, TP, PP; a solution maps each cell of the job's communication matrix
(eq. 1) to a minipod; the score (eq. 2–3) weighs the largest DP-group spread by ``alpha``
and the largest PP-group spread by ``1 - alpha``.

Solvers (see ``topoopt.solvers_for("placement")``): the coarse MIP of eq. 4–10
(``placement/coarse-mip``), an exact MIP (``placement/exact-mip``), the paper's baselines,
production baselines (Slurm ``topology/tree``, Koordinator), the enumeration oracle, and
``placement/hierarchical`` (any of them for the minipods, then each minipod's cells on its
leaves; metrics ``leaf_dp_spread``, ``leaf_pp_spread``, ``leaf_score`` whenever the instance
has leaves).
"""

from topoopt.core.family import Family, ReportSection, Sense
from topoopt.placement import generate
from topoopt.placement import solution as _solution
from topoopt.placement.importer import IMPORTER
from topoopt.placement.instance import Leaf, Minipod, PlacementInstance
from topoopt.placement.result import PlacementResult
from topoopt.placement.schema import LIMITS, SCHEMA
from topoopt.placement.solution import (
    Placement,
    check,
    dp_spread,
    evaluate,
    format_placement,
    pp_spread,
    rank_order,
    spread,
)


def _size(instance: PlacementInstance) -> dict[str, int]:
    return {
        "nodes": instance.n_nodes,
        "rows": instance.rows,
        "cols": instance.cols,
        "minipods": instance.n_minipods,
        "free_nodes": instance.total_free,
    }


def _tags(instance: PlacementInstance) -> dict[str, str]:
    """The instance's labels (e.g. the Arnold ``setting``) and its job shape ``rows x cols``."""
    return {"job": f"{instance.rows}x{instance.cols}", **instance.labels}


FAMILY = Family(
    name="placement",
    sense=Sense.MINIMIZE,
    instance_type=PlacementInstance,
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
    solver_modules=(
        "topoopt.placement.solvers",
        "topoopt.placement.solvers.hierarchical",
        "topoopt.placement.solvers.levels",
    ),
    oracle="placement/enumerate",
    tags=_tags,
    report_sections=(
        ReportSection(
            "Placement: score and spreads per setting", "topoopt.placement.report:spreads_section"
        ),
    ),
    result_type=PlacementResult,
    schema=SCHEMA,
    limits=LIMITS,
    size_figure="nodes",
    importer=IMPORTER,
    launch_lines=rank_order,
)

__all__ = [
    "FAMILY",
    "Leaf",
    "Minipod",
    "Placement",
    "PlacementInstance",
    "PlacementResult",
    "check",
    "dp_spread",
    "evaluate",
    "format_placement",
    "pp_spread",
    "rank_order",
    "spread",
]
