"""The partition family's instance rules, objective, oracle and MIP (eq. 9)."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.backends import available_backends
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.seeding import make_rng
from topoopt.core.status import SolutionStatus
from topoopt.partition.formulations import cut_mip
from topoopt.partition.generate import examples, job_instance, small, table2
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment, check, evaluate
from topoopt.testing.input_errors import assert_cli_exits_2, assert_load_names, edited, setter

BACKENDS = [b for b in ("highs", "scip") if b in available_backends()]


def tiny() -> dict[str, Any]:
    return {
        "family": "partition",
        "format_version": 1,
        "name": "tiny",
        "clusters": [{"name": "c0", "capacity_gpus": 16}, {"name": "c1", "capacity_gpus": 4}],
        "links": [{"a": "c0", "b": "c1", "bandwidth_gbps": 10.0}],
        "graph": {
            "vertices": [{"name": "s0", "gpus": 8}, {"name": "s1", "gpus": 8}],
            "edges": [{"u": "s0", "v": "s1", "traffic": 2.5}],
        },
    }


# ------------------------------------------------------------------------------ bad input


def _key(part: str) -> int | str:
    return int(part) if part.isdigit() else part


def _broken(path: str, value: Any) -> dict[str, Any]:
    return edited(tiny(), setter(*map(_key, path.split(".")), value=value))


BAD_INPUT = [
    ("links.0.b", "c9", "links[0].b", "unknown cluster 'c9'"),
    ("clusters.1.capacity_gpus", -1, "clusters[1].capacity_gpus", "non-negative"),
    ("graph.edges.0.v", "s7", "graph.edges[0].v", "unknown vertex 's7'"),
    ("graph.edges.0.v", "s0", "graph.edges[0].v", "two vertices"),
    ("graph.edges.0.traffic", -1.0, "graph.edges[0].traffic", "non-negative"),
    ("graph.vertices.0.gpus", 32, "graph.vertices[0].gpus", "largest cluster holds 16"),
    ("graph.vertices.1.gpus", 16, "graph.vertices", "need 24 GPUs but the clusters hold 20"),
    ("links.0.bandwidth_gbps", 0.0, "links[0].bandwidth_gbps", "> 0"),
    ("graph.vertices.1.name", "s0", "graph.vertices[1]", "duplicate name 's0'"),
]


@pytest.mark.parametrize(("path", "value", "field", "rule"), BAD_INPUT)
def test_bad_input_names_the_field(path: str, value: Any, field: str, rule: str) -> None:
    assert_load_names(_broken(path, value), field, rule)


@pytest.mark.parametrize(("path", "value", "field", "rule"), BAD_INPUT)
def test_cli_solve_bad_file_exits_2_with_one_line(
    tmp_path: Path, path: str, value: Any, field: str, rule: str
) -> None:
    assert_cli_exits_2(tmp_path, _broken(path, value), "partition/greedy-lowcut", field, rule)


def test_disconnected_clusters_and_duplicate_edges_are_refused() -> None:
    data = tiny()
    data["clusters"].append({"name": "c2", "capacity_gpus": 8})
    with pytest.raises(InvalidInstanceError, match="not connected"):
        topoopt.load(data)
    data = tiny()
    data["graph"]["edges"].append({"u": "s1", "v": "s0", "traffic": 1.0})
    with pytest.raises(InvalidInstanceError, match=r"graph.edges\[1\]: joins"):
        topoopt.load(data)


def test_cli_exits_2_on_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_broken("graph.edges.0.v", "s7")))
    out = subprocess.run(
        [sys.executable, "-m", "topoopt.cli", "solve", str(path), "--solver", "partition/mip"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2, out.stderr
    assert "graph.edges[0].v: unknown vertex 's7'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_round_trip_and_code_construction() -> None:
    inst = topoopt.load(tiny())
    assert isinstance(inst, PartitionInstance)
    assert topoopt.load(inst.to_dict()) == inst
    for generated in [*examples(), *table2(count=1)]:
        assert PartitionInstance.from_dict(generated.to_dict()) == generated
    with pytest.raises(InvalidInstanceError, match=r"graph.vertices\[0\].gpus"):
        PartitionInstance("x", [("c0", 4)], [], [("s0", 8.5)], [])


# ------------------------------------------------------------------------------- objective


def test_objective_by_hand() -> None:
    """c0 -(10)- c1 -(40)- c2: w(c0, c2) = 1/10 through c1."""
    inst = PartitionInstance(
        "hand",
        [("c0", 8), ("c1", 8), ("c2", 8)],
        [("c0", "c1", 10.0), ("c1", "c2", 40.0)],
        [("a", 8), ("b", 8), ("c", 8)],
        [("a", "b", 2.0), ("b", "c", 4.0), ("a", "c", 1.0)],
    )
    spread = Assignment.of({"a": "c0", "b": "c1", "c": "c2"})
    assert check(inst, spread) == []
    assert evaluate(inst, spread) == pytest.approx(2.0 / 10 + 4.0 / 40 + 1.0 / 10)
    assert check(inst, Assignment.of({"a": "c0", "b": "c0", "c": "c2"})) == [
        "puts 16 GPUs on c0, which holds 8"
    ]


def test_level_steps_sum_to_the_weights() -> None:
    """w(a, b) = sum of the steps of the levels separating a and b (the MIP's cost)."""
    for inst in [*small(seed=3, count=30), *table2(count=1)]:
        graph, steps = inst.graph, cut_mip.level_steps(inst.graph.levels)
        for a, b in itertools.permutations(range(inst.n_clusters), 2):
            separated = sum(
                step
                for step, part in zip(steps, graph.hierarchy, strict=False)
                if not any(a in g and b in g for g in part)
            )
            assert separated == pytest.approx(inst.weights[a, b], rel=1e-12)


# ------------------------------------------------------------------------ oracle and MIP


def _brute_force(inst: PartitionInstance) -> float:
    best = math.inf
    names = inst.graph.clusters
    for combo in itertools.product(range(inst.n_clusters), repeat=inst.n_vertices):
        assignment = Assignment.from_indices(inst, combo)
        if not check(inst, assignment):
            best = min(best, evaluate(inst, assignment))
    del names
    return best


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_oracle_equals_brute_force(seed: int) -> None:
    inst = small(seed=seed, count=1)[0]
    if inst.n_clusters**inst.n_vertices > 5000:
        inst = job_instance(make_rng(seed), "s", stages=2, replicas=2, edges=5, clusters=3)
    result = topoopt.solve(inst, "partition/enumerate")
    expected = _brute_force(inst)
    if math.isinf(expected):
        assert result.status is SolutionStatus.INFEASIBLE
    else:
        assert result.objective == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), symmetry=st.booleans())
