"""The ocs solvers against a naive brute force and each other: the oracle equals every grouping
times every routing choice scored by ``evaluate``; the heuristics are feasible and never beat
it; the round's symmetries, the metrics and determinism."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import assume, given, settings

import topoopt
from topoopt.core.errors import InvalidOptionError, UnsupportedInstanceError
from topoopt.core.result import clean
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.ocs import Job, OcsInstance, Pod, Schedule, check, evaluate
from topoopt.ocs.choices import options
from topoopt.ocs.generate import paper_like, random_instance, tiled, tiny, worked
from topoopt.ocs.phases import comm_time
from topoopt.ocs.solution import (
    group_demand,
    job_choice,
    metrics,
    no_tdm_round,
    phases,
    round_of,
    schedule,
)

from .strategies import any_instances, instances, seeded_instances

REL = 1e-9
BACKENDS = topoopt.available_backends()
HEURISTICS = [
    ("ocs/hill-climb", {}),
    ("ocs/hill-climb", {"kicks": 0}),
    ("ocs/hill-climb-paper", {}),
    ("ocs/hill-climb-paper", {"routing": "best-response"}),
    ("ocs/oxc-greedy", {}),
    ("ocs/no-tdm", {}),
]
SOLVERS = [("ocs/enumerate", {}), ("ocs/tdm-ilp", {}), *HEURISTICS]


def brute_force(inst: OcsInstance) -> float | None:
    """The least ``evaluate`` over every grouping in {1, 2}^J and every combination of every
    job's options, each built by ``schedule`` (no per-group decomposition); ``None`` when no
    schedule can be built."""
    best = None
    every = [options(inst, j) for j in range(inst.n_jobs)]
    for groups in itertools.product((1, 2), repeat=inst.n_jobs):
        for combo in itertools.product(*every):
            found = schedule(inst, groups, dict(enumerate(combo)))
            if found is None:
                continue
            assert check(inst, found) == []
            value = evaluate(inst, found)
            best = value if best is None else min(best, value)
    return best


def assert_oracle_is_brute_force(inst: OcsInstance) -> None:
    expected = brute_force(inst)
    oracle = topoopt.solve(inst, "ocs/enumerate")
    if expected is None:
        assert oracle.solution is None
        assert oracle.termination is TerminationReason.INFEASIBLE
        assert oracle.status is SolutionStatus.NO_SOLUTION
        return
    assert oracle.status is SolutionStatus.OPTIMAL, oracle
    assert oracle.violations == ()
    assert oracle.objective == clean(evaluate(inst, oracle.solution))
    assert math.isclose(oracle.objective, expected, rel_tol=REL), (oracle.objective, expected)
    assert oracle.bound == oracle.objective


# --------------------------------------------------------------------------------- oracle


@settings(max_examples=60, deadline=None)
@given(inst=instances())
def test_oracle_equals_brute_force(inst: OcsInstance) -> None:
    assert_oracle_is_brute_force(inst)


@settings(max_examples=40, deadline=None)
@given(inst=seeded_instances())
def test_oracle_equals_brute_force_on_generated_instances(inst: OcsInstance) -> None:
    assert_oracle_is_brute_force(inst)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(inst=any_instances())
def test_oracle_equals_brute_force_many(inst: OcsInstance) -> None:
    assert_oracle_is_brute_force(inst)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=300, deadline=None)
@given(inst=any_instances())
def test_tdm_ilp_equals_the_oracle_many(backend: str, inst: OcsInstance) -> None:
    assert_ilp_is_oracle(backend, inst)


def test_oracle_reports_an_instance_no_grouping_can_serve() -> None:
    """Pod a has one circuit and three jobs link it to three other pods: a group holds at most
    one of them, so no grouping of three jobs into two groups is served."""
    pods = [Pod("a", 1, 800.0), *(Pod(p, 1, 800.0) for p in "bcd")]
    jobs = [Job(f"j{i}", "RAR", {"a": 1, p: 1}, 1e9, 0.01) for i, p in enumerate("bcd")]
    inst = OcsInstance("crowded", pods, jobs, 100.0, 0.0)
    assert brute_force(inst) is None
    result = topoopt.solve(inst, "ocs/enumerate")
    assert result.solution is None and result.termination is TerminationReason.INFEASIBLE
    assert "no grouping" in result.message
    for name, opts in HEURISTICS:
        heuristic = topoopt.solve(inst, name, **opts)
        assert heuristic.solution is None and heuristic.message, (name, heuristic)


def test_oracle_refuses_too_many_combinations() -> None:
    pods = [Pod(f"p{i}", 8, 800.0) for i in range(6)]
    ring = {f"p{i}": 1 for i in range(6)}
    inst = OcsInstance(
        "big", pods, [Job(f"r{i}", "RAR", ring, 1e9, 0.01) for i in range(4)], 100.0, 0.0
    )  # (1 + 60)^4 combinations
    reason = topoopt.get_solver("ocs/enumerate").unsupported_reason(inst)
    assert reason is not None and "exceed the oracle's 300000" in reason
    with pytest.raises(UnsupportedInstanceError, match="ocs/hill-climb"):
        topoopt.solve(inst, "ocs/enumerate")


# ------------------------------------------------------------------------------ heuristics


def assert_sound(inst: OcsInstance, result: topoopt.Result, optimum: float | None) -> None:
    if result.solution is None:
        assert result.status is SolutionStatus.NO_SOLUTION and result.message, result
        return
    assert result.status in (SolutionStatus.FEASIBLE, SolutionStatus.OPTIMAL), result
    assert result.violations == () and check(inst, result.solution) == []
    assert result.objective == clean(evaluate(inst, result.solution))
    assert optimum is not None, "a heuristic served an instance the oracle calls infeasible"
    assert result.objective >= optimum * (1 - REL), (result.solver, result.objective, optimum)


@settings(max_examples=50, deadline=None)
@given(inst=any_instances())
def test_heuristics_are_feasible_and_never_beat_the_oracle(inst: OcsInstance) -> None:
    oracle = topoopt.solve(inst, "ocs/enumerate")
    optimum = oracle.objective
    for name, opts in HEURISTICS:
        assert_sound(inst, topoopt.solve(inst, name, **opts), optimum)


@settings(max_examples=50, deadline=None)
@given(inst=any_instances())
def test_no_tdm_is_its_own_baseline_and_never_beats_the_oracle(inst: OcsInstance) -> None:
    result = topoopt.solve(inst, "ocs/no-tdm")
    if result.solution is None:
        assert "cannot be served" in result.message
        return
    assert set(result.solution.groups) == {1}
    assert math.isclose(result.objective, result.metrics["no_tdm_round_s"], rel_tol=1e-12)
    assert result.metrics["tdm_speedup"] == pytest.approx(1.0, rel=1e-12)
    oracle = topoopt.solve(inst, "ocs/enumerate")
    assert oracle.objective is not None
    assert result.objective >= oracle.objective * (1 - REL)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20, deadline=None)
@given(inst=any_instances())
def test_tdm_ilp_equals_the_oracle(backend: str, inst: OcsInstance) -> None:
    assert_ilp_is_oracle(backend, inst)


def assert_ilp_is_oracle(backend: str, inst: OcsInstance) -> None:
    oracle = topoopt.solve(inst, "ocs/enumerate")
    mip = topoopt.solve(inst, "ocs/tdm-ilp", backend=backend)
    if oracle.solution is None:
        assert mip.solution is None, mip
        return
    assert mip.status is SolutionStatus.OPTIMAL, mip
    assert check(inst, mip.solution) == []
    assert mip.objective == pytest.approx(oracle.objective, rel=1e-6)
    assert mip.bound <= oracle.objective * (1 + 1e-6)


@settings(max_examples=50, deadline=None)
@given(inst=any_instances())
def test_tdm_never_loses_to_no_tdm(inst: OcsInstance) -> None:
    """All jobs in one group is a TDM schedule too: the oracle's speed-up is at least 1, and
    Algorithm 1 starts from that grouping with the no-TDM baseline's routing and only moves
    when the round shortens."""
    baseline = topoopt.solve(inst, "ocs/no-tdm")
    oracle = topoopt.solve(inst, "ocs/enumerate")
    climb = topoopt.solve(inst, "ocs/hill-climb")
    if baseline.solution is None:
        assert oracle.solution is None or oracle.metrics["no_tdm_round_s"] >= oracle.objective
        return
    assert climb.solution is not None and oracle.solution is not None
    assert climb.objective <= baseline.objective * (1 + REL)
    assert oracle.objective <= baseline.objective * (1 + REL)
    for result in (oracle, climb):
        assert result.metrics["no_tdm_round_s"] <= baseline.objective
        assert result.metrics["tdm_speedup"] >= 1 - REL


def single_ps_on_uneven_ports() -> OcsInstance:
    """One PS job on pods a (1 port), b (1 port), c (2 ports), server free: only a server on
    c can be served (it needs a circuit to each of the two other pods)."""
    pods = [Pod("a", 1, 800.0), Pod("b", 1, 800.0), Pod("c", 2, 800.0)]
    job = Job("ps", "PS", {"a": 1, "b": 1, "c": 1}, 1e9, 0.05)
    return OcsInstance("uneven", pods, [job], 100.0, 1e-4)


def test_single_ps_on_uneven_ports_is_served_by_the_oracle() -> None:
    inst = single_ps_on_uneven_ports()
    oracle = topoopt.solve(inst, "ocs/enumerate")
    assert oracle.solution is not None and oracle.solution.servers == {"ps": "c"}
    for name, opts in [("ocs/hill-climb", {}), ("ocs/no-tdm", {})]:
        result = topoopt.solve(inst, name, **opts)
        assert result.solution is not None and result.solution.servers == {"ps": "c"}


@pytest.mark.parametrize(
    ("solver", "opts"),
    [("ocs/oxc-greedy", {}), ("ocs/hill-climb-paper", {"routing": "algorithm2"})],
)
def test_algorithm2_serves_a_single_routable_ps_job(solver: str, opts: dict) -> None:
    result = topoopt.solve(single_ps_on_uneven_ports(), solver, **opts)
    assert result.solution is not None, result.message


def test_hill_climbs_refuse_bad_options() -> None:
    with pytest.raises(InvalidOptionError, match="routing"):
        topoopt.solve(worked(), "ocs/hill-climb-paper", routing="random")
    with pytest.raises(InvalidOptionError, match="kicks"):
        topoopt.solve(worked(), "ocs/hill-climb", kicks=-1)
    with pytest.raises(InvalidOptionError, match="patience"):
        topoopt.solve(worked(), "ocs/hill-climb", patience=0)
    with pytest.raises(InvalidOptionError, match="kick_size"):
        topoopt.solve(worked(), "ocs/hill-climb", kick_size="3")


def test_the_local_search_leaves_the_plateau_of_algorithm_1() -> None:
    """On the first paper-like 16 x 24 instance no single switch improves the all-in-one
    grouping with the best response's routing (Algorithm 1 as written stops after 0 moves);
    the local search does far better than Algorithm 1 with either routing."""
    inst = next(i for i in paper_like(seed=0) if i.name == "paper-16x24-comm-0-0")
    plain = topoopt.solve(inst, "ocs/hill-climb-paper", routing="best-response")
    assert plain.message == "0 moves"
    assert set(plain.solution.groups) == {1}
    paper = topoopt.solve(inst, "ocs/hill-climb-paper")
    default = topoopt.solve(inst, "ocs/hill-climb")
    assert default.objective < min(plain.objective, paper.objective) * 0.8


def test_the_paper_climb_is_algorithm_1_by_hand() -> None:
    """Algorithm 1 on the worked example: from every job in group A, the best switch is the
    ring's (0.1804 against 0.20707 and 0.2284, docs/ocs.md), then no switch improves."""
    result = topoopt.solve(worked(), "ocs/hill-climb-paper")
    assert result.message == "1 moves"
    assert result.solution.groups == (2, 1, 1)
    assert result.objective == pytest.approx(0.1804, rel=1e-12)


