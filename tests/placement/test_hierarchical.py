"""Hierarchical placement (issue #15): node assignments, leaf spreads, ``placement/hierarchical``.

The leaf spreads are recomputed here from node names alone (which leaf of which minipod lists
each node), independently of :mod:`topoopt.placement.levels`.
"""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.errors import InvalidOptionError
from topoopt.placement import Leaf, Minipod, Placement, PlacementInstance, check, rank_order
from topoopt.placement import solution as sol
from topoopt.placement.cluster import from_topology
from topoopt.placement.levels import (
    _branch_and_bound,
    assign_leaves,
    leaf_sizes,
    leaf_spreads,
    score_leaves,
)
from topoopt.topology import Switch, Topology

from .strategies import instances


def _d(k: int) -> int:
    return k if k >= 2 else 0


def _leaf_of(instance: PlacementInstance) -> dict[str, tuple[int, int]]:
    """Node name -> (minipod index, leaf index); a minipod without leaves is one leaf (leaf
    names need not be distinct, so leaves are told apart by position)."""
    out = {}
    for j, pod in enumerate(instance.minipods):
        if pod.leaves:
            for k, leaf in enumerate(pod.leaves):
                out.update(dict.fromkeys(leaf.nodes, (j, k)))
        else:
            out.update(dict.fromkeys(pod.node_names(), (j, -1)))
    return out


def _independent(instance: PlacementInstance, order: list[str]) -> tuple[int, int, float]:
    """Leaf DP / PP spreads and leaf score from a rank order (node of rank c * rows + r)."""
    where = _leaf_of(instance)
    rows, cols = instance.rows, instance.cols
    grid = [[where[order[c * rows + r]] for c in range(cols)] for r in range(rows)]
    dp = _d(max(len({grid[r][c] for r in range(rows)}) for c in range(cols)))
    pp = _d(max(len(set(row)) for row in grid))
    return dp, pp, instance.alpha * dp + instance.beta * pp


