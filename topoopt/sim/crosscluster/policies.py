"""The cross-cluster policies: which clusters a job gets, and how it runs there.

A policy is two roles (as Blox splits placement from scheduling): a *cluster selection* over
the free GPUs per cluster (a ``clusterselect`` algorithm: ``Δ_i`` GPUs of cluster ``i``) and a
*planner* that turns the GPUs into a configuration (:mod:`~topoopt.sim.crosscluster.planner`).
The queue is FIFO for all of them (SpiderFlow §3: jobs "are queued following a FIFO policy").

===================  =====================================  ==================================
policy               cluster selection                      planner
===================  =====================================  ==================================
``opportunistic``    highest incident bandwidth first,      naive: shallowest pipeline,
                     greedy (eq. 2, eq. 4; the paper's      contiguous split
                     baseline, §5.2)
``spinsearch``       SpinSearch (§4.1, eq. 2-7)             naive (Fig. 9's "+SpinSearch")
``spiderflow``       SpinSearch                             TPA with ``partition/greedy-lowcut``
                                                            (Fig. 9's "+TPA": SpiderFlow)
``dtfm``             as ``opportunistic`` (DT-FM does no    TPA with ``partition/genetic``
                     task-level scheduling, §2.1)           (DT-FM's genetic partitioning)
===================  =====================================  ==================================

Inside a chosen cluster every policy takes GPUs on as few nodes as possible
(:meth:`~topoopt.sim.crosscluster.state.FreeGpus.nodes_for`), so that the policies differ
only in the two roles above. :data:`XPOLICIES` is a registry; a package adds a policy through
the entry-point group ``topoopt.sim.xpolicies``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.clusterselect.solvers.baselines import opportunistic
from topoopt.clusterselect.solvers.spinsearch import spinsearch
from topoopt.sim.registry import Registry

Selector = Callable[[ClusterSelectInstance], list[int]]
"""A cluster selection: ``Δ_i`` per cluster (instance order), summing to the demand."""

GENETIC_OPTIONS: dict[str, Any] = {"population": 12, "generations": 20, "patience": 4}
"""``partition/genetic`` options of ``dtfm``: bounded by generations, not by the clock, so that
a run is a function of its seed (module docstring of :mod:`topoopt.partition.solvers.genetic`)."""


def spinsearch_select(instance: ClusterSelectInstance) -> list[int]:
    """SpinSearch's ``Δ`` (``clusterselect/spinsearch``, the paper's ``expand="first"``)."""
    return spinsearch(instance)[0]


@dataclass(frozen=True)
class CrossPolicy:
    """A cross-cluster policy (module docstring).

    Attributes
    ----------
    name
        Registry name.
    select
        The cluster selection.
    partitioner
        The partition solver of TPA, or ``None`` for the naive plan.
    options
        Options of the partition solver.
    """

    name: str
    select: Selector
    partitioner: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    selector: str = ""
    """The selection's name, for the records."""


XPOLICIES: Registry[CrossPolicy] = Registry(
    "cross-cluster policy", "topoopt.sim.xpolicies", ("topoopt.sim.crosscluster.policies",)
)
XPOLICIES.register(
    "opportunistic", CrossPolicy("opportunistic", opportunistic, selector="opportunistic")
)
XPOLICIES.register(
    "spinsearch", CrossPolicy("spinsearch", spinsearch_select, selector="spinsearch")
)
XPOLICIES.register(
    "spiderflow",
    CrossPolicy("spiderflow", spinsearch_select, "partition/greedy-lowcut", selector="spinsearch"),
)
XPOLICIES.register(
    "dtfm",
    CrossPolicy(
        "dtfm", opportunistic, "partition/genetic", GENETIC_OPTIONS, selector="opportunistic"
    ),
)

__all__ = ["GENETIC_OPTIONS", "XPOLICIES", "CrossPolicy", "Selector", "spinsearch_select"]
