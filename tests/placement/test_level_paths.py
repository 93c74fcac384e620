"""The levels between the minipods and the leaves (issue #15): leaf paths and the DP/PP spreads
at every level.

The intermediate spreads are recomputed here from the topology alone
(``Topology.switch_of(node, depth)``) and the result's JSON rank order, independently of
:mod:`topoopt.placement.levels`.
"""

from __future__ import annotations

import itertools
import json

import pytest

import topoopt
from topoopt.core.errors import InvalidInstanceError
from topoopt.placement import Leaf, Minipod, Placement, PlacementInstance
from topoopt.placement.cluster import from_topology
from topoopt.placement.levels import path_spreads
from topoopt.topology import Switch, Topology


def _d(k: int) -> int:
    return k if k >= 2 else 0


def _tree() -> Topology:
    """core -> 2 pods -> 2 rows -> 3 racks -> 2 nodes (depths 0..3, nodes below)."""
    pods = tuple(
        Switch(
            f"pod{p}",
            children=tuple(
                Switch(
                    f"row{p}{q}",
                    children=tuple(
                        Switch(f"rack{p}{q}{k}", nodes=tuple(f"n{p}{q}{k}{i}" for i in range(2)))
                        for k in range(3)
                    ),
                )
                for q in range(2)
            ),
        )
        for p in range(2)
    )
    return Topology((Switch("core", children=pods),), default_gpus=8)


# a free set that leaves rows of unequal room, so the spreads below the minipods differ
FREE = {f"n{p}{q}{k}{i}" for p in range(2) for q in range(2) for k in range(3) for i in range(2)}
FREE -= {"n0000", "n0001", "n0010", "n1120", "n1121"}


def _independent(
    topo: Topology, level: int, inst: PlacementInstance, result: topoopt.Result
) -> dict[str, float]:
    """``level<i>_dp_spread`` / ``level<i>_pp_spread`` from the JSON rank order and the
    topology's switch of every node ``i`` levels below the minipods (above the racks)."""
    order = json.loads(json.dumps(result.to_dict()))["solution"]["rank_order"]
    rows, cols = inst.rows, inst.cols
    racks = topo.level(-1)
    out = {}
    for i in range(1, racks - level):
        grid = [
            [topo.switch_of(order[c * rows + r], level + i) for c in range(cols)]
            for r in range(rows)
        ]
        dp = _d(max(len({grid[r][c] for r in range(rows)}) for c in range(cols)))
        pp = _d(max(len(set(row)) for row in grid))
        out[f"level{i}_dp_spread"] = float(dp)
        out[f"level{i}_pp_spread"] = float(pp)
    return out


def _levels(metrics: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in metrics.items() if k.startswith("level") and k.endswith("_spread")}


@pytest.mark.parametrize(("level", "paths"), [(0, 2), (1, 1)])
def test_from_topology_fills_the_paths(level: int, paths: int) -> None:
    topo = _tree()
    inst = from_topology(topo, level=level, leaf_level=-1, free=FREE, dp=6, tp=8, pp=3, alpha=0.5)
    assert inst.path_depth == paths
    for pod in inst.minipods:
        for leaf in pod.leaves:
            node = leaf.nodes[0]
            assert leaf.path == tuple(topo.switch_of(node, level + i) for i in range(1, paths + 1))
    # one level down: no paths, no intermediate metrics
    flat = from_topology(topo, level=2, leaf_level=-1, free=FREE, dp=6, tp=8, pp=3, alpha=0.5)
    assert flat.path_depth == 0
    assert not _levels(topoopt.solve(flat, "placement/exact-mip").metrics)


