"""topo-aware's FM move limit (option ``moves``).

With ``moves=0`` every pass moves every vertex and the placement is the networkx reference's
(``test_scale.test_topo_aware_equals_networkx_reference``); a limit at least the number of
cells never stops a pass early, so it gives the same placement.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import topoopt
from topoopt.core.errors import InvalidOptionError
from topoopt.placement import PlacementInstance, check
from topoopt.placement.solvers import topo_aware

from .strategies import small_instances


@settings(max_examples=40)
@given(instance=small_instances(max_cells=40, max_pods=6))
def test_a_limit_above_the_cells_changes_nothing(instance: PlacementInstance) -> None:
    unlimited = topoopt.solve(instance, "placement/topo-aware", moves=0)
    limited = topoopt.solve(instance, "placement/topo-aware", moves=instance.n_nodes)
    assert limited.solution.matrix == unlimited.solution.matrix


@settings(max_examples=40)
@given(instance=small_instances(max_cells=60, max_pods=6))
def test_every_limit_gives_a_feasible_placement(instance: PlacementInstance) -> None:
    for moves in (1, 5, topo_aware.MOVES):
        result = topoopt.solve(instance, "placement/topo-aware", moves=moves)
        assert check(instance, result.solution) == []


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, None, float("inf"), float("nan")])
def test_moves_must_be_a_non_negative_integer(bad: object) -> None:
    instance = PlacementInstance("m", [8, 8], dp=4, tp=8, pp=2, alpha=0.5)
    with pytest.raises(InvalidOptionError, match="moves"):
        topoopt.solve(instance, "placement/topo-aware", moves=bad)
