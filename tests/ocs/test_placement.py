"""Jobs given by ``units``: Algorithm 2's unit placement, schedules that carry a placement, the
heuristics that place, the exact solvers that refuse, and bad input."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.errors import InvalidInstanceError, UnsupportedInstanceError
from topoopt.ocs import Job, OcsInstance, Pod, check, evaluate
from topoopt.ocs.generate import GENERATORS
from topoopt.ocs.placement import algorithm2_placement, resolve
from topoopt.ocs.solution import from_dict, to_dict
from topoopt.testing.input_errors import assert_cli_exits_2, assert_load_names, edited, setter

PLACING = ["ocs/hill-climb", "ocs/hill-climb-paper", "ocs/oxc-greedy", "ocs/no-tdm"]


def units_instance() -> OcsInstance:
    """Three pods of 8 GPUs: a fixed ring on p0/p1, a PS job of 2 x 4 GPUs and an A2A job of
    3 x 2 GPUs to place."""
    return OcsInstance(
        "units",
        [Pod(f"p{i}", 4, 800.0, gpus=8) for i in range(3)],
        [
            Job("ps", "PS", None, 1e9, 0.1, units=2, unit_gpus=4, t_agg_s=0.01),
            Job("ring", "RAR", {"p0": 2, "p1": 2}, 1e9, 0.1),
            Job("moe", "A2A", None, 5e8, 0.05, units=3, unit_gpus=2),
        ],
        100.0,
        1e-4,
    )


@st.composite
def unit_instances(draw: st.DrawFn) -> OcsInstance:
    """2 to 4 pods of 4 to 8 GPUs and 2 to 6 ports; 1 to 4 jobs given by units, sometimes one
    placed job."""
    n = draw(st.integers(2, 4))
    pods = [
        Pod(f"p{i}", draw(st.integers(2, 6)), draw(st.sampled_from((400.0, 1600.0))), gpus=8)
        for i in range(n)
    ]
    jobs = []
    left = 8 * n
    if draw(st.booleans()):
        jobs.append(Job("fixed", "RAR", {"p0": 2, "p1": 2}, 1e9, 0.05))
        left -= 4
    for k in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("PS", "RAR", "A2A")))
        unit = draw(st.sampled_from((1, 2, 4)))
        units = draw(st.integers(2 if unit == 1 else 1, 4))
        if units * unit > left:
            break
        left -= units * unit
        jobs.append(
            Job(
                f"u{k}",
                kind,
                None,
                draw(st.sampled_from((0.0, 5e8, 2e9))),
                draw(st.sampled_from((0.02, 0.05, 0.1))),
                units=units,
                unit_gpus=unit,
            )
        )
    if not any(not j.placed for j in jobs):
        jobs.append(Job("u", "A2A", None, 1e9, 0.05, units=2))
    return OcsInstance("drawn", pods, jobs, 100.0, 1e-4)


def test_algorithm2_places_every_unit_within_the_pods() -> None:
    inst = units_instance()
    placement = algorithm2_placement(inst)
    assert sorted(placement) == ["moe", "ps"]
    assert sum(placement["ps"].values()) == 8 and sum(placement["moe"].values()) == 6
    assert len(placement["ps"]) >= 2
    used = {"p0": 2, "p1": 2, "p2": 0}
    for gpus in placement.values():
        for pod, g in gpus.items():
            used[pod] += g
    assert all(used[p] <= 8 for p in used)


@settings(max_examples=60, deadline=None)
@given(inst=unit_instances())
def test_placing_heuristics_are_feasible_and_never_beat_the_oracle_on_their_placement(
    inst: OcsInstance,
) -> None:
    for name in PLACING:
        result = topoopt.solve(inst, name)
        if result.solution is None:
            assert result.message
            continue
        assert result.is_ok, result
        assert check(inst, result.solution) == []
        assert sorted(result.solution.placement) == sorted(inst.unplaced_jobs())
        view = inst.with_placement(result.solution.placement)
        best = topoopt.solve(view, "ocs/enumerate")
        assert best.objective is not None
        assert result.objective >= best.objective * (1 - 1e-9)


@settings(max_examples=40, deadline=None)
@given(inst=unit_instances())
def test_placement_respects_capacities_totals_and_ps_pods(inst: OcsInstance) -> None:
    try:
        view, placement = resolve(inst)
    except InvalidInstanceError:
        return  # the placement made a job unservable: the solvers then report no solution
    used = [0] * inst.n_pods
    for job in view.jobs:
        for pod, g in job.gpus:
            used[view.pod_index[pod]] += g
    assert all(u <= 8 for u in used)
    for job in inst.jobs:
        if not job.placed:
            assert sum(placement[job.name].values()) == job.total_gpus
            if job.type == "PS":
                assert len(placement[job.name]) >= 2


def test_the_units_suite_gives_jobs_by_units_the_heuristics_place() -> None:
    suite = GENERATORS["units"](seed=1, count=3)
    assert any(not inst.is_placed for inst in suite)
    for inst in suite:
        result = topoopt.solve(inst, "ocs/hill-climb")
        assert result.is_ok and check(inst, result.solution) == []
        assert sorted(result.solution.placement) == sorted(inst.unplaced_jobs())


def test_exact_solvers_refuse_jobs_given_by_units() -> None:
    inst = units_instance()
    for name in ("ocs/enumerate", "ocs/tdm-ilp"):
        with pytest.raises(UnsupportedInstanceError, match="given by units"):
            topoopt.solve(inst, name)


def test_check_names_bad_placements() -> None:
    inst = units_instance()
    good = topoopt.solve(inst, "ocs/hill-climb").solution
    assert good is not None and check(inst, good) == []
    cases = {
        "has none": {"ps": good.placement["ps"]},
        "not a job given by units": {**good.placement, "ring": {"p0": 2, "p1": 2}},
        "make 8": {**good.placement, "ps": {"p0": 4, "p2": 3}},
        "unknown pods": {**good.placement, "ps": {"p0": 4, "p9": 4}},
        "positive integers": {**good.placement, "ps": {"p0": 8, "p2": 0}},
        "at least two pods": {**good.placement, "ps": {"p2": 8}},
        "which has 8": {**good.placement, "moe": {"p0": 6}},
    }
    for words, placement in cases.items():
        problems = check(inst, replace(good, placement=placement))
        assert problems and words in " ".join(problems), (words, problems)


def test_a_schedule_with_its_placement_round_trips() -> None:
    inst = units_instance()
    sched = topoopt.solve(inst, "ocs/oxc-greedy").solution
    assert sched is not None
    data = to_dict(inst, sched)
    assert data["placement"] == {k: dict(v) for k, v in sched.placement.items()}
    back = from_dict(inst, data)
    assert back == sched and evaluate(inst, back) == evaluate(inst, sched)
    assert OcsInstance.from_dict(inst.to_dict()) == inst


def _base() -> dict[str, Any]:
    return units_instance().to_dict()


BAD = [
    (setter("jobs", 0, "gpus", value={"p0": 4, "p1": 4}), "jobs[0].gpus", "exactly one of gpus"),
    (lambda d: d["jobs"][1].pop("gpus"), "jobs[1].gpus", "exactly one of gpus"),
    (setter("jobs", 1, "unit_gpus", value=2), "jobs[1].unit_gpus", "only a job given by units"),
    (setter("jobs", 0, "server_pod", value="p0"), "jobs[0].server_pod", "given by units"),
    (setter("jobs", 0, "units", value=0), "jobs[0].units", ">= 1"),
    (lambda d: d["network"]["pods"][2].pop("gpus"), "network.pods[2].gpus", "every pod"),
    (setter("jobs", 2, "units", value=20), "jobs", "need 48 GPUs, the pods have 20 free"),
]


@pytest.mark.parametrize(("change", "field", "words"), BAD)
def test_bad_units_input_names_the_field(
    change: Any, field: str, words: str, tmp_path: Any
) -> None:
    data = edited(_base(), change)
    assert_load_names(data, field, words)
    assert_cli_exits_2(tmp_path, data, "ocs/hill-climb", field, words)


def test_a_one_unit_a2a_job_of_one_gpu_is_refused() -> None:
    with pytest.raises(InvalidInstanceError, match="units: a A2A job needs at least 2 GPUs"):
        Job("m", "A2A", None, 1e9, 0.1, units=1)
