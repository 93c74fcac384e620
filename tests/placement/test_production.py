"""The production placers as baselines (issue #30): Kueue TAS, Slurm topology/tree and
topology/block, Volcano, KAI — feasible, never better than the oracle, their upstream rules
on hand-made states, and each module's citation of the upstream code."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import HealthCheck, given, settings

import topoopt
from topoopt.core.errors import InvalidInstanceError, UnsupportedInstanceError
from topoopt.core.status import SolutionStatus
from topoopt.placement import Minipod, PlacementInstance, check
from topoopt.placement.generate import tree_instance
from topoopt.placement.instance import Constraints
from topoopt.placement.solvers.kai import kai_nodes
from topoopt.placement.tree import level_scores, objective_key

from .strategies import constrained_tree_instances, small_instances, tree_instances

PRODUCTION = [
    "placement/kueue-best-fit",
    "placement/kueue-least-free",
    "placement/kueue-balanced",
    "placement/slurm-tree-eval",
    "placement/slurm-block",
    "placement/volcano",
    "placement/kai",
]


def _key(instance: PlacementInstance, result: topoopt.Result) -> tuple[float, ...]:
    return objective_key(instance, [s.score for s in level_scores(instance, result.solution)])


def _per_rack(result: topoopt.Result) -> list[int]:
    counts: dict[str, int] = {}
    for row in result.solution.nodes:
        for node in row:
            rack = node.rsplit("-", 1)[0]
            counts[rack] = counts.get(rack, 0) + 1
    return sorted(counts.values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    instance=tree_instances(max_cells=6, max_pods=3, max_groups=2, max_leaves=3, max_free=3)
    | constrained_tree_instances(max_cells=6, max_pods=2, max_groups=2, max_leaves=2)
)
def test_production_placers_are_feasible_and_never_beat_the_oracle(
    instance: PlacementInstance,
) -> None:
    oracle = topoopt.solve(instance, "placement/enumerate")
    for solver in PRODUCTION:
        try:
            result = topoopt.solve(instance, solver)
        except UnsupportedInstanceError:
            continue
        if result.solution is None:  # pending: only when the oracle finds nothing or a rule
            assert result.message, result  # of the placer does not fit (a greedy choice)
            if oracle.solution is None:
                assert result.termination.value in ("infeasible", "completed")
            continue
        assert oracle.solution is not None, (solver, result)
        assert not check(instance, result.solution), (solver, result)
        assert _key(instance, result) >= _key(instance, oracle), solver


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=tree_instances(max_cells=8, max_pods=3, max_groups=3, max_leaves=3, max_free=4))
def test_placement_levels_is_never_worse_than_a_production_placer(
    instance: PlacementInstance,
) -> None:
    """The walk tries the production placers' placements when it is not proven."""
    ours = topoopt.solve(instance, "placement/levels", method="walk")
    for solver in PRODUCTION:
        result = topoopt.solve(instance, solver)
        if result.solution is not None:
            assert _key(instance, ours) <= _key(instance, result), solver


def test_kueue_6554_best_fit_splits_15_1_balanced_and_topoopt_8_8() -> None:
    """Kueue #6554 on the same free-node state: two racks of 15 free nodes, a 16-node job.
    BestFit takes the best domain (15) and 1 more; BalancedPlacement (and placement/levels
    when DP weighs more) split 8:8."""
    inst = tree_instance("kueue-6554", [[[15, 15]]], rows=8, cols=2, alpha=0.8)
    assert _per_rack(topoopt.solve(inst, "placement/kueue-best-fit")) == [1, 15]
    assert _per_rack(topoopt.solve(inst, "placement/kueue-balanced")) == [8, 8]
    levels = topoopt.solve(inst, "placement/levels")
    assert levels.status is SolutionStatus.OPTIMAL and _per_rack(levels) == [8, 8]
    # the score per level shows why: BestFit cuts a DP group and a pipeline across racks
    best_fit = topoopt.solve(inst, "placement/kueue-best-fit")
    assert best_fit.metrics["leaf_score"] > levels.metrics["leaf_score"]


def test_kueue_required_level_and_slices() -> None:
    inst = tree_instance("k", [[[4, 2], [3]], [[4], [2, 2]]], rows=4, cols=2, alpha=0.5,
                         constraints=Constraints(required_level="pod", slice_size=2,
                                                 slice_level="rack"))  # fmt: skip
    result = topoopt.solve(inst, "placement/kueue-best-fit")
    assert result.is_ok and not check(inst, result.solution)
    too_big = tree_instance("k", [[[4, 2], [3]], [[4], [2, 2]]], rows=5, cols=2, alpha=0.5,
                            constraints=Constraints(required_level="group"))  # fmt: skip
    none = topoopt.solve(too_big, "placement/kueue-best-fit")
    assert none.termination.value == "infeasible"
    assert none.message.startswith("constraints.required_level")