# ---------------------------------------------------------------------- the round's structure


def swapped(sched: Schedule) -> Schedule:
    """Groups 1 and 2 exchanged, with them the circuits of phases 1 <-> 2 and 3 <-> 4."""
    c = sched.circuits
    return Schedule(
        groups=tuple(3 - g for g in sched.groups),
        servers=sched.servers,
        rings=sched.rings,
        circuits=(c[1], c[0], c[3], c[2]),
    )


@settings(max_examples=50, deadline=None)
@given(inst=any_instances())
def test_swapping_the_groups_keeps_the_round(inst: OcsInstance) -> None:
    every = [options(inst, j) for j in range(inst.n_jobs)]
    rng = random.Random(inst.n_jobs)
    tried = 0
    for groups in itertools.product((1, 2), repeat=inst.n_jobs):
        combo = [rng.choice(o) for o in every]
        sched = schedule(inst, groups, dict(enumerate(combo)))
        if sched is None:
            continue
        tried += 1
        other = swapped(sched)
        assert check(inst, other) == []
        assert evaluate(inst, other) == evaluate(inst, sched)
        assert [p.duration_s for p in phases(inst, other)] == [
            p.duration_s for p in (phases(inst, sched)[i] for i in (1, 0, 3, 2))
        ]
    assume(tried > 0)


