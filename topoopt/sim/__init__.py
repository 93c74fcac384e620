"""``topoopt.sim``: a trace-driven simulator of a GPU cluster running a stream of jobs.

It replays a job trace on a cluster under a queue policy, placing every job with a topoopt
solver, so that what a placement policy gains shows up where the papers measure it: job
completion and queueing times, utilisation, slowdown (``docs/sim.md``).

=================================  ===============================================================
module                             what it holds
=================================  ===============================================================
:mod:`~topoopt.sim.cluster`        the cluster (a topology, its minipod level) and its occupancy
:mod:`~topoopt.sim.jobs`           jobs and the rule that shapes them on nodes
:mod:`~topoopt.sim.traces`         trace readers (Philly-derived CSV, Alibaba, Helios, topoopt's
                                   own JSONL/CSV) and a synthetic generator
:mod:`~topoopt.sim.policies`       queue policies (FIFO, priority, shortest-predicted-first, EASY
                                   backfilling) and JCT predictors
:mod:`~topoopt.sim.placer`         the placement step: best fit on one node, any placement solver
                                   on whole nodes
:mod:`~topoopt.sim.performance`    how a placement changes a job's running time (Arnold §4)
:mod:`~topoopt.sim.engine`         the discrete-event engine and its invariants
:mod:`~topoopt.sim.metrics`        the run's summary
:mod:`~topoopt.sim.run`            one run written to a folder (``topoopt simulate``)
:mod:`~topoopt.sim.registry`       the plug-in registries (policies, traces, models, predictors)
:mod:`~topoopt.sim.crosscluster`   cross-cluster scheduling over decentralized clusters
                                   (SpiderFlow; ``topoopt simulate-cross``)
=================================  ===============================================================

Examples
--------
>>> from topoopt.sim import Simulation, parse_shape, records, synthetic
>>> cluster = parse_shape("2x2x2:8")
>>> trace = synthetic(jobs=20, cluster_gpus=cluster.total_gpus, seed=1)
>>> done = records(Simulation(cluster, trace, policy="fifo-backfill"))
>>> len(done), {r["status"] for r in done}
(20, {'finished'})
"""

from topoopt.sim.cluster import Cluster, Occupancy, generated_cluster, parse_shape
from topoopt.sim.engine import Simulation, SimulationError, records
from topoopt.sim.jobs import Job, Shape, ShapeRule, TraceError
from topoopt.sim.placer import Decision, Placer
from topoopt.sim.run import run_simulation
from topoopt.sim.traces import Rejected, Trace, read_trace, synthetic

__all__ = [
    "Cluster",
    "Decision",
    "Job",
    "Occupancy",
    "Placer",
    "Rejected",
    "Shape",
    "ShapeRule",
    "Simulation",
    "SimulationError",
    "Trace",
    "TraceError",
    "generated_cluster",
    "parse_shape",
    "read_trace",
    "records",
    "run_simulation",
    "synthetic",
]
