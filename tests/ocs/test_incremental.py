"""The incremental evaluator against the full one: per-pod OXC times against the binary search
of ``min_circuits``, job footprints against ``job_demand``, and the score of every kind of move
of the local search against ``evaluate`` of the schedule the move leads to."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.ocs import OcsInstance, evaluate
from topoopt.ocs.choices import demand, options
from topoopt.ocs.incremental import Footprints, Group, footprint, pod_oxc_time
from topoopt.ocs.phases import min_circuits
from topoopt.ocs.search import State, better
from topoopt.ocs.solution import schedule

from .strategies import any_instances

REL = 1e-9


@st.composite
def demands(draw: st.DrawFn) -> tuple[dict[tuple[int, int], float], list[int]]:
    """Pair demands on 2 to 7 pods and circuit budgets (0 to 300 circuits)."""
    n = draw(st.integers(2, 7))
    budget = [draw(st.sampled_from((0, 1, 2, 3, 5, 8, 16, 64, 300))) for _ in range(n)]
    pairs = {}
    for a in range(n):
        for b in range(a + 1, n):
            if draw(st.booleans()):
                pairs[(a, b)] = draw(st.sampled_from((1.0, 2.5, 3.0, 7.0, 1e9, 3.3e8, 1e12))) * (
                    draw(st.integers(1, 9))
                )
    return pairs, budget


@settings(max_examples=500, deadline=None)
@given(case=demands(), bps=st.sampled_from((1.0, 1.25e10, 5e10)))
def test_the_largest_pod_time_is_the_least_oxc_time(
    case: tuple[dict[tuple[int, int], float], list[int]], bps: float
) -> None:
    pairs, budget = case
    reference = min_circuits(pairs, budget, bps)
    per_pod = [
        pod_oxc_time([t for key, t in pairs.items() if a in key], budget[a], bps)
        for a in range(len(budget))
    ]
    mine = max(per_pod, default=0.0)
    if reference is None:
        assert math.isinf(mine)
    else:
        assert math.isclose(mine, reference[0], rel_tol=REL), (mine, reference)


@settings(max_examples=100, deadline=None)
@given(inst=any_instances())
def test_footprints_are_the_job_demands(inst: OcsInstance) -> None:
    for j in range(inst.n_jobs):
        for choice in options(inst, j):
            full = demand(inst, j, choice)
            prints = footprint(inst, j, choice)
            for a in range(inst.n_pods):
                pairs, sent, received = prints.get(a, ((), 0.0, 0.0))
                assert sent == pytest.approx(full.sent[a], rel=1e-12)
                assert received == pytest.approx(full.received[a], rel=1e-12)
                expected = {
                    (b if a == x else x): t
                    for (x, b), t in full.pairs.items()
                    if a in (x, b) and t > 0
                }
                assert dict(pairs) == pytest.approx(expected, rel=1e-12)


def exact_round(inst: OcsInstance, groups: list[int], choices: dict) -> float:
    """``evaluate`` of the schedule with the best circuits (``inf`` when a group cannot be
    served): the reference the incremental score must equal."""
    found = schedule(inst, groups, choices)
    return math.inf if found is None else evaluate(inst, found)


@st.composite
def walks(draw: st.DrawFn) -> tuple[OcsInstance, list[list[tuple[int, int, int]]]]:
    """An instance and a sequence of moves (job, group, option index), single or paired."""
    inst = draw(any_instances())
    n = inst.n_jobs
    moves = []
    for _ in range(draw(st.integers(1, 8))):
        size = draw(st.integers(1, min(3, n)))
        jobs = draw(st.lists(st.integers(0, n - 1), min_size=size, max_size=size, unique=True))
        moves.append([(j, draw(st.integers(1, 2)), draw(st.integers(0, 100))) for j in jobs])
    return inst, moves


@settings(max_examples=300, deadline=None)
@given(case=walks())
def test_the_score_of_a_move_is_the_round_it_leads_to(
    case: tuple[OcsInstance, list[list[tuple[int, int, int]]]],
) -> None:
    """Start with every job placed (drawn groups and options), then for each move: its score
    (without making it) equals ``evaluate`` of the schedule after it, and after making it the
    state's own score does too; the groups' pod values equal a fresh build's."""
    inst, moves = case
    every = [options(inst, j) for j in range(inst.n_jobs)]
    state = State(inst)
    state.apply([(j, 1 + j % 2, every[j][j % len(every[j])]) for j in range(inst.n_jobs)])
    for raw in moves:
        move = [(j, g, every[j][k % len(every[j])]) for j, g, k in raw]
        groups = list(state.groups)
        choices = dict(state.choices)
        for j, g, c in move:
            groups[j], choices[j] = g, c
        expected = exact_round(inst, groups, choices)
        predicted = state.score(move)[0]
        if math.isinf(expected):
            assert math.isinf(predicted)
        else:
            assert math.isclose(predicted, expected, rel_tol=REL), (predicted, expected)
        state.apply(move)
        assert state.groups == groups and state.choices == choices
        again = state.score()
        assert math.isclose(again[0], predicted, rel_tol=REL) or (
            math.isinf(again[0]) and math.isinf(predicted)
        )
        fresh = State(inst)
        fresh.apply([(j, groups[j], choices[j]) for j in range(inst.n_jobs)])
        for g in (1, 2):
            for a in range(inst.n_pods):
                one, two = state.group[g].value[a], fresh.group[g].value[a]
                assert one == two or math.isclose(one, two, rel_tol=REL), (g, a, one, two)
        assert not better(again, fresh.score()) and not better(fresh.score(), again)


@settings(max_examples=100, deadline=None)
@given(inst=any_instances())
def test_adding_and_removing_every_job_leaves_an_empty_group(inst: OcsInstance) -> None:
    """The pair counts make a pair leave a pod exactly when its last job does."""
    group = Group(inst)
    prints = Footprints(inst)
    chosen = [options(inst, j)[-1] for j in range(inst.n_jobs)]
    for j in range(inst.n_jobs):
        group.apply(1, prints(j, chosen[j]))
    for j in reversed(range(inst.n_jobs)):
        group.apply(-1, prints(j, chosen[j]))
    assert all(not row for row in group.rows)
    assert all(v == 0 or abs(v) < 1e-9 for v in group.value)
    assert group.comm() == pytest.approx(0.0, abs=1e-9)
