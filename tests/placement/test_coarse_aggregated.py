"""The aggregated coarse model (``coarse.build``) against the per-unit model of eq. 4–10.

The aggregation (candidate minipods, whole units counted per minipod, the forest bound) must
keep the optimum of the coarse objective: both models are solved to optimality on random
instances with many more units than minipods (so that whole units are aggregated) and must
agree; the aggregated model's placement must be feasible and score what the model says.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.core.mip import solve_model
from topoopt.core.status import TerminationReason
from topoopt.placement import PlacementInstance, check
from topoopt.placement.formulations import coarse

from .strategies import small_instances


@st.composite
def _unit_rich_instances(draw: st.DrawFn) -> PlacementInstance:
    """Up to 14 rows x 4 columns over up to 7 minipods with uneven free nodes."""
    rows = draw(st.integers(1, 14))
    cols = draw(st.integers(1, 4))
    free = draw(st.lists(st.integers(0, 3 * max(rows, cols)), min_size=1, max_size=7))
    free[draw(st.integers(0, len(free) - 1))] += max(0, rows * cols - sum(free))
    alpha = draw(st.sampled_from([0.0, 0.1, 0.37, 0.5, 0.63, 0.9, 1.0]))
    return PlacementInstance("agg", free, dp=rows, tp=8, pp=cols, alpha=alpha)


def _optimum(model) -> float:
    out = solve_model(model, warmstart=True)
    assert out.termination is TerminationReason.OPTIMAL
    return out.objective


@settings(max_examples=60, deadline=None)
@pytest.mark.parametrize("unit", coarse.UNITS)
@given(instance=st.one_of(_unit_rich_instances(), small_instances(max_cells=12, max_pods=5)))
def test_aggregated_model_keeps_the_coarse_optimum(unit: str, instance: PlacementInstance) -> None:
    reference = coarse.build_per_unit(instance, unit)
    coarse.warm_start(reference, instance)
    expected = _optimum(reference)

    model = coarse.build(instance, unit)
    coarse.warm_start(model, instance)
    assert _optimum(model) == pytest.approx(expected, abs=1e-6)
    assert coarse.model_size(instance, unit) <= coarse.per_unit_size(instance, unit)

    placement = coarse.extract(model, instance)
    assert check(instance, placement) == []
    units = placement.matrix if unit == "pp" else placement.columns()
    counts = [[list(group).count(j) for j in range(instance.n_minipods)] for group in units]
    _, _, w_y, w_t = coarse._shape(instance, unit)
    assert coarse._coarse_objective(counts, w_y, w_t) == pytest.approx(expected, abs=1e-6)
    assert sorted(map(sorted, coarse.unit_counts(model))) == sorted(map(sorted, counts))


@given(instance=_unit_rich_instances())
def test_closed_form_start_fits_the_aggregated_model(instance: PlacementInstance) -> None:
    """The start uses candidate minipods only and splits at most ``k - 1`` units."""
    for unit in coarse.UNITS:
        pods = set(coarse.candidate_pods(instance, unit))
        start = coarse.start_counts(instance, unit)
        used = {j for counts in start for j, n in enumerate(counts) if n}
        assert used <= pods
        splits = sum(max(0, sum(1 for n in counts if n) - 1) for counts in start)
        assert splits <= len(used) - 1
        coarse.warm_start(coarse.build(instance, unit), instance)  # raises if it does not fit


def test_model_size_at_the_issue_scale() -> None:
    """64 minipods, ~8,192 free nodes, job 512 x 8: a few hundred pairs instead of 32,768."""
    from topoopt.placement.generate import uneven

    instance = uneven(seed=0, minipods=64, max_free=256, rows=512)[0]
    assert coarse.per_unit_size(instance, "pp") == 512 * 64
    assert coarse.model_size(instance, "pp") <= 1_000
    assert coarse.model_size(instance, "dp") <= 1_000
