"""Placing the units of jobs given by ``units``: the paper's Algorithm 2, lines 1-15.

Jobs given by units (:attr:`Job.units <topoopt.ocs.instance.Job.units>`) are placed one after
the other by decreasing traffic ``F · G`` (line 1), on top of the traffic of the jobs whose GPUs
the instance fixes (with their default servers and rings). Each pod ``p`` carries an OXC load
``oxc_p`` (the bytes of its pairs) and a ToR load ``tor_p`` (``max(sent, received)``):

* a PS job's server goes on the pod with the least ``oxc_p`` among those with a free GPU
  (lines 5-8), and its first unit with it (the server is one of the job's pods);
* every unit goes on the pod with free GPUs that minimises
  ``max(oxc_p / (C_p · B_oxc), tor_p / B_i)`` (line 11: the paper's
  ``max(oxc_traffic, tor_traffic / exc_rate)`` with ``exc_rate`` the ratio of the two planes'
  bandwidths, read as each plane's load over its bandwidth; ours), ties to the first pod; a
  unit that does not fit goes on, GPU by GPU, to the next best pods (lines 12-13);
* a pod the job does not use yet is skipped when the job could not then be served alone (a pod
  would talk to more pods than it has circuits), and a PS job's second pod is never its
  server's (a PS job spans two pods at least).

After each unit the job's own traffic (servers, rings in the order the pods were taken) is
recomputed and added to the loads. The loads are those of all jobs together, as if in one
group: the placement is made once, before the grouping (Algorithm 1 line 7's re-allocation is
not modelled).
"""

from __future__ import annotations

import math

from topoopt.ocs.choices import default_choice, demand
from topoopt.ocs.instance import OcsInstance
from topoopt.ocs.phases import network_comm
from topoopt.ocs.traffic import Demand, job_demand

Placement = dict[str, dict[str, int]]
"""Job name -> pod name -> GPUs."""


def _partial(
    instance: OcsInstance, job: int, gpus: dict[int, int], server: int | None
) -> Demand | None:
    """The traffic of ``job`` on ``gpus`` (pod number -> GPUs) so far, or ``None`` while it has
    none (an A2A job on one GPU)."""
    spec = instance.jobs[job]
    pairs = list(gpus.items())
    if sum(gpus.values()) < 2 or (spec.type == "PS" and server is None):
        return None
    if spec.type == "PS":
        return job_demand(instance.n_pods, "PS", pairs, spec.traffic_bytes, server=server)
    if spec.type == "RAR":
        return job_demand(instance.n_pods, "RAR", pairs, spec.traffic_bytes, ring=list(gpus))
    return job_demand(instance.n_pods, "A2A", pairs, spec.traffic_bytes)


def _servable_alone(
    instance: OcsInstance, job: int, gpus: dict[int, int], server: int | None
) -> bool:
    load = _partial(instance, job, gpus, server)
    if load is None:
        return True
    return network_comm(instance, load) is not None


def _scores(instance: OcsInstance, load: Demand) -> list[float]:
    """Each pod's ``max(oxc_p / (C_p · B_oxc), tor_p / B_i)``."""
    oxc = [0.0] * instance.n_pods
    for (a, b), amount in load.pairs.items():
        oxc[a] += amount
        oxc[b] += amount
    out = []
    for p, (tor, bps) in enumerate(zip(load.tor_bytes(), instance.tor_bps, strict=True)):
        capacity = instance.circuit_budget[p] * instance.circuit_bps
        plane = oxc[p] / capacity if capacity > 0 else (math.inf if oxc[p] > 0 else 0.0)
        out.append(max(plane, tor / bps))
    return out


def algorithm2_placement(instance: OcsInstance) -> Placement:
    """The pods of every job given by units (module docstring); ``{}`` when there is none.

    Examples
    --------
    >>> from topoopt.ocs.instance import Job, Pod
    >>> inst = OcsInstance(
    ...     "units", [Pod(f"p{i}", 4, 800.0, gpus=8) for i in range(3)],
    ...     [Job("ps", "PS", None, 1e9, 0.1, units=2, unit_gpus=4),
    ...      Job("ring", "RAR", {"p0": 2, "p1": 2}, 1e9, 0.1)], 100.0, 1e-4)
    >>> algorithm2_placement(inst)
    {'ps': {'p2': 4, 'p0': 4}}
    """
    free = [pod.gpus or 0 for pod in instance.pods]
    placed = [j for j, spec in enumerate(instance.jobs) if spec.placed]
    load = Demand.empty(instance.n_pods)
    for j in placed:
        for name, count in instance.jobs[j].gpus:
            free[instance.pod_index[name]] -= count
        load.add(demand(instance, j, default_choice(instance, j)))
    todo = [j for j, spec in enumerate(instance.jobs) if not spec.placed]
    todo.sort(key=lambda j: (-instance.jobs[j].traffic_bytes * instance.jobs[j].total_gpus, j))
    out: Placement = {}
    for j in todo:
        gpus, server = _place(instance, j, free, load)
        final = _partial(instance, j, gpus, server)
        if final is not None:
            load.add(final)
        out[instance.jobs[j].name] = {instance.pods[p].name: g for p, g in gpus.items()}
    return out


def _place(
    instance: OcsInstance, job: int, free: list[int], load: Demand
) -> tuple[dict[int, int], int | None]:
    """Place ``job``'s units (updating ``free``); its pods -> GPUs and its server."""
    spec = instance.jobs[job]
    gpus: dict[int, int] = {}
    server: int | None = None
    if spec.type == "PS":  # lines 5-8: the least OXC-loaded pod with a free GPU
        oxc = [0.0] * instance.n_pods
        for (a, b), amount in load.pairs.items():
            oxc[a] += amount
            oxc[b] += amount
        server = min((p for p in range(instance.n_pods) if free[p] > 0), key=lambda p: oxc[p])
    assert spec.units is not None
    for unit in range(spec.units):
        left = spec.unit_gpus
        while left > 0:
            pod = _next_pod(instance, job, gpus, server, free, load, first=unit == 0)
            take = min(left, free[pod])
            gpus[pod] = gpus.get(pod, 0) + take
            free[pod] -= take
            left -= take
    return gpus, server


def _next_pod(
    instance: OcsInstance,
    job: int,
    gpus: dict[int, int],
    server: int | None,
    free: list[int],
    load: Demand,
    *,
    first: bool,
) -> int:
    """The pod the next GPUs of ``job`` go on (lines 11-13)."""
    spec = instance.jobs[job]
    if first and server is not None and not gpus:
        return server
    own = _partial(instance, job, gpus, server)
    trial = load if own is None else load.plus(own)
    scores = _scores(instance, trial)
    ranked = sorted(
        (p for p in range(instance.n_pods) if free[p] > 0), key=lambda p: (scores[p], p)
    )
    if spec.type == "PS" and set(gpus) == {server}:
        others = [p for p in ranked if p != server]
        ranked = others or ranked
    for pod in ranked:
        if pod in gpus or _servable_alone(instance, job, {**gpus, pod: 1}, server):
            return pod
    return ranked[0]


def resolve(instance: OcsInstance) -> tuple[OcsInstance, Placement]:
    """``instance`` with its jobs given by units placed by :func:`algorithm2_placement`, and
    that placement (``instance`` itself and ``{}`` when every job is placed).

    Raises
    ------
    InvalidInstanceError
        When the placement leaves a job that cannot be served even alone.
    """
    if instance.is_placed:
        return instance, {}
    placement = algorithm2_placement(instance)
    return instance.with_placement(placement), placement


__all__ = ["Placement", "algorithm2_placement", "resolve"]
