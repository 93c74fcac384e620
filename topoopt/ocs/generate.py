"""Instances of the ocs family: the worked example, tiny random instances for the oracle,
paper-like mixes and a sweep over the communication/computation ratio and the reconfiguration
delay.

The paper's evaluation section is empty, so every figure here is ours (``docs/ocs.md``,
"Instances"). Random jobs take their traffic from a few model sizes and set their training
time from a target *communication/computation ratio*: the mean over the instance's jobs of a
job's communication time alone on the network (:func:`alone_comm_s`), divided by a ratio
drawn for each job (jobs that share TDM rounds run in lockstep, so their training times are of
one order). Comm-heavy mixes draw ratios in
[1, 4], compute-heavy ones in [0.1, 0.5]. A job is only added when the instance's no-TDM
schedule (every job in one group, default servers and rings) can still be given circuits, so
the baseline always exists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from topoopt.core.errors import InvalidInstanceError, InvalidOptionError
from topoopt.core.seeding import make_rng, normalize_seed
from topoopt.core.validate import option_int
from topoopt.ocs.choices import default_choices, demand
from topoopt.ocs.instance import Job, OcsInstance, Pod
from topoopt.ocs.phases import network_comm
from topoopt.ocs.solution import Schedule, group_demand, schedule

MAX_COUNT = 10_000
"""Most instances one generator call makes."""
TRAFFIC_GB = (0.25, 0.5, 1.0, 2.0, 4.0)
"""Traffic sizes ``F`` random jobs draw from (GB per GPU and iteration)."""
PORT_GBPS = (100.0, 200.0, 400.0)
"""Circuit bandwidths random networks draw from (Gb/s)."""
RECONFIG_S = (1e-4, 2e-4, 5e-4, 1e-3)
"""Reconfiguration delays random networks draw from (100 us to 1 ms)."""
MIXES = {"comm": (1.0, 4.0), "compute": (0.1, 0.5), "balanced": (0.5, 1.5)}
"""Ranges of the communication/computation ratio of a job, by mix."""


def worked() -> OcsInstance:
    """The hand-computed example of ``docs/ocs.md``: three pods of 8 OXC ports (100 Gb/s each)
    and 1600 Gb/s ToRs, 0.2 ms reconfiguration; a RAR job on all three pods, a PS job on two
    (server free) and an A2A job on two."""
    pods = [Pod(f"p{i}", 8, 1600.0) for i in range(3)]
    jobs = [
        Job("j0", "RAR", {"p0": 2, "p1": 2, "p2": 2}, 1e9, 0.05),
        Job("j1", "PS", {"p1": 2, "p2": 2}, 1e9, 0.04, t_agg_s=0.002),
        Job("j2", "A2A", {"p0": 1, "p2": 1}, 5e8, 0.03),
    ]
    return OcsInstance("worked", pods, jobs, 100.0, 2e-4, labels={"suite": "worked"})


def worked_schedule() -> Schedule:
    """The optimum of :func:`worked` (certified by ``ocs/enumerate``): the ring alone in group 1,
    the PS job (server ``p1``) and the A2A job in group 2."""
    inst = worked()
    found = schedule(inst, [1, 2, 2], {0: (0, 1, 2), 1: 1, 2: None})
    assert found is not None
    return found


def alone_comm_s(instance: OcsInstance, job: int) -> float:
    """``job``'s communication time alone on the network with its default choice (the
    reference of its communication/computation ratio)."""
    load = demand(instance, job, default_choices(instance)[job])
    comm = network_comm(instance, load)
    if comm is None:
        raise ValueError(f"job {instance.jobs[job].name} cannot be served alone")
    return comm.time_s


def _no_tdm_servable(instance: OcsInstance) -> bool:
    load = group_demand(instance, default_choices(instance), range(instance.n_jobs))
    return network_comm(instance, load) is not None


def random_instance(
    rng: np.random.Generator,
    name: str,
    *,
    pods: int,
    jobs: int,
    mix: str = "balanced",
    ports: Sequence[int] = (4, 8),
    max_span: int = 4,
    reconfig_s: float | None = None,
    free: float = 1.0,
    pod_gpus: int = 32,
) -> OcsInstance:
    """A random instance of ``pods`` pods and up to ``jobs`` jobs (module docstring).

    Parameters
    ----------
    rng
        The random generator.
    name
        Instance name.
    pods, jobs
        Network size and jobs wanted (fewer when the GPUs or the no-TDM circuits run out).
    mix
        ``"comm"``, ``"compute"`` or ``"balanced"`` (:data:`MIXES`).
    ports
        OXC ports per pod to draw from (one value for the whole network).
    max_span
        Most pods one job spans.
    reconfig_s
        The delay, or ``None`` to draw it from :data:`RECONFIG_S`.
    free
        Probability that a PS server or a ring is left to the solver.
    pod_gpus
        GPUs per pod.
    """
    if mix not in MIXES:
        raise InvalidOptionError(f"mix: must be one of {', '.join(MIXES)}, got {mix!r}")
    ports_n = int(rng.choice(ports))
    tor = float(rng.choice((800.0, 1600.0, 3200.0)))
    network = [Pod(f"p{i}", ports_n, tor, gpus=pod_gpus) for i in range(pods)]
    port_gbps = float(rng.choice(PORT_GBPS))
    delay = float(rng.choice(RECONFIG_S)) if reconfig_s is None else float(reconfig_s)
    low, high = MIXES[mix]
    left = [pod_gpus] * pods
    made: list[Job] = []
    attempts = 0
    while len(made) < jobs and attempts < 20 * jobs:
        attempts += 1
        job = _random_job(rng, f"j{len(made)}", left, max_span, free)
        if job is None:
            continue
        try:
            trial = OcsInstance(name, network, [*made, job], port_gbps, delay)
        except InvalidInstanceError:  # the job alone cannot get its circuits
            continue
        if not _no_tdm_servable(trial):
            continue
        made.append(job)
        for pod, g in job.gpus:
            left[trial.pod_index[pod]] -= g
    placed = OcsInstance(name, network, made, port_gbps, delay)
    reference = float(np.mean([alone_comm_s(placed, j) for j in range(placed.n_jobs)]))
    timed = []
    for job in made:
        t_train = round(reference / float(rng.uniform(low, high)), 6) or 1e-6
        t_agg = round(t_train * float(rng.uniform(0.02, 0.1)), 6) if job.type == "PS" else None
        timed.append(job.with_times(t_train, t_agg))
    labels = {"mix": mix, "pods": str(pods), "jobs": str(len(made)), "reconfig_s": f"{delay:g}"}
    return OcsInstance(name, network, timed, port_gbps, delay, labels=labels)


def _random_job(
    rng: np.random.Generator, name: str, left: list[int], max_span: int, free: float
) -> Job | None:
    """A random job on pods with GPUs left, or ``None`` when it does not fit."""
    kind = str(rng.choice(("PS", "RAR", "A2A")))
    usable = [i for i, g in enumerate(left) if g > 0]
    low = 2 if kind == "PS" else 1
    if len(usable) < low:
        return None
    span = int(rng.integers(low, min(max_span, len(usable)) + 1))
    chosen = sorted(int(i) for i in rng.choice(usable, size=span, replace=False))
    gpus = {}
    for i in chosen:
        options = [g for g in (1, 2, 4, 8) if g <= left[i]]
        gpus[f"p{i}"] = int(rng.choice(options))
    if kind == "A2A" and sum(gpus.values()) < 2:
        return None
    traffic = float(rng.choice(TRAFFIC_GB)) * 1e9
    server = ring = None
    if kind == "PS" and rng.random() >= free:
        server = f"p{int(rng.choice(chosen))}"
    if kind == "RAR" and span > 3 and rng.random() >= free:
        ring = [f"p{i}" for i in rng.permutation(chosen)]
    return Job(name, kind, gpus, traffic, 1.0, server_pod=server, ring=ring)


def tiny(seed: int = 0, count: int = 20) -> list[OcsInstance]:
    """``count`` oracle-sized instances: 2 to 4 pods of 2 to 6 ports, 2 to 4 jobs, every mix."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    rng = make_rng(seed)
    out = []
    for i in range(count):
        out.append(
            random_instance(
                rng,
                f"tiny-{seed}-{i}",
                pods=int(rng.integers(2, 5)),
                jobs=int(rng.integers(2, 5)),
                mix=str(rng.choice(list(MIXES))),
                ports=(2, 3, 4, 6),
                free=0.5,
                pod_gpus=8,
            )
        )
    return out


