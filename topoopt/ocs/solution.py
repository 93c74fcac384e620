"""TDM schedules, their round time (the objective) and their feasibility check.

The root of the family's trust chain. A :class:`Schedule` holds every decision: the group (1 or
2) of each job, the server pod of each PS job, the ring order of each RAR job and the circuit
matrix ``L`` of each of the four phases. :func:`evaluate` recomputes the round time from the
schedule alone (paper eq. 1; :mod:`topoopt.ocs.phases` states the round)::

    phase p communicating group g (phases 1, 3: group 2; phases 2, 4: group 1)
    comm_p  = max( max over pod pairs with T_ab > 0 of T_ab / (L^p_ab · B_oxc),
                   max over pods of max(sent_i, received_i) / B_i )
    round   = sum_p max(compute of the other group in phase p, comm_p + delta)

with ``T``, ``sent``, ``received`` the bytes of group ``g``'s jobs under the schedule's servers
and rings (:mod:`topoopt.ocs.traffic`). :func:`check` verifies the port budgets, symmetry,
integrality, a circuit on every pair with traffic and rings that are Hamiltonian over each
job's pods.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from topoopt.core.display import shortened
from topoopt.core.errors import InvalidInstanceError, InvalidSolutionError
from topoopt.ocs.choices import Choice, canonical_ring, demand
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.phases import GroupTimes, network_comm, oxc_time, round_phases, tor_time
from topoopt.ocs.routing import best_response
from topoopt.ocs.traffic import Demand, Pair

PHASES = 4
"""Phases of a TDM round."""
COMMUNICATING = (2, 1, 2, 1)
"""The group that communicates in phases 1 to 4 (the other computes)."""

Matrix = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Schedule:
    """One TDM round's decisions.

    Attributes
    ----------
    groups
        The group (1 or 2) of every job, in the instance's job order.
    servers
        PS job name -> its server's pod name (every PS job).
    rings
        RAR job name -> its pods in ring order (every RAR job).
    circuits
        ``L`` of phases 1 to 4: a symmetric ``|P| x |P|`` matrix of circuit counts in the
        instance's pod order.
    placement
        Job name -> pod name -> GPUs of every job the instance gives by ``units`` (empty when
        the instance places every job).
    """

    groups: tuple[int, ...]
    servers: Mapping[str, str] = field(default_factory=dict, hash=False)
    rings: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    circuits: tuple[Matrix, ...] = ()
    placement: Mapping[str, Mapping[str, int]] = field(default_factory=dict, hash=False)

    def members(self, group: int) -> list[int]:
        """The job numbers in ``group``."""
        return [j for j, g in enumerate(self.groups) if g == group]


def matrix(n_pods: int, circuits: Mapping[Pair, int]) -> Matrix:
    """The symmetric matrix of ``circuits`` (pairs ``a < b``)."""
    rows = [[0] * n_pods for _ in range(n_pods)]
    for (a, b), count in circuits.items():
        rows[a][b] = rows[b][a] = int(count)
    return tuple(tuple(row) for row in rows)


def pairs_of(m: Matrix) -> dict[Pair, int]:
    """The nonzero upper-triangle entries of a circuit matrix."""
    return {(a, b): x for a, row in enumerate(m) for b, x in enumerate(row) if x and b > a}


def job_choice(instance: OcsInstance, schedule: Schedule, job: int) -> Choice:
    """The schedule's server (PS) or ring (RAR) of ``job`` as pod numbers (``None`` for A2A)."""
    spec = instance.jobs[job]
    if spec.type == "PS":
        return instance.pod_index[schedule.servers[spec.name]]
    if spec.type == "RAR":
        return tuple(instance.pod_index[p] for p in schedule.rings[spec.name])
    return None