def test_kueue_counts_no_pod_on_a_rack_without_free_nodes() -> None:
    """Found with multi-layer slices on the 16,384-node trees: the port counted a rack with
    no free node (a leaf domain without hostnames) as one pod, so Kueue could give it a pod
    and then find no node for it (pending). Group g0 (racks of 0, 1, 2 free nodes) holds 3
    pods, whole 2-slices: 2."""
    inst = tree_instance("empty-rack", [[[0, 1, 2], [4]]], rows=2, cols=2, alpha=0.5,
                         constraints=Constraints(slice_size=2, slice_level="group"))  # fmt: skip
    for solver in ("placement/kueue-best-fit", "placement/kueue-least-free",
                   "placement/kueue-balanced"):  # fmt: skip
        result = topoopt.solve(inst, solver)
        assert result.is_ok and not check(inst, result.solution), (solver, result.message)


def test_kueue_multi_layer_slices_gang_of_gang() -> None:
    """Kueue's multi-layer slices (``podset-slice-required-topology-constraints``): an 8-node
    job in slices of 8 ranks per group, each in slices of 4 ranks per rack. Group g1 (racks
    of 3, 3, 2 free nodes) is Kueue's best fit without the layers; it holds no whole 4-slice,
    so with them the job takes the two racks of 4 of group g0. Kueue's multi-layer port, the
    walk and the oracle keep every slice whole; the walk and the oracle agree."""
    layers = Constraints(slice_layers=[(8, "group"), (4, "rack")])
    racks = [[[4, 4, 1], [3, 3, 2]]]
    inst = tree_instance("gang", racks, rows=4, cols=2, alpha=0.5, constraints=layers)
    fours = {f"n0-0-{k}-{i}" for k in range(2) for i in range(4)}
    for solver in ("placement/kueue-best-fit", "placement/kueue-least-free", "placement/levels"):
        result = topoopt.solve(inst, solver)
        assert result.is_ok and not check(inst, result.solution), (solver, result)
        assert {n for row in result.solution.nodes for n in row} == fours, solver
    oracle = topoopt.solve(inst, "placement/enumerate")
    levels = topoopt.solve(inst, "placement/levels")
    assert levels.status is SolutionStatus.OPTIMAL
    assert _key(inst, levels) == _key(inst, oracle)
    free = tree_instance("free", racks, rows=4, cols=2, alpha=0.5)
    best_fit = topoopt.solve(free, "placement/kueue-best-fit").solution.nodes
    assert {n.rsplit("-", 2)[0] for row in best_fit for n in row} == {"n0-1"}  # group g1


@settings(max_examples=80, deadline=None)
@given(small_instances(max_cells=8, max_pods=5))
def test_slurm_tree_is_eval_nodes_tree_on_minipods(instance: PlacementInstance) -> None:
    """``placement/slurm-tree`` (minipods only) takes the same number of nodes from each
    minipod as the port of Slurm's ``_eval_nodes_topo`` with the minipods as leaf switches
    under one root: best fit when a minipod holds the job, else the largest minipods first
    until one holds the rest, that one by best fit (``_topo_compare_switches``). Only the
    rank order differs: Slurm ranks its node list in node order."""
    ours = topoopt.solve(instance, "placement/slurm-tree")
    slurm = topoopt.solve(instance, "placement/slurm-tree-eval")
    assert slurm.is_ok

    def per_pod(result: topoopt.Result) -> dict[int, int]:
        out: dict[int, int] = {}
        for row in result.solution.matrix:
            for j in row:
                out[j] = out.get(j, 0) + 1
        return out

    assert per_pod(ours) == per_pod(slurm)


