"""The parallelconfig solvers against each other and against brute force: the oracle equals an
enumeration of every assignment without symmetry reduction, the MIP (both methods, with and
without symmetry breaking, on HiGHS and SCIP) equals the oracle with a valid bound, the greedy
baseline is feasible and never better, the lower bounds are bounds."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.backends import available_backends
from topoopt.core.errors import InvalidOptionError, UnsupportedInstanceError
from topoopt.core.result import clean
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.parallelconfig import ParallelConfigInstance, TrainingModel, check, evaluate
from topoopt.parallelconfig.bounds import lower_bound
from topoopt.parallelconfig.generate import random_small, scaling, worked
from topoopt.parallelconfig.solution import breakdown
from topoopt.parallelconfig.solvers.oracle import canonical_grids, grid_counts

from .strategies import any_instances, instances

BACKENDS = available_backends()
REL = 1e-9


def brute_force(inst: ParallelConfigInstance) -> dict[tuple[int, int], float]:
    """The best cost of every ``(d, p)`` over every map of cells to nodes within capacity (no
    symmetry reduction, no solver code)."""
    best = {}
    caps = inst.capacities
    for d, p in inst.configurations():
        values = []
        for flat in itertools.product(range(inst.n_nodes), repeat=d * p):
            if any(flat.count(n) > g for n, g in enumerate(caps)):
                continue
            grid = [list(flat[j * p : (j + 1) * p]) for j in range(d)]
            values.append(breakdown(inst, d, p, grid).objective)
        best[d, p] = min(values)
    return best


def assert_like_oracle(
    inst: ParallelConfigInstance, result: topoopt.Result, oracle: topoopt.Result
) -> None:
    """Optimal, the oracle's objective (relative 1e-9), a valid bound within the optimality
    tolerance of :mod:`topoopt.core.mip` (``1e-6 · max(1, |objective|)``: at objectives below 1
    the relative gap may exceed 1e-6; HiGHS proved 0.0767199 for 0.07672), recomputed
    objective."""
    assert result.status is SolutionStatus.OPTIMAL, result
    assert result.violations == ()
    assert math.isclose(result.objective, oracle.objective, rel_tol=REL), (result, oracle)
    assert result.bound <= oracle.objective * (1 + REL), (result, oracle)
    assert result.objective - result.bound <= 1e-6 * max(1.0, abs(result.objective)), result
    assert result.objective == clean(evaluate(inst, result.solution))


# --------------------------------------------------------------------------------- oracle


@settings(max_examples=60, deadline=None)
@given(inst=instances(max_gpus=6, max_nodes=3))
def test_oracle_equals_brute_force(inst: ParallelConfigInstance) -> None:
    oracle = topoopt.solve(inst, "parallelconfig/enumerate")
    assert oracle.status is SolutionStatus.OPTIMAL and oracle.violations == ()
    assert oracle.objective == clean(evaluate(inst, oracle.solution))
    assert oracle.objective == pytest.approx(min(brute_force(inst).values()), rel=1e-12)
    assert oracle.bound == oracle.objective


@settings(max_examples=60, deadline=None)
@given(inst=instances(max_gpus=7, max_nodes=4, fixed=False))
def test_canonical_grids_are_between_the_count_and_the_count_over_d_factorial(
    inst: ParallelConfigInstance,
) -> None:
    """``grid_counts`` counts the grids whose equal nodes are first used in order exactly; the
    row order keeps between 1 / d! of them and all of them (one orbit holds at most d! such
    grids)."""
    counts = grid_counts(inst.capacities, inst.n_gpus)
    for d, p in inst.configurations():
        found = sum(1 for _ in canonical_grids(inst.capacities, d, p))
        assert counts[d * p] // math.factorial(d) <= found <= counts[d * p], (d, p)
        if d == 1:
            assert found == counts[p]


def test_oracle_refuses_large_jobs_and_stops_at_the_time_limit() -> None:
    big = scaling(nodes=(4,), models=("gpt2-350m",))[0]  # 32 GPUs
    assert "exceed the oracle's 24" in topoopt.get_solver(
        "parallelconfig/enumerate"
    ).unsupported_reason(big)
    with pytest.raises(UnsupportedInstanceError, match="use parallelconfig/mip"):
        topoopt.solve(big, "parallelconfig/enumerate")
    many = ParallelConfigInstance(
        "many",
        [(f"n{i}", 3) for i in range(6)],
        800.0,
        100.0,
        TrainingModel.uniform(
            18, compute_s=0.01, param_bytes=1e8, activation_bytes=1e7, micro_batches=18
        ),
    )
    assert "assignments exceed the oracle's" in (
        topoopt.get_solver("parallelconfig/enumerate").unsupported_reason(many) or ""
    )


# ------------------------------------------------------------------------------------ MIP


MIPS = ("parallelconfig/mip", "parallelconfig/paper-mip")


@pytest.mark.parametrize("solver", MIPS)
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None)
@given(inst=any_instances())
def test_mip_equals_oracle(solver: str, backend: str, inst: ParallelConfigInstance) -> None:
    oracle = topoopt.solve(inst, "parallelconfig/enumerate")
    assert_like_oracle(inst, topoopt.solve(inst, solver, backend=backend), oracle)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None)
@given(inst=instances(max_gpus=12, max_nodes=4, fixed=None, node_gpus=8))
def test_segment_mip_equals_oracle_on_mixed_node_sizes(
    backend: str, inst: ParallelConfigInstance
) -> None:
    """Nodes of 1 to 8 GPUs, up to 12 GPUs: the levels of runs and option A matter here."""
    oracle = topoopt.solve(inst, "parallelconfig/enumerate")
    assert_like_oracle(inst, topoopt.solve(inst, "parallelconfig/mip", backend=backend), oracle)


@pytest.mark.parametrize("solver", MIPS)
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=12, deadline=None)
@given(inst=any_instances(max_gpus=6))
def test_joint_mip_equals_oracle(solver: str, backend: str, inst: ParallelConfigInstance) -> None:
    oracle = topoopt.solve(inst, "parallelconfig/enumerate")
    mip = topoopt.solve(inst, solver, backend=backend, method="joint")
    assert_like_oracle(inst, mip, oracle)


@pytest.mark.parametrize("solver", MIPS)
@settings(max_examples=12, deadline=None)
@given(inst=any_instances(), method=st.sampled_from(["split", "joint"]))
def test_mip_without_symmetry_breaking_equals_oracle(
    solver: str, inst: ParallelConfigInstance, method: str
) -> None:
    oracle = topoopt.solve(inst, "parallelconfig/enumerate")
    mip = topoopt.solve(inst, solver, method=method, symmetry=False)
    assert_like_oracle(inst, mip, oracle)


def hard() -> ParallelConfigInstance:
    """Many configurations the greedy packings do not settle (uneven nodes, costly sends and
    all-reduces, layers of unequal cost)."""
    layers = [(0.002, 4e8), (0.003, 1e8), (0.001, 5e8), (0.002, 2e8)] * 3
    return ParallelConfigInstance(
        "hard",
        [("a", 3), ("b", 3), ("c", 2), ("d", 2), ("e", 2)],
        800.0,
        50.0,
        TrainingModel(layers, activation_bytes=2e8, micro_batches=12),
    )


def needs_levels() -> ParallelConfigInstance:
    """A job of 10 GPUs on nodes of 4, 3, 1 and 2 whose configurations the bounds, the exact
    all-stages-inside option and the greedy packings do not settle."""
    return random_small(1, 117, gpus=12)[116]


@pytest.mark.parametrize("solver", MIPS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_mip_solves_configurations_the_greedy_does_not_settle(backend: str, solver: str) -> None:
    inst = needs_levels()
    mip = topoopt.solve(inst, solver, backend=backend)
    assert mip.status is SolutionStatus.OPTIMAL
    solved = int(mip.message.split(": ")[1].split(" solved")[0])
    assert solved >= 1, mip.message
    greedy = topoopt.solve(inst, "parallelconfig/greedy", packing="best")
    assert mip.objective < greedy.objective


@pytest.mark.parametrize("solver", MIPS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_mip_time_limit_returns_a_feasible_answer_with_a_valid_bound(
    solver: str, backend: str
) -> None:
    inst = hard()
    optimum = topoopt.solve(inst, solver, backend=backend).objective
    for limit in (1e-3, 0.05):
        result = topoopt.solve(inst, solver, backend=backend, time_limit=limit)
        assert result.is_ok and check(inst, result.solution) == []
        assert result.bound <= optimum * (1 + REL)
        if result.termination is TerminationReason.TIME_LIMIT:
            assert result.status is SolutionStatus.FEASIBLE
            # the three places the clock can stop the search, each named in the message
            assert any(
                note in result.message
                for note in (
                    "not reached (time limit)",
                    "an ILP ended with time_limit",
                    "time limit while bounding",
                )
            ), result.message


def test_paper_mip_refuses_huge_jobs_and_bad_options_are_refused() -> None:
    huge = ParallelConfigInstance(
        "huge",
        [(f"n{i}", 8) for i in range(200)],
        800.0,
        100.0,
        TrainingModel.uniform(
            4, compute_s=0.01, param_bytes=1e8, activation_bytes=1e7, micro_batches=8
        ),
    )
    with pytest.raises(UnsupportedInstanceError, match="1600 GPUs exceed the paper ILP's 1024"):
        topoopt.solve(huge, "parallelconfig/paper-mip")
    with pytest.raises(InvalidOptionError, match="method"):
        topoopt.solve(worked(), "parallelconfig/mip", method="all")
    with pytest.raises(InvalidOptionError, match="symmetry"):
        topoopt.solve(worked(), "parallelconfig/mip", symmetry="no")
    with pytest.raises(InvalidOptionError, match="packing"):
        topoopt.solve(worked(), "parallelconfig/greedy", packing="zigzag")


# ------------------------------------------------------------------------------ heuristics


@settings(max_examples=80, deadline=None)
@given(inst=any_instances())
def test_greedy_is_feasible_and_never_beats_the_oracle(inst: ParallelConfigInstance) -> None:
    oracle = topoopt.solve(inst, "parallelconfig/enumerate")
    results = {
        packing: topoopt.solve(inst, "parallelconfig/greedy", packing=packing)
        for packing in ("replica", "stage", "best")
    }
    for packing, result in results.items():
        assert result.status is SolutionStatus.FEASIBLE, (packing, result)
        assert check(inst, result.solution) == []
        assert result.objective == clean(evaluate(inst, result.solution))
        assert result.objective >= oracle.objective * (1 - REL), (packing, result, oracle)
        assert math.isinf(result.bound)
    assert results["best"].objective <= min(
        results["replica"].objective, results["stage"].objective
    )


@settings(max_examples=60, deadline=None)
@given(inst=any_instances())
def test_greedy_uses_the_largest_d_for_its_depth(inst: ParallelConfigInstance) -> None:
    result = topoopt.solve(inst, "parallelconfig/greedy")
    d, p = result.solution.d, result.solution.p
    if inst.parallelism is None:
        assert d == min(inst.n_gpus // p, inst.model.micro_batches)
    else:
        assert (d, p) == inst.parallelism


# -------------------------------------------------------------------------------- bounds


@settings(max_examples=40, deadline=None)
@given(inst=instances(max_gpus=6, max_nodes=3))
def test_lower_bound_of_every_configuration_is_a_bound(inst: ParallelConfigInstance) -> None:
    for (d, p), best in brute_force(inst).items():
        bound = lower_bound(inst, d, p)
        assert bound.objective <= best * (1 + 1e-12), (d, p)
        assert bound.t_comp_s == breakdown(inst, d, p, [[0] * p] * d).t_comp_s