@settings(max_examples=50, deadline=None)
@given(inst=any_instances())
def test_evaluate_of_schedule_is_round_of_the_phase_comm_times(inst: OcsInstance) -> None:
    every = [options(inst, j) for j in range(inst.n_jobs)]
    for groups in itertools.product((1, 2), repeat=inst.n_jobs):
        choices = dict(enumerate(o[-1] for o in every))
        sched = schedule(inst, groups, choices)
        comm = {}
        for g in (1, 2):
            load = group_demand(inst, choices, [j for j, x in enumerate(groups) if x == g])
            found = comm_time(load, inst.circuit_budget, inst.circuit_bps, inst.tor_bps)
            comm[g] = None if found is None else found.time_s
        if sched is None:
            assert None in comm.values()
            continue
        assert None not in comm.values()
        assert evaluate(inst, sched) == pytest.approx(round_of(inst, groups, comm), rel=1e-12)
        assert {j: job_choice(inst, sched, j) for j in range(inst.n_jobs)} == choices


# ------------------------------------------------------------------------------- metrics


@settings(max_examples=40, deadline=None)
@given(inst=any_instances())
def test_metrics(inst: OcsInstance) -> None:
    result = topoopt.solve(inst, "ocs/hill-climb")
    if result.solution is None:
        return
    m = result.metrics
    round_s = result.objective
    assert m["round_s"] == round_s == result.round_s
    assert math.fsum(m[f"phase_{p}_s"] for p in range(1, 5)) == pytest.approx(round_s, rel=1e-12)
    assert m["group2_jobs"] == result.solution.groups.count(2)
    choices = {j: job_choice(inst, result.solution, j) for j in range(inst.n_jobs)}
    # the better of the schedule's own routing and the no-TDM baseline's best response
    baseline = topoopt.solve(inst, "ocs/no-tdm")
    alternative = math.inf if baseline.solution is None else baseline.objective
    assert m["no_tdm_round_s"] == result.no_tdm_round_s
    assert m["no_tdm_round_s"] == pytest.approx(
        min(no_tdm_round(inst, choices), alternative), rel=1e-12
    )
    assert m["tdm_speedup"] == pytest.approx(m["no_tdm_round_s"] / round_s, rel=1e-14)
    assert m["tdm_speedup"] == result.tdm_speedup
    for spec in inst.jobs:
        per_round = 1 if spec.type == "PS" else 2
        assert m[f"iterations_per_s.{spec.name}"] == pytest.approx(per_round / round_s, rel=1e-14)
        assert result.iterations_per_s(spec.name) == m[f"iterations_per_s.{spec.name}"]
    # the result's metrics are the family's, kept to 15 significant digits
    assert m == {k: clean(v) for k, v in metrics(inst, result.solution).items()}


