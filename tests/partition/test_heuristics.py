"""The partition heuristics (greedy low-cut, its iterated search, genetic, METIS) and their
shared moves: feasible, never better than the oracle, objective = ``evaluate()``, exact
packing, seeded determinism, repair, separable instances, time limits."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.errors import InvalidOptionError
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.partition.generate import examples, job_instance, table2
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import check, evaluate
from topoopt.partition.solvers.metis import best_mapping, edge_weights, to_clusters
from topoopt.partition.solvers.moves import JobArrays, Refiner, pack, repair

from .strategies import any_instances, packing_instances

HEURISTICS = [
    ("partition/greedy-lowcut", {}),
    ("partition/greedy-lowcut", {"coarsen_to": 0, "swaps": False, "starts": 1, "cycles": 0}),
    ("partition/genetic", {"population": 6, "generations": 3, "patience": 2}),
    ("partition/ils", {"restarts": 2, "patience": 3}),
    ("partition/metis", {}),
    ("partition/metis", {"refine": True}),
]
TOL = 1e-9


def _oracle(instance: PartitionInstance) -> topoopt.Result:
    return topoopt.solve(instance, "partition/enumerate")


# ---------------------------------------------------------------- the trust chain, all solvers


@settings(max_examples=150, deadline=None)
@given(instance=any_instances())
def test_heuristics_feasible_and_never_better_than_the_oracle(instance: PartitionInstance) -> None:
    """Every heuristic finds an assignment exactly when one exists (they are complete: an
    exhaustive packing backs the greedy steps), it keeps the capacities, its objective is
    ``evaluate()``'s and it is never below the oracle's optimum."""
    oracle = _oracle(instance)
    for name, options in HEURISTICS:
        result = topoopt.solve(instance, name, **options)
        if oracle.status is SolutionStatus.NO_SOLUTION:
            assert result.status is SolutionStatus.NO_SOLUTION, (name, result)
            assert result.termination is TerminationReason.INFEASIBLE, (name, result)
            continue
        assert result.status is SolutionStatus.FEASIBLE, (name, options, result)
        assert check(instance, result.solution) == []
        assert result.objective is not None and oracle.objective is not None
        assert math.isclose(result.objective, evaluate(instance, result.solution), abs_tol=TOL)
        assert result.objective >= oracle.objective - 1e-9 * max(1.0, oracle.objective)


def test_greedy_finds_the_optimum_of_the_examples() -> None:
    """On the conformance examples the greedy heuristic is optimal (regression guard)."""
    for instance in examples():
        greedy = topoopt.solve(instance, "partition/greedy-lowcut")
        assert greedy.objective == pytest.approx(_oracle(instance).objective, abs=1e-9)


# ------------------------------------------------------------------------------ shared moves


@settings(max_examples=100, deadline=None)
@given(instance=packing_instances(), data=st.data())
def test_refiner_costs_stay_exact_under_moves(instance: PartitionInstance, data) -> None:
    """The incremental cost matrix equals a recomputation after any sequence of moves, the
    cut is half the cost of the vertices' own clusters, and a move's gain is the cut change."""
    arrays = JobArrays.of(instance)
    part = np.array(
        data.draw(st.lists(st.integers(0, arrays.k - 1), min_size=arrays.n, max_size=arrays.n))
    )
    refiner = Refiner(arrays, part)
    for _ in range(data.draw(st.integers(0, 6))):
        x, b = data.draw(st.integers(0, arrays.n - 1)), data.draw(st.integers(0, arrays.k - 1))
        before, gain = refiner.cut(), float(refiner.gains()[x, b])
        refiner.move(x, b)
        assert refiner.cut() == pytest.approx(before - gain, abs=1e-9)
    np.testing.assert_allclose(refiner.cost, arrays.costs(refiner.part), atol=1e-9)
    own = refiner.cost[np.arange(arrays.n), refiner.part].sum() / 2
    assert own == pytest.approx(refiner.cut(), abs=1e-9)
    np.testing.assert_array_equal(refiner.load, arrays.loads(refiner.part))


@settings(max_examples=100, deadline=None)
@given(instance=packing_instances())
def test_fm_swaps_and_passes(instance: PartitionInstance) -> None:
    """From a feasible start, the best swap's gain is the cut change it makes and stays within
    the capacities; FM passes never raise the cut nor break a capacity."""
    arrays = JobArrays.of(instance)
    start = pack(arrays, None, lambda: False)
    if start is None:
        return
    refiner = Refiner(arrays, start)
    gain, u, v = refiner.best_swap(refiner.gains(), np.ones(arrays.n, dtype=bool))
    if gain > -math.inf:
        before = refiner.cut()
        a, b = int(refiner.part[u]), int(refiner.part[v])
        assert a != b
        refiner.move(u, b)
        refiner.move(v, a)
        assert refiner.cut() == pytest.approx(before - gain, abs=1e-9)
        assert arrays.feasible(refiner.part)
    before = refiner.cut()
    refiner.refine(lambda: False)
    assert refiner.cut() <= before + 1e-9
    assert arrays.feasible(refiner.part)


def _brute_packs(arrays: JobArrays) -> bool:
    for choice in itertools.product(range(arrays.k), repeat=arrays.n):
        if arrays.feasible(np.array(choice, dtype=np.int64)):
            return True
    return False


@settings(max_examples=100, deadline=None)
@given(instance=packing_instances(max_vertices=6))
def test_pack_is_exact(instance: PartitionInstance) -> None:
    """The packing finds an assignment exactly when brute force does, and it fits."""
    arrays = JobArrays.of(instance)
    part = pack(arrays, None, lambda: False)
    assert (part is not None) == _brute_packs(arrays)
    if part is not None:
        assert arrays.feasible(part)


def test_pack_beats_first_fit_decreasing() -> None:
    """Sizes 3, 3, 2, 2, 2 into 6 + 6: first fit decreasing puts 3 + 3 together and fails."""
    inst = PartitionInstance(
        "bins",
        [("c0", 6), ("c1", 6)],
        [("c0", "c1", 1.0)],
        [("a", 3), ("b", 3), ("c", 2), ("d", 2), ("e", 2)],
        [],
    )
    for name, options in HEURISTICS:
        assert topoopt.solve(inst, name, **options).status is SolutionStatus.FEASIBLE, name


def test_repair_moves_out_of_full_clusters_cheaply() -> None:
    arrays = JobArrays.of(examples()[0])  # capacities 8, 4, 4; four vertices of 2 GPUs
    part = repair(arrays, np.array([1, 1, 1, 1]), lambda: False)
    assert part is not None and arrays.feasible(part)
    # the heavy pairs (traffic 5) stay together; only the two light edges are cut
    assert part[0] == part[1] and part[2] == part[3]


# ----------------------------------------------------------------------------------- greedy


def _two_jobs(size_a: int, size_b: int) -> PartitionInstance:
    """Two disconnected rings of 2-GPU vertices on clusters of 12, 8 and 4 GPUs."""
    vertices, edges = [], []
    for tag, size in (("a", size_a), ("b", size_b)):
        names = [f"{tag}{i}" for i in range(size)]
        vertices += [(x, 2) for x in names]
        edges += [(names[i], names[(i + 1) % size], 5.0) for i in range(size if size > 2 else 1)]
    return PartitionInstance(
        "two-jobs",
        [("c0", 12), ("c1", 8), ("c2", 4)],
        [("c0", "c1", 10.0), ("c1", "c2", 1.0)],
        vertices,
        edges,
    )


@pytest.mark.parametrize(("size_a", "size_b"), [(6, 4), (4, 6), (5, 2), (2, 2)])
def test_greedy_keeps_separable_components_whole(size_a: int, size_b: int) -> None:
    """Two components that each fit a cluster (but not one together): no edge is cut."""
    result = topoopt.solve(_two_jobs(size_a, size_b), "partition/greedy-lowcut")
    assert result.status is SolutionStatus.FEASIBLE
    assert result.objective == 0.0
    assert result.metrics["cut_edges"] == 0


def test_greedy_splits_along_the_cheapest_link() -> None:
    """A job of 10 GPU-pairs on 12 + 8 + 4 GPUs must span two clusters: it uses c0 and c1
    (10 Gb/s) and not c2 (1 Gb/s), cutting its ring twice."""
    inst = PartitionInstance(
        "ring",
        [("c0", 12), ("c1", 8), ("c2", 4)],
        [("c0", "c1", 10.0), ("c1", "c2", 1.0)],
        [(f"x{i}", 2) for i in range(10)],
        [(f"x{i}", f"x{(i + 1) % 10}", 5.0) for i in range(10)],
    )
    result = topoopt.solve(inst, "partition/greedy-lowcut")
    assert result.objective == pytest.approx(_oracle(inst).objective)
    assert result.objective == pytest.approx(2 * 5.0 / 10.0)


def test_greedy_is_deterministic_and_beats_metis_on_table2() -> None:
    inst = table2(0, 1, 128)[0]
    first = topoopt.solve(inst, "partition/greedy-lowcut")
    second = topoopt.solve(inst, "partition/greedy-lowcut", seed=9)
    assert first.solution == second.solution
    assert first.objective < topoopt.solve(inst, "partition/metis").objective


# ---------------------------------------------------------------------------------- genetic


def _medium() -> PartitionInstance:
    rng = np.random.default_rng(4)
    return job_instance(rng, "medium", stages=6, replicas=4, edges=60, clusters=5)


def test_genetic_is_deterministic_for_a_seed() -> None:
    inst = _medium()
    options = {"population": 8, "generations": 4}
    first = topoopt.solve(inst, "partition/genetic", seed=7, **options)
    second = topoopt.solve(inst, "partition/genetic", seed=7, **options)
    assert first.solution == second.solution
    assert first.objective == second.objective
    assert first.termination is TerminationReason.COMPLETED


def test_genetic_improves_on_its_initial_population() -> None:
    inst = _medium()
    none = topoopt.solve(inst, "partition/genetic", generations=0, population=8, local_passes=0)
    more = topoopt.solve(inst, "partition/genetic", generations=10, population=8)
    assert more.objective <= none.objective


def test_genetic_rejects_bad_options() -> None:
    inst = examples()[0]
    with pytest.raises(InvalidOptionError, match="mutation"):
        topoopt.solve(inst, "partition/genetic", mutation=1.5)
    with pytest.raises(InvalidOptionError, match="population"):
        topoopt.solve(inst, "partition/genetic", population=1)
    with pytest.raises(InvalidOptionError, match="starts"):
        topoopt.solve(inst, "partition/greedy-lowcut", starts=0)
    with pytest.raises(InvalidOptionError, match="ufactor"):
        topoopt.solve(inst, "partition/metis", ufactor=0)


# ---------------------------------------------------------------------------- iterated search


def test_ils_is_deterministic_for_a_seed_and_never_above_greedy_lowcut() -> None:
    inst = _medium()
    greedy = topoopt.solve(inst, "partition/greedy-lowcut")
    first = topoopt.solve(inst, "partition/ils", seed=5, restarts=3, patience=5)
    second = topoopt.solve(inst, "partition/ils", seed=5, restarts=3, patience=5)
    assert first.solution == second.solution
    assert first.termination is TerminationReason.COMPLETED
    assert first.objective <= greedy.objective


def test_ils_lowers_greedy_lowcuts_cut_on_a_table2_file() -> None:
    """greedy-lowcut's V-cycles end where a second deterministic cycle finds nothing; the
    randomized ones and the restarts go on (``t2-128-0-0``: 6.085 before)."""
    inst = topoopt.load("instances/partition/table2-128/t2-128-0-0.json")
    greedy = topoopt.solve(inst, "partition/greedy-lowcut")
    iterated = topoopt.solve(inst, "partition/ils", seed=0, restarts=2, patience=20)
    assert check(inst, iterated.solution) == []
    assert iterated.objective < greedy.objective


def test_a_randomized_vcycle_never_raises_the_cut() -> None:
    from topoopt.partition.solvers.greedy import Search
    from topoopt.partition.solvers.ils import vcycle

    inst = table2(0, 1, 128)[0]
    arrays = JobArrays.of(inst)
    part = np.array(topoopt.solve(inst, "partition/metis").solution.indices(inst))
    search = Search(lambda: False, swaps=True, max_passes=2)
    rng = np.random.default_rng(1)
    for _ in range(3):
        trial = vcycle(search, arrays, part, rng, 1.0)
        assert arrays.feasible(trial)
        assert arrays.cut(trial) <= arrays.cut(part) + 1e-9
        part = trial


def test_ils_rejects_bad_options() -> None:
    inst = examples()[0]
    for options, field in (
        ({"noise": -0.1}, "noise"),
        ({"noise": "loud"}, "noise"),
        ({"noise": float("nan")}, "noise"),
        ({"patience": -1}, "patience"),
        ({"restarts": 1.5}, "restarts"),
    ):
        with pytest.raises(InvalidOptionError, match=field):
            topoopt.solve(inst, "partition/ils", **options)


# ------------------------------------------------------------------------------------ METIS


def test_metis_repair_when_the_partition_overflows() -> None:
    """Whatever METIS returns (here: everything in one part, or the parts swapped onto clusters
    too small), mapping plus repair give a feasible assignment."""
    inst = _medium()
    arrays = JobArrays.of(inst)
    clusters = np.flatnonzero(arrays.capacity > 0)
    for parts in (
        np.zeros(arrays.n, dtype=np.int64),
        np.arange(arrays.n) % len(clusters),
        (np.arange(arrays.n) * len(clusters)) // arrays.n,
    ):
        part = to_clusters(arrays, parts, clusters, lambda: False)
        assert part is not None and arrays.feasible(part)


@settings(max_examples=30, deadline=None)
@given(instance=packing_instances())
def test_metis_on_tight_capacities(instance: PartitionInstance) -> None:
    """Little or no slack (METIS balances only approximately): still feasible or, when no
    assignment exists, infeasible."""
    result = topoopt.solve(instance, "partition/metis", seed=1)
    if result.status is SolutionStatus.NO_SOLUTION:
        assert _oracle(instance).status is SolutionStatus.NO_SOLUTION
    else:
        assert check(instance, result.solution) == []


def test_metis_mapping_prefers_fit_then_cut() -> None:
    arrays = JobArrays.of(examples()[0])  # capacities 8, 4, 4; w(c1, c2) the smallest
    traffic = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 5.0], [0.0, 5.0, 0.0]])
    mapping = best_mapping(traffic, np.array([8, 2, 2]), np.array([0, 1, 2]), arrays)
    assert mapping[0] == 0  # only c0 holds 8 GPUs
    assert set(mapping[1:].tolist()) == {1, 2}


def test_metis_edge_weights_are_positive_integers() -> None:
    weights = edge_weights(np.array([12.0, 0.0001, 3.0]))
    assert weights.dtype.kind == "i" and (weights >= 1).all() and weights.max() == 10_000


# ------------------------------------------------------------------------------- time limits


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("partition/greedy-lowcut", {}),
        ("partition/genetic", {}),
        ("partition/ils", {}),
        ("partition/metis", {}),
    ],
)
def test_tiny_time_limit_returns_quickly(name: str, options: dict) -> None:
    inst = table2(0, 1, 128)[0]
    started = time.perf_counter()
    result = topoopt.solve(inst, name, time_limit=0.02, **options)
    assert time.perf_counter() - started < 2.0
    assert result.status in (SolutionStatus.FEASIBLE, SolutionStatus.NO_SOLUTION)
    if result.status is SolutionStatus.FEASIBLE:
        assert check(inst, result.solution) == []
    if name in ("partition/genetic", "partition/ils"):
        assert result.termination is TerminationReason.TIME_LIMIT


def test_genetic_honours_a_time_limit_with_many_generations() -> None:
    inst = table2(0, 1, 128)[0]
    result = topoopt.solve(inst, "partition/genetic", time_limit=1.0, generations=10**6)
    assert result.total_s < 3.0
    assert result.termination is TerminationReason.TIME_LIMIT
    assert result.status is SolutionStatus.FEASIBLE
