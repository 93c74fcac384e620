"""Bad ocs input gives one clear error naming the JSON path, whether it comes from a dict, a file
through the CLI or in-code construction; ``check`` names every broken rule of a solution,
``from_dict`` refuses malformed solution JSON; good instances and solutions round-trip."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.errors import InvalidInstanceError, InvalidSolutionError
from topoopt.core.result import clean
from topoopt.ocs import FAMILY, Compute, Job, OcsInstance, Pod, Schedule, check, evaluate
from topoopt.ocs.generate import GENERATORS, examples, worked, worked_schedule
from topoopt.ocs.phases import min_circuits
from topoopt.ocs.solution import from_dict, schedule, to_dict
from topoopt.ocs.traffic import job_demand
from topoopt.testing.input_errors import (
    Change,
    assert_cli_exits_2,
    assert_load_names,
    both,
    edited,
    setter,
)

from .strategies import instances, jobs


def base() -> dict[str, Any]:
    """The worked example as JSON: pods p0, p1, p2 of 8 ports; j0 RAR on all three, j1 PS on
    p1, p2 (server free), j2 A2A on p0 (1 GPU) and p2 (1 GPU)."""
    return worked().to_dict()


def drop(*path: Any) -> Change:
    def change(data: dict[str, Any]) -> None:
        target: Any = data
        for step in path[:-1]:
            target = target[step]
        del target[path[-1]]

    return change


EQ7 = {"tokens": 4096, "parameters": 1e9, "gpu_flops": 1e15, "efficiency": 0.5}

# (id, change, field, field when built in code from Pod/Job objects, words): the errors every
# way of building an instance reports alike (a Pod or Job built on its own names the field
# from itself down)
CONSTRUCTOR_CASES = [
    (
        "unknown-pod",
        setter("jobs", 1, "gpus", value={"p1": 2, "p9": 2}),
        "jobs[1].gpus.p9",
        "jobs[1].gpus.p9",
        "unknown pod 'p9'",
    ),
    (
        "odd-ports-two-per-circuit",
        both(
            setter("network", "ports_per_circuit", value=2),
            setter("network", "pods", 1, "oxc_ports", value=7),
        ),
        "network.pods[1].oxc_ports",
        "network.pods[1].oxc_ports",
        "must be even when network.ports_per_circuit = 2",
    ),
    (
        "zero-port-gbps",
        setter("network", "oxc_port_gbps", value=0),
        "network.oxc_port_gbps",
        "network.oxc_port_gbps",
        "> 0",
    ),
    (
        "zero-tor-gbps",
        setter("network", "pods", 2, "tor_gbps", value=0),
        "network.pods[2].tor_gbps",
        "tor_gbps",
        "> 0",
    ),
    (
        "ps-on-one-pod",
        setter("jobs", 1, "gpus", value={"p1": 4}),
        "jobs[1].gpus",
        "gpus",
        "a PS job must span at least two pods",
    ),
    (
        "negative-t-train",
        setter("jobs", 0, "t_train_s", value=-1.0),
        "jobs[0].t_train_s",
        "t_train_s",
        "got -1",
    ),
    (
        "zero-t-train",
        setter("jobs", 0, "t_train_s", value=0.0),
        "jobs[0].t_train_s",
        "t_train_s",
        "must be > 0",
    ),
    (
        "negative-t-agg",
        setter("jobs", 1, "t_agg_s", value=-0.5),
        "jobs[1].t_agg_s",
        "t_agg_s",
        "got -0.5",
    ),
    (
        "negative-reconfig",
        setter("network", "reconfig_s", value=-1e-4),
        "network.reconfig_s",
        "network.reconfig_s",
        "got -0.0001",
    ),
    (
        "t-train-and-compute",
        setter("jobs", 0, "compute", value=EQ7),
        "jobs[0].t_train_s",
        "t_train_s",
        "give exactly one of t_train_s and compute",
    ),
    (
        "neither-t-train-nor-compute",
        drop("jobs", 2, "t_train_s"),
        "jobs[2].t_train_s",
        "t_train_s",
        "give exactly one of t_train_s and compute",
    ),
    (
        "compute-zero-efficiency",
        both(
            drop("jobs", 0, "t_train_s"),
            setter("jobs", 0, "compute", value={**EQ7, "efficiency": 0}),
        ),
        "jobs[0].compute.efficiency",
        "compute.efficiency",
        "> 0",
    ),
    (
        "ring-on-ps",
        setter("jobs", 1, "ring", value=["p1", "p2"]),
        "jobs[1].ring",
        "ring",
        "only RAR jobs have it (this job is PS)",
    ),
    (
        "ring-on-a2a",
        setter("jobs", 2, "ring", value=["p0", "p2"]),
        "jobs[2].ring",
        "ring",
        "only RAR jobs have it (this job is A2A)",
    ),
    (
        "server-on-rar",
        setter("jobs", 0, "server_pod", value="p0"),
        "jobs[0].server_pod",
        "server_pod",
        "only PS jobs have it",
    ),
    (
        "t-agg-on-a2a",
        setter("jobs", 2, "t_agg_s", value=0.01),
        "jobs[2].t_agg_s",
        "t_agg_s",
        "only PS jobs have it",
    ),
    (
        "server-outside-the-job",
        setter("jobs", 1, "server_pod", value="p0"),
        "jobs[1].server_pod",
        "server_pod",
        "must be one of the job's pods (p1, p2), got 'p0'",
    ),
    (
        "ring-misses-a-pod",
        setter("jobs", 0, "ring", value=["p0", "p2"]),
        "jobs[0].ring",
        "ring",
        "must list each of the job's pods (p0, p1, p2) once, got p0, p2",
    ),
    (
        "ring-repeats-a-pod",
        setter("jobs", 0, "ring", value=["p0", "p1", "p2", "p1"]),
        "jobs[0].ring",
        "ring",
        "once, got p0, p1, p2, p1",
    ),
    (
        "ring-replaces-a-pod",
        setter("jobs", 0, "ring", value=["p0", "p1", "p1"]),
        "jobs[0].ring",
        "ring",
        "once, got p0, p1, p1",
    ),
    (
        "duplicate-pod",
        setter("network", "pods", 2, "name", value="p0"),
        "network.pods[2]",
        "network.pods[2]",
        "duplicate name 'p0'",
    ),
    (
        "duplicate-job",
        setter("jobs", 2, "name", value="j0"),
        "jobs[2]",
        "jobs[2]",
        "duplicate name 'j0'",
    ),
    (
        "a2a-with-one-gpu",
        setter("jobs", 2, "gpus", value={"p0": 1}),
        "jobs[2].gpus",
        "gpus",
        "an A2A job needs at least 2 GPUs",
    ),
    (
        "a2a-unroutable",
        both(
            setter(
                "network",
                "pods",
                value=[{"name": f"p{i}", "oxc_ports": 2, "tor_gbps": 800.0} for i in range(4)],
            ),
            setter("jobs", 0, "gpus", value={"p0": 1, "p1": 1}),
            setter("jobs", 2, "gpus", value={"p0": 1, "p1": 1, "p2": 1, "p3": 1}),
        ),
        "jobs[2].gpus",
        "jobs[2].gpus",
        "a A2A job over 4 pods needs 3 circuit(s) at pod 'p0', which has 2",
    ),
    (
        "rar-unroutable-two-ports-per-circuit",
        both(
            setter("network", "ports_per_circuit", value=2),
            setter("network", "pods", 1, "oxc_ports", value=2),
        ),
        "jobs[0].gpus",
        "jobs[0].gpus",
        "needs 2 circuit(s) at pod 'p1', which has 1 (two OXC ports per circuit)",
    ),
    (
        "ps-unroutable-fixed-server",
        both(
            setter("network", "pods", 1, "oxc_ports", value=1),
            setter("jobs", 0, "gpus", value={"p0": 1, "p2": 1}),
            setter("jobs", 1, "gpus", value={"p0": 1, "p1": 1, "p2": 1}),
            setter("jobs", 1, "server_pod", value="p1"),
        ),
        "jobs[1].gpus",
        "jobs[1].gpus",
        "with server on 'p1' needs 2 circuit(s) at pod 'p1', which has 1",
    ),
    (
        "pod-gpus-exceeded",
        setter("network", "pods", 2, "gpus", value=4),
        "network.pods[2].gpus",
        "network.pods[2].gpus",
        "the jobs use 5 GPUs on pod 'p2', which has 4",
    ),
    (
        "negative-traffic",
        setter("jobs", 2, "traffic_bytes", value=-1.0),
        "jobs[2].traffic_bytes",
        "traffic_bytes",
        "got -1",
    ),
    (
        "zero-gpus",
        setter("jobs", 0, "gpus", "p1", value=0),
        "jobs[0].gpus.p1",
        "gpus.p1",
        ">= 1",
    ),
    (
        "negative-ports",
        setter("network", "pods", 0, "oxc_ports", value=-2),
        "network.pods[0].oxc_ports",
        "oxc_ports",
        "-2",
    ),
    (
        "unknown-type",
        setter("jobs", 0, "type", value="AR"),
        "jobs[0].type",
        "type",
        "got 'AR'",
    ),
]

# errors only the JSON reader meets
JSON_CASES = [
    (
        "unknown-network-field",
        setter("network", "reconfig", value=1e-4),
        "network.reconfig",
        "did you mean 'reconfig_s'?",
    ),
    (
        "unknown-job-field",
        setter("jobs", 1, "server", value="p1"),
        "jobs[1].server",
        "did you mean 'server_pod'?",
    ),
    (
        "unknown-pod-field",
        setter("network", "pods", 0, "oxc_port", value=4),
        "network.pods[0].oxc_port",
        "did you mean 'oxc_ports'?",
    ),
    ("missing-network", drop("network"), "network", "missing"),
    (
        "ports-per-circuit-3",
        setter("network", "ports_per_circuit", value=3),
        "network.ports_per_circuit",
        "3",
    ),
    (
        "ports-not-integer",
        setter("network", "pods", 0, "oxc_ports", value=2.5),
        "network.pods[0].oxc_ports",
        "integer",
    ),
    ("ring-not-a-list", setter("jobs", 0, "ring", value="p0p1p2"), "jobs[0].ring", "p0p1p2"),
    ("no-jobs", setter("jobs", value=[]), "jobs", "at least 1"),
]

ALL_CASES = [(c[0], c[1], c[2], c[4]) for c in CONSTRUCTOR_CASES] + JSON_CASES


def bad(change: Change) -> dict[str, Any]:
    return edited(base(), change)


@pytest.mark.parametrize(
    ("change", "field", "words"), [c[1:] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES]
)
def test_load_dict_names_the_field(change, field: str, words: str) -> None:
    assert_load_names(bad(change), field, words)


@pytest.mark.parametrize(
    ("change", "field", "words"), [c[1:] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES]
)
def test_cli_solve_bad_file_exits_2_with_one_line(tmp_path, change, field: str, words: str) -> None:
    assert_cli_exits_2(tmp_path, bad(change), "ocs/hill-climb", field, words)


def in_code(data: dict[str, Any]) -> OcsInstance:
    """The instance built in code from ``Pod`` and ``Job`` objects, as a user would."""
    network = data["network"]
    pods = [Pod(p["name"], p["oxc_ports"], p["tor_gbps"], p.get("gpus")) for p in network["pods"]]
    built = [
        Job(
            j["name"],
            j["type"],
            j["gpus"],
            j["traffic_bytes"],
            j.get("t_train_s"),
            compute=j.get("compute"),
            t_agg_s=j.get("t_agg_s"),
            server_pod=j.get("server_pod"),
            ring=j.get("ring"),
        )
        for j in data["jobs"]
    ]
    return OcsInstance(
        data["name"],
        pods,
        built,
        network["oxc_port_gbps"],
        network["reconfig_s"],
        network.get("ports_per_circuit", 1),
        data.get("labels"),
    )


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [(c[1], c[3], c[4]) for c in CONSTRUCTOR_CASES],
    ids=[c[0] for c in CONSTRUCTOR_CASES],
)
def test_in_code_construction_names_the_same_field(change, field: str, words: str) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        in_code(bad(change))
    assert info.value.field == field, str(info.value)
    assert words in str(info.value)


def test_in_code_construction_of_the_base_is_the_worked_example() -> None:
    assert in_code(base()) == worked()
    assert in_code(base()).to_dict() == base()


def test_in_code_construction_of_jobs_from_pairs_and_computes() -> None:
    job = Job("j", "RAR", [("a", 2), ("b", 1)], 1e9, compute=Compute(4096, 1e9, 1e15, 0.5))
    assert job.gpus == (("a", 2), ("b", 1)) and job.t_train_s == pytest.approx(0.049152)
    assert job == Job("j", "RAR", {"a": 2, "b": 1}, 1e9, compute=EQ7)
    with pytest.raises(InvalidInstanceError) as info:
        Job("j", "RAR", [("a", 2), ("a", 1)], 1e9, 0.1)
    assert info.value.field == "gpus[1]" and "duplicate name 'a'" in str(info.value)
    with pytest.raises(InvalidInstanceError) as info:
        Job("j", "RAR", {}, 1e9, 0.1)
    assert info.value.field == "gpus"
    with pytest.raises(InvalidInstanceError) as info:
        Compute(4096, 1e9, 1e15, 0.5, recomputation="yes")
    assert info.value.field == "recomputation"
    pods = [Pod("a", 2, 100.0)]
    one = [Job("j", "RAR", {"a": 1}, 1e9, 0.1)]
    for value in (True, 3, 2.5):
        with pytest.raises(InvalidInstanceError) as info:
            OcsInstance("x", pods, one, 100.0, 0.0, ports_per_circuit=value)
        assert info.value.field == "network.ports_per_circuit"
    with pytest.raises(InvalidInstanceError) as info:
        OcsInstance("x", [3], one, 100.0, 0.0)
    assert info.value.field == "network.pods[0]"
    with pytest.raises(InvalidInstanceError) as info:
        OcsInstance("x", pods, [{"name": "j"}], 100.0, 0.0)
    assert info.value.field == "jobs[0].type"
    with pytest.raises(InvalidInstanceError) as info:
        OcsInstance("x", [{"name": "a", "oxc_ports": 2, "tor_gbps": 1e-7}], one, 100.0, 0.0)
    assert info.value.field == "network.pods[0].tor_gbps" and ">= 1e-06" in str(info.value)


def test_limits_are_checked_before_anything_is_built() -> None:
    pods = [Pod(f"p{i}", 2, 100.0) for i in range(3)]
    one = [Job("j", "RAR", {"p0": 1}, 1e9, 0.1)]
    with topoopt.limits_raised(ocs_pods=2), pytest.raises(InvalidInstanceError) as info:
        OcsInstance("x", pods, one, 100.0, 0.0)
    assert info.value.field == "network.pods" and "ocs_pods" in str(info.value)
    with topoopt.limits_raised(ocs_jobs=1), pytest.raises(InvalidInstanceError) as info:
        OcsInstance("x", pods, one * 2, 100.0, 0.0)
    assert info.value.field == "jobs" and "ocs_jobs" in str(info.value)
    with topoopt.limits_raised(ocs_job_pods=2), pytest.raises(InvalidInstanceError) as info:
        Job("j", "RAR", {"p0": 1, "p1": 1, "p2": 1}, 1e9, 0.1)
    assert info.value.field == "gpus" and "ocs_job_pods" in str(info.value)


def test_eq7_time_too_long_names_the_compute_object() -> None:
    huge = {"tokens": 1e17, "parameters": 1e17, "gpu_flops": 1.0, "efficiency": 1.0}
    assert_load_names(
        bad(both(drop("jobs", 0, "t_train_s"), setter("jobs", 0, "compute", value=huge))),
        "jobs[0].compute",
        "eq. 7 gives",
    )


def test_in_code_gpus_item_that_is_not_a_pair_names_the_item() -> None:
    with pytest.raises(InvalidInstanceError) as info:
        Job("j", "RAR", [("a",)], 1e9, 0.1)
    assert info.value.field == "gpus[0]"


# ------------------------------------------------------------------- routability is exact


def servable_alone(job: Job, pods: list[Pod], per_circuit: int) -> bool:
    """Whether some server or ring lets ``job`` alone get circuits (brute force over every
    server pod and every ring order, with the exact phase evaluator)."""
    index = {p.name: i for i, p in enumerate(pods)}
    budget = [p.oxc_ports // per_circuit for p in pods]
    gpus = [(index[p], g) for p, g in job.gpus]
    members = [p for p, _ in gpus]
    if job.type == "PS":
        servers = [index[job.server_pod]] if job.server_pod else members
        loads = [job_demand(len(pods), "PS", gpus, job.traffic_bytes, server=s) for s in servers]
    elif job.type == "RAR":
        orders = [[index[p] for p in job.ring]] if job.ring else itertools.permutations(members)
        loads = [job_demand(len(pods), "RAR", gpus, job.traffic_bytes, ring=o) for o in orders]
    else:
        loads = [job_demand(len(pods), "A2A", gpus, job.traffic_bytes)]
    return any(min_circuits(load.pairs, budget, 1.0) is not None for load in loads)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(2, 4), per_circuit=st.sampled_from((1, 2)))
def test_the_constructor_refuses_exactly_the_jobs_that_cannot_be_routed_alone(
    data: st.DataObject, n: int, per_circuit: int
) -> None:
    ports = st.sampled_from((0, 2, 4)) if per_circuit == 2 else st.integers(0, 3)
    pods = [Pod(f"p{i}", data.draw(ports), 800.0) for i in range(n)]
    job = data.draw(jobs("j", n))
    try:
        OcsInstance("x", pods, [job], 100.0, 0.0, per_circuit)
    except InvalidInstanceError as error:
        assert error.field == "jobs[0].gpus" and "circuit(s) at pod" in str(error)
        assert not servable_alone(job, pods, per_circuit)
        assert job.traffic_bytes > 0
    else:
        assert servable_alone(job, pods, per_circuit) or job.traffic_bytes == 0


# ------------------------------------------------------------------------------ solutions


def circuits_with(sched: Schedule, phase: int, *entries: tuple[int, int, Any]) -> Schedule:
    """``sched`` with ``L[a][b] = value`` set in one phase (0-based), only where given."""
    rows = [list(row) for row in sched.circuits[phase]]
    for a, b, value in entries:
        rows[a][b] = value
    circuits = list(sched.circuits)
    circuits[phase] = tuple(tuple(row) for row in rows)
    return replace(sched, circuits=tuple(circuits))


def test_worked_schedule_is_valid() -> None:
    assert check(worked(), worked_schedule()) == []


@pytest.mark.parametrize(
    ("corrupt", "problems"),
    [
        (
            lambda s: circuits_with(s, 0, (0, 1, 1)),
            ["phase 1: L[0][1] = 1 but L[1][0] = 0"],
        ),
        (
            lambda s: circuits_with(s, 0, (0, 2, -1), (2, 0, -1)),
            ["phase 1: L[0][2] = -1, circuits must be non-negative integers"],
        ),
        (
            lambda s: circuits_with(s, 2, (1, 2, 2.5), (2, 1, 2.5)),
            ["phase 3: L[1][2] = 2.5, circuits must be non-negative integers"],
        ),
        (
            lambda s: circuits_with(s, 1, (0, 1, True), (1, 0, True)),
            ["phase 2: L[0][1] = True, circuits must be non-negative integers"],
        ),
        (
            lambda s: circuits_with(s, 3, (1, 1, 1)),
            ["phase 4: pod p1 has a circuit to itself"],
        ),
        (
            lambda s: circuits_with(s, 1, (0, 1, 5), (1, 0, 5)),
            [
                "phase 2: pod p0 has 9 circuits, its ports allow 8",
                "phase 2: pod p1 has 9 circuits, its ports allow 8",
            ],
        ),
        (
            lambda s: circuits_with(s, 0, (0, 2, 0), (2, 0, 0)),
            ["phase 1: pods p0-p2 carry 1e+09 bytes but have no circuit"],
        ),
        (
            lambda s: circuits_with(s, 3, (0, 1, 0), (1, 0, 0)),
            ["phase 4: pods p0-p1 carry 2e+09 bytes but have no circuit"],
        ),
        (
            lambda s: replace(s, servers={"j1": "p0"}),
            ["job j1: server pod 'p0' is not one of its pods"],
        ),
        (lambda s: replace(s, servers={}), ["job j1: PS job without a server pod"]),
        (
            lambda s: replace(s, servers={"j1": "p1", "j2": "p0"}),
            ["servers: 'j2' is not a PS job"],
        ),
        (
            lambda s: replace(s, rings={"j0": ("p0", "p1", "p1")}),
            ["job j0: ring p0-p1-p1 does not visit each of its pods (p0, p1, p2) exactly once"],
        ),
        (
            lambda s: replace(s, rings={"j0": ("p0", "p1")}),
            ["job j0: ring p0-p1 does not visit each of its pods (p0, p1, p2) exactly once"],
        ),
        (lambda s: replace(s, rings={}), ["job j0: RAR job without a ring"]),
        (
            lambda s: replace(s, rings={**s.rings, "j1": ("p1", "p2")}),
            ["rings: 'j1' is not a RAR job"],
        ),
        (
            lambda s: replace(s, circuits=s.circuits[:3]),
            ["3 circuit matrices, a round has 4 phases"],
        ),
        (
            lambda s: replace(s, circuits=(*s.circuits[:3], ((0, 1), (1, 0)))),
            ["phase 4: the circuit matrix must be 3 x 3"],
        ),
        (lambda s: replace(s, groups=(1, 2)), ["2 groups for 3 jobs"]),
        (lambda s: replace(s, groups=(1, 2, 2, 1)), ["4 groups for 3 jobs"]),
        (lambda s: replace(s, groups=(1, 3, 2)), ["job j1: group 3, must be 1 or 2"]),
        (lambda s: replace(s, groups=(0, 2, 2)), ["job j0: group 0, must be 1 or 2"]),
    ],
    ids=[
        "asymmetric",
        "negative",
        "non-integer",
        "bool",
        "diagonal",
        "over-budget",
        "no-circuit-phase-1",
        "no-circuit-phase-4",
        "server-outside",
        "no-server",
        "server-of-a2a",
        "ring-repeats",
        "ring-misses",
        "no-ring",
        "ring-of-ps",
        "three-matrices",
        "matrix-shape",
        "too-few-groups",
        "too-many-groups",
        "group-3",
        "group-0",
    ],
)
def test_check_names_each_broken_rule(corrupt, problems: list[str]) -> None:
    inst = worked()
    broken = corrupt(worked_schedule())
    assert check(inst, broken) == problems


def test_check_wants_the_fixed_server() -> None:
    data = base()
    data["jobs"][1]["server_pod"] = "p2"
    inst = topoopt.load(data)
    sched = schedule(inst, [1, 2, 2], {0: (0, 1, 2), 1: 1, 2: None})
    assert sched is not None
    assert check(inst, sched) == ["job j1: server pod 'p1', the instance fixes 'p2'"]
    assert check(inst, replace(sched, servers={"j1": "p2"})) == []


def fixed_ring_instance() -> OcsInstance:
    pods = [Pod(f"p{i}", 4, 800.0) for i in range(5)]
    ring = ["p3", "p0", "p4", "p1"]
    job = Job("r", "RAR", {"p0": 1, "p1": 2, "p3": 1, "p4": 1}, 1e9, 0.01, ring=ring)
    other = Job("a", "A2A", {"p2": 1, "p1": 1}, 1e9, 0.01)
    return OcsInstance("fixed-ring", pods, [job, other], 100.0, 1e-4)


def test_check_accepts_the_fixed_ring_rotated_or_reversed_and_nothing_else() -> None:
    inst = fixed_ring_instance()
    sched = schedule(inst, [1, 2], {0: (3, 0, 4, 1), 1: None})
    assert sched is not None and check(inst, sched) == []
    fixed = ["p3", "p0", "p4", "p1"]
    for shift in range(4):
        rotated = fixed[shift:] + fixed[:shift]
        for order in (rotated, rotated[::-1]):
            other = replace(sched, rings={"r": tuple(order)})
            assert check(inst, other) == [], order
            assert evaluate(inst, other) == evaluate(inst, sched)
    for order in itertools.permutations(fixed):
        cyclic = any(
            list(order) in (fixed[s:] + fixed[:s], (fixed[s:] + fixed[:s])[::-1]) for s in range(4)
        )
        if cyclic:
            continue
        other = replace(sched, rings={"r": order})
        problems = check(inst, other)
        assert problems[0] == f"job r: ring {'-'.join(order)}, the instance fixes p3-p0-p4-p1"


def test_check_refuses_a_bool_group() -> None:
    inst = worked()
    sched = from_dict(
        inst, {**to_dict(inst, worked_schedule()), "groups": {"j0": True, "j1": 2, "j2": 2}}
    )
    assert check(inst, sched) != []


# ----------------------------------------------------------------------- solution JSON


def good_solution() -> dict[str, Any]:
    return to_dict(worked(), worked_schedule())


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ([1, 2, 2], "solution: must be a JSON object"),
        ({**good_solution(), "groups": [1, 2, 2]}, "solution.groups: must map every job"),
        ({**good_solution(), "groups": {"j0": 1, "j1": 2}}, "missing jobs ['j2']"),
        (
            {**good_solution(), "groups": {"j0": 1, "j1": 2, "j2": 2, "j9": 1}},
            "unknown jobs ['j9']",
        ),
        ({**good_solution(), "pods": ["p0", "p2", "p1"]}, "solution.pods: must be the instance's"),
        ({**good_solution(), "servers": ["p1"]}, "solution.servers"),
        ({**good_solution(), "servers": {"j1": 1}}, "solution.servers"),
        ({**good_solution(), "rings": {"j0": "p0p1p2"}}, "solution.rings"),
        ({**good_solution(), "rings": {"j0": ["p0", 1, "p2"]}}, "solution.rings"),
        ({k: v for k, v in good_solution().items() if k != "circuits"}, "solution.circuits"),
        ({**good_solution(), "circuits": {"1": []}}, "solution.circuits"),
        ({**good_solution(), "circuits": [[0, 1, 2]]}, "solution.circuits"),
    ],
    ids=[
        "not-object",
        "groups-list",
        "missing-job",
        "unknown-job",
        "pods-order",
        "servers-list",
        "server-not-name",
        "ring-string",
        "ring-not-names",
        "no-circuits",
        "circuits-object",
        "matrix-not-rows",
    ],
)
def test_solution_from_dict_refuses_malformed_json(data: Any, words: str) -> None:
    with pytest.raises(InvalidSolutionError, match=r"^solution") as info:
        from_dict(worked(), data)
    assert words in str(info.value)


def test_solution_from_dict_refuses_pods_that_are_not_a_list() -> None:
    with pytest.raises(InvalidSolutionError, match=r"solution\.pods"):
        from_dict(worked(), {**good_solution(), "pods": 3})


def test_solution_from_dict_reads_what_to_dict_writes_and_pods_are_optional() -> None:
    inst = worked()
    data = json.loads(json.dumps(good_solution()))
    assert from_dict(inst, data) == worked_schedule()
    assert from_dict(inst, data).circuits == worked_schedule().circuits
    data.pop("pods")
    assert from_dict(inst, data) == worked_schedule()


@pytest.mark.parametrize("inst", examples(), ids=lambda inst: inst.name)
def test_results_and_solutions_round_trip(inst: OcsInstance) -> None:
    for solver in (
        "ocs/enumerate",
        "ocs/hill-climb",
        "ocs/hill-climb-paper",
        "ocs/oxc-greedy",
        "ocs/no-tdm",
    ):
        result = topoopt.solve(inst, solver)
        assert result.solution is not None, (solver, result.message)
        data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
        again = FAMILY.solution_from_dict(inst, data["solution"])
        assert again == result.solution and again.circuits == result.solution.circuits
        assert to_dict(inst, again) == data["solution"]
        assert clean(FAMILY.evaluate(inst, again)) == result.objective
        assert check(inst, again) == []


# ------------------------------------------------------------------------------ round trips


SUITES = {
    "worked": {"seed": 0},
    "tiny": {"seed": 5, "count": 4},
    "paper-like": {"seed": 2, "repeats": 1},
    "sweep": {"seed": 1, "pods": 4, "jobs": 3},
    "units": {"seed": 3, "count": 3},
}


def test_every_generator_suite_is_tested() -> None:
    assert set(SUITES) == set(GENERATORS)


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_generated_instances_round_trip_through_dict_and_file(suite: str, tmp_path) -> None:
    made = GENERATORS[suite](**SUITES[suite])
    assert made and made == GENERATORS[suite](**SUITES[suite])
    for i, inst in enumerate(made):
        assert OcsInstance.from_dict(inst.to_dict()) == inst
        assert topoopt.load(json.loads(json.dumps(inst.to_dict()))) == inst
        path = topoopt.save(inst, tmp_path / f"{i}.json")
        again = topoopt.load(path)
        assert again == inst and again.labels == inst.labels and hash(again) == hash(inst)
        assert again.to_dict() == inst.to_dict()


@pytest.mark.parametrize("inst", examples(), ids=lambda inst: inst.name)
def test_examples_round_trip_through_dict_and_file(inst: OcsInstance, tmp_path) -> None:
    assert OcsInstance.from_dict(inst.to_dict()) == inst
    path = topoopt.save(inst, tmp_path / f"{inst.name}.json")
    assert topoopt.load(path) == inst
    assert topoopt.load(path).to_dict() == inst.to_dict()


@settings(max_examples=60, deadline=None)
@given(inst=instances())
def test_random_instances_round_trip(inst: OcsInstance) -> None:
    data = json.loads(json.dumps(inst.to_dict()))
    again = topoopt.load(data)
    assert again == inst and hash(again) == hash(inst)
    assert ("ports_per_circuit" in data["network"]) == (inst.ports_per_circuit == 2)
    for spec, job in zip(inst.jobs, data["jobs"], strict=True):
        assert ("compute" in job) == (spec.compute is not None)
        assert ("ring" in job) == (spec.ring is not None)
        assert ("server_pod" in job) == (spec.server_pod is not None)


def test_defaults_of_optional_fields() -> None:
    data = base()
    data.pop("labels")
    data["jobs"][1].pop("t_agg_s")
    inst = topoopt.load(data)
    assert inst.ports_per_circuit == 1 and inst.labels == {}
    assert inst.jobs[1].t_agg_s == 0.0 and inst.jobs[1].server_pod is None
    assert inst.jobs[0].ring is None and inst.pods[0].gpus is None
    assert inst.circuit_budget == (8, 8, 8)
    two = topoopt.load(edited(base(), setter("network", "ports_per_circuit", value=2)))
    assert two.circuit_budget == (4, 4, 4)


def test_less_than_a_byte_of_traffic_is_refused(tmp_path) -> None:
    """A traffic of 1e-300 bytes once made a candidate time underflow (fuzz)."""
    data = worked().to_dict()
    data["jobs"][0]["traffic_bytes"] = 1e-300
    assert_load_names(data, "jobs[0].traffic_bytes", "must be 0 or at least 1 byte")
    assert_cli_exits_2(tmp_path, data, "ocs/enumerate", "jobs[0].traffic_bytes", "at least 1 byte")