def test_metrics_of_the_worked_example() -> None:
    m = topoopt.solve(worked(), "ocs/enumerate").metrics
    assert m["iterations_per_s.j0"] == pytest.approx(2 / 0.1804, rel=1e-12)  # RAR
    assert m["iterations_per_s.j1"] == pytest.approx(1 / 0.1804, rel=1e-12)  # PS
    assert m["iterations_per_s.j2"] == pytest.approx(2 / 0.1804, rel=1e-12)  # A2A
    assert m["tdm_speedup"] == pytest.approx(0.2604 / 0.1804, rel=1e-12)


# ---------------------------------------------------------------------------- determinism


@pytest.mark.parametrize(("solver", "opts"), SOLVERS, ids=lambda x: str(x))
def test_same_seed_same_solution(solver: str, opts: dict) -> None:
    for inst in tiny(seed=11, count=6):
        first = topoopt.solve(inst, solver, seed=5, **opts)
        again = topoopt.solve(inst, solver, seed=5, **opts)
        assert first.solution == again.solution
        assert first.objective == again.objective
        if first.solution is not None:
            assert first.solution.circuits == again.solution.circuits
            assert first.to_dict()["solution"] == again.to_dict()["solution"]


def test_generated_instance_is_deterministic() -> None:
    one = random_instance(np.random.default_rng(4), "x", pods=4, jobs=4)
    two = random_instance(np.random.default_rng(4), "x", pods=4, jobs=4)
    assert one == two and one.labels == two.labels


