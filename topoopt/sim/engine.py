"""The discrete-event engine: a trace of jobs through a queue policy onto a cluster.

Events are job arrivals and finishes (and, with a scheduling ``interval``, scheduling ticks).
At each event time the engine first ends the jobs that finish then, then queues the jobs that
arrive, then runs one *scheduling pass* (``interval = 0``) — or waits for the next multiple of
the interval, as Arnold's Algorithm 1 sleeps between passes. A pass walks the queue in the
policy's order and starts what the placer fits (``docs/sim.md``, "Engine").

Determinism: the order of simultaneous events is fixed (finishes before arrivals, then trace
order), and the solvers get the run's seed, so a run is a function of its inputs.

Invariants, checked as it runs (a violation raises a :class:`SimulationError`): time never
goes back; no GPU is held by two jobs and no node gives more GPUs than it has (the
:class:`~topoopt.sim.cluster.Occupancy` checks every change, and ``check_every_event``
verifies the whole state after each pass); every job of the trace ends exactly once, as
``finished`` or ``rejected``.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from topoopt.core.errors import TopooptError
from topoopt.sim.cluster import Cluster, Occupancy
from topoopt.sim.jobs import Job, Shape, ShapeRule, TraceError
from topoopt.sim.performance import PERFORMANCE_MODELS, PerformanceModel
from topoopt.sim.placer import Decision, PlacementFailed, Placer
from topoopt.sim.policies import (
    PREDICTORS,
    QUEUE_POLICIES,
    Predictor,
    QueuePolicy,
    no_predictor,
)
from topoopt.sim.reservation import Reservation
from topoopt.sim.traces import Rejected, Trace

FINISH, PLAN, ARRIVAL, TICK = 0, 1, 2, 3
"""Event kinds, in the order simultaneous events are handled (``PLAN``: a reservation is
announced)."""


class SimulationError(TopooptError):
    """An invariant of the simulation broke (a bug in a policy, placer or the engine)."""


@dataclass
class Running:
    """A running job: when it started and ends, where, and how fast."""

    job: Job
    start_s: float
    end_s: float
    predicted_end_s: float
    decision: Decision
    slowdown: float


@dataclass
class Timeline:
    """The cluster after every scheduling pass: time, busy GPUs, queued and running jobs, idle
    nodes (change points; the values hold until the next time)."""

    time_s: list[float] = field(default_factory=list)
    busy_gpus: list[int] = field(default_factory=list)
    queued: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)
    idle_nodes: list[int] = field(default_factory=list)
    busy_nodes: list[int] = field(default_factory=list)
    zone_held: list[int] = field(default_factory=list)
    """Zone nodes held by jobs other than the reserved one (-1 while there is no zone)."""

    COLUMNS = ("time_s", "busy_gpus", "queued", "running", "idle_nodes", "busy_nodes", "zone_held")

    def add(self, time_s: float, *values: int) -> None:
        """Append a point (replacing the last one when the time is the same): the values of
        :data:`COLUMNS` after ``time_s``."""
        series = [getattr(self, name) for name in self.COLUMNS]
        if self.time_s and self.time_s[-1] == time_s:
            for one in series:
                one.pop()
        for one, value in zip(series, (time_s, *values), strict=True):
            one.append(value)

    def rows(self) -> list[tuple[float, ...]]:
        """The points, one tuple of :data:`COLUMNS` each."""
        return list(zip(*(getattr(self, name) for name in self.COLUMNS), strict=True))


Record = dict[str, Any]


class Simulation:
    """One run: a trace on a cluster under a policy (module docstring).

    Parameters
    ----------
    cluster
        The cluster.
    trace
        The jobs (and the rows the reader rejected, recorded as such).
    policy
        A queue policy name (:data:`~topoopt.sim.policies.QUEUE_POLICIES`).
    placer
        The placement step (default: ``placement/best-fit`` with the performance model's
        ``alpha``).
    performance
        A performance model name (:data:`~topoopt.sim.performance.PERFORMANCE_MODELS`).
    predictor
        A predictor name (:data:`~topoopt.sim.policies.PREDICTORS`) or a predictor (a
        :class:`~topoopt.sim.policies.Predictor`, such as a learned model's
        :meth:`topoopt.learn.jct.JctModel.predictor`).
    interval
        Seconds between scheduling passes (0: a pass after every event time).
    seed
        The run's seed (predictors; the placer has its own).
    skip_unfit
        Record a job larger than the cluster as ``rejected`` instead of stopping with an error
        naming its trace row.
    shape_rule
        How jobs without nodes or parallelism are shaped (:class:`~topoopt.sim.jobs.ShapeRule`).
    check_every_event
        Verify the whole cluster state after every pass (slow; the tests use it).
    on_record
        Called with every job's record as it ends (the JSON object of ``jobs.jsonl``).
    backfill_depth
        Most jobs behind the reserved one a backfilling pass tries (Slurm's
        ``bf_max_job_test``, default 500).
    incremental
        At a time when jobs only arrived, try the new jobs alone instead of a whole pass (the
        same schedule, see :meth:`_arrivals_pass`; ``False`` is for the tests).
    reservation
        Arnold's reservation for an imminent large job (:mod:`topoopt.sim.reservation`).
    """

    def __init__(
        self,
        cluster: Cluster,
        trace: Trace,
        *,
        policy: str = "fifo",
        placer: Placer | None = None,
        performance: str = "arnold",
        predictor: str | Predictor = "exact",
        interval: float = 0.0,
        seed: int = 0,
        skip_unfit: bool = False,
        shape_rule: ShapeRule | None = None,
        check_every_event: bool = False,
        on_record: Callable[[Record], None] | None = None,
        backfill_depth: int = 500,
        incremental: bool = True,
        reservation: Reservation | None = None,
    ) -> None:
        if not (isinstance(interval, (int, float)) and math.isfinite(interval) and interval >= 0):
            raise TopooptError(f"interval: must be a number >= 0, got {interval!r}")
        self.cluster = cluster
        self.trace = trace
        self.policy: QueuePolicy = QUEUE_POLICIES.get(policy)
        self.model: PerformanceModel = PERFORMANCE_MODELS.get(performance)
        self.placer = placer or Placer(cluster, alpha=self.model.alpha())
        if isinstance(predictor, str):
            self.predict: Predictor = PREDICTORS.get(predictor)
            self.predictor_name = predictor
        else:
            self.predict = predictor
            self.predictor_name = str(getattr(predictor, "name", type(predictor).__name__))
        if self.predict is no_predictor and self.policy.backfill:
            raise TopooptError(
                f"predictor 'none': the policy {policy!r} backfills, which needs predicted "
                "running times; use a policy without backfilling or a predictor"
            )
        self.interval = float(interval)
        self.seed = seed
        self.skip_unfit = skip_unfit
        self.rule = shape_rule or ShapeRule()
        self.check_every_event = check_every_event
        if isinstance(backfill_depth, bool) or not isinstance(backfill_depth, int):
            raise TopooptError(f"backfill_depth: must be an integer, got {backfill_depth!r}")
        self.backfill_depth = backfill_depth
        self.incremental = incremental
        if reservation is not None and self.policy.backfill:
            raise TopooptError(
                f"reservation: the policy {policy!r} backfills; a reservation goes with a policy "
                "without backfilling (arnold, first-fit, fifo, ...)"
            )
        self.reservation = reservation
        self.zone: np.ndarray | None = None  # the reserved nodes while the reservation holds
        self.plan: Decision | None = None  # the reserved job's planned placement
        self.lpj_start_s: float | None = None
        self.on_record = on_record
        self.occupancy = Occupancy(cluster)
        self.timeline = Timeline()
        self.now = 0.0
        self.placement_calls = 0
        self._events: list[tuple[float, int, int, str]] = []
        self._order = 0
        self._queue: list[tuple[tuple[float, ...], str]] = []
        self._waiting: Counter[tuple[bool, int]] = Counter()  # the queue's demands
        self._jobs: dict[str, Job] = {}
        self._shapes: dict[str, Shape] = {}
        self._predicted: dict[str, float] = {}
        self._running: dict[str, Running] = {}
        self._ends: list[tuple[float, str]] = []  # (predicted end, job) of the running jobs
        self._shadow_end: float = math.inf  # the reserved job's predicted start (backfill)
        self._ended: set[str] = set()
        self._tick_at: float | None = None

    # ------------------------------------------------------------------ events

    def _push(self, time_s: float, kind: int, job: str) -> None:
        heapq.heappush(self._events, (time_s, kind, self._order, job))
        self._order += 1

    def _record(self, record: Record) -> None:
        job = record["job"]
        if job in self._ended:
            raise SimulationError(f"invariant: job {job!r} ended twice")
        self._ended.add(job)
        if self.on_record is not None:
            self.on_record(record)

    def _reject(self, job: Job | Rejected, reason: str) -> None:
        gpus = job.gpus
        self._record(
            {
                "job": job.id,
                "status": "rejected",
                "reason": reason,
                "submit_s": job.submit_s,
                "gpus": gpus,
                "policy": self.policy.name,
                "placement_solver": self.placer.solver,
            }
        )

    def simulate(self) -> None:
        """Run the whole trace (records go to ``on_record``)."""
        for row in self.trace.rejected:
            self._reject(row, row.reason)
        size = self.cluster.node_size
        predictions = self._predictions()
        for job in self.trace.jobs:
            try:
                shape = self.rule.shape(job, size)
            except TopooptError as exc:
                self._unfit(job, str(exc))
                continue
            reason = self._too_large(shape)
            if reason:
                self._unfit(job, reason)
                continue
            self._jobs[job.id] = job
            self._shapes[job.id] = shape
            self._predicted[job.id] = predictions[job.id]
            self._push(job.submit_s, ARRIVAL, job.id)
        if self.reservation is not None:
            lpj = self._jobs.get(self.reservation.job)
            if lpj is None:
                raise TopooptError(
                    f"reservation: job {self.reservation.job!r} is not a runnable job of the trace"
                )
            if not 0 <= self.reservation.announce_s <= lpj.submit_s:
                raise TopooptError(
                    f"reservation: announced at {self.reservation.announce_s:g} s, after the "
                    f"job's arrival at {lpj.submit_s:g} s (or before 0)"
                )
            self._push(self.reservation.announce_s, PLAN, lpj.id)
        arrival = 0
        while self._events:
            time_s = self._events[0][0]
            if time_s < self.now:
                raise SimulationError(f"invariant: time went back from {self.now} to {time_s}")
            self.now = time_s
            finished = ticked = False
            arrived: list[tuple[tuple[float, ...], str]] = []
            while self._events and self._events[0][0] == time_s:
                _, kind, _, job_id = heapq.heappop(self._events)
                if kind == FINISH:
                    self._finish(job_id)
                    finished = True
                elif kind == PLAN:
                    self._plan(job_id)
                    finished = True  # a full pass: the zone changes where jobs may go
                elif kind == ARRIVAL:
                    job = self._jobs[job_id]
                    key = self.policy.key(job, self._predicted[job_id], arrival)
                    if self._reserved_first(job_id):
                        key = (-math.inf, *key)  # the reserved job goes first
                        finished = True
                    arrived.append((key, job_id))
                    arrival += 1
                else:
                    self._tick_at = None
                    ticked = True
            if self.interval > 0:
                for item in arrived:
                    self._enqueue(item)
                if ticked:
                    self._pass()
                elif finished or arrived:
                    self._schedule_tick()
            elif finished or not self._queue or not self.incremental or self.zone is not None:
                for item in arrived:
                    self._enqueue(item)
                self._pass()
            elif arrived:
                self._arrivals_pass(sorted(arrived))
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

    def _predictions(self) -> dict[str, float]:
        """Every job's predicted running time (the predictor's ``batch`` when it has one)."""
        jobs = self.trace.jobs
        batch = getattr(self.predict, "batch", None)
        if batch is not None:
            values = list(batch(jobs, self.seed))
        else:
            values = [self.predict(job, self.seed) for job in jobs]
        if len(values) != len(jobs):
            raise TopooptError(
                f"predictor {self.predictor_name!r} gave {len(values)} predictions for "
                f"{len(jobs)} jobs"
            )
        out = {}
        for job, value in zip(jobs, values, strict=True):
            try:
                seconds = math.nan if isinstance(value, bool) else float(value)
            except (TypeError, ValueError):
                seconds = math.nan
            if not seconds >= 0:
                raise TopooptError(
                    f"predictor {self.predictor_name!r}: job {job.id!r}: a prediction is a "
                    f"number of seconds >= 0 (or inf), got {value!r}"
                )
            out[job.id] = seconds
        return out

    def _unfit(self, job: Job, reason: str) -> None:
        if not self.skip_unfit:
            raise TraceError(job.origin or f"job {job.id!r}", "gpus", reason)
        self._reject(job, reason)

    def _too_large(self, shape: Shape) -> str:
        cluster = self.cluster
        if shape.exclusive and shape.nodes > cluster.n_nodes:
            return (
                f"asks {shape.nodes} whole nodes ({shape.gpus} GPUs), the cluster has "
                f"{cluster.n_nodes}"
            )
        if not shape.exclusive and shape.gpus > cluster.node_size:
            return f"asks {shape.gpus} GPUs on one node, a node has {cluster.node_size}"
        return ""

    def _schedule_tick(self) -> None:
        tick = (math.floor(self.now / self.interval) + 1) * self.interval
        if self._tick_at is None or tick < self._tick_at:
            self._tick_at = tick
            self._push(tick, TICK, "")

    # ------------------------------------------------------------------ starting and ending

    def _start(self, job_id: str, decision: Decision) -> None:
        job, shape = self._jobs[job_id], self._shapes[job_id]
        self.occupancy.allocate(job_id, decision.gpus_by_node, decision.devices)
        slowdown = self.model.slowdown(job, shape, decision)
        if not (math.isfinite(slowdown) and slowdown >= 1):
            raise SimulationError(
                f"performance model gave slowdown {slowdown!r} for {job_id!r} (the reference "
                "placement is the best: a slowdown is a finite number >= 1)"
            )
        end = self.now + job.duration_s * slowdown
        predicted = self.now + self._predicted[job_id] * slowdown
        self._running[job_id] = Running(job, self.now, end, predicted, decision, slowdown)
        bisect.insort(self._ends, (predicted, job_id))
        if self.reservation is not None and job_id == self.reservation.job:
            self.zone, self.lpj_start_s = None, self.now
        self._push(end, FINISH, job_id)

    def _finish(self, job_id: str) -> None:
        run = self._running.pop(job_id)
        del self._ends[bisect.bisect_left(self._ends, (run.predicted_end_s, job_id))]
        held = self.occupancy.release(job_id)
        job, decision = run.job, run.decision
        index = self.cluster.index
        self._record(
            {
                "job": job.id,
                "status": "finished",
                "submit_s": job.submit_s,
                "start_s": run.start_s,
                "end_s": run.end_s,
                "queue_s": run.start_s - job.submit_s,
                "jct_s": run.end_s - job.submit_s,
                "duration_s": job.duration_s,
                "gpus": job.gpus,
                "nodes": list(decision.nodes),
                "devices": [list(held[index[name]]) for name in decision.nodes],
                "policy": self.policy.name,
                "predictor": self.predictor_name,
                "predicted_s": (
                    self._predicted[job.id] if math.isfinite(self._predicted[job.id]) else None
                ),
                "placement_solver": decision.solver,
                "objective": decision.objective,
                "dp_minipods": decision.dp_minipods,
                "pp_minipods": decision.pp_minipods,
                "slowdown": run.slowdown,
                "bandwidth_ratio": decision.bandwidth_ratio,
                "decision_s": decision.decision_s,
            }
        )

    # ------------------------------------------------------------------ scheduling

    def _capacity(self) -> tuple[int, int]:
        """The most free GPUs on one node and the number of idle nodes: what decides whether
        a shape fits now (:meth:`_fits`)."""
        free = self.occupancy.free
        return int(free.max()), int(np.count_nonzero(free == self.cluster.node_gpus))

    @staticmethod
    def _fits(shape: Shape, capacity: tuple[int, int]) -> bool:
        most_free, idle = capacity
        return idle >= shape.nodes if shape.exclusive else most_free >= shape.gpus

    def _enqueue(self, item: tuple[tuple[float, ...], str]) -> None:
        bisect.insort(self._queue, item)
        self._waiting[self._demand(item[1])] += 1

    def _dequeue(self, positions: list[int]) -> None:
        """Remove the jobs at ``positions`` (ascending) from the queue."""
        for position in reversed(positions):
            self._waiting[self._demand(self._queue[position][1])] -= 1
            del self._queue[position]

    def _demand(self, job_id: str) -> tuple[bool, int]:
        """What a job needs to fit: ``(True, nodes)`` idle nodes or ``(False, gpus)`` free
        GPUs on one node."""
        shape = self._shapes[job_id]
        return (True, shape.nodes) if shape.exclusive else (False, shape.gpus)

    def _anything_fits(self, capacity: tuple[int, int]) -> bool:
        """Whether some waiting job fits ``capacity`` (a pass stops once none does)."""
        most_free, idle = capacity
        return any(
            count and (idle >= size if exclusive else most_free >= size)
            for (exclusive, size), count in self._waiting.items()
        )

    def _pass(self) -> None:
        """Start what fits, in the policy's order (module docstring).

        Under a blocking policy the first job that does not fit stops the pass, or under
        backfilling gets its reservation; then at most :attr:`backfill_depth` jobs behind it
        are tried (Slurm's ``bf_max_job_test``), and none once no GPU is free. Under a
        non-blocking policy every job is tried.
        """
        queue = self._queue
        done: list[int] = []  # positions of the jobs that left the queue
        shadow: float | None = None
        capacity = self._capacity()
        first = 0  # position of the first job that does not fit
        blocking = self.policy.blocking
        fits = self._anything_fits(capacity)
        for position, (_, job_id) in enumerate(queue):
            if not fits and (shadow is not None or not blocking):
                break  # no waiting job fits the free GPUs: nothing more can start
            if shadow is None:
                started = self._try(job_id, capacity, math.inf)
                if started is None:
                    if not blocking:
                        continue
                    if not self.policy.backfill:
                        break
                    self._shadow_end = self._shadow_time(self._shapes[job_id])
                    shadow = max(self.now, self._shadow_end)
                    first = position
                    continue
            else:
                if position - first > self.backfill_depth or capacity == (0, 0):
                    break
                started = self._try(job_id, capacity, shadow)
                if started is None:
                    continue
            done.append(position)
            if started != capacity:
                capacity, fits = started, self._anything_fits(started)
        self._dequeue(done)
        self._after_pass(capacity)

    def _arrivals_pass(self, arrived: list[tuple[tuple[float, ...], str]]) -> None:
        """The pass at a time when jobs only arrived, behind jobs that do not fit: what a full
        :meth:`_pass` would start, found by trying the new jobs alone.

        Nothing finished since the last pass, so the free GPUs are the same: the jobs that did
        not fit still do not (under a blocking policy the first one, under backfilling the
        ones tried, whose predicted ends only move later while the reservation
        ``max(now, E)`` moves at most with them), and ``E``, the reserved job's predicted
        start, is the same (a backfilled job ends by ``E``). A new job that sorts before the
        first one makes a full pass under a blocking policy. ``incremental=False`` always makes
        full passes; a property test checks both give the same schedule.
        """
        queue = self._queue
        blocking = self.policy.blocking
        if blocking and arrived[0] < queue[0]:
            for item in arrived:
                self._enqueue(item)
            self._pass()
            return
        for item in arrived:
            self._enqueue(item)
        capacity = self._capacity()
        if self.policy.backfill or not blocking:
            done: list[int] = []
            for item in arrived:  # in queue order: the order a full pass meets them
                position = bisect.bisect_left(queue, item)  # the first job is at 0
                if blocking and (position > self.backfill_depth or capacity == (0, 0)):
                    break
                shadow = max(self.now, self._shadow_end) if blocking else math.inf
                started = self._try(item[1], capacity, shadow)
                if started is not None:
                    done.append(position)
                    capacity = started
            self._dequeue(done)
        self._after_pass(capacity)

    def _try(self, job_id: str, capacity: tuple[int, int], shadow: float) -> tuple[int, int] | None:
        """Start ``job_id`` now if it fits and its predicted end is not after ``shadow``;
        the capacity after it started (or was rejected by the placer), else ``None``."""
        shape = self._shapes[job_id]
        if not self._fits(shape, capacity) or self.now + self._predicted[job_id] > shadow:
            return None  # a slowdown is >= 1: a predicted end beyond the shadow stays beyond
        if self.zone is not None:
            decision = self._in_reservation(job_id, shape)
        else:
            decision = self._decide(job_id, shape)
        if decision is None:
            return None if job_id in self._jobs else capacity  # not in _jobs: rejected
        if shadow < math.inf:
            end = self.now + self._predicted[job_id] * self._slowdown(job_id, decision)
            if end > shadow:
                return None
        self._start(job_id, decision)
        return self._capacity()

    def _after_pass(self, capacity: tuple[int, int]) -> None:
        if self.check_every_event:
            self.occupancy.check()
        busy = self.occupancy.free < self.cluster.node_gpus
        self.timeline.add(
            self.now,
            self.occupancy.busy_gpus,
            len(self._queue),
            len(self._running),
            capacity[1],
            int(np.count_nonzero(busy)),
            -1 if self.zone is None else int(np.count_nonzero(busy & self.zone)),
        )

    # ------------------------------------------------------------------ reservation

    def trace_job(self, job_id: str) -> Job:
        """The job ``job_id`` of the trace (a runnable one)."""
        return self._jobs[job_id]

    def _reserved_first(self, job_id: str) -> bool:
        """Whether ``job_id`` is the reserved job and goes first (modes other than
        best-effort)."""
        r = self.reservation
        return r is not None and r.job == job_id and r.mode != "best-effort"

    def _plan(self, job_id: str) -> None:
        """Plan the reserved job's placement and reserve its nodes (the zone).

        The plan may use the nodes predicted to be free by the job's arrival — idle ones, and
        those whose jobs' predicted ends come by then — or, when they are too few, also the
        next ones to be freed, in the order of their predicted release; the placement solver
        chooses among them (as if they were idle), so the zone drains by the arrival when the
        predictions hold. A predictor with ``given_elapsed(job, elapsed_s, seed)`` predicts the
        running jobs' ends anew, knowing how long they have run (a learned model's
        :class:`~topoopt.learn.jct.JctPredictor`); the others' predictions stay those made at
        submission.
        """
        job, shape = self._jobs[job_id], self._shapes[job_id]
        release = np.full(self.cluster.n_nodes, self.now)
        given = getattr(self.predict, "given_elapsed", None)
        for predicted_end, running in self._ends:
            if given is not None:
                run = self._running[running]
                elapsed = (self.now - run.start_s) / run.slowdown  # under the reference placement
                predicted_end = run.start_s + given(run.job, elapsed, self.seed) * run.slowdown
            nodes = list(self.occupancy.held[running])
            release[nodes] = np.maximum(release[nodes], predicted_end)
        order = np.argsort(release, kind="stable")
        ready = int(np.count_nonzero(release <= job.submit_s))
        candidates = order[: max(ready, shape.nodes)]
        view = Occupancy(self.cluster)
        view.free[:] = 0
        view.free[candidates] = self.cluster.node_gpus[candidates]
        plan = self.placer.place(job, shape, view)
        if plan is None:  # pragma: no cover - _too_large refused such a job already
            raise SimulationError(f"reservation: job {job_id!r} does not fit the cluster")
        zone = np.zeros(self.cluster.n_nodes, dtype=bool)
        zone[list(plan.gpus_by_node)] = True
        self.zone, self.plan = zone, plan

    def _in_reservation(self, job_id: str, shape: Shape) -> Decision | None:
        """Where a job goes while the zone is reserved (:mod:`topoopt.sim.reservation`)."""
        reservation, zone, plan = self.reservation, self.zone, self.plan
        assert reservation is not None and zone is not None and plan is not None
        lpj = self._jobs[reservation.job]
        if job_id == reservation.job:
            if reservation.mode == "best-effort":
                self.zone = None
                return self._decide(job_id, shape)
            if self.occupancy.free[zone].sum() < self.cluster.node_gpus[zone].sum():
                return None  # a zone node is still held: nothing is preempted
            return dataclasses.replace(plan, decision_s=0.0)
        outside = self._decide(job_id, shape, allowed=~zone)
        if outside is not None or job_id not in self._jobs:
            return outside
        arrived = self.now >= lpj.submit_s
        if reservation.mode == "strict" or arrived:
            return None
        if reservation.mode == "best-effort":
            return self._decide(job_id, shape)
        if self.now + self._predicted[job_id] > lpj.submit_s:
            return None
        inside = self._decide(job_id, shape)
        if inside is not None:
            end = self.now + self._predicted[job_id] * self._slowdown(job_id, inside)
            if end > lpj.submit_s:
                return None
        return inside

    def _slowdown(self, job_id: str, decision: Decision) -> float:
        job, shape = self._jobs[job_id], self._shapes[job_id]
        return self.model.slowdown(job, shape, decision)

    def _decide(
        self, job_id: str, shape: Shape, allowed: np.ndarray | None = None
    ) -> Decision | None:
        job = self._jobs[job_id]
        if shape.exclusive:
            self.placement_calls += 1
        try:
            return self.placer.place(job, shape, self.occupancy, allowed)
        except PlacementFailed as exc:
            del self._jobs[job_id]
            self._reject(job, str(exc))
            return None

    def _shadow_time(self, shape: Shape) -> float:
        """The earliest predicted end of a running job after which enough GPUs are free for
        ``shape`` (EASY's shadow time, before it is clamped to now): the running jobs release
        what they hold in the order of their predicted ends."""
        free = self.occupancy.free.copy()
        total = self.cluster.node_gpus
        idle = int(np.count_nonzero(free == total))
        for predicted_end, job_id in self._ends:
            for node, devices in self.occupancy.held[job_id].items():
                free[node] += len(devices)
                if shape.exclusive and free[node] == total[node]:
                    idle += 1
                if not shape.exclusive and free[node] >= shape.gpus:
                    return predicted_end
            if shape.exclusive and idle >= shape.nodes:
                return predicted_end
        return math.inf


class Recording(Protocol):
    """A simulation that reports each job's record to ``on_record`` (this module's
    :class:`Simulation`, the cross-cluster one of :mod:`topoopt.sim.crosscluster`)."""

    on_record: Callable[[Record], None] | None

    def simulate(self) -> Any: ...


def records(simulation: Recording) -> list[Record]:
    """Run ``simulation`` and return every job's record, in the order the jobs ended."""
    out: list[Record] = []
    previous = simulation.on_record

    def keep(record: Record) -> None:
        out.append(record)
        if previous is not None:
            previous(record)

    simulation.on_record = keep
    simulation.simulate()
    return out