@st.composite
def leafy(draw: st.DrawFn, max_cells: int = 12, max_pods: int = 3) -> tuple:
    """An instance whose minipods have 1-3 leaves each, and a feasible minipod matrix."""
    rows = draw(st.integers(1, max_cells))
    cols = draw(st.integers(1, max_cells // rows))
    n = rows * cols
    n_pods = draw(st.integers(1, max_pods))
    pods = []
    names = (f"h{i}" for i in itertools.count())
    for j in range(n_pods):
        sizes = draw(st.lists(st.integers(0, n), min_size=1, max_size=3))
        leaves = [Leaf(f"p{j}l{k}", [next(names) for _ in range(s)]) for k, s in enumerate(sizes)]
        pods.append(Minipod.from_leaves(f"p{j}", leaves))
    short = n - sum(p.free_nodes for p in pods)
    if short > 0:
        pods.append(Minipod.from_leaves("extra", [("xl", [next(names) for _ in range(short)])]))
    inst = PlacementInstance(
        "leafy", pods, dp=rows, tp=8, pp=cols, alpha=draw(st.integers(0, 10)) / 10
    )
    slots = [j for j, pod in enumerate(inst.minipods) for _ in range(pod.free_nodes)]
    perm = draw(st.permutations(slots))
    matrix = [perm[r * cols : (r + 1) * cols] for r in range(rows)]
    return inst, Placement.from_rows(matrix)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(leafy())
def test_leaf_assignment_is_feasible_and_never_worse_than_the_fill(case: tuple) -> None:
    inst, placement = case
    found = assign_leaves(inst, placement)
    assigned = placement.with_nodes(found.nodes)
    assert check(inst, assigned) == []
    order = rank_order(inst, assigned)
    assert len(set(order)) == inst.n_nodes
    # the leaf spreads, recomputed from the names
    dp, pp, score = _independent(inst, order)
    assert (found.score.dp_spread, found.score.pp_spread) == (dp, pp)
    assert math.isclose(leaf_spreads(inst, assigned).score, score)
    fill = _independent(inst, rank_order(inst, placement))
    assert (leaf_spreads(inst, placement).dp_spread, leaf_spreads(inst, placement).pp_spread) == (
        fill[0],
        fill[1],
    )
    assert math.isclose(found.fill.score, fill[2])
    assert score <= fill[2] + 1e-9
    assert score >= found.lower_bound - 1e-9
    # metrics carry them
    metrics = sol.metrics(inst, assigned)
    assert (metrics["leaf_dp_spread"], metrics["leaf_pp_spread"]) == (dp, pp)


def _brute_force(inst: PlacementInstance, placement: Placement) -> float:
    """Least leaf score over every map of cells to leaves of their minipod (capacities kept)."""
    cells = [(r, c) for r in range(inst.rows) for c in range(inst.cols)]
    choices = [range(max(1, len(inst.minipods[placement.matrix[r][c]].leaves))) for r, c in cells]
    best = math.inf
    for pick in itertools.product(*choices):
        load: dict[tuple[int, int], int] = {}
        grid = [[(0, 0)] * inst.cols for _ in range(inst.rows)]
        for (r, c), k in zip(cells, pick, strict=True):
            j = placement.matrix[r][c]
            load[j, k] = load.get((j, k), 0) + 1
            grid[r][c] = (j, k)
        if any(n > len(inst.minipods[j].leaves[k].nodes) for (j, k), n in load.items()):
            continue
        dp = _d(max(len({grid[r][c] for r in range(inst.rows)}) for c in range(inst.cols)))
        pp = _d(max(len(set(row)) for row in grid))
        best = min(best, inst.alpha * dp + inst.beta * pp)
    return best


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(leafy(max_cells=6, max_pods=2))
def test_leaf_step_is_exact_on_tiny_jobs(case: tuple) -> None:
    inst, placement = case
    found = assign_leaves(inst, placement)
    best = _brute_force(inst, placement)
    assert found.proven
    assert math.isclose(found.score.score, best, abs_tol=1e-9)
    assert found.lower_bound <= best + 1e-9
    # the branch and bound alone, from no incumbent, finds the same optimum
    matrix = placement.matrix
    sizes = {j: leaf_sizes(inst, j) for row in matrix for j in row}
    leaves, complete = _branch_and_bound(
        inst, matrix, sizes, (math.inf, 10**9), lambda: False, 10**7
    )
    assert complete and leaves is not None
    grid = [list(zip(row, loc, strict=True)) for row, loc in zip(matrix, leaves, strict=True)]
    assert math.isclose(score_leaves(inst, grid).score, best, abs_tol=1e-9)


def test_branch_and_bound_beats_the_constructions_when_they_miss() -> None:
    """Forcing the search (no construction accepted as optimal) still gives the brute force
    optimum, and a search stopped by its node budget says so."""
    pod = Minipod.from_leaves("a", [("l0", ["a0", "a1", "a2"]), ("l1", ["b0", "b1", "b2"])])
    inst = PlacementInstance("x", [pod], dp=3, tp=8, pp=2, alpha=0.5)
    placement = Placement(((0, 0), (0, 0), (0, 0)))
    found = assign_leaves(inst, placement)
    assert found.proven and math.isclose(found.score.score, _brute_force(inst, placement))
    stopped = assign_leaves(inst, placement, exact_nodes=1)
    assert stopped.score.score >= found.score.score


def _three_levels() -> tuple[Topology, set[str]]:
    pods = []
    for p in range(3):
        leaves = [
            Switch(f"leaf{p}{k}", nodes=tuple(f"n{p}{k}{i}" for i in range(4))) for k in range(3)
        ]
        pods.append(Switch(f"pod{p}", children=tuple(leaves)))
    topo = Topology((Switch("core", children=tuple(pods)),), default_gpus=8)
    free = {n for n in topo.nodes if not n.endswith("3") or n.startswith("n0")}
    return topo, free


def test_hierarchical_solver_keeps_the_objective_and_lowers_the_leaf_score() -> None:
    topo, free = _three_levels()
    inst = from_topology(topo, level=1, free=free, dp=6, tp=8, pp=4, alpha=0.3)
    flat = topoopt.solve(inst, "placement/exact-mip")
    deep = topoopt.solve(inst, "placement/hierarchical")
    assert deep.status.label == "optimal" and deep.objective == flat.objective
    assert deep.solution.matrix == flat.solution.matrix
    assert deep.leaf_score <= flat.leaf_score
    assert deep.leaf_dp_spread >= deep.dp_spread and deep.leaf_pp_spread >= deep.pp_spread
    data = deep.to_dict()
    assert data["leaf_score"] == deep.leaf_score
    nodes = data["solution"]["nodes"]
    order = data["solution"]["rank_order"]
    assert order == [nodes[r][c] for c in range(inst.cols) for r in range(inst.rows)]
    assert set(order) <= free and len(set(order)) == inst.n_nodes
    assert _independent(inst, order)[2] == deep.leaf_score
    back = sol.from_dict(inst, json.loads(json.dumps(data["solution"])))
    assert back == deep.solution
    assert "leaf level" in deep.message and "rank-order fill" in deep.message
    assert "leaf level (node assignment)" in sol.describe(inst, deep.solution)


def test_without_leaves_there_are_no_leaf_metrics() -> None:
    inst = PlacementInstance("flat", [4, 4], dp=4, tp=8, pp=2, alpha=0.5)
    result = topoopt.solve(inst, "placement/hierarchical")
    assert result.solution.nodes is None and "leaf_score" not in result.metrics
    assert math.isnan(result.leaf_dp_spread)
    assert result.objective == topoopt.solve(inst, "placement/exact-mip").objective


def test_any_top_solver_and_option_errors() -> None:
    topo, free = _three_levels()
    inst = from_topology(topo, level=1, free=free, dp=6, tp=8, pp=4, alpha=0.7)
    packed = topoopt.solve(inst, "placement/gpu-packing")
    deep = topoopt.solve(inst, "placement/hierarchical", top="gpu-packing")
    assert deep.objective == packed.objective and deep.status.label == "feasible"
    assert deep.leaf_score <= packed.leaf_score
    for bad in ({"top": "placement/hierarchical"}, {"top_share": 0}, {"top_share": True}):
        with pytest.raises(InvalidOptionError):
            topoopt.solve(inst, "placement/hierarchical", **bad)


def test_check_refuses_bad_node_assignments() -> None:
    pod_a = Minipod.from_leaves("a", [("la", ["a0", "a1"])])
    pod_b = Minipod.from_leaves("b", [("lb", ["b0", "b1"])])
    inst = PlacementInstance("x", [pod_a, pod_b], dp=2, tp=8, pp=1, alpha=0.5)
    good = Placement(((0,), (1,)), (("a0",), ("b1",)))
    assert check(inst, good) == []
    assert rank_order(inst, good) == ["a0", "b1"]
    assert "not a free node of minipod 'a'" in check(inst, good.with_nodes([["b0"], ["b1"]]))[0]
    assert "like cell (0, 0)" in check(inst, Placement(((0,), (0,)), (("a0",), ("a0",))))[0]
    assert "must be 2 x 1" in check(inst, good.with_nodes([["a0"]]))[0]
    with pytest.raises(Exception, match=r"solution\.nodes"):
        sol.from_dict(inst, {"matrix": [[0], [1]], "nodes": [["a0", 3]]})
    assert sol.from_dict(inst, sol.to_dict(inst, good)) == good


def test_cli_hostfile_follows_the_leaf_step(tmp_path) -> None:
    """``topoopt solve --solver hierarchical --hostfile`` writes the node assignment in rank
    order, on the 256-node Slurm example of docs/scheduler.md."""
    from click.testing import CliRunner

    from topoopt.cli import main
    from topoopt.topology import load_topology, read_free

    root = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "slurm"
    free = read_free(f"@{root / 'sinfo.txt'}")
    inst = from_topology(
        load_topology(root / "topology.conf"), level=1, free=free, dp=16, tp=8, pp=4, alpha=0.5
    )
    path = topoopt.save(inst, tmp_path / "job.json")
    hostfile = tmp_path / "hosts"
    out = CliRunner().invoke(
        main, ["solve", str(path), "-s", "hierarchical", "--hostfile", str(hostfile)]
    )
    assert out.exit_code == 0, out.output
    hosts = hostfile.read_text().splitlines()
    result = topoopt.solve(inst, "placement/hierarchical")
    assert hosts == rank_order(inst, result.solution)
    assert result.solution.nodes is not None and set(hosts) <= free
    assert _independent(inst, hosts)[2] == result.leaf_score


def test_time_limit_with_the_branch_and_bound() -> None:
    """A 48-node job whose leaf step searches: the whole call stays within its limit."""
    pods = [
        Minipod.from_leaves(
            f"p{j}", [(f"l{j}{k}", [f"h{j}{k}{i}" for i in range(5)]) for k in range(5)]
        )
        for j in range(2)
    ]
    inst = PlacementInstance("bb", pods, dp=12, tp=8, pp=4, alpha=0.5)
    result = topoopt.solve(inst, "placement/hierarchical", time_limit=0.5)
    assert result.is_ok and result.total_s < 0.5 + 0.3
    assert check(inst, result.solution) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(leaves=True))
def test_solver_on_any_instance_with_leaves(inst: PlacementInstance) -> None:
    """Any instance (names of any text, some minipods without leaves): feasible, the exact
    objective, a leaf score no worse than exact-mip's fill, and a JSON round trip."""
    flat = topoopt.solve(inst, "placement/exact-mip")
    deep = topoopt.solve(inst, "placement/hierarchical")
    assert deep.is_ok and check(inst, deep.solution) == []
    assert deep.objective == flat.objective
    assert deep.leaf_score <= flat.leaf_score + 1e-9
    order = deep.to_dict()["solution"]["rank_order"]
    assert math.isclose(_independent(inst, order)[2], deep.leaf_score, abs_tol=1e-9)
    assert sol.from_dict(inst, json.loads(json.dumps(sol.to_dict(inst, deep.solution)))) == (
        deep.solution
    )


def test_leaf_level_picks_the_racks_of_a_deeper_tree() -> None:
    """A 4-level tree (core, pods, rows, racks): minipods are the pods, leaves the racks two
    levels down; a branch ending above the rack level gives its lowest switch."""
    racks = lambda p, q: tuple(  # noqa: E731
        Switch(f"rack{p}{q}{k}", nodes=tuple(f"n{p}{q}{k}{i}" for i in range(2))) for k in range(2)
    )
    pods = [
        Switch(
            f"pod{p}", children=tuple(Switch(f"row{p}{q}", children=racks(p, q)) for q in range(2))
        )
        for p in range(2)
    ]
    short = Switch("pod9", children=(Switch("row90", nodes=("m0", "m1")),))
    topo = Topology((Switch("core", children=(*pods, short)),), default_gpus=8)
    free = set(topo.nodes)
    inst = from_topology(topo, level=1, leaf_level=3, free=free, dp=4, tp=8, pp=2, alpha=0.5)
    assert [leaf.name for leaf in inst.minipods[0].leaves] == [
        "rack000", "rack001", "rack010", "rack011"
    ]  # fmt: skip
    assert inst.minipods[2].leaves == (Leaf("row90", ("m0", "m1"), ("row90",)),)
    default = from_topology(topo, level=1, free=free, dp=4, tp=8, pp=2, alpha=0.5)
    assert [leaf.name for leaf in default.minipods[0].leaves] == ["row00", "row01"]
    result = topoopt.solve(inst, "placement/hierarchical")
    assert result.is_ok and result.leaf_score <= topoopt.solve(inst, "exact-mip").leaf_score
    with pytest.raises(Exception, match="leaf_level"):
        from_topology(topo, level=1, leaf_level=1, free=free, dp=4, tp=8, pp=2, alpha=0.5)
