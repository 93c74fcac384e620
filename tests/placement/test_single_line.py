"""Jobs of one row or one column: the dynamic programme over the tree equals the oracle at
every level (``lex``) and in the weighted sum, and its per-level bounds hold."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.status import SolutionStatus
from topoopt.placement import PlacementInstance, check
from topoopt.placement.generate import levels_tree
from topoopt.placement.tree import level_scores

from .strategies import tree_instances
from .test_levels import _key, _result_key, _scores

BOUNDS = ("minipod_bound", "level1_bound", "leaf_bound")


@st.composite
def line_instances(draw: st.DrawFn) -> PlacementInstance:
    """:func:`tree_instances` reshaped to one row or one column (up to 6 cells; a fifth of
    them ``top``)."""
    instance = draw(tree_instances(max_cells=6, max_pods=3, max_groups=2, max_leaves=3))
    n = instance.rows * instance.cols
    rows, cols = (n, 1) if draw(st.booleans()) else (1, n)
    objective = instance.objective
    if draw(st.integers(0, 4)) == 0:
        objective = dataclasses.replace(objective, mode="top", weights=())
    return dataclasses.replace(instance, dp=rows, pp=cols, objective=objective)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=line_instances())
def test_a_line_equals_the_oracle_at_every_level(instance: PlacementInstance) -> None:
    result = topoopt.solve(instance, "placement/levels")
    oracle = topoopt.solve(instance, "placement/enumerate")
    assert result.status is SolutionStatus.OPTIMAL
    assert "dynamic programme over the tree" in result.message
    assert not check(instance, result.solution)
    mode = instance.objective.mode
    if mode == "top":  # ranked lexicographically; the oracle minimises S_0 alone
        assert result.objective == oracle.objective
        return
    mine = _result_key(instance, result)
    assert mine == _result_key(instance, oracle)
    theirs = _scores(instance, [list(row) for row in oracle.solution.nodes])
    for name, score in zip(BOUNDS, theirs, strict=True):
        if mode == "weighted":  # each level's least score, below any placement's
            assert result.metrics[name] <= score + 1e-9
    assert _key(instance, theirs) == mine


def test_a_column_of_thousands_of_nodes_is_proven_at_every_level() -> None:
    """A 2,048 x 1 job on the benchmark's 16,384-node tree with weights 16 / 4 / 1: the walk
    stopped at 142.0 against a bound of 107.0 after 3 s; the programme proves 142.0."""
    inst = levels_tree(seed=0, pods=4, rows=2048, cols=1, objective="weighted")[0]
    result = topoopt.solve(inst, "placement/levels", time_limit=30)
    assert result.status is SolutionStatus.OPTIMAL and result.bound == result.objective
    scores = [s.score for s in level_scores(inst, result.solution)]
    assert result.objective == sum(w * s for w, s in zip((16, 4, 1), scores, strict=True))
    assert all(result.metrics[name] <= s for name, s in zip(BOUNDS, scores, strict=True))
