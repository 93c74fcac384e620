"""Untrusted input through ``topoopt.load``: every class of bad input a user found gives a
one-line topoopt error (or a correct instance), never another exception, a hang or an
exhausted memory. gpuselect's own classes are in ``tests/gpuselect``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import topoopt
from topoopt.core import limits
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.core.safejson import FileAccess, check_json, parse_json, read_bytes
from topoopt.core.schema import validate
from topoopt.placement.schema import SCHEMA as PLACEMENT_SCHEMA

VALID: dict[str, Any] = {
    "family": "placement",
    "format_version": 1,
    "name": "ok",
    "topology": {"gpus_per_node": 8, "minipods": [4, 4]},
    "job": {"dp": 4, "tp": 8, "pp": 2},
    "alpha": 0.5,
}


def _with(**changes: Any) -> dict[str, Any]:
    return {**json.loads(json.dumps(VALID)), **changes}


def _one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and "\r" not in text, text
    return text


def _load_error(source: Any, **kwargs: Any) -> str:
    with pytest.raises(TopooptError) as info:
        topoopt.load(source, **kwargs)
    return _one_line(info.value)


def test_the_valid_instance_loads(tmp_path: Path) -> None:
    assert topoopt.load(_with()).name == "ok"
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(VALID))
    assert topoopt.load(path) == topoopt.load(VALID)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b'{"family":"placement","name":"' + b"\xff" + b'"}', "not UTF-8 text (byte 30"),
        ('{"family": "placement"}'.encode("utf-16"), "not UTF-8 text"),
        (b"[" * 1000 + b"]" * 1000, "json_depth"),
        (b'{"a": NaN}', "NaN is not a JSON number"),
        (b'{"a": Infinity}', "Infinity is not a JSON number"),
        (b'{"a": 1e999}', "overflows to infinity"),
        (b'{"a": 1' + b"0" * 400 + b"}", "json_int_digits"),
        (b'{"a": 1, "a": 2}', "appears twice"),
        (b'{"a": ', "not valid JSON"),
        (b"", "not valid JSON"),
        (b"[1, 2]", "must hold a JSON object"),
    ],
    ids=[
        "non-utf8",
        "utf16",
        "deep-nesting",
        "nan",
        "infinity",
        "float-overflow",
        "huge-int",
        "duplicate-key",
        "truncated",
        "empty",
        "not-an-object",
    ],
)
def test_bad_files_are_one_line_errors(tmp_path: Path, data: bytes, words: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    assert words in _load_error(path)


def test_a_byte_order_mark_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(VALID).encode())
    assert topoopt.load(path).name == "ok"


def test_not_a_regular_file_is_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(_load_error(fifo)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert outcome and "not a regular file" in outcome[0]  # no hang on a FIFO
    assert "not a regular file" in _load_error("/dev/zero")  # no endless read
    assert "not a regular file" in _load_error(tmp_path)
    assert "NUL" in _load_error(str(tmp_path / "a\x00b.json"))
    assert "No such file" in _load_error(tmp_path / "none.json")


def test_file_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps({**VALID, "x-padding": "x" * 5000}))
    with limits.limits_raised(json_file_bytes=1000):
        assert "json_file_bytes=1000" in _load_error(path)
    assert topoopt.load(path).name == "ok"


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"format_version": True}, "format_version", "must be the integer 1"),
        ({"format_version": 1.0}, "format_version", "must be the integer 1"),
        ({"format_version": 2}, "format_version", "must be the integer 1"),
        ({"family": "placment"}, "family", "did you mean 'placement'"),
        ({"family": ["placement"]}, "family", "unknown family"),
        ({"alpha": 10**400}, "alpha", "json_int_digits"),
        ({"alpha": "0.5"}, "alpha", "must be a finite number"),
        (
            {"topology": {"gpus_per_nde": 4, "minipods": [4, 4]}},
            "topology.gpus_per_nde",
            "did you mean 'gpus_per_node'",
        ),
        ({"jobs": {}}, "jobs", "did you mean 'job'"),
        ({"topology": {"minipods": [100_000_000]}}, "topology.minipods", "placement_free_nodes"),
        ({"topology": {"minipods": [1e308]}}, "topology.minipods[0]", "must be <="),
        ({"topology": {"minipods": [2.5]}}, "topology.minipods[0]", ""),
        ({"job": {"dp": 4, "tp": 8}}, "job.pp", "missing required field"),
        ({"labels": {"setting": 3}}, "labels.setting", "must be a string"),
    ],
    ids=lambda x: str(x)[:40],
)
def test_bad_fields_name_the_field(changes: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        topoopt.load(_with(**changes))
    assert info.value.field == field
    assert words in _one_line(info.value)


def test_user_keys_are_allowed_and_ignored() -> None:
    data = _with(**{"x-scheduler": {"queue": "a"}})
    data["topology"]["x-rack-map"] = [1, 2]
    assert topoopt.load(data) == topoopt.load(VALID)


def test_limits_name_how_to_raise_them() -> None:
    data = _with(topology={"minipods": [600_000, 600_000]})
    message = _load_error(data)
    assert "topoopt.set_limits(placement_free_nodes=...)" in message
    assert "TOPOOPT_LIMIT_PLACEMENT_FREE_NODES" in message
    with limits.limits_raised(placement_free_nodes=2_000_000):
        assert topoopt.load(data).total_free == 1_200_000
    with pytest.raises(topoopt.InvalidOptionError, match="unknown limit"):
        limits.set_limits(no_such_limit=3)
    with pytest.raises(topoopt.InvalidOptionError, match="positive integer"):
        limits.set_limits(json_depth=0)


def test_a_family_limit_can_be_set_first_thing() -> None:
    """``topoopt.set_limits(placement_free_nodes=...)`` right after ``import topoopt`` (as
    docs/input.md shows), before any family is used: the families' limits are looked up."""
    code = (
        "import topoopt\n"
        "topoopt.set_limits(placement_free_nodes=5_000_000)\n"
        "from topoopt.core import limits\n"
        "assert limits.value('placement_free_nodes') == 5_000_000\n"
        "assert 'gpuselect_hosts' in limits.defined()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_limit_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOPOOPT_LIMIT_JSON_DEPTH", "3")
    assert limits.value("json_depth") == 3
    with pytest.raises(InvalidInstanceError, match="json_depth=3"):
        parse_json(b'{"a": [[[1]]]}')
    monkeypatch.setenv("TOPOOPT_LIMIT_JSON_DEPTH", "lots")
    with pytest.raises(topoopt.InvalidOptionError, match="TOPOOPT_LIMIT_JSON_DEPTH"):
        limits.value("json_depth")