PAPER_SIZES = ((4, 4), (4, 6), (8, 8), (8, 12), (12, 16), (16, 24))
"""``(pods, jobs)`` of the paper-like suite."""


def paper_like(seed: int = 0, repeats: int = 2) -> list[OcsInstance]:
    """Mixes of PS, RAR and A2A jobs on 4 to 16 pods with 4 to 24 jobs (:data:`PAPER_SIZES`),
    comm-heavy and compute-heavy, 100 us to 1 ms reconfiguration, servers and rings free;
    ``repeats`` instances of each size and mix."""
    seed = normalize_seed(seed)
    repeats = option_int("repeats", repeats, 1, MAX_COUNT)
    rng = make_rng(seed)
    out = []
    for pods, jobs in PAPER_SIZES:
        for mix in ("comm", "compute"):
            for r in range(repeats):
                out.append(
                    random_instance(
                        rng,
                        f"paper-{pods}x{jobs}-{mix}-{seed}-{r}",
                        pods=pods,
                        jobs=jobs,
                        mix=mix,
                        ports=(8, 16),
                        max_span=4,
                    )
                )
    return out


RATIOS = (0.25, 0.5, 1.0, 2.0, 4.0)
"""Communication/computation ratios of the sweep suite."""
SWEEP_RECONFIG_S = (1e-4, 1e-3, 1e-2)
"""Reconfiguration delays of the sweep suite."""


