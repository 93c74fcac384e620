"""``ocs/enumerate``: the enumeration oracle.

Every grouping of the jobs into groups 1 and 2 (``2^|J|``), and for each group every
combination of its jobs' admissible choices (PS server pods, rings;
:func:`topoopt.ocs.choices.options`), each phase with its exact best circuits
(:func:`topoopt.ocs.phases.network_comm`).

The round (:func:`topoopt.ocs.phases.round_phases`) is non-decreasing in each group's
communication time, and a group's communication time depends on its own jobs' choices only; so
for a fixed grouping the best choices of each group are those that minimise that group's
communication time, and the oracle computes that minimum once per set of jobs
(``best_comm``) instead of once per grouping. Exponential:
:meth:`EnumerateSolver.unsupported_reason` refuses instances with more than
:data:`MAX_COMBINATIONS` (set, choices) combinations. The groupings are visited in order,
each set's minimum computed when a grouping first needs it, and the time limit is checked
between groupings: a stopped run returns the best grouping visited (its incumbent).
"""

from __future__ import annotations

import itertools
import math

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.ocs.choices import Choice, demand, option_count, options
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.phases import network_comm
from topoopt.ocs.solution import round_of, schedule
from topoopt.ocs.traffic import Demand

MAX_JOBS = 16
"""Most jobs the oracle considers at all."""
MAX_COMBINATIONS = 300_000
"""Most (set of jobs, choices) combinations the oracle agrees to evaluate."""


def combinations(instance: OcsInstance) -> int:
    """``prod_j (1 + options_j)``: the (set of jobs, choices of its jobs) pairs the oracle
    evaluates."""
    return math.prod(1 + option_count(instance, j) for j in range(instance.n_jobs))


def best_comm(
    instance: OcsInstance, jobs: tuple[int, ...], demands: dict[tuple[int, Choice], Demand]
) -> tuple[float, dict[int, Choice]] | None:
    """The least communication time of ``jobs`` over every combination of their choices, and
    the first combination that reaches it (``None`` when no combination can be served)."""
    best: tuple[float, dict[int, Choice]] | None = None
    for combo in itertools.product(*(options(instance, j) for j in jobs)):
        load = Demand.empty(instance.n_pods)
        for j, choice in zip(jobs, combo, strict=True):
            load.add(demands[(j, choice)])
        comm = network_comm(instance, load)
        if comm is not None and (best is None or comm.time_s < best[0]):
            best = (comm.time_s, dict(zip(jobs, combo, strict=True)))
    return best


@register_solver
class EnumerateSolver(Solver):
    """Enumeration oracle: every grouping, PS server and ring, with exact circuits."""

    name = "ocs/enumerate"
    family = "ocs"
    exact = True
    gives_bound = True

    @classmethod
    def unsupported_reason(cls, instance: OcsInstance) -> str | None:
        """Why the oracle refuses ``instance`` (more than :data:`MAX_JOBS` jobs or
        :data:`MAX_COMBINATIONS` combinations), or ``None``."""
        if not instance.is_placed:
            return (
                f"jobs {', '.join(instance.unplaced_jobs())} are given by units; the oracle needs "
                "every job's GPUs per pod (ocs/oxc-greedy and ocs/hill-climb place units)"
            )
        if instance.n_jobs > MAX_JOBS:
            return f"{instance.n_jobs} jobs exceed the oracle's {MAX_JOBS}; use ocs/tdm-ilp"
        count = combinations(instance)
        if count > MAX_COMBINATIONS:
            return (
                f"{count} combinations of jobs and choices exceed the oracle's "
                f"{MAX_COMBINATIONS}; use ocs/tdm-ilp or ocs/hill-climb"
            )
        return None

    def _solve(self, instance: OcsInstance, ctx: SolveContext) -> Attempt:
        n = instance.n_jobs
        demands = {
            (j, choice): demand(instance, j, choice)
            for j in range(n)
            for choice in options(instance, j)
        }
        comm: dict[tuple[int, ...], tuple[float, dict[int, Choice]] | None] = {}

        def comm_of(jobs: tuple[int, ...]) -> tuple[float, dict[int, Choice]] | None:
            if jobs not in comm:  # each set of jobs once, when a grouping first needs it
                comm[jobs] = best_comm(instance, jobs, demands)
            return comm[jobs]

        best: tuple[float, tuple[int, ...]] | None = None
        stopped, count = False, 0
        for groups in itertools.product((1, 2), repeat=n):
            if ctx.expired():
                stopped = True
                break
            count += 1
            first = comm_of(tuple(j for j in range(n) if groups[j] == 1))
            second = comm_of(tuple(j for j in range(n) if groups[j] == 2))
            if first is None or second is None:
                continue
            value = round_of(instance, groups, {1: first[0], 2: second[0]})
            if best is None or value < best[0]:
                best = (value, groups)
        if stopped and best is None:
            return Attempt(
                None,
                TerminationReason.TIME_LIMIT,
                message=f"stopped after {count} of {2**n} groupings, none servable yet",
            )
        if best is None:
            return Attempt(
                None,
                TerminationReason.INFEASIBLE,
                message="no grouping lets both groups' traffic be served by the OXC ports",
            )
        groups = best[1]
        choices: dict[int, Choice] = {}
        for g in (1, 2):
            found = comm[tuple(j for j in range(n) if groups[j] == g)]
            assert found is not None
            choices.update(found[1])
        if stopped:
            return Attempt(
                schedule(instance, groups, choices),
                TerminationReason.TIME_LIMIT,
                message=f"stopped after {count} of {2**n} groupings; the best of those",
            )
        return Attempt(
            schedule(instance, groups, choices),
            TerminationReason.OPTIMAL,
            proven_optimal=True,
            message=f"{2**n} groupings, {combinations(instance)} combinations of jobs and choices",
        )