def group_demand(
    instance: OcsInstance, choices: Mapping[int, Choice], jobs: Iterable[int]
) -> Demand:
    """The bytes of ``jobs`` in one communication phase with their ``choices``."""
    total = Demand.empty(instance.n_pods)
    for j in jobs:  # a job sends and receives on its own pods only
        total.add_at(demand(instance, j, choices[j]), _pods(instance, j, choices[j]))
    return total


def _pods(instance: OcsInstance, job: int, choice: Choice) -> tuple[int, ...]:
    """The pods where ``job`` with ``choice`` sends or receives: its own, and its server's."""
    pods = instance.job_pods(job)
    return pods if not isinstance(choice, int) or choice in pods else (*pods, choice)


def group_times(instance: OcsInstance, jobs: Sequence[int], comm_s: float) -> GroupTimes:
    """The compute times of ``jobs`` (one group) and its communication time ``comm_s``."""
    specs = [instance.jobs[j] for j in jobs]
    return GroupTimes(
        train_s=max((s.t_train_s for s in specs), default=0.0),
        second_s=max((s.t_second_s for s in specs), default=0.0),
        comm_s=comm_s if specs else 0.0,
        active=bool(specs),
    )


def schedule(
    instance: OcsInstance, groups: Sequence[int], choices: Mapping[int, Choice]
) -> Schedule | None:
    """The schedule of ``groups`` and ``choices`` with the best circuits of every phase
    (:func:`topoopt.ocs.phases.network_comm`), or ``None`` when a group's traffic cannot be served.

    Phases 1 and 3 (and 2 and 4) carry the same pair demands (a PS job's push and pull load each
    pair alike), so they get the same circuits.
    """
    per_group: dict[int, Matrix] = {}
    for g in (1, 2):
        jobs = [j for j, x in enumerate(groups) if x == g]
        comm = network_comm(instance, group_demand(instance, choices, jobs))
        if comm is None:
            return None
        per_group[g] = matrix(instance.n_pods, comm.circuits)
    return named(instance, groups, choices, per_group)


def named(
    instance: OcsInstance,
    groups: Sequence[int],
    choices: Mapping[int, Choice],
    circuits: Mapping[int, Matrix],
) -> Schedule:
    """The schedule of ``groups``, ``choices`` (pod numbers) and each group's circuit matrix
    ``circuits[g]`` (phases 1 and 3: group 2's; 2 and 4: group 1's), with names."""
    servers, rings = {}, {}
    for j, spec in enumerate(instance.jobs):
        choice = choices.get(j)
        if spec.type == "PS" and isinstance(choice, int):
            servers[spec.name] = instance.pods[choice].name
        elif spec.type == "RAR" and isinstance(choice, tuple):
            rings[spec.name] = tuple(instance.pods[p].name for p in choice)
    return Schedule(
        groups=tuple(int(g) for g in groups),
        servers=servers,
        rings=rings,
        circuits=tuple(circuits[g] for g in COMMUNICATING),
    )


@dataclass(frozen=True)
class Phase:
    """One phase of a round: the computing group's time, the communicating group's time
    (OXC and ToR parts, ``delta`` not included) and the phase's duration."""

    compute_s: float
    comm_s: float
    oxc_s: float
    tor_s: float
    duration_s: float


def placed(instance: OcsInstance, sched: Schedule) -> OcsInstance:
    """``instance`` with the jobs it gives by units on ``sched``'s placement (``instance``
    itself when it places every job); raises ``InvalidInstanceError`` for a bad placement."""
    if instance.is_placed:
        return instance
    return instance.with_placement(sched.placement)