def sweep(seed: int = 0, pods: int = 8, jobs: int = 8) -> list[OcsInstance]:
    """One random job mix whose training times are scaled so that the mean communication time
    alone over the mean training time is each ratio of :data:`RATIOS`, with each delay of
    :data:`SWEEP_RECONFIG_S`: how the TDM gain varies with both."""
    seed = normalize_seed(seed)
    pods = option_int("pods", pods, 2, 64)
    jobs = option_int("jobs", jobs, 1, 64)
    base = random_instance(make_rng(seed), "base", pods=pods, jobs=jobs, ports=(8,), pod_gpus=32)
    comm = np.mean([alone_comm_s(base, j) for j in range(base.n_jobs)])
    train = np.mean([s.t_train_s for s in base.jobs])
    out = []
    for ratio in RATIOS:
        factor = float(comm / (ratio * train))  # mean alone comm / mean train = ratio
        for delay in SWEEP_RECONFIG_S:
            scaled = [
                s.with_times(round(s.t_train_s * factor, 6) or 1e-6, round(s.t_agg_s * factor, 6))
                for s in base.jobs
            ]
            out.append(
                OcsInstance(
                    f"sweep-{seed}-r{ratio:g}-d{delay:g}",
                    base.pods,
                    scaled,
                    base.oxc_port_gbps,
                    delay,
                    labels={"ratio": f"{ratio:g}", "reconfig_s": f"{delay:g}", "suite": "sweep"},
                )
            )
    return out


