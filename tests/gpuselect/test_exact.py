"""Exactness: the fast oracle and the MIP equal plain brute force on random small pools."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import plain_brute_force
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.gpuselect.generate import MODEL_KINDS, random_instance
from topoopt.gpuselect.solvers.oracle import brute_force, fast_optimum

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


@pytest.mark.parametrize("kind", MODEL_KINDS)
@given(seed=SEEDS)
def test_fast_oracle_equals_brute_force(kind: str, seed: int) -> None:
    inst = random_instance(np.random.default_rng(seed), kind)
    expected = plain_brute_force(inst)
    value, masks = fast_optimum(inst)
    assert math.isclose(value, expected, abs_tol=1e-9)
    assert math.isclose(inst.bound.value(masks), expected, abs_tol=1e-9)
    assert math.isclose(brute_force(inst)[0], expected, abs_tol=1e-9)


@pytest.mark.parametrize("kind", MODEL_KINDS)
@pytest.mark.parametrize("choice", ["count", "subset"])
@settings(max_examples=15)
@given(seed=SEEDS)
def test_mip_equals_brute_force(kind: str, choice: str, seed: int) -> None:
    inst = random_instance(np.random.default_rng(seed), kind, max_pool=10)
    expected = plain_brute_force(inst)
    result = topoopt.solve(inst, "gpuselect/mip", choice=choice)
    assert result.status is topoopt.SolutionStatus.OPTIMAL, result
    assert math.isclose(result.objective, expected, abs_tol=1e-6), (result, expected)
    assert result.bound >= expected - 1e-6


@pytest.mark.parametrize("kind", MODEL_KINDS)
@settings(max_examples=10)
@given(seed=SEEDS)
def test_mip_on_scip_equals_brute_force(kind: str, seed: int) -> None:
    inst = random_instance(np.random.default_rng(seed), kind, max_pool=8)
    result = topoopt.solve(inst, "gpuselect/mip", backend="scip")
    assert math.isclose(result.objective, plain_brute_force(inst), abs_tol=1e-6)


@settings(max_examples=20)
@given(seed=SEEDS)
def test_oracle_brute_method_on_callable(seed: int) -> None:
    """A user callable has no structure: the oracle enumerates, still exact."""
    base = random_instance(np.random.default_rng(seed), "bottleneck")
    inst = base.with_bandwidth(
        lambda s: float(len({h for h, _ in s}) * 3 + sum(i for _, i in s) % 5))
    result = topoopt.solve(inst, "gpuselect/enumerate")
    assert result.status is topoopt.SolutionStatus.OPTIMAL
    assert math.isclose(result.objective, plain_brute_force(inst))


def test_fast_path_on_large_pool_matches_mip() -> None:
    """Beyond brute force: on a 256-GPU pool the two exact methods agree."""
    from topoopt.gpuselect.generate import large_pool

    for inst in large_pool(seed=1, gpus=256, ks=(12, 40)):
        oracle = topoopt.solve(inst, "gpuselect/enumerate")
        mip = topoopt.solve(inst, "gpuselect/mip")
        assert mip.status is topoopt.SolutionStatus.OPTIMAL
        assert math.isclose(oracle.objective, mip.objective, abs_tol=1e-6)
