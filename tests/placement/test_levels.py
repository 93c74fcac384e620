"""Every level of the tree (issue #30): the multi-level objective, its oracle and
``placement/levels``.

The brute force here (:func:`_brute`) computes the spreads of every level from node names and
the instance's leaves and paths alone, independently of :mod:`topoopt.placement.tree`.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings

import topoopt
from topoopt.core.errors import InvalidInstanceError, UnsupportedInstanceError
from topoopt.core.status import SolutionStatus
from topoopt.placement import Leaf, Minipod, PlacementInstance, check, evaluate
from topoopt.placement.solution import describe
from topoopt.placement.solvers.oracle import enumerate_levels_naive
from topoopt.placement.tree import build_tree, level_scores, objective_key

from .strategies import tree_instances

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _d(k: int) -> int:
    return k if k >= 2 else 0


def _switches(instance: PlacementInstance) -> dict[str, tuple[tuple[object, ...], ...]]:
    """Node name -> its switch at every level, top first, told apart by their ancestors."""
    out = {}
    for j, pod in enumerate(instance.minipods):
        for k, leaf in enumerate(pod.leaves):
            chain = [(j,)]
            for name in leaf.path:
                chain.append((*chain[-1], name))
            chain.append((j, "leaf", k))
            for node in leaf.nodes:
                out[node] = tuple(chain)
    return out


def _scores(instance: PlacementInstance, grid: list[list[str]]) -> list[float]:
    where = _switches(instance)
    rows, cols = instance.rows, instance.cols
    out = []
    for lv in range(instance.n_levels):
        at = [[where[grid[r][c]][lv] for c in range(cols)] for r in range(rows)]
        dp = _d(max(len({at[r][c] for r in range(rows)}) for c in range(cols)))
        pp = _d(max(len(set(row)) for row in at))
        out.append(instance.alpha * dp + instance.beta * pp)
    return out


def _key(instance: PlacementInstance, scores: list[float]) -> tuple[float, ...]:
    if instance.objective.mode == "weighted":
        return (
            round(sum(w * s for w, s in zip(instance.objective.weights, scores, strict=True)), 9),
        )
    return tuple(round(s, 9) for s in scores)


def _brute(instance: PlacementInstance) -> tuple[float, ...]:
    """Least key over every map of cells to distinct free nodes (tiny instances)."""
    nodes = [n for pod in instance.minipods for leaf in pod.leaves for n in leaf.nodes]
    rows, cols = instance.rows, instance.cols
    best = None
    for chosen in itertools.permutations(nodes, rows * cols):
        grid = [list(chosen[r * cols : (r + 1) * cols]) for r in range(rows)]
        key = _key(instance, _scores(instance, grid))
        best = key if best is None or key < best else best
    assert best is not None
    return best


def _result_key(instance: PlacementInstance, result: topoopt.Result) -> tuple[float, ...]:
    assert result.is_ok, result
    assert not check(instance, result.solution)
    nodes = result.solution.nodes
    assert nodes is not None
    return _key(instance, _scores(instance, [list(row) for row in nodes]))


@SETTINGS
@given(tree_instances(max_cells=4, max_pods=2, max_groups=2, max_leaves=2, max_free=2))
def test_naive_oracle_equals_brute_force_over_nodes(instance: PlacementInstance) -> None:
    key, placement = enumerate_levels_naive(instance)
    assert key == _brute(instance)
    assert _result_key(instance, _as_result(instance, placement)) == key


def _as_result(instance: PlacementInstance, placement: object) -> topoopt.Result:
    class _R:
        is_ok = True
        solution = placement

    return _R()  # type: ignore[return-value]


@SETTINGS
@given(tree_instances(max_cells=5, max_pods=2, max_groups=2, max_leaves=2, max_free=3))
def test_oracle_equals_naive(instance: PlacementInstance) -> None:
    key, _ = enumerate_levels_naive(instance)
    result = topoopt.solve(instance, "placement/enumerate")
    assert result.status is SolutionStatus.OPTIMAL
    assert _result_key(instance, result) == key
    assert math.isclose(result.objective, evaluate(instance, result.solution))


@pytest.mark.parametrize("backend", ["highs", "scip"])
@SETTINGS
@given(instance=tree_instances(max_cells=6, max_pods=2, max_groups=2, max_leaves=2, max_free=3))
def test_levels_mip_equals_oracle(backend: str, instance: PlacementInstance) -> None:
    oracle = topoopt.solve(instance, "placement/enumerate")
    result = topoopt.solve(instance, "placement/levels", backend=backend, method="mip")
    assert result.status is SolutionStatus.OPTIMAL, result
    assert _result_key(instance, result) == _result_key(instance, oracle)
    # the bound of every level (lex) is its score: proven
    if instance.objective.mode == "lex":
        scores = level_scores(instance, result.solution)
        names = ["minipod_bound", "level1_bound", "leaf_bound"]
        for name, score in zip(names, scores, strict=True):
            assert math.isclose(result.metrics[name], score.score, abs_tol=1e-6)


def test_objective_modes_and_json() -> None:
    pod = Minipod.from_leaves(
        "a", [Leaf("l0", ["h0", "h1"], ["g0"]), Leaf("l1", ["h2", "h3"], ["g1"])]
    )
    weighted = PlacementInstance(
        "w", [pod], dp=2, tp=8, pp=2, alpha=0.25, level_names=["pod", "group", "rack"],
        objective={"levels": "weighted", "weights": [4, 2, 1]},
    )  # fmt: skip
    assert topoopt.load(weighted.to_dict()) == weighted
    assert weighted.levels == ("pod", "group", "rack")
    assert weighted.level("rack") == 2 and weighted.level(-2) == 1
    result = topoopt.solve(weighted, "placement/levels")
    # one pipeline per rack: DP spread 2 at group and rack, PP spread 0
    assert result.objective == pytest.approx(2 * 0.5 + 1 * 0.5)
    with pytest.raises(UnsupportedInstanceError, match="placement/levels"):
        topoopt.solve(weighted, "placement/exact-mip")
    text = describe(weighted, result.solution)
    assert "spreads at every level (objective: weights 4, 2, 1 -> 1.5)" in text
    assert "rack   DP spread   2  PP spread   0  score 0.5" in text


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"objective": {"levels": "weighted", "weights": [1, 2]}}, "objective.weights"),
        ({"objective": {"levels": "best"}}, "objective.levels"),
        ({"objective": {"levels": "weighted", "weights": [0, 0, 0]}}, "objective.weights"),
        ({"objective": {"levels": "weighted", "weights": [1, -1, 0]}}, r"objective.weights\[1\]"),
        ({"objective": {"levels": "lex", "weights": [1, 1, 1]}}, "objective.weights"),
        ({"level_names": ["a", "b"]}, "topology.level_names"),
        ({"level_names": ["a", "b", "a"]}, r"topology.level_names\[2\]"),
    ],
)
def test_bad_objectives_name_the_field(changes: dict, field: str) -> None:
    pod = Minipod.from_leaves(
        "a", [Leaf("l0", ["h0", "h1"], ["g0"]), Leaf("l1", ["h2", "h3"], ["g1"])]
    )
    with pytest.raises(InvalidInstanceError, match=field):
        PlacementInstance("x", [pod], dp=2, tp=8, pp=2, alpha=0.5, **changes)


def test_a_switch_under_two_parents_is_refused() -> None:
    pod = Minipod.from_leaves(
        "a", [Leaf("l0", ["h0"], ["g0", "s0"]), Leaf("l1", ["h1"], ["g1", "s0"])]
    )
    with pytest.raises(InvalidInstanceError, match=r"leaves\[1\]\.path\[1\].*one parent"):
        PlacementInstance("x", [pod], dp=1, tp=8, pp=2, alpha=0.5)


def test_tree_of_an_instance_without_leaves_has_one_level() -> None:
    inst = PlacementInstance("x", [Minipod("a", 3), Minipod("b", 2)], dp=2, tp=8, pp=2, alpha=0.5)
    tree = build_tree(inst)
    assert tree.n_levels == 1 and tree.leaf_free.tolist() == [3, 2]
    assert objective_key(inst, [1.0]) == (1.0,)


@pytest.mark.parametrize(("method", "backend"), [("walk", "highs"), ("auto", "highs"),
                                                 ("auto", "scip")])  # fmt: skip
@SETTINGS
@given(instance=tree_instances(max_cells=6, max_pods=3, max_groups=2, max_leaves=3, max_free=3))
def test_walk_is_never_better_than_the_oracle_and_proves_only_optima(
    method: str, backend: str, instance: PlacementInstance
) -> None:
    """The walk down the tree: feasible, never better than the oracle, its per-level bounds
    below the oracle's scores (for lex: as long as the levels above equal the oracle's), and
    when it claims a proof it has the oracle's optimum; ``auto`` always proves these."""
    oracle = topoopt.solve(instance, "placement/enumerate")
    best = _result_key(instance, oracle)
    result = topoopt.solve(instance, "placement/levels", method=method, backend=backend)
    mine = _result_key(instance, result)
    assert mine >= best
    if result.status is SolutionStatus.OPTIMAL:
        assert mine == best
    if method == "auto":
        assert result.status is SolutionStatus.OPTIMAL, result
    names = ["minipod_bound", "level1_bound", "leaf_bound"]
    if instance.objective.mode == "weighted":
        assert result.bound <= oracle.objective + 1e-9
        # every level's bound holds for every placement, the oracle's among them
        truth = [s.score for s in level_scores(instance, oracle.solution)]
        for name, score in zip(names, truth, strict=True):
            assert result.metrics[name] <= score + 1e-9, (name, result.metrics, truth)
    else:
        for lv, name in enumerate(names):
            assert result.metrics[name] <= best[lv] + 1e-9, (name, result.metrics, best)
            if round(result.metrics[name], 9) < best[lv]:
                break  # the levels below are bounded only given this one's optimum