def by_units(seed: int = 0, count: int = 12, share: float = 0.5) -> list[OcsInstance]:
    """Paper-like mixes on 4 to 8 pods where each job is given by ``units`` with probability
    ``share`` (2-GPU units when its GPUs are even, else 1-GPU units): for the placing
    heuristics (the exact solvers refuse them)."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    if not (isinstance(share, (int, float)) and 0 <= share <= 1):
        raise InvalidOptionError(f"share: must be a number in [0, 1], got {share!r}")
    rng = make_rng(seed)
    out = []
    for i in range(count):
        pods, jobs = ((4, 4), (8, 8), (8, 12))[i % 3]
        base = random_instance(
            rng, f"units-{pods}x{jobs}-{seed}-{i}", pods=pods, jobs=jobs, mix="comm", ports=(8,)
        )
        converted = []
        for spec in base.jobs:
            if rng.random() >= share:
                converted.append(spec)
                continue
            unit = 2 if spec.total_gpus % 2 == 0 else 1
            converted.append(
                Job(
                    spec.name,
                    spec.type,
                    None,
                    spec.traffic_bytes,
                    spec.t_train_s,
                    t_agg_s=spec.t_agg_s if spec.type == "PS" else None,
                    units=spec.total_gpus // unit,
                    unit_gpus=unit,
                )
            )
        out.append(
            OcsInstance(
                base.name,
                base.pods,
                converted,
                base.oxc_port_gbps,
                base.reconfig_s,
                labels={**base.labels, "suite": "units"},
            )
        )
    return out


def examples() -> list[OcsInstance]:
    """Fixed small instances for the conformance suite: the worked example, eq. 7 training
    times with two ports per circuit, one job, and random tiny instances."""
    with_eq7 = OcsInstance(
        "eq7-duplex",
        [Pod("a", 4, 800.0), Pod("b", 4, 800.0), Pod("c", 6, 800.0)],
        [
            Job(
                "moe",
                "A2A",
                {"a": 4, "b": 4, "c": 4},
                2e8,
                compute={
                    "tokens": 4096,
                    "parameters": 1e9,
                    "gpu_flops": 1e15,
                    "efficiency": 0.4,
                    "recomputation": True,
                },
            ),
            Job("ps", "PS", {"a": 2, "c": 2}, 5e8, 0.02, t_agg_s=0.001, server_pod="c"),
        ],
        200.0,
        1e-3,
        ports_per_circuit=2,
    )
    single = OcsInstance(
        "single-job",
        [Pod("x", 2, 400.0), Pod("y", 2, 400.0)],
        [Job("r", "RAR", {"x": 1, "y": 1}, 1e9, 0.1)],
        100.0,
        1e-4,
    )
    return [worked(), with_eq7, single, *tiny(seed=3, count=3)]


def worked_suite(seed: int = 0) -> list[OcsInstance]:
    """The worked example of the docs (``seed`` is accepted and unused)."""
    normalize_seed(seed)
    return [worked()]


GENERATORS: dict[str, Callable[..., list[OcsInstance]]] = {
    "worked": worked_suite,
    "tiny": tiny,
    "paper-like": paper_like,
    "sweep": sweep,
    "units": by_units,
}
"""Suites for ``topoopt instances generate ocs --suite NAME --seed N``."""


def tiled(instance: OcsInstance, copies: int, name: str | None = None) -> OcsInstance:
    """``copies`` copies of ``instance`` side by side on disjoint pods (pods ``t.p`` and jobs
    ``t.j`` of copy ``t``): an instance ``copies`` times larger, quick to build, whose optimum
    is the copies' common grouping (the jobs of different copies share no pod)."""
    copies = option_int("copies", copies, 1, MAX_COUNT)
    pods = [
        Pod(f"{t}.{p.name}", p.oxc_ports, p.tor_gbps, gpus=p.gpus)
        for t in range(copies)
        for p in instance.pods
    ]
    jobs = [
        Job(
            f"{t}.{spec.name}",
            spec.type,
            None if spec.units is not None else {f"{t}.{p}": g for p, g in spec.gpus},
            spec.traffic_bytes,
            None if spec.compute is not None else spec.t_train_s,
            compute=spec.compute,
            t_agg_s=spec.t_agg_s if spec.type == "PS" else None,
            server_pod=None if spec.server_pod is None else f"{t}.{spec.server_pod}",
            ring=None if spec.ring is None else [f"{t}.{p}" for p in spec.ring],
            units=spec.units,
            unit_gpus=spec.unit_gpus if spec.units is not None else None,
        )
        for t in range(copies)
        for spec in instance.jobs
    ]
    return OcsInstance(
        name or f"{instance.name}-x{copies}",
        pods,
        jobs,
        instance.oxc_port_gbps,
        instance.reconfig_s,
        instance.ports_per_circuit,
        labels=dict(instance.labels),
    )


def slow_examples() -> list[OcsInstance]:
    """Instances on which the solvers need far longer than a second (the time-limit check of
    the conformance suite; every solver but the oracle takes the first): copies of a 64-pod
    instance with up to 96 comm-heavy jobs side by side, 5 (320 pods, 480 jobs) and 10 (640
    pods, 960 jobs: ten times the scale benchmark's 64 x 96 rung), that instance itself, and
    8 pods with 12 jobs (the oracle's size)."""
    base = random_instance(make_rng(0), "slow-64x96", pods=64, jobs=96, mix="comm", ports=(8, 16))
    return [
        tiled(base, 5, "slow-320x480"),
        tiled(base, 10, "slow-640x960"),
        base,
        random_instance(make_rng(0), "enum-8x12", pods=8, jobs=12, mix="compute", ports=(8, 16)),
    ]