def test_slurm_block_on_the_slurm_example() -> None:
    """Slurm's man-page block topology (4 blocks of 32 nodes, BlockSizes=30,120): an
    80-node job in segments of 20 — each segment in one base block."""
    from topoopt.placement.cluster import from_topology
    from topoopt.topology import load_topology, read_free

    topo = load_topology("tests/topology/data/slurm/man-block.conf")
    inst = from_topology(topo, level=0, free=read_free("node[1-20,33-60,70-128]"), dp=40, tp=8,
                         pp=2, alpha=0.5, constraints={"segment": 20, "block": True})  # fmt: skip
    assert inst.block_sizes == (30, 120)
    result = topoopt.solve(inst, "placement/slurm-block")
    assert result.is_ok and not check(inst, result.solution)
    order = result.to_dict()["solution"]["rank_order"]
    per_block: dict[str | None, int] = {}
    for node in order:
        block = topo.switch_of(node, "block")
        per_block[block] = per_block.get(block, 0) + 1
    # free 20, 28, 27, 32: each segment takes the base block with the fewest free nodes
    # that holds 20 (block1, then block3 with 27, block2 with 28, block4)
    assert per_block == {"block1": 20, "block2": 20, "block3": 20, "block4": 20}
    # a segment larger than every block is refused, naming the field
    pods = [
        Minipod.from_leaves(f"b{p}", [(f"r{p}{k}", [f"n{p}{k}-{i}" for i in range(80)])
                                      for k in range(2)])
        for p in range(2)
    ]  # fmt: skip
    with pytest.raises(InvalidInstanceError, match=r"constraints\.segment.*larger than every"):
        PlacementInstance("x", pods, 130, 8, 2, 0.5, block_sizes=(60, 120),
                          constraints={"segment": 130, "block": True})  # fmt: skip


@pytest.mark.parametrize(
    ("module", "cited"),
    [
        ("kueue", ["tas_flavor_snapshot.go", "findLevelWithFitDomains", "sortedDomains",
                   "tas_balanced_placement.go", "selectOptimalDomainSetToFit"]),
        ("slurm", ["eval_nodes_tree.c", "_topo_compare_switches", "eval_nodes_block.c",
                   "_choose_best_bblock", "_get_block_level"]),
        ("volcano", ["allocate.go", "hyperNodeGradientFn", "getSubJobHyperNodeBinPackingScore"]),
        ("kai", ["job_filtering.go", "sortTree", "calculateNodeScores", "reverseLevelOrder"]),
    ],
)  # fmt: skip
def test_each_baseline_module_cites_its_upstream_functions(module: str, cited: list[str]) -> None:
    doc = importlib.import_module(f"topoopt.placement.solvers.{module}").__doc__ or ""
    for name in cited:
        assert name in doc, (module, name)
    assert "How this port reads" in doc


def test_minipod_only_instances_run_every_production_placer() -> None:
    inst = PlacementInstance("flat", [Minipod("a", 5), Minipod("b", 4)], 6, 8, 1, 0.5)
    for solver in PRODUCTION:
        result = topoopt.solve(inst, solver)
        assert result.is_ok and not check(inst, result.solution), solver


def test_kai_scores_nodes_over_every_preferred_domain_of_the_tree() -> None:
    """``calculateNodeScores`` runs on the lowest common domain of the candidate nodes (the
    root), so ``floor(10 (i + 1) / m)`` counts all 40 racks: p1's three racks (sorted first)
    all score 0 and their nodes go in node order. Scored inside the chosen group alone (m = 3)
    they would score 3, 6, 10 and go in reverse."""
    instance = tree_instance("kai", [[[1] * 37], [[1, 1, 1]]], rows=3, cols=1, alpha=0.5)
    assert kai_nodes(instance) == [("n1-0-0-0", 1), ("n1-0-1-0", 1), ("n1-0-2-0", 1)]


def test_volcano_soft_mode_places_task_by_task_from_the_first_node() -> None:
    """Hard mode searches the tiers from the lowest and takes the rack of 4 that holds the job;
    soft mode (a preferred level) has no tier search: its first task takes the first free
    node (a rack of 1), the rest follow it into the nearest rack."""
    free = [[[1, 4]], [[4]]]
    hard = tree_instance("hard", free, rows=4, cols=1, alpha=0.5)
    soft = tree_instance("soft", free, rows=4, cols=1, alpha=0.5,
                         constraints={"preferred_level": "rack"})  # fmt: skip
    hard_result = topoopt.solve(hard, "placement/volcano")
    soft_result = topoopt.solve(soft, "placement/volcano")
    assert hard_result.solution.nodes == tuple((f"n0-0-1-{i}",) for i in range(4))
    assert soft_result.solution.nodes == (("n0-0-0-0",), *((f"n0-0-1-{i}",) for i in range(3)))
    assert not check(soft, soft_result.solution)
    assert soft_result.metrics["leaf_score"] > hard_result.metrics["leaf_score"] == 0