def test_objects_given_in_code_are_held_to_the_json_rules() -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    assert "json_depth" in _load_error(_with(**{"x-deep": deep}))
    assert "finite number" in _load_error(_with(alpha=float("nan")))
    with pytest.raises(InvalidInstanceError, match="not a JSON value: set"):
        check_json({"a": {1, 2}})
    with pytest.raises(InvalidInstanceError, match="keys must be strings"):
        check_json({1: 2})


def test_files_named_by_an_instance_stay_in_its_folder(tmp_path: Path) -> None:
    inside = tmp_path / "suite"
    inside.mkdir()
    (inside / "t.csv").write_text("a,b\n1,2\n")
    (tmp_path / "secret.txt").write_text("no")
    files = FileAccess(inside)
    assert files.read_text("t.csv", "f")[1] == "a,b\n1,2\n"
    for reference in ("../secret.txt", str(tmp_path / "secret.txt")):
        with pytest.raises(InvalidInstanceError, match="outside the instance's folder"):
            files.read_text(reference, "f")
    assert FileAccess(inside, True).read_text("../secret.txt", "f")[1] == "no"
    assert FileAccess.of(inside, [tmp_path]).read_text("../secret.txt", "f")[1] == "no"
    with pytest.raises(InvalidInstanceError, match="NUL"):
        files.read_text("t\x00.csv", "f")
    (inside / "bin.csv").write_bytes(b"\x80\x81")
    with pytest.raises(TopooptError, match="not UTF-8"):
        files.read_text("bin.csv", "f")
    os.mkfifo(inside / "fifo.csv")
    with pytest.raises(InvalidInstanceError, match="not a regular file"):
        files.read_text("fifo.csv", "f")
    with pytest.raises(InvalidInstanceError, match="not a regular file"):
        FileAccess(inside, True).read_text("/dev/zero", "f")


def test_read_bytes_caps_the_size(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 2000)
    with limits.limits_raised(json_file_bytes=1000), pytest.raises(TopooptError, match="1000"):
        read_bytes(path)


def test_every_family_schema_is_valid_and_accepts_its_examples() -> None:
    from jsonschema import Draft202012Validator

    for name in topoopt.families():
        family = topoopt.get_family(name)
        if family.schema is None:
            continue
        Draft202012Validator.check_schema(family.schema)
        for instance in family.examples():
            validate(family.schema, instance.to_dict())
    validate(PLACEMENT_SCHEMA, VALID)