def test_mip_equals_oracle(backend: str, seed: int, symmetry: bool) -> None:
    assert_mip_equals_oracle(small(seed=seed, count=1)[0], backend=backend, symmetry=symmetry)


def assert_mip_equals_oracle(inst: PartitionInstance, **options: Any) -> None:
    """``partition/mip`` with ``options`` has the oracle's status and optimum, and a bound
    at most the optimum."""
    oracle = topoopt.solve(inst, "partition/enumerate")
    mip = topoopt.solve(inst, "partition/mip", **options)
    assert mip.status is oracle.status, (mip, oracle)
    if oracle.objective is not None:
        assert mip.objective == pytest.approx(oracle.objective, rel=1e-9, abs=1e-9)
        assert mip.bound <= oracle.objective + 1e-6


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_warm_start_meets_every_constraint_at_the_same_cost(seed: int) -> None:
    """The symmetry renaming of twin clusters keeps the cost and satisfies the model."""
    inst = small(seed=seed, count=1)[0]
    optimum = topoopt.solve(inst, "partition/enumerate")
    if optimum.solution is None:
        return
    model = cut_mip.build(inst)
    cut_mip.warm_start(model, optimum.solution)
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        assert con.lower is None or body >= pyo.value(con.lower) - 1e-9, con.name
        assert con.upper is None or body <= pyo.value(con.upper) + 1e-9, con.name
    assert pyo.value(model.cut) == pytest.approx(optimum.objective, abs=1e-9)
    assert evaluate(inst, cut_mip.extract(model, inst)) == pytest.approx(optimum.objective)


def test_twins_are_interchangeable() -> None:
    """Swapping two twin clusters in any assignment keeps its cost."""
    seen = 0
    for inst in small(seed=11, count=60):
        for a, b in cut_mip.twins(inst):
            seen += 1
            assert inst.clusters[a].capacity_gpus == inst.clusters[b].capacity_gpus
            rng = make_rng(a + 7 * b)
            for _ in range(5):
                where = [int(x) for x in rng.integers(0, inst.n_clusters, inst.n_vertices)]
                swapped = [b if c == a else a if c == b else c for c in where]
                first = evaluate(inst, Assignment.from_indices(inst, where))
                second = evaluate(inst, Assignment.from_indices(inst, swapped))
                assert first == pytest.approx(second)
    assert seen > 0


def test_the_mip_warm_start_is_the_iterated_search_under_a_time_limit() -> None:
    """Under a time limit, on 64 to 127 vertices, ``partition/mip`` starts from
    ``partition/ils`` (seeded with the call's seed, ``best_start``): on ``tpa-64-0-1``, where
    greedy-lowcut's cut is not the lowest known, its restarts find a lower one within the
    limit; without a limit the start is greedy-lowcut's."""
    from topoopt.partition.solution import evaluate
    from topoopt.partition.solvers.mip import PartitionMipSolver

    inst = topoopt.load("instances/partition/tpa-64/tpa-64-0-1.json")
    greedy = topoopt.solve(inst, "partition/greedy-lowcut")
    start = PartitionMipSolver().best_start(inst, 5.0, seed=3)
    assert start is not None
    assert evaluate(inst, start) < greedy.objective
    assert PartitionMipSolver().best_start(inst, None, seed=3) == greedy.solution
