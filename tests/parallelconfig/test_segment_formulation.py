"""The segment ILP (:mod:`topoopt.parallelconfig.formulations.segment_mip`) without the solver's
search: a warm start prices any configuration exactly and breaks no constraint; the levels of
runs split a configuration's optimum exactly; option A (every stage inside a node) is exact and
option B's bound is a bound; the models reach the enumerated optimum on HiGHS and SCIP."""

from __future__ import annotations

import math

import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.core.backends import available_backends
from topoopt.core.mip import solve_model
from topoopt.core.status import TerminationReason
from topoopt.parallelconfig import ParallelConfigInstance, check, evaluate
from topoopt.parallelconfig.bounds import columns_inside, split_bound
from topoopt.parallelconfig.formulations import segment_mip
from topoopt.parallelconfig.solution import breakdown, from_nodes, micro_batches_per_replica
from topoopt.parallelconfig.solvers.oracle import canonical_grids

from .strategies import instances
from .test_formulation import configurations, violations

BACKENDS = available_backends()
REL = 1e-9
BACKEND_REL = 1e-5


def mixed_instances(max_gpus: int = 9) -> st.SearchStrategy[ParallelConfigInstance]:
    """Small instances with nodes of up to 6 GPUs (mixed sizes), ``(d, p)`` free."""
    return instances(max_gpus=max_gpus, max_nodes=4, fixed=False, node_gpus=6)


def longest_run(inst: ParallelConfigInstance, grid: list[list[int]]) -> int:
    return max(len(segment_mip.runs_of(row)) for row in grid)


def change_cost(inst: ParallelConfigInstance, d: int) -> float:
    m = micro_batches_per_replica(inst, d)
    delta = 1 / inst.cross_bps - 1 / inst.intra_bps
    return inst.beta * m * inst.model.activation_bytes * delta


def optima(inst: ParallelConfigInstance, d: int, p: int) -> dict[str, float]:
    """The best cost of ``(d, p)`` over the oracle's grids: in all, with every stage inside a
    node (option A), with a stage across nodes (option B), and by longest replica (runs)."""
    stages = inst.model.stages(p)
    out: dict[str, float] = {}
    for grid in canonical_grids(inst.capacities, d, p):
        value = breakdown(inst, d, p, grid, stages).objective
        inside = all(len({row[s] for row in grid}) == 1 for s in range(p))
        keys = ["all", "A" if inside and d >= 2 else "B", f"runs{longest_run(inst, grid)}"]
        for key in keys:
            out[key] = min(out.get(key, math.inf), value)
    return out


@settings(max_examples=150, deadline=None)
@given(drawn=configurations(), symmetry=st.booleans(), joint=st.booleans())
def test_warm_start_prices_any_configuration_exactly(drawn, symmetry: bool, joint: bool) -> None:
    inst, config = drawn
    model = segment_mip.build(
        inst, configs=None if joint else [(config.d, config.p)], symmetry=symmetry
    )
    segment_mip.warm_start(model, config)
    assert violations(model) == []
    value = evaluate(inst, config)
    assert segment_mip.cost_of(model, pyo.value(model.cost)) == pytest.approx(value, rel=1e-12)
    back = segment_mip.extract(model, inst)
    assert check(inst, back) == []
    # the runs may be chained into replicas differently: never dearer (two runs of a replica
    # on one node merge), and the model's price of the start is exact (above)
    assert evaluate(inst, back) <= value * (1 + 1e-12)


@settings(max_examples=100, deadline=None)
@given(drawn=configurations(), extra=st.integers(0, 2))
def test_a_level_prices_a_configuration_at_its_runs(drawn, extra: int) -> None:
    """At level ``H`` (at least the configuration's longest replica) ``T_pp`` is priced at
    ``H - 1`` node changes; with ``across`` a configuration with a stage across nodes fits."""
    inst, config = drawn
    grid = [[inst.locate(g)[0] for g in row] for row in config.grid]
    runs = longest_run(inst, grid)
    level = min(runs + extra, config.p)
    inside = all(len({row[s] for row in grid}) == 1 for s in range(config.p))
    model = segment_mip.build(inst, configs=[(config.d, config.p)], runs=level, across=not inside)
    segment_mip.warm_start(model, config)
    layered = segment_mip.run_limit(inst, config.d, config.p, None) is not None
    assert violations(model) == []
    value = evaluate(inst, config) + (
        change_cost(inst, config.d) * (level - runs) if layered else 0
    )
    assert segment_mip.cost_of(model, pyo.value(model.cost)) == pytest.approx(value, rel=1e-9)


