"""The mixed-size suites: ``parallelconfig``'s ``mixed`` generator and partition's
``tpa-64-mixed`` (issue #25: clusters of nodes of 2 to 8 GPUs), whose shipped files are the
generated suite and whose clusters ``parallelconfig/mip`` configures with a proof."""

from __future__ import annotations

from pathlib import Path

import pytest

import topoopt
from topoopt.core.seeding import make_rng
from topoopt.core.status import SolutionStatus
from topoopt.parallelconfig import ParallelConfigInstance
from topoopt.parallelconfig.generate import mixed, transformer
from topoopt.partition.generate import tpa_64_mixed
from topoopt.partition.intra import sub_instances
from topoopt.testing.slow import measure

SHIPPED = Path(__file__).resolve().parents[2] / "instances" / "partition" / "tpa-64-mixed"


def test_mixed_suite_draws_mixed_nodes_and_is_deterministic() -> None:
    suite = mixed(seed=3, count=12)
    assert [x.to_dict() for x in suite] == [x.to_dict() for x in mixed(seed=3, count=12)]
    for inst in suite:
        assert 2 <= inst.n_nodes <= 16
        assert all(2 <= g <= 8 for g in inst.capacities)
    assert len({g for inst in suite for g in inst.capacities}) > 3


def test_shipped_tpa_64_mixed_files_are_the_generated_suite() -> None:
    generated = {inst.name: inst for inst in tpa_64_mixed(seed=0)}
    files = sorted(SHIPPED.glob("*.json"))
    assert len(files) == len(generated)
    for path in files:
        loaded = topoopt.load(path)
        assert loaded.has_intra and loaded == generated[loaded.name]
        sizes = {n.gpus for c in loaded.clusters for n in c.nodes}
        assert len(sizes) > 2 and min(sizes) >= 2 and max(sizes) <= 8


def test_tpa_64_mixed_holds_the_job_on_every_seed() -> None:
    """Seed 13 raised ``ValueError: high <= 0``: every cluster had its 8 nodes and the GPUs
    were still short of 1.25 x 128, with no cluster left to add a node to. A node then grows.
    """
    for seed in range(40):
        for inst in tpa_64_mixed(seed=seed, count=2):
            assert inst.total_capacity >= 160, (seed, inst.name)
            for cluster in inst.clusters:
                assert 2 <= len(cluster.nodes) <= 8
                assert all(2 <= node.gpus <= 8 for node in cluster.nodes)


def _heuristic_ilp_proves_every_cluster(index: int) -> None:
    inst = tpa_64_mixed(seed=0)[index]
    result = topoopt.solve(inst, "partition/heuristic-ilp")
    assert result.is_ok, result.message
    subs = sub_instances(inst, result.solution.with_configs({}))
    assert subs, "the job is placed on some clusters"
    for cluster, sub in subs.items():
        assert f"{cluster}: (d, p)" in result.message
        config = topoopt.solve(sub, "parallelconfig/mip")
        assert config.status is SolutionStatus.OPTIMAL, (cluster, config.message)
        assert f"{cluster}: (d, p) = ({config.d:g}, {config.p:g})" in result.message
    notes = [part for part in result.message.split("; ") if ": (d, p)" in part]
    assert notes and all(note.endswith("optimal") for note in notes), result.message


def test_heuristic_ilp_proves_every_cluster_of_a_mixed_tpa_64_job() -> None:
    _heuristic_ilp_proves_every_cluster(2)


@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 1])
def test_heuristic_ilp_proves_every_cluster_of_the_other_mixed_tpa_64_jobs(index: int) -> None:
    _heuristic_ilp_proves_every_cluster(index)


def ten_times() -> list[ParallelConfigInstance]:
    """10× the largest generated instances: ``scaling``'s 128 nodes of 8 GPUs and ``mixed``'s
    160 nodes, each times ten (the 6.7B model; a 96-layer model with 512 micro-batches, 22,108
    configurations)."""
    rng = make_rng(11)
    nodes = [(f"n{i}", int(rng.integers(2, 9))) for i in range(1600)]
    return [
        ParallelConfigInstance(
            "scaling-10x", [(f"n{i}", 8) for i in range(1280)], 2400.0, 200.0, transformer(32, 4096)
        ),
        ParallelConfigInstance(
            "mixed-10x", nodes, 2400.0, 200.0, transformer(96, 4096, micro_batches=512)
        ),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["parallelconfig/mip", "parallelconfig/greedy"])
def test_ten_times_larger_instances_end_within_the_time_limit(solver: str) -> None:
    for inst in ten_times():
        m = measure(solver, inst, time_limit=1.0)
        assert m.within, (inst.name, m.wall_s, m.result)
        assert m.result.status >= SolutionStatus.FEASIBLE, m.result
    refused = topoopt.get_solver("parallelconfig/paper-mip").unsupported_reason(ten_times()[0])
    assert refused is not None and "exceed the paper ILP's 1024" in refused