def phases(instance: OcsInstance, sched: Schedule) -> tuple[Phase, ...]:
    """The four phases of ``sched`` with its own circuits (the module docstring's formula)."""
    instance = placed(instance, sched)
    choices = {j: job_choice(instance, sched, j) for j in range(instance.n_jobs)}
    loads = {g: group_demand(instance, choices, sched.members(g)) for g in (1, 2)}
    out = []
    for p, talking in enumerate(COMMUNICATING):
        jobs = sched.members(talking)
        others = sched.members(3 - talking)
        load = loads[talking]
        m = sched.circuits[p]
        circuits = {(a, b): m[a][b] for a, b in load.pairs}  # the loaded pairs' circuits
        oxc = oxc_time(load.pairs, circuits, instance.circuit_bps)
        tor = tor_time(load, instance.tor_bps)
        comm = max(oxc, tor) if jobs else 0.0
        busy = comm + instance.reconfig_s if jobs else 0.0
        specs = [instance.jobs[j] for j in others]
        compute = max(
            (s.t_train_s if p < 2 else s.t_second_s for s in specs),
            default=0.0,
        )
        out.append(
            Phase(compute, comm, oxc if jobs else 0.0, tor if jobs else 0.0, max(compute, busy))
        )
    return tuple(out)


def evaluate(instance: OcsInstance, sched: Schedule) -> float:
    """The round time in seconds (paper eq. 1): the sum of the four phase durations.

    Examples
    --------
    >>> from topoopt.ocs.generate import worked, worked_schedule
    >>> round(evaluate(worked(), worked_schedule()), 9)
    0.1804
    """
    return math.fsum(phase.duration_s for phase in phases(instance, sched))


def round_of(instance: OcsInstance, groups: Sequence[int], comm: Mapping[int, float]) -> float:
    """The round time of ``groups`` whose communication times are ``comm[1]``, ``comm[2]``
    (``inf`` for a group that cannot be served)."""
    times = [
        group_times(instance, [j for j, x in enumerate(groups) if x == g], comm.get(g, 0.0))
        for g in (1, 2)
    ]
    return math.fsum(round_phases(times[0], times[1], instance.reconfig_s))


def no_tdm_round(instance: OcsInstance, choices: Mapping[int, Choice]) -> float:
    """The round time with every job in one group (no TDM: train all, then communicate all,
    for the same iterations) and ``choices``, with the best circuits; ``inf`` when the jobs'
    joint traffic cannot be served."""
    jobs = list(range(instance.n_jobs))
    comm = network_comm(instance, group_demand(instance, choices, jobs))
    if comm is None:
        return math.inf
    return round_of(instance, [1] * instance.n_jobs, {1: comm.time_s})


@functools.lru_cache(maxsize=64)
def _no_tdm_best_response(instance: OcsInstance) -> float:
    return no_tdm_round(instance, best_response(instance, range(instance.n_jobs)))


def no_tdm_baseline(instance: OcsInstance, choices: Mapping[int, Choice]) -> float:
    """The no-TDM round of the better of two routings: ``choices`` (a schedule's own servers
    and rings) and the greedy best response over all jobs
    (:func:`topoopt.ocs.routing.best_response`, what ``ocs/no-tdm`` returns); ``inf`` when
    neither can be served."""
    return min(no_tdm_round(instance, choices), _no_tdm_best_response(instance))


def check(instance: OcsInstance, sched: Schedule) -> list[str]:
    """The rules ``sched`` breaks: a group of 1 or 2 for every job; a server (one of the job's
    pods, the instance's when it fixes one) for every PS job; a ring visiting each of a RAR
    job's pods once (the instance's ring up to rotation and reversal when it fixes one); four
    symmetric integer circuit matrices with zero diagonal and at most ``C_i`` circuits at every
    pod; a circuit on every pod pair with traffic in each phase.

    Examples
    --------
    >>> from dataclasses import replace
    >>> from topoopt.ocs.generate import worked, worked_schedule
    >>> check(worked(), replace(worked_schedule(), groups=(1, 3, 2)))
    ['job j1: group 3, must be 1 or 2']
    """
    problems: list[str] = []
    if len(sched.groups) != instance.n_jobs:
        return [f"{len(sched.groups)} groups for {instance.n_jobs} jobs"]
    placing = _check_placement(instance, sched)
    if placing:
        return placing
    instance = placed(instance, sched)
    for j, g in enumerate(sched.groups):
        if isinstance(g, bool) or g not in (1, 2) or not isinstance(g, int):
            problems.append(f"job {instance.jobs[j].name}: group {g!r}, must be 1 or 2")
    problems += _check_choices(instance, sched)
    problems += _check_circuits(instance, sched)
    if problems:
        return problems
    choices = {j: job_choice(instance, sched, j) for j in range(instance.n_jobs)}
    loads = {g: group_demand(instance, choices, sched.members(g)) for g in (1, 2)}
    for p, talking in enumerate(COMMUNICATING):
        load = loads[talking]
        for (a, b), traffic in sorted(load.pairs.items()):
            if traffic > 0 and sched.circuits[p][a][b] == 0:
                problems.append(
                    f"phase {p + 1}: pods {instance.pods[a].name}-{instance.pods[b].name} carry "
                    f"{traffic:g} bytes but have no circuit"
                )
    return problems


