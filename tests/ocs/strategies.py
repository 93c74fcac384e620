"""Hypothesis strategies that build ocs instances directly, so failures shrink.

* :func:`instances` — 2 to 4 pods of 0 to 6 OXC ports (sometimes two ports per circuit with even
  port counts), 1 to 4 PS/RAR/A2A jobs of 1 to 4 GPUs per pod on 1 to 4 pods (PS on 2 or more),
  traffic, training and aggregation times from a few values (0 traffic and ties between jobs are
  common), ToRs sometimes slow enough to bind, an optional fixed PS server or RAR ring,
  ``reconfig_s`` in {0, 1e-4, 1e-3}. A drawn job that cannot be routed alone (the constructor
  refuses it) is left out; when none is left, a one-pod job (always routable) stands in.
* :func:`seeded_instances` — :func:`topoopt.ocs.generate.random_instance` with a drawn seed
  (tiny sizes), so the generator's own distribution is covered too.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from topoopt.core.errors import InvalidInstanceError
from topoopt.ocs import Compute, Job, OcsInstance, Pod
from topoopt.ocs.generate import MIXES, random_instance

PORT_GBPS = (100.0, 400.0)
TOR_GBPS = (100.0, 800.0, 3200.0)
TRAFFIC_BYTES = (0.0, 2.5e8, 5e8, 1e9, 2e9)
T_TRAIN_S = (0.01, 0.02, 0.05)
T_AGG_S = (0.0, 0.001, 0.01)
RECONFIG_S = (0.0, 1e-4, 1e-3)
EQ7 = Compute(tokens=1000, parameters=1e8, gpu_flops=1e14, efficiency=0.5)  # 0.012 s


@st.composite
def jobs(draw: st.DrawFn, name: str, n_pods: int) -> Job:
    """One job on the pods ``p0 .. p<n_pods-1>`` (module docstring)."""
    kind = draw(st.sampled_from(("PS", "RAR", "A2A")))
    low = 2 if kind == "PS" else 1
    span = draw(st.integers(low, min(4, n_pods)))
    order = draw(st.permutations(range(n_pods)))[:span]
    gpus = {f"p{i}": draw(st.integers(1, 4)) for i in order}
    if kind == "A2A" and sum(gpus.values()) < 2:
        gpus[f"p{order[0]}"] = 2
    traffic = draw(st.sampled_from(TRAFFIC_BYTES))
    if draw(st.integers(0, 9)) == 0:
        timing: dict = {"compute": EQ7}
    else:
        timing = {"t_train_s": draw(st.sampled_from(T_TRAIN_S))}
    extra: dict = {}
    if kind == "PS":
        extra["t_agg_s"] = draw(st.none() | st.sampled_from(T_AGG_S))
        if draw(st.booleans()):
            extra["server_pod"] = draw(st.sampled_from(sorted(gpus)))
    if kind == "RAR" and draw(st.booleans()):
        extra["ring"] = [f"p{i}" for i in draw(st.permutations(order))]
    return Job(
        name, kind, gpus, traffic, timing.get("t_train_s"), compute=timing.get("compute"), **extra
    )


@st.composite
def instances(draw: st.DrawFn, max_pods: int = 4, max_jobs: int = 4) -> OcsInstance:
    """A tiny instance (module docstring)."""
    n = draw(st.integers(2, max_pods))
    per_circuit = draw(st.sampled_from((1, 1, 2)))
    if per_circuit == 2:
        ports = [draw(st.sampled_from((0, 2, 4, 6))) for _ in range(n)]
    else:
        ports = [draw(st.integers(0, 6)) for _ in range(n)]
    pods = [Pod(f"p{i}", ports[i], draw(st.sampled_from(TOR_GBPS))) for i in range(n)]
    port_gbps = draw(st.sampled_from(PORT_GBPS))
    reconfig = draw(st.sampled_from(RECONFIG_S))
    made: list[Job] = []
    for j in range(draw(st.integers(1, max_jobs))):
        job = draw(jobs(f"j{j}", n))
        try:
            OcsInstance("drawn", pods, [*made, job], port_gbps, reconfig, per_circuit)
        except InvalidInstanceError:  # cannot be routed alone
            continue
        made.append(job)
    if not made:
        made.append(
            Job(
                "solo",
                draw(st.sampled_from(("RAR", "A2A"))),
                {"p0": 2},
                1e9,
                draw(st.sampled_from(T_TRAIN_S)),
            )
        )
    return OcsInstance("drawn", pods, made, port_gbps, reconfig, per_circuit)


@st.composite
def seeded_instances(draw: st.DrawFn, max_pods: int = 4, max_jobs: int = 4) -> OcsInstance:
    """:func:`random_instance` with a drawn seed, at the sizes of the ``tiny`` suite."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    return random_instance(
        rng,
        f"seed-{seed}",
        pods=int(rng.integers(2, max_pods + 1)),
        jobs=int(rng.integers(1, max_jobs + 1)),
        mix=str(rng.choice(list(MIXES))),
        ports=(2, 3, 4, 6),
        free=0.5,
        pod_gpus=8,
    )


def any_instances(max_pods: int = 4, max_jobs: int = 4) -> st.SearchStrategy[OcsInstance]:
    """Either kind."""
    return st.one_of(instances(max_pods, max_jobs), seeded_instances(max_pods, max_jobs))
