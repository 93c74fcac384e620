"""SpiderFlow's estimated step time of a plan, and the term that limits it.

The partition family's two-level estimate (``docs/partition.md``, "Heuristic-ILP", H5)::

    step = max_c T_c  +  WAN_pp  +  WAN_dp                                  [s per step]

    T_c     = T_comp + α·T_dp + β·T_pp        cluster c's configuration (parallelconfig's cost:
                                               compute with the bubble, ring all-reduce over the
                                               stage's bottleneck bandwidth, pipeline sends)
    WAN_pp  = Σ over cut activation edges of 8 · traffic / β(a → b)
    WAN_dp  = Σ over cut gradient edges   of 8 · traffic / β(a → b)

with traffic in GB per step and ``β`` the widest-path bandwidth of eq. 1 in Gb/s:
``WAN_pp + WAN_dp = 8 · cut(π)``, eq. 9 in seconds. The clusters run their parts
concurrently, so the pipeline across clusters advances at the pace of the slowest; the WAN
transfers are added on top, serialised and not overlapped (pessimistic for transfers on
disjoint links). The *limit* is the largest of the slowest cluster's three terms and the two
WAN terms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from topoopt.core.result import clean
from topoopt.partition.solution import Assignment
from topoopt.plan.job import JobEdge

if TYPE_CHECKING:
    from topoopt.partition.instance import PartitionInstance
    from topoopt.plan.pipeline import ClusterPlan

GBIT_PER_GB = 8.0

TERMS = {
    "t_comp_s": ("parallelconfig", "compute with the pipeline bubble (T_comp)"),
    "t_dp_s": ("parallelconfig", "data-parallel all-reduce (alpha T_dp)"),
    "t_pp_s": ("parallelconfig", "pipeline sends (beta T_pp)"),
    "wan_pp_s": ("partition", "pipeline sends between clusters over the WAN"),
    "wan_dp_s": ("partition", "data-parallel all-reduce between clusters over the WAN"),
}
"""Each term of the estimate: the stage that decides it and what it is."""


@dataclass(frozen=True)
class StepTime:
    """The estimate (module docstring).

    Attributes
    ----------
    step_s
        ``max_c T_c + WAN_pp + WAN_dp``.
    clusters
        ``T_c`` of every cluster.
    slowest
        The cluster with the largest ``T_c`` (the first on a tie).
    terms
        ``t_comp_s``, ``t_dp_s`` (weighted by α), ``t_pp_s`` (weighted by β) of the slowest
        cluster, ``wan_pp_s`` and ``wan_dp_s``.
    limit
        The largest term.
    """

    step_s: float
    clusters: Mapping[str, float]
    slowest: str
    terms: Mapping[str, float]
    limit: str

    @property
    def limit_stage(self) -> str:
        """The plan stage whose decision the limiting term is."""
        return TERMS[self.limit][0]

    @property
    def limit_share(self) -> float:
        return self.terms[self.limit] / self.step_s if self.step_s > 0 else 0.0

    def describe_limit(self) -> str:
        where = f" inside cluster {self.slowest}" if self.limit_stage == "parallelconfig" else ""
        return f"{TERMS[self.limit][1]}{where}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (numbers to 15 significant digits)."""
        return {
            "step_s": clean(self.step_s),
            "slowest_cluster": self.slowest,
            "t_cluster_s": {c: clean(t) for c, t in self.clusters.items()},
            "terms": {k: clean(t) for k, t in self.terms.items()},
            "limit": {
                "term": self.limit,
                "stage": self.limit_stage,
                "cluster": self.slowest if self.limit_stage == "parallelconfig" else None,
                "term_s": clean(self.terms[self.limit]),
                "share": clean(self.limit_share),
                "what": self.describe_limit(),
            },
        }


def step_time(
    instance: PartitionInstance,
    assignment: Assignment,
    clusters: Sequence[ClusterPlan],
    edges: Sequence[JobEdge],
) -> StepTime:
    """The estimate of a plan: ``instance`` and ``assignment`` the partition stage's (every
    vertex a unit of the job), ``clusters`` what each cluster runs, ``edges`` the job's
    edges with their kinds."""
    where = assignment.as_dict()
    index = instance.graph.index
    wan = {"activation": 0.0, "gradient": 0.0}
    for e in edges:
        a, b = index[where[e.u]], index[where[e.v]]
        if a != b:
            wan[e.kind] += GBIT_PER_GB * e.traffic * float(instance.weights[a, b])
    times = {c.cluster: c.t_cluster_s for c in clusters}
    slowest = max(clusters, key=lambda c: c.t_cluster_s)
    cost = slowest.cost
    terms = {
        "t_comp_s": cost.t_comp_s,
        "t_dp_s": cost.alpha * cost.t_dp_s,
        "t_pp_s": cost.beta * cost.t_pp_s,
        "wan_pp_s": wan["activation"],
        "wan_dp_s": wan["gradient"],
    }
    limit = max(terms, key=lambda k: terms[k])
    step = slowest.t_cluster_s + wan["activation"] + wan["gradient"]
    return StepTime(step, times, slowest.cluster, terms, limit)


__all__ = ["TERMS", "StepTime", "step_time"]
