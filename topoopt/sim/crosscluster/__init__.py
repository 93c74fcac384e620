"""``topoopt.sim.crosscluster``: cross-cluster scheduling over decentralized clusters
(SpiderFlow §3-§5): a trace of jobs, FIFO, over a multi-cluster description
(:class:`~topoopt.crosscluster.multicluster.MultiCluster`), each job placed by a policy —
cluster selection (``clusterselect``), then a parallel configuration (``partition``) — and
running as long as SpiderFlow's cost model says (``docs/sim.md``, "Cross-cluster scheduling").

==============================================  ==============================================
module                                          what it holds
==============================================  ==============================================
:mod:`~topoopt.sim.crosscluster.models`         the models jobs train (SpiderFlow's
                                                NewWorkload) and how a trace job gets one
:mod:`~topoopt.sim.crosscluster.cost`           the step time of a job over clusters (compute,
                                                DP all-reduce, pipeline sends)
:mod:`~topoopt.sim.crosscluster.state`          the free GPUs per cluster and node
:mod:`~topoopt.sim.crosscluster.planner`        naive contiguous split and TPA
:mod:`~topoopt.sim.crosscluster.policies`       opportunistic, spinsearch, spiderflow, dtfm
:mod:`~topoopt.sim.crosscluster.engine`         the FIFO event loop, records
:mod:`~topoopt.sim.crosscluster.metrics`        the run's summary
:mod:`~topoopt.sim.crosscluster.run`            one run written to a folder (``topoopt
                                                simulate-cross``)
==============================================  ==============================================

Examples
--------
>>> from topoopt.crosscluster.settings import spiderflow_testbed
>>> from topoopt.sim import synthetic
>>> from topoopt.sim.crosscluster import CrossSimulation, records
>>> trace = synthetic(jobs=30, cluster_gpus=16, load=0.8, seed=1)
>>> done = records(CrossSimulation(spiderflow_testbed(), trace, policy="spiderflow"))
>>> len(done), {r["status"] for r in done}
(30, {'finished'})
"""

from topoopt.sim.crosscluster.cost import Layout, Network, StepTime, step_time
from topoopt.sim.crosscluster.engine import CrossSimulation, records
from topoopt.sim.crosscluster.models import CATALOG, Model, model_for
from topoopt.sim.crosscluster.policies import XPOLICIES, CrossPolicy
from topoopt.sim.crosscluster.run import multicluster_from_spec, run_cross_simulation

__all__ = [
    "CATALOG",
    "XPOLICIES",
    "CrossPolicy",
    "CrossSimulation",
    "Layout",
    "Model",
    "Network",
    "StepTime",
    "model_for",
    "multicluster_from_spec",
    "records",
    "run_cross_simulation",
    "step_time",
]
