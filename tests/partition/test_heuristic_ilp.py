"""The two-level Heuristic-ILP (``partition/heuristic-ilp``) and the intra-cluster data it needs:
the instance fields (round trip, errors naming the field), the per-cluster sub-problems (buddy
allocation, model), the solution's configurations (JSON, ``check``, metrics), the solver
(greedy-lowcut's assignment, exact per-cluster configurations, time limit, decline) and the
CLI on a shipped instance."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings

import topoopt
from topoopt.cli import main
from topoopt.core.errors import InvalidInstanceError, InvalidSolutionError, UnsupportedInstanceError
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.crosscluster.buddy import BuddyAllocator
from topoopt.parallelconfig import solution as pc
from topoopt.parallelconfig.solution import ParallelConfig
from topoopt.partition import intra
from topoopt.partition.generate import examples, small, tpa_64, tpa_small
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import (
    GBIT_PER_GB,
    Assignment,
    check,
    evaluate,
    from_dict,
    metrics,
    to_dict,
)

from .strategies import intra_instances, seeded_small, tpa_instances

SOLVER = "partition/heuristic-ilp"
ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "instances" / "partition"
TOL = 1e-9


def _solve(instance: PartitionInstance, **kwargs: Any) -> topoopt.Result:
    return topoopt.solve(instance, SOLVER, **kwargs)


def _bytes(instance: PartitionInstance) -> str:
    return json.dumps(instance.to_dict(), indent=2)


def _tpa_dict() -> dict[str, Any]:
    return tpa_small(seed=0, count=1)[0].to_dict()


# ---------------------------------------------------------------- instance: round trip


@settings(max_examples=30, deadline=None)
@given(instance=seeded_small())
def test_plain_instances_round_trip_byte_identically(instance: PartitionInstance) -> None:
    """Without intra-cluster data nothing new is written and nothing changes."""
    data = instance.to_dict()
    assert "training" not in data
    assert all(set(c) == {"name", "capacity_gpus"} for c in data["clusters"])
    assert all(set(u) == {"name", "gpus"} for u in data["graph"]["vertices"])
    again = PartitionInstance.from_dict(json.loads(json.dumps(data)))
    assert again == instance and _bytes(again) == _bytes(instance)
    assert not again.has_intra and again.intra_missing == "training: missing"


def test_shipped_plain_files_keep_their_bytes() -> None:
    for path in sorted((SHIPPED / "small").glob("*.json"))[:5]:
        text = path.read_text()
        assert json.dumps(topoopt.load(path).to_dict(), indent=2) == text.rstrip("\n")


@settings(max_examples=30, deadline=None)
@given(instance=intra_instances())
def test_intra_instances_round_trip(instance: PartitionInstance) -> None:
    assert instance.has_intra
    again = topoopt.load(json.loads(json.dumps(instance.to_dict())))
    assert again == instance and _bytes(again) == _bytes(instance)
    assert again.training == instance.training
    assert [c.nodes for c in again.clusters] == [c.nodes for c in instance.clusters]


@pytest.mark.parametrize("suite", ["tpa-small", "tpa-64"])
def test_shipped_tpa_files_are_the_generated_suites(suite: str) -> None:
    generated = {"tpa-small": tpa_small, "tpa-64": tpa_64}[suite](seed=0)
    files = sorted((SHIPPED / suite).glob("*.json"))
    assert len(files) == len(generated)
    by_name = {inst.name: inst for inst in generated}
    for path in files:
        loaded = topoopt.load(path)
        assert loaded.has_intra and loaded == by_name[loaded.name]


def test_partial_intra_data_is_kept_but_incomplete() -> None:
    data = _tpa_dict()
    del data["training"]
    inst = PartitionInstance.from_dict(data)
    assert inst.intra_missing == "training: missing" and not inst.has_intra
    assert _bytes(PartitionInstance.from_dict(inst.to_dict())) == _bytes(inst)
    data = _tpa_dict()
    for key in ("nodes", "intra_node_gbps", "inter_node_gbps"):
        del data["clusters"][1][key]
    assert PartitionInstance.from_dict(data).intra_missing == "clusters[1].nodes: missing"
    data = _tpa_dict()
    for key in ("compute_s", "param_bytes"):
        del data["graph"]["vertices"][2][key]
    assert PartitionInstance.from_dict(data).intra_missing == (
        "graph.vertices[2].compute_s: missing"
    )


def test_training_defaults_alpha_and_beta_to_one() -> None:
    data = _tpa_dict()
    data["training"] = {"activation_bytes": 1e6, "micro_batches": 4}
    training = topoopt.load(data).training
    assert training is not None and (training.alpha, training.beta) == (1.0, 1.0)


# ---------------------------------------------------------------- instance: errors


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(InvalidInstanceError) as info:
        topoopt.load(data)
    return str(info.value)


def test_nodes_holding_less_than_the_capacity_are_refused() -> None:
    data = _tpa_dict()
    data["clusters"][2]["capacity_gpus"] = 3  # its node holds 2
    data["clusters"][2]["nodes"] = [{"name": "n0", "gpus": 2}]
    assert _error(data) == ("clusters[2].nodes: hold 2 GPUs in all, fewer than capacity_gpus = 3")


@pytest.mark.parametrize(
    ("drop", "field"),
    [
        (("nodes",), "clusters[1].nodes"),
        (("inter_node_gbps",), "clusters[1].inter_node_gbps"),
        (("intra_node_gbps", "inter_node_gbps"), "clusters[1].intra_node_gbps"),
    ],
)
def test_cluster_fields_go_together(drop: tuple[str, ...], field: str) -> None:
    data = _tpa_dict()
    for key in drop:
        del data["clusters"][1][key]
    message = _error(data)
    assert message.startswith(f"{field}: missing: nodes, intra_node_gbps and inter_node_gbps")


@pytest.mark.parametrize("drop", ["compute_s", "param_bytes"])
def test_vertex_fields_go_together(drop: str) -> None:
    data = _tpa_dict()
    del data["graph"]["vertices"][3][drop]
    assert _error(data).startswith(
        f"graph.vertices[3].{drop}: missing: compute_s and param_bytes describe a block"
    )


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("graph", "vertices", 0, "compute_s"), -0.5, "graph.vertices[0].compute_s: must be > 0"),
        (("graph", "vertices", 0, "compute_s"), 0, "graph.vertices[0].compute_s: must be > 0"),
        (("graph", "vertices", 1, "param_bytes"), -1, "graph.vertices[1].param_bytes: must"),
        (("clusters", 0, "intra_node_gbps"), 0, "clusters[0].intra_node_gbps: must be > 0"),
        (("clusters", 0, "nodes", 1, "name"), "a/b", "clusters[0].nodes[1].name: must not"),
        (("clusters", 0, "nodes", 1, "name"), "n0", "clusters[0].nodes[1]: duplicate name"),
        (("training", "micro_batches"), 0, "training.micro_batches: must be >= 1"),
        (("training", "alpha"), -1, "training.alpha: must"),
    ],
)
def test_bad_intra_values_name_the_field(path: tuple[Any, ...], value: Any, message: str) -> None:
    data = _tpa_dict()
    target: Any = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert _error(data).startswith(message)


def test_a_layer_block_needs_a_gpu() -> None:
    data = small(seed=0, count=1)[0].to_dict()
    data["graph"]["vertices"][0].update(gpus=0, compute_s=0.01, param_bytes=0)
    assert _error(data).startswith("graph.vertices[0].gpus: a block of layers")


def test_unknown_training_field_gets_a_hint() -> None:
    data = _tpa_dict()
    data["training"]["micro_batch"] = 2
    assert _error(data) == "training.micro_batch: unknown field; did you mean 'micro_batches'?"


# ---------------------------------------------------------------- sub-problems


def test_sub_problem_takes_the_buddy_allocators_gpus() -> None:
    inst = tpa_64(seed=0, count=1)[0]
    greedy = topoopt.solve(inst, "partition/greedy-lowcut").solution
    where = greedy.as_dict()
    demand = intra.gpu_demand(inst, where)
    assert sum(demand.values()) == inst.total_gpus
    for cluster, r in demand.items():
        sub = intra.cluster_instance(inst, greedy, cluster)
        assert sub is not None and sub.n_gpus == r and sub.parallelism is None
        spec = inst.clusters[inst.graph.index[cluster]]
        assert spec.nodes is not None
        names = [f"{n.name}/{k}" for n in spec.nodes for k in range(n.gpus)]
        handle = BuddyAllocator(names, [("node", [n.gpus for n in spec.nodes])]).allocate(r)
        per_node: dict[str, int] = {}
        for gpu in handle.gpus:
            per_node[gpu.split("/")[0]] = per_node.get(gpu.split("/")[0], 0) + 1
        assert [(n.name, n.gpus) for n in sub.nodes] == list(per_node.items())
        members = [u for u in inst.vertices if where[u.name] == cluster]
        assert [(x.compute_s, x.param_bytes) for x in sub.model.layers] == [
            (u.compute_s, u.param_bytes) for u in members
        ]
        assert inst.training is not None
        assert sub.model.micro_batches == inst.training.micro_batches
        assert sub.model.activation_bytes == inst.training.activation_bytes


def test_sub_problem_of_an_empty_or_unknown_cluster() -> None:
    inst = examples()[0]
    everything = Assignment.of({u.name: "c0" for u in inst.vertices})
    assert intra.cluster_instance(inst, everything, "c1") is None
    with pytest.raises(InvalidSolutionError):
        intra.cluster_instance(inst, everything, "zz")
    plain = small(seed=0, count=1)[0]
    first = Assignment.from_indices(plain, [0] * plain.n_vertices)
    with pytest.raises(UnsupportedInstanceError, match="training: missing"):
        intra.cluster_instance(plain, first, plain.clusters[0].name)


# ---------------------------------------------------------------- the solver


@settings(max_examples=25, deadline=None)
@given(instance=tpa_instances())
def test_assignment_is_greedy_lowcuts_and_configs_are_exact(instance: PartitionInstance) -> None:
    """The inter-cluster part is greedy-lowcut's (same assignment, same cut); every
    configuration passes parallelconfig's check and its T_c is the enumeration's optimum."""
    result = _solve(instance)
    greedy = topoopt.solve(instance, "partition/greedy-lowcut")
    assert result.status is SolutionStatus.FEASIBLE, result
    assert result.termination is TerminationReason.COMPLETED, result
    assert result.solution.assign == greedy.solution.assign
    assert math.isclose(result.objective, greedy.objective, abs_tol=TOL)
    assert check(instance, result.solution) == []
    configs = result.solution.config_dict()
    demand = intra.gpu_demand(instance, result.solution.as_dict())
    assert list(configs) == list(demand)
    for cluster, config in configs.items():
        sub = intra.cluster_instance(instance, result.solution, cluster)
        assert sub is not None and pc.check(sub, config) == []
        oracle = topoopt.solve(sub, "parallelconfig/enumerate")
        assert oracle.status is SolutionStatus.OPTIMAL
        t_c = result.metrics[f"t_cluster_s.{cluster}"]
        assert math.isclose(t_c, pc.evaluate(sub, config), rel_tol=1e-12)
        assert math.isclose(t_c, oracle.objective, rel_tol=1e-6, abs_tol=TOL), (cluster, sub)


def test_metrics_define_the_step_time() -> None:
    inst = tpa_small(seed=0, count=1)[0]
    result = _solve(inst)
    times = [v for k, v in result.metrics.items() if k.startswith("t_cluster_s.")]
    assert len(times) == len(result.solution.configs) >= 1
    assert result.metrics["t_cluster_max_s"] == max(times)
    assert math.isclose(result.metrics["cut_s"], GBIT_PER_GB * result.objective)
    assert math.isclose(result.step_time_s, max(times) + GBIT_PER_GB * result.objective)
    greedy = topoopt.solve(inst, "partition/greedy-lowcut")
    assert math.isnan(greedy.step_time_s) and "step_time_s" not in greedy.metrics
    text = topoopt.get_family("partition").describe(inst, result.solution)
    assert "(d, p) = (" in text and text.splitlines()[-1].startswith("step time = max T_c")


def test_scip_backend_gives_the_same_times() -> None:
    if "scip" not in topoopt.available_backends():
        pytest.skip("SCIP is not installed")
    inst = tpa_small(seed=4, count=1)[0]
    highs, scip = _solve(inst, backend="highs"), _solve(inst, backend="scip")
    assert highs.solution.assign == scip.solution.assign
    assert scip.backend == "scip"
    for key, value in highs.metrics.items():
        assert math.isclose(value, scip.metrics[key], rel_tol=1e-6, abs_tol=TOL), key


def test_instances_without_intra_data_are_declined() -> None:
    plain = small(seed=0, count=1)[0]
    with pytest.raises(UnsupportedInstanceError, match=r"intra-cluster data .*training: missing"):
        _solve(plain)
    assert SOLVER not in [s.name for s in topoopt.solvers_for(plain)]
    assert SOLVER in [s.name for s in topoopt.solvers_for(examples()[0])]


def test_a_tiny_time_limit_keeps_the_solution_checked() -> None:
    inst = tpa_64(seed=0, count=1)[0]
    result = _solve(inst, time_limit=0.05)
    if result.solution is not None:
        assert check(inst, result.solution) == []
        if result.termination is not TerminationReason.TIME_LIMIT:
            assert result.solution.configs


def test_options_are_checked() -> None:
    with pytest.raises(topoopt.TopooptError, match="method: must be one of split, joint"):
        _solve(examples()[0], method="all")


# ---------------------------------------------------------------- solutions with configurations


def _solved() -> tuple[PartitionInstance, Assignment]:
    inst = tpa_small(seed=0, count=1)[0]  # two of its three clusters host vertices
    solution = _solve(inst).solution
    assert solution is not None and len(solution.configs) >= 2
    return inst, solution


def test_solution_json_round_trips_with_configs() -> None:
    inst, solution = _solved()
    data = json.loads(json.dumps(to_dict(inst, solution)))
    assert set(data) == {"assign", "configs"}
    assert from_dict(inst, data) == solution
    assert set(to_dict(inst, solution.with_configs({}))) == {"assign"}
    with pytest.raises(InvalidSolutionError, match=r"solution\.configs\.c0\.grid"):
        from_dict(inst, {**data, "configs": {"c0": {"grid": "x"}}})
    with pytest.raises(InvalidSolutionError, match=r"solution\.configs: must map"):
        from_dict(inst, {**data, "configs": []})


def _corrupt_gpu(config: ParallelConfig, gpu: str) -> ParallelConfig:
    grid = [list(row) for row in config.grid]
    grid[0][0] = gpu
    return ParallelConfig.of(grid)


def test_check_rejects_corrupted_configs() -> None:
    inst, solution = _solved()
    configs = solution.config_dict()
    first, second = list(configs)[:2]
    config = configs[first]

    def problems(**changes: ParallelConfig) -> list[str]:
        return check(inst, solution.with_configs({**configs, **changes}))

    assert check(inst, solution) == []
    assert any("unknown GPU" in p for p in problems(**{first: _corrupt_gpu(config, "zz/0")}))
    node = config.grid[0][0].split("/")[0]
    assert any(
        p.startswith(f"{first}: ") and "unknown GPU" in p
        for p in problems(**{first: _corrupt_gpu(config, f"{node}/99")})
    )
    too_big = ParallelConfig.of([[f"x/{k}"] for k in range(64)])
    assert any("d·p = 64 GPUs" in p for p in problems(**{first: too_big}))
    missing = solution.with_configs({c: x for c, x in configs.items() if c != second})
    assert any(f"not {second}" in p for p in check(inst, missing))
    idle = next(c.name for c in inst.clusters if c.name not in configs)
    assert any("hosts no vertex" in p for p in problems(**{idle: config}))
    twice = Assignment(solution.assign, (*solution.configs, (first, config)))
    assert any(f"configures {first} twice" in p for p in check(inst, twice))
    unknown = solution.with_configs({**configs, "nowhere": config})
    assert any("unknown cluster nowhere" in p for p in check(inst, unknown))


def test_configs_need_intra_data() -> None:
    inst, solution = _solved()
    plain = PartitionInstance.from_dict(
        {k: v for k, v in inst.to_dict().items() if k != "training"}
    )
    assert check(plain, solution.with_configs({})) == []
    assert any("intra-cluster data is incomplete" in p for p in check(plain, solution))


def test_evaluate_ignores_the_configs() -> None:
    inst, solution = _solved()
    assert evaluate(inst, solution) == evaluate(inst, solution.with_configs({}))
    assert set(metrics(inst, solution.with_configs({}))) == {
        "cut_edges",
        "cut_traffic",
        "clusters_used",
    }


# ---------------------------------------------------------------- CLI


def test_cli_solves_a_shipped_tpa_instance() -> None:
    path = SHIPPED / "tpa-small" / "tpa-small-0-0.json"
    out = CliRunner().invoke(main, ["solve", str(path), "--solver", SOLVER, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["solver"] == SOLVER and data["status"] == "feasible"
    assert data["backend"] == "highs"
    assert set(data["solution"]) == {"assign", "configs"}
    assert data["step_time_s"] == pytest.approx(data["t_cluster_max_s"] + 8 * data["objective"])
    inst = topoopt.load(path)
    assert check(inst, from_dict(inst, data["solution"])) == []


def test_a_sub_problem_the_ilp_refuses_falls_back_to_the_greedy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Since issue #25 ``parallelconfig/mip`` takes clusters of any size; a refusal is made
    here (over 1,024 GPUs, the paper ILP's limit) to exercise the fallback."""
    from topoopt.parallelconfig.solvers.mip import SegmentMipSolver

    def refuse(cls: type, instance: Any) -> str | None:
        return "too large" if instance.n_gpus > 1024 else None

    monkeypatch.setattr(SegmentMipSolver, "unsupported_reason", classmethod(refuse))
    nodes = [(f"n{k}", 8) for k in range(138)]  # 1,104 GPUs
    inst = PartitionInstance(
        "large",
        [("c0", 1104, nodes, 2400.0, 200.0), ("c1", 8, [("n0", 8)], 600.0, 100.0)],
        [("c0", "c1", 10.0)],
        [("big", 1100, 0.01, 1e8), ("small", 4, 0.01, 1e8)],
        [("big", "small", 0.5)],
        training={"activation_bytes": 1e6, "micro_batches": 4},
    )
    result = _solve(inst)
    assert result.status is SolutionStatus.FEASIBLE and check(inst, result.solution) == []
    assert "parallelconfig/greedy" in result.message
    assert len(result.solution.configs) == len(intra.gpu_demand(inst, result.solution.as_dict()))
