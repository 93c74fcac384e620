"""The projected eigenvalue bound ((B5), :mod:`topoopt.partition.spectral`): the identity it
starts from, the concavity that lets it look at the size vertices only, and the bound itself
never above the oracle's optimum."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from tests.partition.strategies import packing_instances, seeded_small
from topoopt.partition import bounds, spectral
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment, evaluate

TOL = 1e-7
INSTANCES = st.one_of(seeded_small(), packing_instances())


def _laplacian(inst: PartitionInstance) -> np.ndarray:
    u, w, t = inst.edge_arrays
    out = np.zeros((inst.n_vertices, inst.n_vertices))
    for a, b, x in zip(u, w, t, strict=True):
        out[a, a] += x
        out[b, b] += x
        out[a, b] -= x
        out[b, a] -= x
    return out


@settings(max_examples=40, deadline=None)
@given(inst=INSTANCES, data=st.data())
def test_the_cut_is_half_the_trace_against_the_similarity(
    inst: PartitionInstance, data: st.DataObject
) -> None:
    """``cut(π) = ½ tr(Xᵀ L X U)`` for any assignment (capacities aside)."""
    where = data.draw(
        st.lists(
            st.integers(0, inst.n_clusters - 1), min_size=inst.n_vertices, max_size=inst.n_vertices
        )
    )
    x = np.zeros((inst.n_vertices, inst.n_clusters))
    x[np.arange(inst.n_vertices), where] = 1.0
    trace = 0.5 * np.trace(x.T @ _laplacian(inst) @ x @ spectral.similarity(inst))
    cut = evaluate(inst, Assignment.from_indices(inst, where))
    assert trace == pytest.approx(cut, rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(inst=INSTANCES)
def test_eigenvalue_bound_is_at_most_the_optimum(inst: PartitionInstance) -> None:
    optimum = topoopt.solve(inst, "partition/enumerate").objective
    if optimum is None:
        return
    joint = spectral.eigenvalue_bound(inst)
    assert 0.0 <= joint <= optimum + TOL * max(1.0, optimum)


@settings(max_examples=40, deadline=None)
@given(inst=INSTANCES)
def test_level_by_level_is_weaker_than_joint(inst: PartitionInstance) -> None:
    """(Its validity then follows from the joint bound's.)"""
    joint = spectral.eigenvalue_bound(inst)
    with mock.patch.object(spectral, "MAX_JOINT_CLUSTERS", 0):
        by_level = spectral.eigenvalue_bound(inst)
    assert 0.0 <= by_level <= joint + TOL * max(1.0, joint)


@settings(max_examples=40, deadline=None)
@given(inst=INSTANCES, data=st.data())
def test_the_least_value_is_at_a_size_vertex(inst: PartitionInstance, data: st.DataObject) -> None:
    """Concavity in the sizes: a convex combination of size vertices is never below their
    least value."""
    need = float(inst.total_gpus)
    capacity = [float(c.capacity_gpus) for c in inst.clusters]
    vertices = list(spectral.size_vertices(capacity, need))
    lam = spectral.spectrum(inst)
    if need <= 0 or len(lam) <= 1:
        return
    root = spectral._psd_root(spectral.similarity(inst))
    least = min(spectral.weighted_sum(lam, root, m) for m in vertices)
    weights = np.array(
        data.draw(st.lists(st.floats(0.0, 1.0), min_size=len(vertices), max_size=len(vertices)))
    )
    if weights.sum() <= 0:
        return
    inside = (weights / weights.sum()) @ np.array(vertices)
    assert np.all(inside <= np.array(capacity) + 1e-9)
    assert spectral.weighted_sum(lam, root, inside) >= least - 1e-9 * max(1.0, abs(least))


def test_size_vertices_are_the_polytope_vertices() -> None:
    found = {tuple(m.tolist()) for m in spectral.size_vertices([4.0, 2.0, 3.0], 5.0)}
    assert found == {
        (4.0, 1.0, 0.0),
        (4.0, 0.0, 1.0),
        (3.0, 2.0, 0.0),
        (2.0, 0.0, 3.0),
        (0.0, 2.0, 3.0),
    }


def test_lower_bounds_give_the_eigenvalue_bound_first() -> None:
    inst = topoopt.load("instances/partition/table2-512/t2-512-0-2.json")
    first = next(bounds.lower_bounds(inst, None, lambda sub, limit: 0.0, None, spreading=False))
    assert first.method == "projected eigenvalue bound"
    assert first.value == pytest.approx(spectral.eigenvalue_bound(inst))
    greedy = topoopt.solve(inst, "partition/greedy-lowcut")
    assert 0.0 < first.value < greedy.objective


@pytest.mark.parametrize("solver", ["partition/mip", "partition/bound"])
def test_a_short_limit_still_gives_the_eigenvalue_bound(solver: str) -> None:
    """Under a time limit the bounds run in a child process that needs about a second to
    start; the eigenvalue bound is computed before it, so a 1 s limit still certifies it."""
    inst = topoopt.load("instances/partition/table2-128/t2-128-0-2.json")
    result = topoopt.solve(inst, solver, time_limit=1.0, threads=1)
    assert result.bound == pytest.approx(spectral.eigenvalue_bound(inst))
    assert "eigenvalue" in result.message
