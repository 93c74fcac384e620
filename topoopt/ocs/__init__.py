"""Family ``ocs``: several training jobs share an optical data-center network whose OXC
circuits are reconfigured per phase (OCS TDM paper, Tang, Chen and Zhu).

Jobs (parameter server, ring all-reduce, all-to-all) are split into two groups; a four-phase
round overlaps one group's communication with the other group's training (paper §II-C,
Fig. 5). The decisions are the grouping, the PS server pods, the RAR ring orders and the
circuits of every phase; the objective is the round time (paper eq. 1).
:mod:`topoopt.ocs.solution` states it, ``docs/ocs.md`` writes out the whole model.

Solvers (``topoopt.solvers_for("ocs")``): the enumeration oracle, the MILP, Algorithm 1 as
written (``ocs/hill-climb-paper``) and an incremental local search after it
(``ocs/hill-climb``), Algorithms 2 and 3 (greedy), the no-TDM baseline.
"""

from topoopt.core.family import Family, ReportSection, Sense
from topoopt.ocs import generate
from topoopt.ocs import solution as _solution
from topoopt.ocs.instance import Compute, Job, OcsInstance, Pod
from topoopt.ocs.result import OcsResult
from topoopt.ocs.schema import LIMITS, SCHEMA
from topoopt.ocs.solution import Schedule, check, evaluate


def _size(instance: OcsInstance) -> dict[str, int]:
    return {
        "pods": instance.n_pods,
        "jobs": instance.n_jobs,
        "gpus": sum(j.total_gpus for j in instance.jobs),
    }


def _tags(instance: OcsInstance) -> dict[str, str]:
    """The job mix (how many PS/RAR/A2A jobs) and the instance's labels."""
    counts = {
        kind: sum(1 for j in instance.jobs if j.type == kind) for kind in ("PS", "RAR", "A2A")
    }
    return {"job_mix": "/".join(f"{k}{n}" for k, n in counts.items()), **instance.labels}


FAMILY = Family(
    name="ocs",
    sense=Sense.MINIMIZE,
    instance_type=OcsInstance,
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
    solver_modules=("topoopt.ocs.solvers",),
    oracle="ocs/enumerate",
    tags=_tags,
    report_sections=(
        ReportSection(
            "TDM against no TDM: round time and throughput (OCS TDM paper §II-C, eq. 1)",
            "topoopt.ocs.report:tdm_section",
        ),
        ReportSection(
            "Solvers against the best round: gap and time",
            "topoopt.ocs.report:solver_section",
        ),
        ReportSection(
            "TDM gain against the communication/computation ratio and the reconfiguration delay",
            "topoopt.ocs.report:sensitivity_section",
        ),
    ),
    result_type=OcsResult,
    schema=SCHEMA,
    limits=LIMITS,
    size_figure="jobs",
)

__all__ = [
    "FAMILY",
    "Compute",
    "Job",
    "OcsInstance",
    "OcsResult",
    "Pod",
    "Schedule",
    "check",
    "evaluate",
]
