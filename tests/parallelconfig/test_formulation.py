"""The ILP itself, without the solver's pruning: a warm start prices any configuration exactly
and breaks no constraint (the linearisation matches ``evaluate``), and the model of one
``(d, p)`` — or of all of them — solved on HiGHS and SCIP reaches the enumerated optimum."""

from __future__ import annotations

import math

import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.core.backends import available_backends
from topoopt.core.mip import solve_model
from topoopt.core.status import TerminationReason
from topoopt.parallelconfig import ParallelConfig, ParallelConfigInstance, check, evaluate
from topoopt.parallelconfig.formulations import grid_mip
from topoopt.parallelconfig.solution import breakdown, from_nodes
from topoopt.parallelconfig.solvers.oracle import canonical_grids

from .strategies import any_instances, instances

BACKENDS = available_backends()
REL = 1e-9
BACKEND_REL = 1e-5
"""Agreement asked of the backend's own objective and bound (its tolerances apply to them)."""


def violations(model: pyo.ConcreteModel, tol: float = 1e-9) -> list[str]:
    """Unset variables and broken constraints of the values set on ``model``."""
    bad = [v.name for v in model.component_data_objects(pyo.Var) if v.value is None]
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        if con.has_lb() and body < pyo.value(con.lower) - tol:
            bad.append(f"{con.name}: {body} < {pyo.value(con.lower)}")
        if con.has_ub() and body > pyo.value(con.upper) + tol:
            bad.append(f"{con.name}: {body} > {pyo.value(con.upper)}")
    return bad


@st.composite
def configurations(draw: st.DrawFn) -> tuple[ParallelConfigInstance, ParallelConfig]:
    """An instance and any feasible configuration of it (random GPUs, not a packing)."""
    inst = draw(any_instances())
    d, p = draw(st.sampled_from(list(inst.configurations())))
    gpus = [inst.gpu(n, k) for n, node in enumerate(inst.nodes) for k in range(node.gpus)]
    chosen = draw(st.permutations(gpus))[: d * p]
    return inst, ParallelConfig.of([chosen[j * p : (j + 1) * p] for j in range(d)])


def config_optimum(inst: ParallelConfigInstance, d: int, p: int) -> float:
    """The best cost of ``(d, p)`` over the oracle's grids."""
    stages = inst.model.stages(p)
    return min(
        breakdown(inst, d, p, grid, stages).objective
        for grid in canonical_grids(inst.capacities, d, p)
    )


@settings(max_examples=150, deadline=None)
@given(drawn=configurations(), symmetry=st.booleans(), joint=st.booleans())
def test_warm_start_prices_any_configuration_exactly(drawn, symmetry: bool, joint: bool) -> None:
    inst, config = drawn
    assert check(inst, config) == []
    model = grid_mip.build(
        inst, configs=None if joint else [(config.d, config.p)], symmetry=symmetry
    )
    grid_mip.warm_start(model, config)
    assert violations(model) == []
    value = evaluate(inst, config)
    assert grid_mip.cost_of(model, pyo.value(model.cost)) == pytest.approx(value, rel=1e-12)
    back = grid_mip.extract(model, inst)
    assert check(inst, back) == []
    assert evaluate(inst, back) == pytest.approx(value, rel=1e-12)
    if not symmetry:  # without canonical relabelling, the same nodes come back
        assert [[inst.locate(g)[0] for g in row] for row in back.grid] == [
            [inst.locate(g)[0] for g in row] for row in config.grid
        ]


def test_warm_start_refuses_a_configuration_outside_the_model() -> None:
    from topoopt.parallelconfig.generate import worked

    inst = worked()
    model = grid_mip.build(inst, configs=[(2, 2)])
    with pytest.raises(ValueError, match=r"\(d, p\) = \(1, 1\) is not a configuration"):
        grid_mip.warm_start(model, from_nodes(inst, [[0]]))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(inst=instances(fixed=False), data=st.data(), symmetry=st.booleans())
def test_model_of_one_configuration_reaches_its_optimum(
    backend: str, inst: ParallelConfigInstance, data: st.DataObject, symmetry: bool
) -> None:
    d, p = data.draw(st.sampled_from(list(inst.configurations())))
    best = config_optimum(inst, d, p)
    model = grid_mip.build(inst, configs=[(d, p)], symmetry=symmetry)
    outcome = solve_model(model, backend=backend)
    assert outcome.termination is TerminationReason.OPTIMAL, outcome
    found = grid_mip.extract(model, inst)
    assert (found.d, found.p) == (d, p) and check(inst, found) == []
    assert math.isclose(evaluate(inst, found), best, rel_tol=REL), (d, p)
    # the backend's own objective may use its integrality tolerance (HiGHS: 1e-6, so a
    # continuous u or v may follow an x of 1e-6); the solution itself is exact (above)
    assert grid_mip.cost_of(model, outcome.objective) == pytest.approx(best, rel=BACKEND_REL)
    assert grid_mip.cost_of(model, outcome.bound) <= best * (1 + BACKEND_REL)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=10, deadline=None)
@given(inst=instances(max_gpus=6, fixed=False))
def test_model_of_every_configuration_reaches_the_optimum(
    backend: str, inst: ParallelConfigInstance
) -> None:
    best = min(config_optimum(inst, d, p) for d, p in inst.configurations())
    model = grid_mip.build(inst)
    outcome = solve_model(model, backend=backend)
    assert outcome.termination is TerminationReason.OPTIMAL, outcome
    found = grid_mip.extract(model, inst)
    assert check(inst, found) == []
    assert math.isclose(evaluate(inst, found), best, rel_tol=REL)


def test_twins_and_canonical_form() -> None:
    assert grid_mip.twins([4, 2, 4, 4, 2]) == [(0, 2), (2, 3), (1, 4)]
    # node 2 is used most among the alike nodes 0..2, so it becomes node 0 (then 0 -> 1 and
    # 1 -> 2, ties in order); then the replicas are sorted by the node of their first stage
    assert grid_mip.canonical([2, 2, 2], [[1, 2], [2, 0]]) == [[0, 1], [2, 0]]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=15, deadline=None)
@given(inst=instances(fixed=False), data=st.data())
def test_cutoff_makes_the_model_infeasible_below_the_optimum(
    backend: str, inst: ParallelConfigInstance, data: st.DataObject
) -> None:
    d, p = data.draw(st.sampled_from(list(inst.configurations())))
    best = config_optimum(inst, d, p)
    below = solve_model(
        grid_mip.build(inst, configs=[(d, p)], cutoff=best * (1 - 1e-3)), backend=backend
    )
    assert below.termination is TerminationReason.INFEASIBLE, below
    model = grid_mip.build(inst, configs=[(d, p)], cutoff=best * (1 + 1e-3))
    above = solve_model(model, backend=backend)
    assert above.termination is TerminationReason.OPTIMAL, above
    assert math.isclose(evaluate(inst, grid_mip.extract(model, inst)), best, rel_tol=REL)