def test_copies_side_by_side_keep_the_optimum() -> None:
    """``tiled``: copies of an instance on disjoint pods. A grouping of the copies restricted to
    one copy is a grouping of the original, and adding jobs lengthens no phase, so the optimum
    is the original's (every copy grouped alike reaches it)."""
    inst = tiled(worked(), 3)
    assert (inst.n_pods, inst.n_jobs) == (9, 9)
    assert inst.jobs[4].name == "1.j1" and inst.jobs[4].pods == ("1.p1", "1.p2")
    for name in ("ocs/hill-climb", "ocs/tdm-ilp"):
        result = topoopt.solve(inst, name)
        assert result.objective == pytest.approx(0.1804, rel=1e-12), (name, result)
        assert check(inst, result.solution) == []


@pytest.mark.skipif("gurobi" not in BACKENDS, reason="Gurobi is not installed")
def test_a_refused_model_returns_the_start() -> None:
    """A size-limited Gurobi licence refuses the model of 32 pods and 48 jobs (about 6,000
    variables): the MILP then returns its hill-climb start, checked, with the licence as
    termination; a full licence solves it."""
    inst = random_instance(
        np.random.default_rng(0), "licence", pods=32, jobs=48, mix="comm", ports=(8, 16)
    )
    result = topoopt.solve(inst, "ocs/tdm-ilp", backend="gurobi", time_limit=60)
    assert result.solution is not None and check(inst, result.solution) == []
    if result.termination is TerminationReason.LICENSE:
        assert result.status is SolutionStatus.FEASIBLE
        assert "returning the warm start" in result.message
    else:
        assert result.status is SolutionStatus.OPTIMAL, result
