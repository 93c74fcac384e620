"""The cross-cluster engine: a trace of jobs, FIFO, over a multi-cluster description.

Events are arrivals and finishes. At each event time the engine ends the jobs that finish then
(their GPUs come back), queues the jobs that arrive, then starts jobs from the head of the
queue while the head fits: its GPUs are at most the free GPUs of the whole description (jobs
may span clusters) and its policy finds GPUs for it; the first job that does not fit blocks
the rest (FIFO, SpiderFlow §3). A started job runs its trace duration times its slowdown
(:func:`~topoopt.sim.crosscluster.cost.slowdown`: its step under the policy's plan over its
step on the reference placement).

A job is recorded ``rejected``, with its reason, when it needs more GPUs than the whole
description has free at time 0 (GPUs not free then are held by what the simulation does not
know, and never come back), or when its model cannot be trained on its GPUs (no pipeline depth the
model's memory allows divides them, :mod:`~topoopt.sim.crosscluster.models`); no policy could
ever place it. Rows a trace reader skipped are recorded the same way.

Determinism: simultaneous events in a fixed order (finishes before arrivals, then trace
order), the models drawn from the seed and the job id, the partition solvers given the seed
and bounded by work, not by the clock: a run is a function of its inputs. The decision times
are measured (wall clock) and recorded, not simulated.

Invariants (a violation raises :class:`~topoopt.sim.crosscluster.state.StateError` or
:class:`~topoopt.sim.engine.SimulationError`): time never goes back; a policy takes at most the
free GPUs of each cluster and exactly the job's GPUs; no GPU is held twice, every GPU comes back
(:class:`~topoopt.sim.crosscluster.state.FreeGpus` checks every change; ``check_every_event``
verifies the whole state after every pass); every job ends exactly once.
"""

from __future__ import annotations

import copy
import heapq
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topoopt.clusterselect.instance import Cluster, ClusterSelectInstance
from topoopt.crosscluster.multicluster import MultiCluster
from topoopt.sim.crosscluster.cost import (
    MICRO_BATCHES_PER_GPU,
    Network,
    StepTime,
    slowdown,
)
from topoopt.sim.crosscluster.models import MIX, Model, check_mix, model_for
from topoopt.sim.crosscluster.planner import (
    Plan,
    naive_plan,
    reference_gpus,
    reference_network,
    tpa_plan,
)
from topoopt.sim.crosscluster.policies import XPOLICIES, CrossPolicy
from topoopt.sim.crosscluster.state import FreeGpus, Gpu
from topoopt.sim.engine import SimulationError, Timeline, records
from topoopt.sim.jobs import Job
from topoopt.sim.traces import Rejected, Trace

FINISH, ARRIVAL = 0, 1
REFERENCE_PARTITIONER = "partition/greedy-lowcut"
"""The partition solver of the reference placement (the same for every policy)."""

Record = dict[str, Any]


@dataclass
class CrossTimeline(Timeline):
    """The simulator's timeline (:class:`topoopt.sim.engine.Timeline`, read by ``topoopt
    report``) and the free GPUs on idle nodes (nodes differ in size across clusters)."""

    free_on_idle: list[int] = field(default_factory=list)

    COLUMNS = (*Timeline.COLUMNS, "free_on_idle")  # type: ignore[assignment]


@dataclass
class Running:
    """A running job."""

    job: Job
    model: Model
    plan: Plan
    start_s: float
    end_s: float
    slowdown: float
    reference: StepTime
    decision_s: float
    select_s: float


