"""Records files: append and flush, tolerate a torn last line, identify instances by content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import topoopt
from topoopt.bench.records import RecordWriter, instance_hash, read_records, record_key
from topoopt.core.errors import TopooptError
from topoopt.placement.generate import examples


def _record(instance: str, seed: int = 0) -> dict:
    return {
        "instance": instance,
        "instance_hash": "h",
        "solver": "placement/best-fit",
        "backend": None,
        "seed": seed,
        "repeat": 0,
        "objective": 1.0,
    }


def test_each_record_is_on_disk_as_soon_as_it_is_written(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "r.jsonl"
    with RecordWriter(out) as writer:
        writer.write(_record("a"))
        assert read_records(out) == [_record("a")]
        writer.write(_record("b"))
        assert len(read_records(out)) == 2


def test_a_torn_last_line_is_dropped_and_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps(_record("a")) + "\n" + '{"instance": "b", "inst')
    assert read_records(out) == [_record("a")]
    with RecordWriter(out) as writer:
        assert writer.keys == {record_key(_record("a"))}
        writer.write(_record("c"))
    assert [r["instance"] for r in read_records(out)] == ["a", "c"]
    assert out.read_text().endswith("}\n")


def test_a_corrupt_line_before_the_end_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text("not json\n" + json.dumps(_record("a")) + "\n")
    with pytest.raises(TopooptError, match=r"r.jsonl: line 1: not a JSON record"):
        read_records(out)


def test_missing_file_has_no_records(tmp_path: Path) -> None:
    assert read_records(tmp_path / "none.jsonl") == []


def test_instance_hash_follows_content_not_formatting(tmp_path: Path) -> None:
    instance = examples()[0]
    path = topoopt.save(instance, tmp_path / "a.json")
    path.write_text(json.dumps(instance.to_dict()))  # same content, other formatting
    assert instance_hash(topoopt.load(path)) == instance_hash(instance)
    assert instance_hash(examples()[1]) != instance_hash(instance)