def _check_placement(instance: OcsInstance, sched: Schedule) -> list[str]:
    """A placement for exactly the jobs given by units: their GPUs on known pods, within the
    pods' free GPUs, and a placed instance that passes its own rules."""
    wanted = set(instance.unplaced_jobs())
    problems = [
        f"placement: {name!r} is not a job given by units"
        for name in sorted(set(sched.placement) - wanted)
    ]
    problems += [
        f"placement: job {name!r} has none" for name in sorted(wanted - set(sched.placement))
    ]
    if problems:
        return problems
    for name, gpus in sorted(sched.placement.items()):
        spec = instance.jobs[instance.job_index[name]]
        counts = list(gpus.values())
        if any(isinstance(g, bool) or not isinstance(g, int) or g < 1 for g in counts):
            problems.append(f"placement: job {name!r}: GPU counts must be positive integers")
        elif sum(counts) != spec.total_gpus:
            problems.append(
                f"placement: job {name!r} has {sum(counts)} GPUs, its {spec.units} units of "
                f"{spec.unit_gpus} make {spec.total_gpus}"
            )
        unknown = sorted(set(gpus) - set(instance.pod_index))
        if unknown:
            problems.append(f"placement: job {name!r} on unknown pods {unknown}")
    if problems:
        return problems
    try:
        placed(instance, sched)
    except InvalidInstanceError as exc:
        return [f"placement: {exc}"]
    return []


def _check_choices(instance: OcsInstance, sched: Schedule) -> list[str]:
    problems = []
    ps = {s.name for s in instance.jobs if s.type == "PS"}
    rar = {s.name for s in instance.jobs if s.type == "RAR"}
    for name in sorted(set(sched.servers) - ps):
        problems.append(f"servers: {name!r} is not a PS job")
    for name in sorted(set(sched.rings) - rar):
        problems.append(f"rings: {name!r} is not a RAR job")
    for spec in instance.jobs:
        if spec.type == "PS":
            server = sched.servers.get(spec.name)
            if server is None:
                problems.append(f"job {spec.name}: PS job without a server pod")
            elif server not in spec.pods:
                problems.append(f"job {spec.name}: server pod {server!r} is not one of its pods")
            elif spec.server_pod is not None and server != spec.server_pod:
                problems.append(
                    f"job {spec.name}: server pod {server!r}, the instance fixes "
                    f"{spec.server_pod!r}"
                )
        elif spec.type == "RAR":
            ring = sched.rings.get(spec.name)
            if ring is None:
                problems.append(f"job {spec.name}: RAR job without a ring")
            elif sorted(ring) != sorted(spec.pods):
                problems.append(
                    f"job {spec.name}: ring {'-'.join(ring)} does not visit each of its pods "
                    f"({', '.join(spec.pods)}) exactly once"
                )
            elif spec.ring is not None and _cycle(instance, ring) != _cycle(instance, spec.ring):
                problems.append(
                    f"job {spec.name}: ring {'-'.join(ring)}, the instance fixes "
                    f"{'-'.join(spec.ring)}"
                )
    return problems