class CrossSimulation:
    """One run: a trace over a multi-cluster description under a cross-cluster policy.

    Parameters
    ----------
    mc
        The description (its free GPUs are the state at time 0).
    trace
        The jobs (and the rows the reader rejected).
    policy
        A policy name (:data:`~topoopt.sim.crosscluster.policies.XPOLICIES`).
    seed
        The run's seed (models drawn per job, partition solvers).
    model
        ``"newworkload"`` (a catalog model per job) or a catalog name for every job.
    on_record
        Called with every job's record as it ends.
    check_every_event
        Verify the whole GPU state after every pass (the tests use it).
    """

    def __init__(
        self,
        mc: MultiCluster,
        trace: Trace,
        *,
        policy: str = "spiderflow",
        seed: int = 0,
        model: str = MIX,
        on_record: Callable[[Record], None] | None = None,
        check_every_event: bool = False,
    ) -> None:
        self.mc = mc
        self.trace = trace
        self.policy: CrossPolicy = XPOLICIES.get(policy)
        self.seed = seed
        self.mix = check_mix(model)
        self.on_record = on_record
        self.check_every_event = check_every_event
        self.net = Network.of(mc)
        self.state = FreeGpus(mc)
        self.timeline = CrossTimeline()
        self.now = 0.0
        self.decisions = 0
        self._ref_net = reference_network(self.net)
        self._ref_node = max(self.state.node_gpus)
        self._template: ClusterSelectInstance | None = None
        self._references: dict[tuple[str, int], StepTime] = {}
        self._events: list[tuple[float, int, int, str]] = []
        self._order = 0
        self._queue: deque[str] = deque()
        self._jobs: dict[str, tuple[Job, Model]] = {}
        self._running: dict[str, Running] = {}
        self._ended: set[str] = set()

    # ------------------------------------------------------------------ events

    def _push(self, time_s: float, kind: int, job: str) -> None:
        heapq.heappush(self._events, (time_s, kind, self._order, job))
        self._order += 1

    def _record(self, record: Record) -> None:
        if record["job"] in self._ended:
            raise SimulationError(f"invariant: job {record['job']!r} ended twice")
        self._ended.add(record["job"])
        if self.on_record is not None:
            self.on_record(record)

    def _reject(self, job: Job | Rejected, reason: str) -> None:
        self._record(
            {
                "job": job.id,
                "status": "rejected",
                "reason": reason,
                "submit_s": job.submit_s,
                "gpus": job.gpus,
                "policy": "fifo",
                "xpolicy": self.policy.name,
            }
        )

    def simulate(self) -> None:
        """Run the whole trace (records go to ``on_record``)."""
        for row in self.trace.rejected:
            self._reject(row, row.reason)
        total = self.state.total_gpus
        for job in self.trace.jobs:
            if job.gpus > total:
                self._reject(
                    job,
                    f"needs {job.gpus} GPUs but the multi-cluster {self.mc.name} has {total} free",
                )
                continue
            model = model_for(job.id, job.gpus, self.seed, self.mix)
            if isinstance(model, str):
                self._reject(job, model)
                continue
            self._jobs[job.id] = (job, model)
            self._push(job.submit_s, ARRIVAL, job.id)
        while self._events:
            time_s = self._events[0][0]
            if time_s < self.now:
                raise SimulationError(f"invariant: time went back from {self.now} to {time_s}")
            self.now = time_s
            while self._events and self._events[0][0] == time_s:
                _, kind, _, job_id = heapq.heappop(self._events)
                if kind == FINISH:
                    self._finish(job_id)
                else:
                    self._queue.append(job_id)
            self._pass()
        if self._queue or self._running:
            raise SimulationError(
                f"invariant: the events ran out with {len(self._queue)} queued and "
                f"{len(self._running)} running jobs"
            )
        expected = len(self.trace.jobs) + len(self.trace.rejected)
        if len(self._ended) != expected:
            raise SimulationError(
                f"invariant: {len(self._ended)} jobs ended, the trace has {expected}"
            )

    # ------------------------------------------------------------------ scheduling

    def _pass(self) -> None:
        """Start jobs from the head of the queue while they fit (module docstring)."""
        while self._queue:
            job, model = self._jobs[self._queue[0]]
            if job.gpus > self.state.free_total:
                break
            decided = self.decide(job, model)
            if decided is None:
                break
            self._queue.popleft()
            self._start(job, model, *decided)
        if self.check_every_event:
            self.state.check()
        state = self.state
        busy = state.busy_gpus
        idle = state.idle_nodes()
        self.timeline.add(
            self.now,
            busy,
            len(self._queue),
            len(self._running),
            idle,
            len(state.node_gpus) - idle,
            -1,
            state.free_on_idle(),
        )

    def instance(self, demand: int) -> ClusterSelectInstance:
        """The ``clusterselect`` instance of a job of ``demand`` GPUs on the free GPUs now.

        The WAN graph does not change during a run, so it is built (and validated) once, with
        its widest paths and hop layers computed on first use, like SpinSearch's state table
        (§3); each decision gets a copy of that instance with the current free GPUs, which the
        engine's own state guarantees are valid (``0 <= g_i``, ``demand <=`` their sum).
        """
        free = self.state.free_in_cluster.tolist()
        if self._template is None:
            self._template = ClusterSelectInstance(
                self.mc.name,
                clusters=list(zip(self.state.clusters, free, strict=True)),
                links=self.mc.links,
                demand=1,
            )
        if not 1 <= demand <= sum(free):
            raise SimulationError(f"invariant: a decision for {demand} GPUs with {sum(free)} free")
        instance = copy.copy(self._template)
        put = object.__setattr__
        put(instance, "clusters", tuple(map(Cluster, self.state.clusters, free)))
        put(instance, "demand", demand)
        return instance

    def select(self, demand: int) -> list[Gpu]:
        """The GPUs the policy's cluster selection gives a job of ``demand`` GPUs now, in
        cluster, node, index order (``[]`` when it gives none)."""
        state = self.state
        take = self.policy.select(self.instance(demand))
        if not take or sum(take) == 0:
            return []
        if sum(take) != demand or any(
            t < 0 or t > f for t, f in zip(take, state.free_in_cluster, strict=True)
        ):
            raise SimulationError(
                f"invariant: policy {self.policy.name!r} took {take} GPUs per cluster for a job "
                f"of {demand} with {state.free_in_cluster.tolist()} free"
            )
        gpus: list[Gpu] = []
        for c, count in enumerate(take):
            if count:
                for node, n in state.nodes_for(c, count):
                    gpus += [(c, node, index) for index in state.pick(node, n)]
        return gpus

    def decide(self, job: Job, model: Model) -> tuple[Plan, float, float] | None:
        """The policy's plan for ``job`` now, with the decision's and the selection's wall
        times (``None``: the policy places it nowhere now)."""
        started = time.perf_counter()
        gpus = self.select(job.gpus)
        if not gpus:
            return None
        selected = time.perf_counter()
        if self.policy.partitioner is None:
            plan = naive_plan(model, gpus, self.net)
        else:
            plan = tpa_plan(
                model,
                gpus,
                self.net,
                self.policy.partitioner,
                seed=self.seed,
                options=self.policy.options,
            )
        done = time.perf_counter()
        self.decisions += 1
        return plan, done - started, selected - started

    def reference(self, model: Model, gpus: int) -> StepTime:
        """The step of ``model`` on ``gpus`` GPUs on the reference placement (cached)."""
        key = (model.name, gpus)
        if key not in self._references:
            where = reference_gpus(gpus, self._ref_node)
            plan = tpa_plan(model, where, self._ref_net, REFERENCE_PARTITIONER, seed=0)
            self._references[key] = plan.time
        return self._references[key]

    def _start(
        self, job: Job, model: Model, plan: Plan, decision_s: float, select_s: float
    ) -> None:
        flat = [gpu for row in plan.gpus for gpu in row]
        self.state.take(job.id, flat)
        reference = self.reference(model, job.gpus)
        factor = slowdown(plan.time.step_s, reference.step_s)
        end = self.now + job.duration_s * factor
        self._running[job.id] = Running(
            job, model, plan, self.now, end, factor, reference, decision_s, select_s
        )
        self._push(end, FINISH, job.id)

    def _finish(self, job_id: str) -> None:
        run = self._running.pop(job_id)
        self.state.release(job_id)
        self._record(self.finished_record(run))

    def finished_record(self, run: Running) -> Record:
        """The record of a finished job (``docs/sim.md``, cross-cluster records)."""
        job, plan, state = run.job, run.plan, self.state
        flat = [gpu for row in plan.gpus for gpu in row]
        nodes = sorted({gpu[1] for gpu in flat})
        per_cluster: dict[str, int] = {}
        for c, _, _ in sorted(flat):
            name = state.clusters[c]
            per_cluster[name] = per_cluster.get(name, 0) + 1
        step = plan.time
        return {
            "job": job.id,
            "status": "finished",
            "submit_s": job.submit_s,
            "start_s": run.start_s,
            "end_s": run.end_s,
            "queue_s": run.start_s - job.submit_s,
            "jct_s": run.end_s - job.submit_s,
            "duration_s": job.duration_s,
            "slowdown": run.slowdown,
            "gpus": job.gpus,
            "policy": "fifo",
            "xpolicy": self.policy.name,
            "selector": self.policy.selector,
            "placement_solver": plan.partitioner,
            "model": run.model.name,
            "d": step.d,
            "p": step.p,
            "clusters": per_cluster,
            "k_clusters": len(per_cluster),
            "nodes": [state.node_names[n] for n in nodes],
            "devices": [sorted(i for _, n, i in flat if n == node) for node in nodes],
            "step_s": step.step_s,
            "t_comp_s": step.t_comp_s,
            "t_dp_s": step.t_dp_s,
            "t_pp_s": step.t_pp_s,
            "reference_step_s": run.reference.step_s,
            "samples_per_s": MICRO_BATCHES_PER_GPU * job.gpus / step.step_s,
            "decision_s": run.decision_s,
            "select_s": run.select_s,
            "partition_s": plan.partition_s,
            "depths_tried": list(plan.tried),
        }


__all__ = ["CrossSimulation", "CrossTimeline", "Running", "records"]
