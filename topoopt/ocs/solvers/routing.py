"""Choosing the PS servers and rings of one group's jobs: a greedy best response.

Jobs whose choice is free are taken by decreasing traffic; each takes the option that gives
the group's traffic so far (the fixed jobs and the jobs already decided) the least exact
communication time (:func:`topoopt.ocs.phases.comm_time`), an option that cannot be served
counting as infinitely slow. A RAR job over more than :data:`MAX_RING_OPTIONS` distinct rings
only considers its pods' order and the rings that ``extra_rings`` proposes (e.g. Algorithm 3's,
see :mod:`topoopt.ocs.solvers.greedy`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from topoopt.ocs.choices import Choice, demand, fixed_choice, is_free, option_count, options
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.phases import comm_time
from topoopt.ocs.traffic import Demand

MAX_RING_OPTIONS = 60
"""Most rings of one job the best response tries one by one (six pods have 60)."""

RingProposal = Callable[[OcsInstance, int, Demand], Sequence[tuple[int, ...]]]
"""``extra_rings(instance, job, demand so far)``: rings worth trying for a large RAR job."""


def comm_or_inf(instance: OcsInstance, load: Demand) -> float:
    """The exact communication time of ``load`` (``inf`` when it cannot be served)."""
    comm = comm_time(load, instance.circuit_budget, instance.circuit_bps, instance.tor_bps)
    return math.inf if comm is None else comm.time_s


def candidates(
    instance: OcsInstance, job: int, load: Demand, extra_rings: RingProposal | None
) -> list[Choice]:
    """The options the best response tries for ``job``."""
    if option_count(instance, job) <= MAX_RING_OPTIONS:
        return options(instance, job)
    proposed: list[Choice] = [instance.job_pods(job)]
    if extra_rings is not None:
        proposed += [r for r in extra_rings(instance, job, load) if r not in proposed]
    return proposed


def best_response(
    instance: OcsInstance, jobs: Iterable[int], extra_rings: RingProposal | None = None
) -> dict[int, Choice]:
    """Choices for ``jobs`` (one group), greedily (module docstring)."""
    jobs = list(jobs)
    choices: dict[int, Choice] = {}
    load = Demand.empty(instance.n_pods)
    for j in jobs:
        if not is_free(instance, j):
            choices[j] = fixed_choice(instance, j)
            load.add(demand(instance, j, choices[j]))
    free = sorted(
        (j for j in jobs if is_free(instance, j)), key=lambda j: _weight(instance, j), reverse=True
    )
    for j in free:
        best: tuple[float, Choice] | None = None
        for option in candidates(instance, j, load, extra_rings):
            trial = Demand(dict(load.pairs), list(load.sent), list(load.received))
            trial.add(demand(instance, j, option))
            value = comm_or_inf(instance, trial)
            if best is None or value < best[0]:
                best = (value, option)
        assert best is not None
        choices[j] = best[1]
        load.add(demand(instance, j, best[1]))
    return choices


def _weight(instance: OcsInstance, job: int) -> tuple[float, int]:
    spec = instance.jobs[job]
    return (spec.traffic_bytes * spec.total_gpus, -job)


def group_load(instance: OcsInstance, choices: dict[int, Choice]) -> Demand:
    """The traffic of the jobs of ``choices`` with those choices."""
    load = Demand.empty(instance.n_pods)
    for j, choice in choices.items():
        load.add(demand(instance, j, choice))
    return load