def _cycle(instance: OcsInstance, ring: Sequence[str]) -> tuple[int, ...]:
    return canonical_ring([instance.pod_index[p] for p in ring])


def _check_circuits(instance: OcsInstance, sched: Schedule) -> list[str]:
    if len(sched.circuits) != PHASES:
        return [f"{len(sched.circuits)} circuit matrices, a round has {PHASES} phases"]
    problems = []
    found: dict[int, list[str]] = {}  # a matrix used in several phases is checked once
    for p, m in enumerate(sched.circuits, start=1):
        if id(m) not in found:
            found[id(m)] = _matrix_problems(instance, m)
        problems += [f"phase {p}: {problem}" for problem in found[id(m)]]
    return problems


def _matrix_problems(instance: OcsInstance, m: Any) -> list[str]:
    """The rules one circuit matrix breaks (without the phase)."""
    n = instance.n_pods
    if not isinstance(m, tuple | list) or len(m) != n or any(len(row) != n for row in m):
        return [f"the circuit matrix must be {n} x {n}"]
    types: set[type] = set()
    for row in m:
        types.update(map(type, row))
    if not (types <= {int} and min(min(row, default=0) for row in m) >= 0):
        bad = [
            (a, b)
            for a in range(n)
            for b in range(n)
            if isinstance(m[a][b], bool) or not isinstance(m[a][b], int) or m[a][b] < 0
        ]
        if bad:
            a, b = bad[0]
            return [f"L[{a}][{b}] = {m[a][b]!r}, circuits must be non-negative integers"]
    problems = []
    symmetric = [tuple(row) for row in zip(*m, strict=True)] == [tuple(row) for row in m]
    for a in range(n):
        if m[a][a]:
            problems.append(f"pod {instance.pods[a].name} has a circuit to itself")
        if not symmetric:
            for b in range(a + 1, n):
                if m[a][b] != m[b][a]:
                    problems.append(f"L[{a}][{b}] = {m[a][b]} but L[{b}][{a}] = {m[b][a]}")
        used = sum(m[a]) - m[a][a]
        if used > instance.circuit_budget[a]:
            problems.append(
                f"pod {instance.pods[a].name} has {used} circuits, its ports allow "
                f"{instance.circuit_budget[a]}"
            )
    return problems


def metrics(instance: OcsInstance, sched: Schedule) -> dict[str, float]:
    """``round_s``, each phase's duration ``phase_<p>_s``, each group's communication time
    ``comm_group<g>_s`` (without ``delta``), ``group2_jobs``, the no-TDM round time
    ``no_tdm_round_s`` (:func:`no_tdm_baseline`; ``inf`` when no routing tried serves it),
    the speed-up ``tdm_speedup = no_tdm_round_s / round_s`` and every job's
    ``iterations_per_s.<job>`` (1 PS or 2 other iterations per round)."""
    instance = placed(instance, sched)
    parts = phases(instance, sched)
    round_s = math.fsum(phase.duration_s for phase in parts)
    choices = {j: job_choice(instance, sched, j) for j in range(instance.n_jobs)}
    baseline = no_tdm_baseline(instance, choices)
    out = {"round_s": round_s}
    for p, phase in enumerate(parts, start=1):
        out[f"phase_{p}_s"] = phase.duration_s
    out["comm_group1_s"] = parts[1].comm_s
    out["comm_group2_s"] = parts[0].comm_s
    out["group2_jobs"] = float(len(sched.members(2)))
    out["no_tdm_round_s"] = baseline
    out["tdm_speedup"] = baseline / round_s if round_s > 0 else 1.0
    for spec in instance.jobs:
        rate = spec.iterations_per_round / round_s if round_s > 0 else math.inf
        out[f"iterations_per_s.{spec.name}"] = rate
    return out