def test_warm_start_refuses_a_configuration_outside_the_model() -> None:
    from topoopt.parallelconfig.generate import worked

    inst = worked()
    model = segment_mip.build(inst, configs=[(2, 2)])
    with pytest.raises(ValueError, match=r"\(d, p\) = \(1, 1\) is not a configuration"):
        segment_mip.warm_start(model, from_nodes(inst, [[0]]))
    one_run = segment_mip.build(inst, configs=[(1, 8)], runs=2)
    with pytest.raises(ValueError, match="not in the model"):
        segment_mip.warm_start(one_run, from_nodes(inst, [[0, 1, 0, 1, 0, 1, 0, 1]]))


@settings(max_examples=80, deadline=None)
@given(inst=mixed_instances(), data=st.data())
def test_option_a_is_exact_and_option_b_is_bounded(
    inst: ParallelConfigInstance, data: st.DataObject
) -> None:
    d, p = data.draw(st.sampled_from(list(inst.configurations())))
    best = optima(inst, d, p)
    inside = columns_inside(inst, d, p)
    if "A" in best:
        assert inside is not None
        value, grid = inside
        assert value.objective == pytest.approx(best["A"], rel=1e-12)
        assert breakdown(inst, d, p, grid).objective == value.objective
        assert check(inst, from_nodes(inst, grid)) == []
    else:
        assert inside is None or d < 2
    if "B" in best:
        assert split_bound(inst, d, p).objective <= best["B"] * (1 + 1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(inst=mixed_instances(), data=st.data(), symmetry=st.booleans())
def test_levels_split_the_optimum_of_a_configuration(
    backend: str, inst: ParallelConfigInstance, data: st.DataObject, symmetry: bool
) -> None:
    """The model of level ``H`` with ``across`` reaches the best option-B configuration whose
    longest replica has ``H`` runs (or fewer, priced at ``H``); without levels the model reaches
    the configuration's optimum."""
    d, p = data.draw(st.sampled_from(list(inst.configurations())))
    best = optima(inst, d, p)
    model = segment_mip.build(inst, configs=[(d, p)], symmetry=symmetry)
    outcome = solve_model(model, backend=backend)
    assert outcome.termination is TerminationReason.OPTIMAL, outcome
    found = segment_mip.extract(model, inst)
    assert (found.d, found.p) == (d, p) and check(inst, found) == []
    assert math.isclose(evaluate(inst, found), best["all"], rel_tol=REL)
    assert segment_mip.cost_of(model, outcome.bound) <= best["all"] * (1 + BACKEND_REL)
    if segment_mip.run_limit(inst, d, p, None) is None or "B" not in best:
        return
    level = data.draw(st.integers(1, p))
    runs_best = [
        best[f"runs{h}"] + change_cost(inst, d) * (level - h)
        for h in range(1, level + 1)
        if f"runs{h}" in best
    ]
    model = segment_mip.build(inst, configs=[(d, p)], symmetry=symmetry, runs=level, across=True)
    outcome = solve_model(model, backend=backend)
    if outcome.termination is TerminationReason.INFEASIBLE:
        # no option-B configuration with at most `level` runs (option A may have some)
        a_only = [
            grid
            for grid in canonical_grids(inst.capacities, d, p)
            if longest_run(inst, grid) <= level
        ]
        assert all(all(len({r[s] for r in g}) == 1 for s in range(p)) for g in a_only)
        return
    assert outcome.termination is TerminationReason.OPTIMAL, outcome
    found = segment_mip.extract(model, inst)
    assert check(inst, found) == []
    # option B at this level is at least what the model found (priced at `level`), and the
    # model's value is no more than the best option-B grid of at most `level` runs
    value = segment_mip.cost_of(model, outcome.objective)
    assert value <= min(runs_best) * (1 + BACKEND_REL) or "A" in best
    assert evaluate(inst, found) <= value * (1 + BACKEND_REL)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=15, deadline=None)
@given(inst=mixed_instances(), data=st.data())
def test_cutoff_makes_the_model_infeasible_below_the_optimum(
    backend: str, inst: ParallelConfigInstance, data: st.DataObject
) -> None:
    d, p = data.draw(st.sampled_from(list(inst.configurations())))
    best = optima(inst, d, p)["all"]
    below = solve_model(
        segment_mip.build(inst, configs=[(d, p)], cutoff=best * (1 - 1e-3)), backend=backend
    )
    assert below.termination is TerminationReason.INFEASIBLE, below
    model = segment_mip.build(inst, configs=[(d, p)], cutoff=best * (1 + 1e-3))
    above = solve_model(model, backend=backend)
    assert above.termination is TerminationReason.OPTIMAL, above
    assert math.isclose(evaluate(inst, segment_mip.extract(model, inst)), best, rel_tol=REL)


def test_runs_and_canonical_form() -> None:
    assert segment_mip.runs_of([0, 0, 1, 0]) == [(0, 2, 0), (2, 1, 1), (3, 1, 0)]
    assert segment_mip.relabel_nodes([2, 2, 2], [[1, 2], [2, 0]]) == [[2, 0], [0, 1]]
