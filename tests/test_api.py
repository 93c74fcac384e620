"""The public Python API: load/save/solve/solvers_for, Result, errors."""

from __future__ import annotations

import json
import math

import pytest

import topoopt
from topoopt.core.errors import InvalidOptionError, UnknownSolverError
from topoopt.core.family import Sense
from topoopt.core.result import RESULT_JSON_KEYS, number_from_json, relative_gap
from topoopt.placement.generate import examples

INSTANCE = examples()[0]


def test_solve_returns_a_checked_result_with_metrics():
    result = topoopt.solve(INSTANCE, "placement/exact-mip", backend="highs", time_limit=30, seed=1)
    assert result.status is topoopt.SolutionStatus.OPTIMAL
    assert result.termination is topoopt.TerminationReason.OPTIMAL
    assert result.solver == "placement/exact-mip" and result.backend == "highs"
    assert result.gap == 0 and result.bound == pytest.approx(result.objective)
    assert {"dp_spread", "pp_spread"} <= set(result.metrics)
    assert result.dp_spread == result.metrics["dp_spread"]
    assert result.total_s >= result.solve_s >= 0


def test_result_to_dict_is_the_cli_json():
    data = topoopt.solve(INSTANCE, "placement/best-fit").to_dict()
    assert RESULT_JSON_KEYS | {"dp_spread", "pp_spread"} <= set(data)
    assert data["status"] == "feasible" and data["backend"] is None
    # no proof: the bound is -inf and the gap inf, written as the strings of JSON_INFINITY
    assert data["bound"] == "-inf" and data["gap"] == "inf"
    assert number_from_json(data["bound"]) == -math.inf
    assert data["solution"]["matrix"]
    json.dumps(data, allow_nan=False)


def test_solve_accepts_paths_and_dicts(tmp_path):
    path = topoopt.save(INSTANCE, tmp_path / "i.json")
    assert topoopt.solve(path, "placement/gpu-packing").is_ok
    assert topoopt.solve(INSTANCE.to_dict(), "placement/gpu-packing").is_ok


def test_solvers_for_lists_capabilities_from_the_registry():
    infos = {info.name: info for info in topoopt.solvers_for("placement")}
    for name in (
        "placement/coarse-mip",
        "placement/exact-mip",
        "placement/best-fit",
        "placement/random-fit",
        "placement/gpu-packing",
        "placement/topo-aware",
        "placement/enumerate",
        "placement/slurm-tree",
        "placement/koordinator",
    ):
        assert name in infos
    assert infos["placement/exact-mip"].exact and infos["placement/exact-mip"].gives_bound
    assert "highs" in infos["placement/exact-mip"].backends
    assert infos["placement/coarse-mip"].options == {"unit": "pp"}
    assert infos["placement/random-fit"].stochastic


def test_errors_are_clear():
    with pytest.raises(UnknownSolverError, match="unknown solver 'placement/nope'"):
        topoopt.solve(INSTANCE, "placement/nope")
    with pytest.raises(InvalidOptionError, match="unknown option"):
        topoopt.solve(INSTANCE, "placement/coarse-mip", flavour="x")
    with pytest.raises(InvalidOptionError, match="unit"):
        topoopt.solve(INSTANCE, "placement/coarse-mip", unit="rows")
    with pytest.raises(InvalidOptionError, match="time_limit"):
        topoopt.solve(INSTANCE, "placement/best-fit", time_limit=-1)
    with pytest.raises(InvalidOptionError, match="seed"):
        topoopt.solve(INSTANCE, "placement/random-fit", seed=-3)
    with pytest.raises(topoopt.BackendUnavailableError, match="unknown MIP backend"):
        topoopt.solve(INSTANCE, "placement/exact-mip", backend="cplex")


def test_seed_makes_stochastic_solvers_reproducible():
    a = topoopt.solve(INSTANCE, "placement/random-fit", seed=5).solution
    assert a == topoopt.solve(INSTANCE, "placement/random-fit", seed=5).solution


def test_relative_gap_conventions():
    assert relative_gap(None, 1.0, Sense.MINIMIZE) == math.inf
    assert relative_gap(10.0, 12.0, Sense.MAXIMIZE) == pytest.approx(0.2)
    assert relative_gap(1.0, 1.0 + 1e-12, Sense.MINIMIZE) == 0.0


def test_every_family_tags_its_examples():
    """Tags are plain strings (they go into every benchmark record)."""
    for name in topoopt.families():
        family = topoopt.get_family(name)
        for instance in family.examples():
            tags = family.tags(instance)
            assert tags and all(isinstance(k, str) and isinstance(v, str) for k, v in tags.items())