def to_dict(instance: OcsInstance, sched: Schedule) -> dict[str, Any]:
    """JSON form: ``{"groups": {job: 1 | 2}, "servers": {PS job: pod}, "rings": {RAR job: [pods]},
    "pods": [names], "circuits": [L of phases 1-4]}`` (matrices in the order of ``pods``), and
    ``"placement": {job: {pod: GPUs}}`` when the instance gives jobs by units."""
    placement = (
        {"placement": {k: dict(g) for k, g in sched.placement.items()}} if sched.placement else {}
    )
    return {
        **placement,
        "groups": {spec.name: g for spec, g in zip(instance.jobs, sched.groups, strict=False)},
        "servers": dict(sched.servers),
        "rings": {name: list(ring) for name, ring in sched.rings.items()},
        "pods": [p.name for p in instance.pods],
        "circuits": [[list(row) for row in m] for m in sched.circuits],
    }


def from_dict(instance: OcsInstance, data: Mapping[str, Any]) -> Schedule:
    """Read the JSON form of :func:`to_dict` (``pods``, when given, must be the instance's)."""
    if not isinstance(data, Mapping):
        raise InvalidSolutionError("solution: must be a JSON object")
    groups = data.get("groups")
    if not isinstance(groups, Mapping):
        raise InvalidSolutionError("solution.groups: must map every job to 1 or 2")
    missing = [s.name for s in instance.jobs if s.name not in groups]
    unknown = sorted(set(groups) - set(instance.job_index))
    if missing or unknown:
        raise InvalidSolutionError(
            f"solution.groups: missing jobs {missing}, unknown jobs {unknown}"
        )
    pods = data.get("pods")
    if pods is not None and (not isinstance(pods, list) or pods != [p.name for p in instance.pods]):
        raise InvalidSolutionError("solution.pods: must be the instance's pods in order")
    servers = data.get("servers", {})
    rings = data.get("rings", {})
    circuits = data.get("circuits")
    if not isinstance(servers, Mapping) or not all(isinstance(s, str) for s in servers.values()):
        raise InvalidSolutionError("solution.servers: must map PS jobs to pod names")
    if not isinstance(rings, Mapping) or not all(
        isinstance(r, list) and all(isinstance(p, str) for p in r) for r in rings.values()
    ):
        raise InvalidSolutionError("solution.rings: must map RAR jobs to lists of pod names")
    if not isinstance(circuits, list) or not all(
        isinstance(m, list) and all(isinstance(row, list) for row in m) for m in circuits
    ):
        raise InvalidSolutionError("solution.circuits: must be a list of four matrices")
    placement = data.get("placement", {})
    if not isinstance(placement, Mapping) or not all(
        isinstance(g, Mapping) and all(isinstance(p, str) for p in g) for g in placement.values()
    ):
        raise InvalidSolutionError("solution.placement: must map jobs to {pod: GPUs} objects")
    return Schedule(
        groups=tuple(groups[s.name] for s in instance.jobs),
        servers=dict(servers),
        rings={name: tuple(r) for name, r in rings.items()},
        circuits=tuple(tuple(tuple(row) for row in m) for m in circuits),
        placement={name: dict(g) for name, g in placement.items()},
    )


