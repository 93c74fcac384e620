"""``ocs/oxc-greedy``: the paper's Algorithms 2 and 3 as a one-pass constructive heuristic.

* **Algorithm 2** (OXC topology of a group): jobs by decreasing traffic; a PS job's server goes
  on the pod with the least OXC traffic so far (lines 5-8; among the job's pods, where its
  workers are, and skipping pods whose circuits could then not serve the group); a RAR job's
  ring is formed by Algorithm 3 (lines 16-18); the group's circuits
  follow from its traffic (lines 20-21, here exact: :func:`topoopt.ocs.phases.network_comm`).
  The GPUs of every job are given by the instance, so lines 10-15 (placing parallel units on
  the least-loaded pod) have nothing to decide; ``docs/ocs.md`` says so.
* **Algorithm 3** (ring formation reusing circuits,
  :func:`topoopt.ocs.routing.algorithm3_ring`).
* **Grouping** (ours; the paper's Algorithm 1 searches it): jobs by decreasing traffic, each
  put in the group whose round time, with the jobs placed so far, grows least (ties: group 1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.ocs.choices import Choice, default_choice, demand, fixed_choice, is_free
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.routing import by_traffic, comm_or_inf, propose_rings
from topoopt.ocs.solution import evaluate, round_of, schedule
from topoopt.ocs.solvers.placing import solve_placed
from topoopt.ocs.traffic import Demand


def algorithm2_choice(instance: OcsInstance, job: int, load: Demand) -> Choice:
    """``job``'s server (the job's pod with the least OXC traffic in ``load``) or ring
    (Algorithm 3), or its fixed choice."""
    if not is_free(instance, job):
        return fixed_choice(instance, job)
    if instance.jobs[job].type == "PS":
        oxc = [0.0] * instance.n_pods
        for (a, b), amount in load.pairs.items():
            oxc[a] += amount
            oxc[b] += amount
        by_load = sorted(instance.job_pods(job), key=lambda p: oxc[p])
        for server in by_load:  # the least loaded pod whose circuits can serve the job
            trial = load.plus(demand(instance, job, server))
            if math.isfinite(comm_or_inf(instance, trial)):
                return server
        return by_load[0]
    return propose_rings(instance, job, load)[0]


def algorithm2(instance: OcsInstance, jobs: Iterable[int]) -> tuple[dict[int, Choice], Demand]:
    """Algorithm 2 on one group: the choices of ``jobs`` and the group's traffic."""
    load = Demand.empty(instance.n_pods)
    choices: dict[int, Choice] = {}
    for j in by_traffic(instance, jobs):
        choices[j] = algorithm2_choice(instance, j, load)
        load.add(demand(instance, j, choices[j]))
    return choices, load


@register_solver
class OxcGreedySolver(Solver):
    """Algorithms 2 and 3: traffic-sorted servers and rings reusing circuits, greedy grouping."""

    name = "ocs/oxc-greedy"
    family = "ocs"
    complete = False

    def _solve(self, instance: OcsInstance, ctx: SolveContext) -> Attempt:
        return solve_placed(instance, lambda placed: self._solve_placed(placed, ctx))

    def _solve_placed(self, instance: OcsInstance, ctx: SolveContext) -> Attempt:
        groups = [0] * instance.n_jobs
        loads = {1: Demand.empty(instance.n_pods), 2: Demand.empty(instance.n_pods)}
        choices: dict[int, Choice] = {}
        stopped = False
        sent = {1: 0.0, 2: 0.0}
        for j in by_traffic(instance, range(instance.n_jobs)):
            if not stopped and ctx.expired():
                stopped = True  # the remaining jobs go to the less loaded group, unevaluated
                sent = {g: math.fsum(loads[g].sent) for g in (1, 2)}
            if stopped:  # the job's default choice in the group that sends less, unevaluated
                g = min((1, 2), key=lambda h: (sent[h], h))
                groups[j], choices[j] = g, default_choice(instance, j)
                sent[g] += instance.jobs[j].traffic_bytes * instance.jobs[j].total_gpus
                continue
            best: tuple[float, int, Choice, Demand] | None = None
            for g in (1, 2):
                choice = algorithm2_choice(instance, j, loads[g])
                trial = loads[g].plus(demand(instance, j, choice))
                comm = {h: comm_or_inf(instance, trial if h == g else loads[h]) for h in (1, 2)}
                placed = [x if i != j else g for i, x in enumerate(groups)]
                value = (
                    round_of(instance, placed, comm)
                    if all(map(math.isfinite, comm.values()))
                    else math.inf
                )
                if best is None or value < best[0]:
                    best = (value, g, choice, trial)
            assert best is not None
            _, g, choice, trial = best
            groups[j], choices[j], loads[g] = g, choice, trial
        found = schedule(instance, groups, choices)
        if stopped or ctx.expired():
            message = (
                "time limit: the last jobs placed without evaluating the round"
                if stopped
                else "time limit: every job in one group not tried"
            )
            if found is None:
                return Attempt(None, TerminationReason.TIME_LIMIT, message=message)
            return Attempt(found, TerminationReason.TIME_LIMIT, message=message)
        together, _ = algorithm2(instance, range(instance.n_jobs))  # every job in one group
        single = schedule(instance, [1] * instance.n_jobs, together)
        if single is not None and (
            found is None or evaluate(instance, single) < evaluate(instance, found)
        ):
            return Attempt(single, TerminationReason.COMPLETED, message="every job in one group")
        if found is None:
            return Attempt(
                None,
                TerminationReason.COMPLETED,
                message="the greedy grouping left a group whose traffic the OXC ports cannot serve",
            )
        return Attempt(found, TerminationReason.COMPLETED)
