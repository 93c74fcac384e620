"""Bad parallelconfig input gives one clear error naming the JSON path, whether it comes from a
dict, a file through the CLI or in-code construction; bad solutions are named by ``check`` and
``from_dict``; good input and solutions round-trip."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings

import topoopt
from topoopt.core.errors import InvalidInstanceError, InvalidSolutionError
from topoopt.core.result import clean
from topoopt.parallelconfig import (
    FAMILY,
    ParallelConfig,
    ParallelConfigInstance,
    TrainingModel,
    check,
)
from topoopt.parallelconfig.generate import GENERATORS, examples, worked
from topoopt.parallelconfig.solution import from_dict, to_dict
from topoopt.testing.input_errors import (
    Change,
    assert_cli_exits_2,
    assert_load_names,
    both,
    edited,
    setter,
)

from .strategies import instances


def base() -> dict[str, Any]:
    """The worked example as JSON: nodes n0 (4), n1 (4); 8 layers; M = 8."""
    return worked().to_dict()


def parallelism(d: Any, p: Any) -> Callable[[dict], None]:
    return setter("parallelism", value={"d": d, "p": p})


# (id, change, field, words): errors every way of building an instance reports alike
CONSTRUCTOR_CASES = [
    (
        "d-times-p-above-gpus",
        parallelism(3, 3),
        "parallelism",
        "d·p = 3·3 = 9 GPUs exceed the job's 8",
    ),
    (
        "p-above-layers",
        both(setter("model", "layers", value=base()["model"]["layers"][:3]), parallelism(1, 4)),
        "parallelism.p",
        "4 stages exceed the model's 3 layers",
    ),
    (
        "d-above-micro-batches",
        both(setter("model", "micro_batches", value=2), parallelism(4, 2)),
        "parallelism.d",
        "4 replicas exceed the 2 micro-batches",
    ),
    ("d-zero", parallelism(0, 2), "parallelism.d", ">= 1"),
    ("zero-intra", setter("intra_node_gbps", value=0), "intra_node_gbps", "> 0"),
    ("negative-inter", setter("inter_node_gbps", value=-5.0), "inter_node_gbps", "> 0"),
    ("tiny-bandwidth", setter("inter_node_gbps", value=1e-9), "inter_node_gbps", ">= 1e-06"),
    (
        "zero-compute",
        setter("model", "layers", 3, "compute_s", value=0.0),
        "model.layers[3].compute_s",
        "> 0",
    ),
    (
        "negative-params",
        setter("model", "layers", 1, "param_bytes", value=-1.0),
        "model.layers[1].param_bytes",
        "-1",
    ),
    (
        "negative-activation",
        setter("model", "activation_bytes", value=-2.0),
        "model.activation_bytes",
        "-2",
    ),
    (
        "zero-micro-batches",
        setter("model", "micro_batches", value=0),
        "model.micro_batches",
        ">= 1",
    ),
    ("no-layers", setter("model", "layers", value=[]), "model.layers", "at least 1"),
    ("zero-gpus", setter("nodes", 1, "gpus", value=0), "nodes[1].gpus", ">= 1"),
    ("no-nodes", setter("nodes", value=[]), "nodes", "at least 1"),
    ("slash-in-name", setter("nodes", 0, "name", value="rack/a"), "nodes[0].name", "'/'"),
    ("duplicate-node", setter("nodes", 1, "name", value="n0"), "nodes[1]", "duplicate name 'n0'"),
    ("negative-alpha", setter("alpha", value=-1.0), "alpha", "-1"),
    ("huge-beta", setter("beta", value=1e9), "beta", "1e+06"),
]

# errors only the JSON reader can meet
JSON_CASES = [
    ("unknown-field", setter("alpah", value=1.0), "alpah", "did you mean 'alpha'?"),
    (
        "unknown-model-field",
        setter("model", "micro_batch", value=3),
        "model.micro_batch",
        "did you mean 'micro_batches'?",
    ),
    (
        "unknown-layer-field",
        setter("model", "layers", 0, "compute", value=3),
        "model.layers[0].compute",
        "did you mean 'compute_s'?",
    ),
    ("missing-model", lambda data: data.pop("model"), "model", "missing"),
    ("gpus-not-integer", setter("nodes", 0, "gpus", value=2.5), "nodes[0].gpus", "integer"),
    (
        "compute-not-number",
        setter("model", "layers", 0, "compute_s", value="fast"),
        "model.layers[0].compute_s",
        "finite number",
    ),
    ("missing-p", setter("parallelism", value={"d": 2}), "parallelism.p", "missing"),
    ("format-version", setter("format_version", value=2), "format_version", "got 2"),
]

ALL_CASES = CONSTRUCTOR_CASES + JSON_CASES


def bad(change: Change) -> dict[str, Any]:
    return edited(base(), change)


@pytest.mark.parametrize(
    ("change", "field", "words"), [c[1:] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES]
)
def test_load_dict_names_the_field(change, field: str, words: str) -> None:
    assert_load_names(bad(change), field, words)


@pytest.mark.parametrize(
    ("change", "field", "words"), [c[1:] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES]
)
def test_cli_solve_bad_file_exits_2_with_one_line(tmp_path, change, field: str, words: str) -> None:
    assert_cli_exits_2(tmp_path, bad(change), "parallelconfig/greedy", field, words)


def in_code(data: dict[str, Any]) -> ParallelConfigInstance:
    """The instance built in code from tuples, as a user would."""
    model = data["model"]
    fixed = data.get("parallelism")
    return ParallelConfigInstance(
        data["name"],
        [(n["name"], n["gpus"]) for n in data["nodes"]],
        data["intra_node_gbps"],
        data["inter_node_gbps"],
        TrainingModel(
            [(x["compute_s"], x["param_bytes"]) for x in model["layers"]],
            model["activation_bytes"],
            model["micro_batches"],
        ),
        alpha=data["alpha"],
        beta=data["beta"],
        parallelism=None if fixed is None else (fixed["d"], fixed["p"]),
    )


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [c[1:] for c in CONSTRUCTOR_CASES],
    ids=[c[0] for c in CONSTRUCTOR_CASES],
)
def test_in_code_construction_names_the_same_field(change, field: str, words: str) -> None:
    """The same field; a ``TrainingModel`` built on its own names it from the model down."""
    with pytest.raises(InvalidInstanceError) as info:
        in_code(bad(change))
    assert info.value.field == field.removeprefix("model.")
    assert words in str(info.value)


def test_in_code_construction_of_the_base_is_the_worked_example_without_labels() -> None:
    assert in_code(base()).to_dict() == {k: v for k, v in base().items() if k != "labels"}


def test_wrong_item_shapes_name_the_item() -> None:
    model = TrainingModel.uniform(
        2, compute_s=0.1, param_bytes=1.0, activation_bytes=1.0, micro_batches=2
    )
    with pytest.raises(InvalidInstanceError) as info:
        ParallelConfigInstance("x", [("a", 4), ("b",)], 1.0, 1.0, model)
    assert info.value.field == "nodes[1]"
    with pytest.raises(InvalidInstanceError) as info:
        TrainingModel([(0.1, 1.0), 0.2], 1.0, 2)
    assert info.value.field == "layers[1]"
    with pytest.raises(InvalidInstanceError) as info:
        ParallelConfigInstance("x", [("a", 4)], 1.0, 1.0, model, parallelism=(1, 2, 3))
    assert info.value.field == "parallelism"


def test_limits_are_checked_before_anything_is_built() -> None:
    with pytest.raises(InvalidInstanceError, match="parallelconfig_gpus"):
        ParallelConfigInstance("x", [("a", 2**40)], 1.0, 1.0, TrainingModel([(1.0, 0.0)], 0, 1))
    with (
        topoopt.limits_raised(parallelconfig_layers=3),
        pytest.raises(InvalidInstanceError, match="parallelconfig_layers") as info,
    ):
        TrainingModel.uniform(4, compute_s=1.0, param_bytes=0, activation_bytes=0, micro_batches=1)
    assert info.value.field == "layers"


# ------------------------------------------------------------------------------ solutions


def test_check_names_every_broken_rule() -> None:
    inst = topoopt.load({**base(), "parallelism": {"d": 2, "p": 2}})
    assert check(inst, ParallelConfig.of([])) == [
        "the grid needs at least one replica (d >= 1) and one stage (p >= 1)"
    ]
    assert check(inst, ParallelConfig.of([["n0/0", "n0/1"], ["n0/2"]])) == [
        "replica 1 has 1 stages, replica 0 has 2"
    ]
    assert check(inst, ParallelConfig.of([["n0/0", "n0/01"], ["n2/0", "n0/0"]])) == [
        "replica 0 stage 1: unknown GPU 'n0/01'",
        "replica 1 stage 0: unknown GPU 'n2/0'",
        "replica 1 stage 1: GPU 'n0/0' is already replica 0 stage 0",
    ]
    nine = [[f"n{i // 4}/{i % 4}" for i in range(8)] + ["n0/0"]]
    assert check(inst, ParallelConfig.of(nine))[:3] == [
        "uses d·p = 9 GPUs, the job has 8",
        "p = 9 stages exceed the 8 layers",
        "(d, p) = (1, 9), the instance fixes (2, 2)",
    ]
    small = topoopt.load(bad(setter("model", "micro_batches", value=1)))
    assert check(small, ParallelConfig.of([["n0/0"], ["n0/1"]])) == [
        "d = 2 replicas exceed the 1 micro-batches"
    ]


def test_solution_from_dict_refuses_bad_shapes() -> None:
    inst = worked()
    with pytest.raises(InvalidSolutionError, match=r"solution\.grid"):
        from_dict(inst, {"grid": "n0/0"})
    with pytest.raises(InvalidSolutionError, match=r"solution\.grid"):
        from_dict(inst, {"grid": [["n0/0", 3]]})
    with pytest.raises(InvalidSolutionError, match=r"solution\.d: is 3 but the grid has 1"):
        from_dict(inst, {"d": 3, "p": 1, "grid": [["n0/0"]]})
    assert from_dict(inst, {"grid": [["n0/0", "n1/0"]]}) == ParallelConfig.of([["n0/0", "n1/0"]])


@pytest.mark.parametrize("inst", examples(), ids=lambda inst: inst.name)
def test_results_and_solutions_round_trip(inst) -> None:
    for solver in ("parallelconfig/enumerate", "parallelconfig/greedy"):
        result = topoopt.solve(inst, solver)
        data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
        again = FAMILY.solution_from_dict(inst, data["solution"])
        assert again == result.solution
        assert to_dict(inst, again) == data["solution"]
        assert clean(FAMILY.evaluate(inst, again)) == result.objective


# ------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("inst", examples(), ids=lambda inst: inst.name)
def test_examples_round_trip_through_dict_and_file(inst, tmp_path) -> None:
    assert topoopt.load(inst.to_dict()) == inst
    assert topoopt.load(json.loads(json.dumps(inst.to_dict()))) == inst
    path = topoopt.save(inst, tmp_path / f"{inst.name}.json")
    again = topoopt.load(path)
    assert again == inst and again.labels == inst.labels
    assert again.to_dict() == inst.to_dict()


@settings(max_examples=60, deadline=None)
@given(inst=instances())
def test_random_instances_round_trip(inst: ParallelConfigInstance) -> None:
    data = json.loads(json.dumps(inst.to_dict()))
    again = topoopt.load(data)
    assert again == inst and hash(again) == hash(inst)
    assert ("parallelism" in data) == (inst.parallelism is not None)


def test_defaults_of_optional_fields() -> None:
    data = base()
    for key in ("alpha", "beta", "labels", "name"):
        data.pop(key)
    inst = topoopt.load(data)
    assert (inst.alpha, inst.beta, inst.parallelism, inst.name) == (1.0, 1.0, None, "unnamed")


@pytest.mark.parametrize("suite", sorted(GENERATORS))
def test_generators_are_deterministic_and_valid(suite: str) -> None:
    first = GENERATORS[suite](seed=3)
    assert first == GENERATORS[suite](seed=3)
    for inst in first:
        assert topoopt.load(inst.to_dict()) == inst