def describe(instance: OcsInstance, sched: Schedule) -> str:
    """The objective (the round, its phases, no TDM, iterations/s), the groups with their
    servers and rings, one line per phase and the circuits.

    Examples
    --------
    >>> from topoopt.ocs.generate import worked, worked_schedule
    >>> print(describe(worked(), worked_schedule()))
    objective 0.1804 s per round = phase 1 0.05 + phase 2 0.0402 + phase 3 0.05 + phase 4 0.0402
      (paper eq. 1; lower is better); no TDM 0.2604 s, speed-up x1.443
      iterations/s: j0 11.09, j1 5.543, j2 11.09 (PS 1, RAR and A2A 2 per round)
    group 1: j0 (RAR ring p0-p1-p2)
    group 2: j1 (PS server p1), j2 (A2A)
    phase 1: group 1 computes 0.05 s | group 2 communicates 0.032 s + delta 0.0002 s | 0.05 s
    phase 2: group 2 computes 0.04 s | group 1 communicates 0.04 s + delta 0.0002 s | 0.0402 s
    phase 3: group 1 computes 0.05 s | group 2 communicates 0.032 s + delta 0.0002 s | 0.05 s
    phase 4: group 2 computes 0.03 s | group 1 communicates 0.04 s + delta 0.0002 s | 0.0402 s
    circuits, phases 2 and 4: p0-p1 4, p0-p2 4, p1-p2 4
    circuits, phases 1 and 3: p0-p2 3, p1-p2 5
    """
    parts = phases(placed(instance, sched), sched)
    numbers = metrics(instance, sched)
    durations = " + ".join(f"phase {p} {phase.duration_s:.6g}" for p, phase in enumerate(parts, 1))
    rates = [
        f"{spec.name} {numbers[f'iterations_per_s.{spec.name}']:.4g}" for spec in instance.jobs
    ]
    lines = [
        f"objective {numbers['round_s']:.6g} s per round = {durations}",
        f"  (paper eq. 1; lower is better); no TDM {numbers['no_tdm_round_s']:.6g} s, "
        f"speed-up x{numbers['tdm_speedup']:.4g}",
        f"  iterations/s: {shortened(rates, 8, ', ')} (PS 1, RAR and A2A 2 per round)",
    ]
    for name, gpus in sched.placement.items():
        where = ", ".join(f"{pod} {g}" for pod, g in gpus.items())
        lines.append(f"placed {name}: {where} GPUs")
    instance = placed(instance, sched)
    for g in (1, 2):
        jobs = []
        for j in sched.members(g):
            spec = instance.jobs[j]
            if spec.type == "PS":
                jobs.append(f"{spec.name} (PS server {sched.servers.get(spec.name)})")
            elif spec.type == "RAR":
                jobs.append(f"{spec.name} (RAR ring {'-'.join(sched.rings.get(spec.name, ()))})")
            else:
                jobs.append(f"{spec.name} (A2A)")
        lines.append(f"group {g}: {', '.join(jobs) or 'no job'}")
    for p, (phase, talking) in enumerate(zip(parts, COMMUNICATING, strict=True), start=1):
        computing = 3 - talking
        compute = (
            f"group {computing} computes {phase.compute_s:.6g} s"
            if sched.members(computing)
            else f"group {computing} has no job"
        )
        comm = (
            f"group {talking} communicates {phase.comm_s:.6g} s + delta {instance.reconfig_s:g} s"
            if sched.members(talking)
            else f"group {talking} has no job"
        )
        lines.append(f"phase {p}: {compute} | {comm} | {phase.duration_s:.6g} s")
    for label, p in (("phases 2 and 4", 1), ("phases 1 and 3", 0)):
        if sched.circuits[p] == sched.circuits[p + 2]:
            lines.append(f"circuits, {label}: {_circuit_text(instance, sched.circuits[p])}")
        else:
            for q in (p, p + 2):
                lines.append(
                    f"circuits, phase {q + 1}: {_circuit_text(instance, sched.circuits[q])}"
                )
    return "\n".join(lines)


def _circuit_text(instance: OcsInstance, m: Matrix) -> str:
    pairs = pairs_of(m)
    if not pairs:
        return "none"
    names = [p.name for p in instance.pods]
    return ", ".join(f"{names[a]}-{names[b]} {n}" for (a, b), n in sorted(pairs.items()))


__all__ = [
    "COMMUNICATING",
    "PHASES",
    "Phase",
    "Schedule",
    "check",
    "describe",
    "evaluate",
    "from_dict",
    "group_demand",
    "group_times",
    "job_choice",
    "matrix",
    "metrics",
    "named",
    "no_tdm_baseline",
    "no_tdm_round",
    "pairs_of",
    "phases",
    "placed",
    "round_of",
    "schedule",
    "to_dict",
]
