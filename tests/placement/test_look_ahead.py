"""The look-ahead of exact-mip's incumbent (after the walk over pairs stops at an undecided
pair): never worse than the millisecond constructions alone, and with an exact look-ahead as
good as the first feasible pair after the stop."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.placement import PlacementInstance, check
from topoopt.placement.exact_mip.sides import Sides
from topoopt.placement.exact_mip.targets import CountingBound, iter_target_pairs
from topoopt.placement.solution import Placement, evaluate
from topoopt.placement.solvers.mip import LookAhead, _constructive_incumbent, _look_ahead

from .strategies import small_instances, tight_instances


def _placement_by_search(
    instance: PlacementInstance, max_dp_use: int, max_pp_use: int
) -> Placement | None:
    """Depth-first search over the cells in row-major order (naive): a placement within the
    capacities whose columns touch at most ``max_dp_use`` minipods and rows ``max_pp_use``."""
    rows, cols, n_pods = instance.rows, instance.cols, instance.n_minipods
    left = list(instance.capacities)
    matrix = [[-1] * cols for _ in range(rows)]

    def go(cell: int) -> bool:
        if cell == rows * cols:
            return True
        r, c = divmod(cell, cols)
        row_pods = {matrix[r][k] for k in range(c)}
        col_pods = {matrix[k][c] for k in range(r)}
        for j in range(n_pods):
            if not left[j]:
                continue
            if j not in row_pods and len(row_pods) >= max_pp_use:
                continue
            if j not in col_pods and len(col_pods) >= max_dp_use:
                continue
            left[j] -= 1
            matrix[r][c] = j
            if go(cell + 1):
                return True
            left[j] += 1
            matrix[r][c] = -1
        return False

    return Placement.from_rows(matrix) if go(0) else None


def _nothing(a: int, b: int) -> None:
    return None


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        small_instances(max_cells=9, max_pods=4),
        tight_instances(max_cells=16, max_rows=6, any_alpha=True),
    ),
    st.integers(0, 30),
    st.booleans(),
)
def test_look_ahead_never_worse_and_reaches_the_first_feasible_pair(instance, stop_at, staged):
    """The exact stage after an incomplete one (it realises only pairs with ``A >= B``, when
    ``staged``) or after one that realises nothing."""
    pairs = list(iter_target_pairs(instance))
    after = pairs[stop_at % len(pairs)]
    asked: list[tuple[int, int]] = []

    def look_ahead(a: int, b: int) -> Placement | None:
        asked.append((a, b))
        return _placement_by_search(instance, a, b)

    def some_pairs(a: int, b: int) -> Placement | None:
        return look_ahead(a, b) if a >= b else None

    stages = LookAhead(some_pairs if staged else _nothing, look_ahead)
    plain = _constructive_incumbent(instance, after=after)
    ahead = _constructive_incumbent(instance, after=after, look_ahead=stages)
    assert check(instance, ahead) == []
    assert evaluate(instance, ahead) <= evaluate(instance, plain) + 1e-9
    later = pairs[pairs.index(after) + 1 :]
    assert all((a, b) in {(p.max_dp_use, p.max_pp_use) for p in later} for a, b in asked)
    first = next(
        (p for p in later if _placement_by_search(instance, p.max_dp_use, p.max_pp_use)), None
    )
    if first is not None:
        assert evaluate(instance, ahead) <= first.score + 1e-9


def test_the_solvers_look_ahead_realises_a_pair_the_constructions_miss():
    """3 x 3 job on free nodes 1, 1, 7 (alpha 0.1), the walk stopped after (1, 1): the
    millisecond constructions reach (3, 2) (score 2.1), the narrow test realises (2, 2)."""
    instance = PlacementInstance("tight", [1, 1, 7], dp=3, tp=8, pp=3, alpha=0.1)
    after = next(iter_target_pairs(instance))
    assert (after.max_dp_use, after.max_pp_use) == (1, 1)
    look_ahead = _look_ahead(
        instance, CountingBound(instance), Sides(instance), lambda: False, lambda: math.inf
    )
    plain = _constructive_incumbent(instance, after=after)
    ahead = _constructive_incumbent(instance, after=after, look_ahead=look_ahead)
    assert check(instance, ahead) == []
    assert round(evaluate(instance, plain), 9) == 2.1
    assert round(evaluate(instance, ahead), 9) == 2.0
