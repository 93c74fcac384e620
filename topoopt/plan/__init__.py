"""``topoopt plan``: a training job over decentralized clusters, from the clusters it spans to
the rank of every GPU (SpiderFlow §3-§4; ``docs/plan.md``).

==========================================  ===================================================
:mod:`topoopt.plan.job`                     the job description (model, units, JSON Schema)
:mod:`topoopt.plan.pipeline`                the stages: clusterselect, partition,
                                            parallelconfig, gpus (:func:`make_plan`)
:mod:`topoopt.plan.stages`                  what each stage reports; :class:`PlanError`
:mod:`topoopt.plan.steptime`                SpiderFlow's step-time estimate and its limit
:mod:`topoopt.plan.output`                  rank order, hostfiles, ``ranks.txt``, ``plan.json``
==========================================  ===================================================
"""

from __future__ import annotations

from topoopt.plan.job import Job, load_job
from topoopt.plan.output import Rank
from topoopt.plan.pipeline import CONFIG, PARTITION, SELECT, ClusterPlan, Plan, make_plan
from topoopt.plan.stages import PlanError, StageReport
from topoopt.plan.steptime import StepTime

__all__ = [
    "CONFIG",
    "PARTITION",
    "SELECT",
    "ClusterPlan",
    "Job",
    "Plan",
    "PlanError",
    "Rank",
    "StageReport",
    "StepTime",
    "load_job",
    "make_plan",
]