@pytest.mark.parametrize("solver", ["placement/exact-mip", "placement/hierarchical"])
@pytest.mark.parametrize(
    ("level", "dp", "pp", "alpha"), [(0, 6, 3, 0.5), (1, 6, 3, 0.3), (1, 2, 7, 0.8), (0, 4, 4, 0.2)]
)
def test_every_level_is_reported(solver: str, level: int, dp: int, pp: int, alpha: float) -> None:
    topo = _tree()
    inst = from_topology(topo, level=level, leaf_level=-1, free=FREE, dp=dp, tp=8, pp=pp,
                         alpha=alpha)  # fmt: skip
    result = topoopt.solve(inst, solver)
    assert result.is_ok
    expected = _independent(topo, level, inst, result)
    assert len(expected) == 2 * inst.path_depth
    assert _levels(result.metrics) == expected
    assert _levels(json.loads(json.dumps(result.to_dict()))) == expected  # flat JSON keys
    assert result.level_spreads() == [
        (expected[f"level{i}_dp_spread"], expected[f"level{i}_pp_spread"])
        for i in range(1, inst.path_depth + 1)
    ]
    # a group's switches at a level lie below its switches one level up, and D is monotone:
    # the spreads never shrink going down (minipods, level 1, ..., leaves)
    chain = [(result.dp_spread, result.pp_spread), *result.level_spreads(),
             (result.leaf_dp_spread, result.leaf_pp_spread)]  # fmt: skip
    for upper, lower in itertools.pairwise(chain):
        assert upper[0] <= lower[0] and upper[1] <= lower[1]


def test_paths_round_trip_through_json(tmp_path) -> None:
    inst = from_topology(_tree(), level=0, leaf_level=-1, free=FREE, dp=6, tp=8, pp=3, alpha=0.5)
    data = inst.to_dict()
    leaf = data["topology"]["minipods"][0]["leaves"][0]
    assert leaf["path"] == ["pod0", "row00"]
    again = topoopt.load(json.loads(json.dumps(data)))
    assert again == inst
    assert again.minipods[0].leaves[0].path == ("pod0", "row00")
    saved = topoopt.load(topoopt.save(inst, tmp_path / "inst.json"))
    assert saved == inst
    # no paths: the field is left out
    flat = PlacementInstance("x", [Minipod.from_leaves("a", [("l0", ["h0", "h1"])])], 2, 8, 1, 0.5)
    assert "path" not in flat.to_dict()["topology"]["minipods"][0]["leaves"][0]


def _pod(name: str, *leaves: tuple[str, list[str], list[str]]) -> Minipod:
    return Minipod.from_leaves(name, [Leaf(n, nodes, path) for n, nodes, path in leaves])


def test_bad_paths_are_refused() -> None:
    a = _pod("a", ("l0", ["h0"], ["g0"]), ("l1", ["h1"], ["g1"]))
    b = _pod("b", ("l2", ["h2"], ["g2", "x"]))
    with pytest.raises(InvalidInstanceError, match=r"topology\.minipods\[1\]\.leaves\[0\]\.path"):
        PlacementInstance("x", [a, b], dp=1, tp=8, pp=2, alpha=0.5)
    c = _pod("c", ("l3", ["h3"], []))
    with pytest.raises(InvalidInstanceError, match="names 0 switches"):
        PlacementInstance("x", [a, c], dp=1, tp=8, pp=2, alpha=0.5)
    with pytest.raises(InvalidInstanceError, match=r"path\[1\]"):
        Leaf("l0", ["h0"], ["g0", ""])
    with pytest.raises(InvalidInstanceError, match="path"):
        Leaf("l0", ["h0"], "g0")  # a string is not a list of names
    data = PlacementInstance("x", [a], dp=1, tp=8, pp=2, alpha=0.5).to_dict()
    data["topology"]["minipods"][0]["leaves"][1]["path"] = [3]
    with pytest.raises(InvalidInstanceError, match="path"):
        topoopt.load(data)
    data["topology"]["minipods"][0]["leaves"][1]["path"] = ["g1", "g2"]
    with pytest.raises(InvalidInstanceError, match=r"leaves\[1\]\.path"):
        topoopt.load(data)


def test_path_spreads_from_nodes_and_from_the_fill() -> None:
    """Two groups of racks: the fill puts stage 0 on g0, stage 1 on g1; a node assignment
    that crosses the groups shows in the level-1 spreads."""
    pod = _pod("a", ("l0", ["h0"], ["g0"]), ("l1", ["h1"], ["g0"]), ("l2", ["h2"], ["g1"]),
               ("l3", ["h3"], ["g1"]))  # fmt: skip
    inst = PlacementInstance("x", [pod], dp=2, tp=8, pp=2, alpha=0.5)
    fill = Placement(((0, 0), (0, 0)))
    assert path_spreads(inst, fill) == [(0, 2)]
    crossed = fill.with_nodes([["h0", "h2"], ["h3", "h1"]])
    assert path_spreads(inst, crossed) == [(2, 2)]
    rows = fill.with_nodes([["h0", "h1"], ["h2", "h3"]])
    assert path_spreads(inst, rows) == [(2, 0)]
