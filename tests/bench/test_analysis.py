"""The report's numbers, computed by pure functions on hand-made records."""

from __future__ import annotations

import math

import pytest

from bench.factories import rec
from topoopt.bench import analysis as an

# Instance "a": optimum 1.0 proven by the oracle. Instance "b": nobody proves anything,
# best found 2.0. "heur" is a heuristic, "mip" an exact solver that times out on "b".
RECORDS = [
    rec("a", "enumerate", 1.0, status="optimal", total_s=4.0),
    rec("a", "heur", 1.5, total_s=0.01),
    rec("a", "mip", 1.0, status="optimal", total_s=2.0, backend="highs"),
    rec("b", "enumerate", None, termination="timeout", total_s=82.0),
    rec("b", "heur", 2.0, total_s=0.02),
    rec("b", "mip", 3.0, termination="time_limit", total_s=60.3, backend="highs"),
]


def test_best_known_prefers_nothing_but_the_best_and_says_if_it_is_proven() -> None:
    best = an.best_known(RECORDS)
    assert best == {
        ("placement", "a", "hash-a"): an.BestKnown(1.0, proven=True),
        ("placement", "b", "hash-b"): an.BestKnown(2.0, proven=False),
    }


def test_best_known_follows_the_sense() -> None:
    records = [rec("x", "s1", 90.0, family="gpuselect"), rec("x", "s2", 120.0, family="gpuselect")]
    assert an.best_known(records)[("gpuselect", "x", "hash-x")].value == 120.0


def test_a_wrong_optimality_claim_is_reported() -> None:
    records = [rec("a", "mip", 2.0, status="optimal"), rec("a", "heur", 1.0)]
    beaten = an.beaten_optima(records, an.best_known(records))
    assert [r["solver"] for r in beaten] == ["placement/mip"]


@pytest.mark.parametrize(
    ("objective", "best", "gap"),
    [
        (1.0, 1.0, 0.0),
        (1.5, 1.0, 1 / 3),
        (3.0, 2.0, 1 / 3),
        (90.0, 120.0, 0.25),
        (1.0, 0.0, 1.0),
        (-1.0, 1.0, 1.0),
    ],
)
def test_primal_gap(objective: float, best: float, gap: float) -> None:
    assert an.primal_gap(objective, best) == pytest.approx(gap)


def test_unfinished_runs_are_charged_the_time_limit() -> None:
    assert [an.charged_time(r) for r in RECORDS] == [4.0, 0.01, 2.0, 60.0, 0.02, 60.0]


def test_solver_table() -> None:
    best = an.best_known(RECORDS)
    rows = {r.solver: r for r in an.solver_table(RECORDS, best, shift=1.0)}
    assert list(rows) == ["heur", "mip[highs]", "enumerate"]  # fewest failures, then gap

    heur = rows["heur"]
    assert (heur.runs, heur.optimal, heur.feasible, heur.failed, heur.time_limit) == (2, 0, 2, 0, 0)
    assert heur.at_best == 1
    assert heur.mean_gap == pytest.approx((1 / 3 + 0) / 2)
    assert heur.max_gap == pytest.approx(1 / 3)
    assert heur.sgm_time == pytest.approx(math.sqrt(1.01 * 1.02) - 1)

    mip = rows["mip[highs]"]
    assert (mip.optimal, mip.feasible, mip.failed, mip.time_limit, mip.at_best) == (1, 1, 0, 1, 1)
    assert mip.sgm_time == pytest.approx(math.sqrt(3.0 * 61.0) - 1)

    oracle = rows["enumerate"]
    assert (oracle.optimal, oracle.failed, oracle.time_limit) == (1, 1, 1)
    assert oracle.mean_gap == 0.0 and oracle.max_gap == 0.0
    assert oracle.sgm_time == pytest.approx(math.sqrt(5.0 * 61.0) - 1)


def test_the_shift_is_applied() -> None:
    assert an.shifted_geometric_mean([1.0, 100.0], shift=0.0) == pytest.approx(10.0)
    assert an.shifted_geometric_mean([1.0, 100.0], shift=10.0) == pytest.approx(
        math.sqrt(11 * 110) - 10
    )
    assert math.isnan(an.shifted_geometric_mean([], shift=1.0))


def test_instance_cells_average_seeds_and_count_failures() -> None:
    records = [
        rec("a", "rand", 2.0, seed=0, total_s=1.0),
        rec("a", "rand", 4.0, seed=1, total_s=3.0),
        rec("a", "rand", None, seed=2, termination="crashed", total_s=5.0),
        rec("a", "oracle", None, termination="timeout"),
    ]
    cells = an.instance_cells(records)[("placement", "a", "hash-a")]
    assert cells["rand"] == an.Cell(
        objective=3.0, time=3.0, runs=3, failed=1, optimal=False, time_limit=0, outcome="crashed"
    )
    assert cells["oracle"].objective is None and cells["oracle"].outcome == "timeout"


def test_performance_profile_counts_only_runs_reaching_the_best_known() -> None:
    profile = an.performance_profile(RECORDS, an.best_known(RECORDS))
    # Problems: a (best 1.0: mip at 2 s, enumerate at 4 s) and b (best 2.0: heur at 0.02 s).
    assert profile["mip[highs]"] == [(1.0, 0.5)]
    assert profile["enumerate"] == [(1.0, 0.0), (2.0, 0.5)]
    assert profile["heur"] == [(1.0, 0.5)]


def test_gap_distribution_counts_failures_as_gap_one() -> None:
    gaps = an.gap_distribution(RECORDS, an.best_known(RECORDS))
    assert gaps["enumerate"] == [0.0, 1.0]
    assert gaps["mip[highs]"] == pytest.approx([0.0, 1 / 3])


def test_time_vs_size_and_the_size_figure() -> None:
    records = [
        rec("a", "s", 1.0, size={"nodes": 12, "rows": 6}, total_s=0.5),
        rec("b", "s", None, size={"nodes": 368, "rows": 46}),
    ]
    assert an.size_figure(records, "rows") == "rows"
    assert an.size_figure(records, "missing") == "nodes"
    assert an.time_vs_size(records, "nodes") == {"s": [(12.0, 0.5)]}


def test_settings_and_environment() -> None:
    records = [rec("a", "s", 1.0, seed=1, repeat=2), rec("a", "s", 1.0, seed=0)]
    assert an.settings(records)["seeds"] == ["0", "1"]
    assert an.settings(records)["repeats"] == ["3"]
    assert an.distinct_values(records, "host") == {"cores: 2": 2, "cpu: test cpu": 2}


def test_failures_are_sorted_by_instance_and_solver() -> None:
    assert [(r["instance"], r["solver"]) for r in an.failures(RECORDS)] == [
        ("b", "placement/enumerate")
    ]
