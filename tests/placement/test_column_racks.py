"""The racks of a placement's groups chosen for all groups at once (``column_racks``):
the options against their definition, the split of an option into racks, and the
re-chosen placements (feasible, no level above the leaves worse, the objective better)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.placement.column_racks import _split, rack_options, rechoose
from topoopt.placement.exact_mip._milp import SparseMilp
from topoopt.placement.generate import tree_instance
from topoopt.placement.instance import PlacementInstance
from topoopt.placement.solution import check
from topoopt.placement.tree import (
    build_tree,
    level_scores,
    objective_key,
    placement_from_leaves,
    scores_of_leaves,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _pareto_by_definition(free: list[int], columns: int) -> dict[tuple[int, ...], int]:
    """Every way to give each rack to no column, to one or (two columns) to both, any
    number of racks shared: the most rows ``r`` it serves (each column ``r`` cells, a rack
    holding at most its free nodes), kept when no other way has at most as many racks per
    column and serves as many rows."""
    most: dict[tuple[int, ...], int] = {}
    roles = ("none", "a") if columns == 1 else ("none", "a", "b", "both")
    for assignment in itertools.product(roles, repeat=len(free)):
        a = sum(f for f, role in zip(free, assignment, strict=True) if role == "a")
        b = sum(f for f, role in zip(free, assignment, strict=True) if role == "b")
        both = sum(f for f, role in zip(free, assignment, strict=True) if role == "both")
        if columns == 1:
            option: tuple[int, ...] = (assignment.count("a"),)
            rows = a
        else:
            option = (
                assignment.count("a") + assignment.count("both"),
                assignment.count("b") + assignment.count("both"),
            )
            rows = min(a + both, b + both, (a + b + both) // 2)
        most[option] = max(most.get(option, 0), rows)
    return {
        option: rows
        for option, rows in most.items()
        if not any(
            other != option
            and all(x <= y for x, y in zip(other, option, strict=True))
            and r >= rows
            for other, r in most.items()
        )
    }


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=6), st.sampled_from([1, 2]))
def test_rack_options_are_the_pareto_options_of_every_assignment(
    free: list[int], columns: int
) -> None:
    """The largest racks split by subset sums with at most one shared rack give the same
    options as every assignment of racks to columns, any number shared."""
    assert rack_options(free, columns) == _pareto_by_definition(free, columns)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=7))
def test_an_option_splits_into_racks_that_serve_its_rows(free: list[int]) -> None:
    """For every option and every row count up to what it serves, the racks :func:`_split`
    gives are as many as the option says and hold both columns' cells."""
    for option, most in rack_options(free, 2).items():
        for rows in range(most + 1):
            a, b, shared = _split(free, rows, option)
            assert (len(a) + len(shared), len(b) + len(shared)) == option
            assert not set(a) & set(b) and not (set(a) | set(b)) & set(shared)
            cap_a, cap_b = sum(free[i] for i in a), sum(free[i] for i in b)
            cap_s = sum(free[i] for i in shared)
            assert rows <= cap_a + cap_s and rows <= cap_b + cap_s
            assert 2 * rows <= cap_a + cap_b + cap_s


@st.composite
def starts(draw: st.DrawFn) -> tuple[PlacementInstance, np.ndarray]:
    """A tree of one or two pods of 2-4 groups (racks of 0-4 free nodes), a job of one to
    three columns, and a placement: either *whole* groups (each group takes some rows,
    within its free nodes, and puts their cells on its racks at random) or *loose* (every
    cell on a free node drawn at random), whose groups are seldom whole."""
    columns = draw(st.sampled_from([1, 2, 3]))
    spec = [
        [draw(st.lists(st.integers(0, 4), min_size=1, max_size=4)) for _ in range(groups)]
        for groups in draw(st.lists(st.integers(2, 4), min_size=1, max_size=2))
    ]
    takes = [draw(st.integers(0, sum(racks) // columns)) for pod in spec for racks in pod]
    if sum(takes) == 0:
        spec[0][0].append(columns)
        takes[0] = 1
    rows = sum(takes)
    mode = draw(st.sampled_from(["lex", "weighted"]))
    objective = {"levels": "weighted", "weights": (1, 2, 4)} if mode == "weighted" else mode
    alpha = draw(st.integers(0, 10)) / 10
    instance = tree_instance("start", spec, rows=rows, cols=columns, alpha=alpha,
                             objective=objective)  # fmt: skip
    tree = build_tree(instance)
    rng = draw(st.randoms(use_true_random=False))
    leaves = np.zeros((rows, columns), dtype=np.int64)
    under = tree.leaves_under(tree.n_levels - 2)
    if draw(st.booleans()):  # loose
        slots = [k for k in range(tree.n_leaves) for _ in range(int(tree.leaf_free[k]))]
        rng.shuffle(slots)
        leaves[:] = np.asarray(slots[: rows * columns]).reshape(rows, columns)
        return instance, leaves
    row = 0
    for group, take in enumerate(takes):
        slots = [k for k in under[group] for _ in range(int(tree.leaf_free[k]))]
        rng.shuffle(slots)
        for r in range(row, row + take):
            for c in range(columns):
                leaves[r, c] = slots.pop()
        row += take
    return instance, leaves


@SETTINGS
@given(starts())
def test_rechosen_racks_keep_every_level_above_and_lower_the_objective(
    start: tuple[PlacementInstance, np.ndarray],
) -> None:
    """From a placement of whole groups with racks taken at random, or of cells anywhere,
    the re-chosen leaves are a feasible placement, no level above the leaves scores worse
    and the objective is lower (or ``None`` when no choice lowers it); they are never
    better than the oracle."""
    instance, leaves = start
    tree = build_tree(instance)
    before = scores_of_leaves(instance, tree, leaves)

    def key(scores: object) -> tuple[float, ...]:
        return objective_key(instance, scores)  # type: ignore[arg-type]

    grid = rechoose(instance, tree, leaves, key)
    if grid is None:
        return
    placement = placement_from_leaves(instance, tree, grid)
    assert not check(instance, placement)
    after = scores_of_leaves(instance, tree, grid)
    assert key(after) < key(before)
    for new, old in zip(after[:-1], before[:-1], strict=True):
        assert round(new.score, 9) <= round(old.score, 9)
    if instance.n_nodes <= 8:
        oracle = topoopt.solve(instance, "placement/enumerate").solution
        assert key(level_scores(instance, oracle)) <= key(after)


def test_a_milp_with_costs_returns_its_least_cost_solution_on_both_backends() -> None:
    """``SparseMilp`` with costs minimises them (HiGHS and SCIP): ``x + y >= 3``, ``x <= 2``,
    cost ``2 x + 3 y`` → ``x = 2, y = 1``."""
    for backend in ("highs", "scip"):
        milp = SparseMilp()
        x = milp.var(0, 2, integer=True, cost=2.0)
        y = milp.var(0, 9, integer=True, cost=3.0)
        milp.row({x: 1, y: 1}, lower=3)
        status, values = milp.solve(10, backend=backend)  # type: ignore[arg-type]
        assert status == "feasible"
        assert (round(values[x]), round(values[y])) == (2, 1)
