"""SpiderFlow Fig. 2 / Table 1: a task of 16 GPUs arriving at cluster ``a``; ``a(4), g(12)`` is
the best of the three trajectories and the unique optimum."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from click.testing import CliRunner

import topoopt
from topoopt.cli import main
from topoopt.clusterselect import Selection, check, evaluate, key
from topoopt.clusterselect.generate import fig2
from topoopt.core.backends import available_backends
from topoopt.core.result import clean
from topoopt.core.status import SolutionStatus

BEST = {"a": 4, "g": 12}


@pytest.fixture(scope="module")
def inst():
    return fig2()


def test_table_1_trajectories(inst) -> None:
    crawl = key(inst, ["a", "b", "c", "d"])
    via_e = key(inst, ["a", "e"])
    via_g = key(inst, ["a", "g"])
    assert crawl.clusters == 4
    assert (via_e.clusters, via_e.latency_ms) == (2, 7.0)
    assert (via_g.clusters, via_g.latency_ms) == (2, 1.0)
    assert via_g.bottleneck_gbps == 100.0 and via_g.rank == 0  # the widest level
    assert via_e.bottleneck_gbps == 10.0
    trajectories = [{"a": 4, "b": 4, "c": 4, "d": 4}, {"a": 4, "e": 12}, BEST]
    for take in trajectories:
        assert check(inst, Selection.of(take)) == []
    values = [evaluate(inst, Selection.of(take)) for take in trajectories]
    assert values[0] > values[1] > values[2]  # Table 1's order: g is the best
    assert [math.floor(v) for v in values] == [4, 2, 2]


def test_a_g_is_the_unique_best_set_of_clusters(inst) -> None:
    free = dict(zip(inst.graph.clusters, inst.free, strict=True))
    feasible = [
        s
        for k in range(1, inst.n_clusters + 1)
        for s in itertools.combinations(inst.graph.clusters, k)
        if sum(free[c] for c in s) >= inst.demand
    ]
    keys = {s: key(inst, s) for s in feasible}
    best = min(keys.values(), key=lambda k: (k.clusters, k.rank, k.latency_ms))
    winners = [s for s, k in keys.items() if (k.clusters, k.rank, k.latency_ms) == (2, 0, 1.0)]
    assert winners == [("a", "g")]
    assert (best.clusters, best.rank, best.latency_ms) == (2, 0, 1.0)
    objectives = sorted(k.objective for k in keys.values())
    assert objectives[0] == keys["a", "g"].objective < objectives[1]  # the scalar agrees


def test_oracle_finds_a_g(inst) -> None:
    result = topoopt.solve(inst, "clusterselect/enumerate")
    assert result.status is SolutionStatus.OPTIMAL
    assert result.solution.as_dict() == BEST
    assert result.objective == clean(evaluate(inst, Selection.of(BEST)))
    assert result.metrics["clusters"] == 2 and result.metrics["latency_ms"] == 1.0


@pytest.mark.parametrize("backend", available_backends())
def test_mip_finds_a_g_on_every_backend(inst, backend: str) -> None:
    result = topoopt.solve(inst, "clusterselect/mip", backend=backend)
    assert result.status is SolutionStatus.OPTIMAL, result
    assert result.solution.as_dict() == BEST
    assert result.objective == pytest.approx(evaluate(inst, Selection.of(BEST)), abs=1e-12)
    assert result.bound == pytest.approx(result.objective, abs=1e-9)


@pytest.mark.parametrize("score", ["auto", "incident", "source"])
def test_spinsearch_chooses_a_g(inst, score: str) -> None:
    result = topoopt.solve(inst, "clusterselect/spinsearch", score=score)
    assert result.solution.as_dict() == BEST
    assert "hop expansion from a" in result.message  # no cluster holds 16 GPUs alone


def test_opportunistic_chooses_a_g(inst) -> None:
    # incident bandwidths (eq. 2): a 150, g 105, b 80, c 80, ...: a then g hold the task
    assert inst.graph.incident_bandwidth() == [150.0, 80.0, 80.0, 60.0, 20.0, 35.0, 105.0]
    result = topoopt.solve(inst, "clusterselect/opportunistic")
    assert result.solution.as_dict() == BEST


def test_single_cluster_has_no_solution_and_says_why(inst) -> None:
    result = topoopt.solve(inst, "clusterselect/single-cluster")
    assert result.status is SolutionStatus.NO_SOLUTION
    assert result.solution is None and result.objective is None
    assert result.message == "no cluster has 16 free GPUs (the most is 12); the task waits"


def test_cli_solve_prints_the_selection(inst, tmp_path) -> None:
    path = str(topoopt.save(inst, tmp_path / "fig2.json"))
    out = CliRunner().invoke(main, ["solve", path, "-s", "clusterselect/spinsearch"])
    assert out.exit_code == 0, (out.stdout, out.stderr)
    assert "a: 4 of 4 free GPUs" in out.stdout
    assert "g: 12 of 12 free GPUs" in out.stdout
    assert "K = 2 clusters, bottleneck 100 Gb/s, total pairwise latency 1 ms" in out.stdout
    out = CliRunner().invoke(main, ["solve", path, "-s", "clusterselect/enumerate", "--json"])
    assert out.exit_code == 0, (out.stdout, out.stderr)
    data = json.loads(out.stdout)
    assert data["status"] == "optimal"
    assert data["solution"] == {"take": BEST}
    assert (data["clusters"], data["bottleneck_gbps"], data["latency_ms"]) == (2, 100, 1)


def test_cli_single_cluster_exits_1_with_the_reason(inst, tmp_path) -> None:
    path = str(topoopt.save(inst, tmp_path / "fig2.json"))
    out = CliRunner().invoke(main, ["solve", path, "-s", "clusterselect/single-cluster"])
    assert out.exit_code == 1
    assert out.stderr.count("\n") == 1
    assert "no cluster has 16 free GPUs" in out.stderr
