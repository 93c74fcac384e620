"""The job description: its units and edges, JSON round trip and schema, and errors that name
the file and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.core.schema import validate
from topoopt.plan.job import SCHEMA, Job, default_blocks


def job_dict(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "format": "topoopt-job",
        "version": 1,
        "name": "j",
        "gpus": 12,
        "model": {
            "layers": 12,
            "compute_s": 0.004,
            "param_bytes": 1.5e8,
            "activation_bytes": 1.6e7,
            "micro_batches": 8,
        },
        "blocks": 6,
    }
    data.update(changes)
    return data


def test_units_and_edges() -> None:
    job = Job("j", 12, [(0.001 * (i + 1), 1e8) for i in range(5)], 1e7, 8, blocks=3, replicas=2)
    units = job.units()
    assert [u.name for u in units] == ["b0r0", "b1r0", "b2r0", "b0r1", "b1r1", "b2r1"]
    # 5 layers in 3 blocks: 2, 2, 1 (parallelconfig's split)
    assert [round(u.compute_s, 6) for u in units[:3]] == [0.003, 0.007, 0.005]
    assert [u.param_bytes for u in units[:3]] == [2e8, 2e8, 1e8]
    assert job.unit_gpus == 2 and job.replica_micro_batches == 4
    edges = job.edges()
    act = [e for e in edges if e.kind == "activation"]
    grad = [e for e in edges if e.kind == "gradient"]
    assert [(e.u, e.v) for e in act] == [
        ("b0r0", "b1r0"),
        ("b1r0", "b2r0"),
        ("b0r1", "b1r1"),
        ("b1r1", "b2r1"),
    ]
    assert all(e.traffic == pytest.approx(1e7 * 4 / 1e9) for e in act)
    # two replicas: one gradient edge per block, the ring's 2 (R - 1) / R · P = P bytes
    assert [(e.u, e.v, e.traffic) for e in grad] == [
        ("b0r0", "b0r1", 0.2),
        ("b1r0", "b1r1", 0.2),
        ("b2r0", "b2r1", 0.1),
    ]


def test_three_replicas_make_a_ring() -> None:
    job = Job("j", 3, [(0.01, 3e8)], 0, 3, replicas=3)
    grad = [(e.u, e.v, round(e.traffic, 9)) for e in job.edges()]
    assert grad == [("b0r0", "b0r1", 0.4), ("b0r1", "b0r2", 0.4), ("b0r2", "b0r0", 0.4)]


def test_default_blocks() -> None:
    assert default_blocks(256, 1, 32) == 32
    assert Job("j", 12, [(0.01, 1e8)] * 24, 0, 12).blocks == 12
    assert Job("j", 256, [(0.01, 1e8)] * 24, 0, 16).blocks == 16


def test_round_trip_and_schema(tmp_path: Path) -> None:
    job = Job.from_dict(job_dict(source="a", replicas=2, model={**job_dict()["model"]}))
    assert Job.from_dict(job.to_dict()) == job
    validate(SCHEMA, job.to_dict())
    mixed = Job("m", 2, [(0.01, 1e8), (0.02, 1e8)], 0, 2)
    assert isinstance(mixed.to_dict()["model"]["layers"], list)
    assert Job.from_dict(mixed.to_dict()) == mixed
    mixed.save(tmp_path / "m.json")
    assert Job.load(tmp_path / "m.json") == mixed
    json.dumps(SCHEMA)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"modl": 1}, "job.json: modl: unknown field; did you mean 'model'?"),
        ({"blocks": 13}, "job.json: blocks: 13 blocks exceed the model's 12 layers"),
        (
            {"blocks": 5},
            "job.json: gpus: 12 GPUs do not split into blocks × replicas = 5 × 1 = 5 units of "
            "equal size",
        ),
        ({"replicas": 5}, "job.json: replicas: 12 GPUs do not split into 5 replicas of equal size"),
        (
            {"replicas": 3},
            "job.json: model.micro_batches: 8 micro-batches do not split evenly over 3 replicas",
        ),
        ({"gpus": "12"}, "job.json: gpus: must be an integer, got '12'"),
        ({"version": 2}, "job.json: version: must be 1, got 2"),
    ],
)
def test_errors_name_the_file_and_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInstanceError) as caught:
        Job.from_dict(job_dict(**changes), source="job.json")
    assert str(caught.value) == message


def test_model_errors() -> None:
    model: dict[str, Any] = dict(job_dict()["model"])
    cases: list[tuple[dict[str, Any], str]] = [
        ({"compute_s": 0}, "job.json: model.compute_s: must be > 0, got 0"),
        ({"compute_s": None}, "job.json: model.compute_s: required with a layer count"),
        (
            {"layers": [{"compute_s": 0.1, "param_bytes": 1}]},
            "job.json: model.compute_s: only with a layer count",
        ),
    ]
    for change, message in cases:
        data = {**model, **change}
        data = {k: x for k, x in data.items() if x is not None}
        with pytest.raises(InvalidInstanceError, match="^" + message.replace("(", r"\(")):
            Job.from_dict(job_dict(model=data), source="job.json")


def test_use_all_gpus_needs_a_micro_batch_per_replica_of_a_unit() -> None:
    with pytest.raises(InvalidInstanceError) as caught:
        Job("j", 12, [(0.01, 1e8)] * 12, 0, 4, blocks=2)
    assert str(caught.value).startswith(
        "model.micro_batches: use_all_gpus needs at least 6 micro-batches per replica"
    )
    assert Job("j", 12, [(0.01, 1e8)] * 12, 0, 4, blocks=2, use_all_gpus=False).unit_gpus == 6


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(TopooptError, match=r"nope\.json"):
        Job.load(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InvalidInstanceError, match=r"bad.json: not valid JSON"):
        Job.load(tmp_path / "bad.json")
