"""Results files: append and flush, read as bytes, refuse anything but records (and a torn last
line) without touching the file, validate every record, report duplicates."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import topoopt
from bench.factories import rec
from topoopt.bench import jsonl
from topoopt.bench.jsonl import ResultsFileError, json_prefix
from topoopt.bench.records import (
    RecordWriter,
    drop_duplicates,
    instance_hash,
    read_records,
    record_key,
)
from topoopt.bench.schema import FIELDS, REQUIRED, record_problem
from topoopt.core.errors import TopooptError
from topoopt.placement.generate import examples


def _line(record: dict, newline: str = "\n") -> str:
    return json.dumps(record) + newline


A, B, C = rec("a", "best-fit", 1.0), rec("b", "best-fit", 2.0), rec("c", "koordinator", None)


def test_each_record_is_on_disk_as_soon_as_it_is_written(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "r.jsonl"
    with RecordWriter(out) as writer:
        writer.write(A)
        assert read_records(out) == [A]
        writer.write(B)
        assert read_records(out) == [A, B]
    assert out.read_bytes() == (_line(A) + _line(B)).encode()


def test_a_torn_last_line_is_not_a_record_and_is_cut_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text(_line(A) + '{"instance": "b", "inst')
    assert read_records(out) == [A]
    with RecordWriter(out) as writer:
        assert writer.keys == {record_key(A)}
        assert writer.repaired == len('{"instance": "b", "inst')
        writer.write(C)
    assert out.read_text() == _line(A) + _line(C)


def test_a_crlf_file_is_read_and_appended_to_with_crlf(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_bytes((_line(A, "\r\n") + _line(B, "\r\n")[:-30]).encode())
    assert read_records(out) == [A]
    with RecordWriter(out) as writer:
        assert writer.newline == b"\r\n"
        writer.write(C)
    assert out.read_bytes() == (_line(A, "\r\n") + _line(C, "\r\n")).encode()


def test_mixed_line_endings_blank_lines_and_a_bom_are_read(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_bytes(b"\xef\xbb\xbf" + (_line(A, "\r\n") + "\n  \r\n" + _line(B)).encode())
    assert read_records(out) == [A, B]
    with RecordWriter(out) as writer:
        assert writer.newline == b"\n"  # the last line's ending
        writer.write(C)
    assert read_records(out) == [A, B, C]


@pytest.mark.parametrize("ending", ["", "\r"])
def test_a_complete_last_line_without_its_newline_is_kept_and_terminated(
    tmp_path: Path, ending: str
) -> None:
    out = tmp_path / "r.jsonl"
    out.write_bytes((_line(A, "\r\n") + json.dumps(B) + ending).encode())
    assert read_records(out) == [A, B]
    with RecordWriter(out) as writer:
        assert writer.repaired == 0
        writer.write(C)
    assert out.read_bytes() == (_line(A, "\r\n") + _line(B, "\r\n") + _line(C, "\r\n")).encode()


def test_a_missing_file_has_no_records_and_the_writer_creates_it(tmp_path: Path) -> None:
    assert read_records(tmp_path / "none.jsonl") == []
    with RecordWriter(tmp_path / "none.jsonl") as writer:
        assert (writer.keys, writer.duplicates, writer.repaired) == (set(), 0, 0)
    assert (tmp_path / "none.jsonl").read_bytes() == b""


GOOD = _line(A) + _line(B)

BAD_FILES = {
    "non-JSON line in the middle": (
        _line(A) + "not json\n" + _line(B),
        "line 2: not valid JSON (Expecting value at line 1 column 1)",
    ),
    "torn line before the end": (
        _line(A) + '{"instance": "b", "inst\n' + _line(B),
        "line 2: not valid JSON (Unterminated string starting at line 1 column 19)",
    ),
    "complete last line that is not an object": (GOOD + "[1, 2]", "line 3: not a JSON object"),
    "last line that is a JSON string": (GOOD + '"text"\n', "line 3: not a JSON object but a"),
    "last line that starts like a record but is not a prefix of one": (
        GOOD + '{"a": 1}}',
        "line 3: not valid JSON (Extra data at line 1 column 9)",
    ),
    "one line of garbage without a newline": ("hello", "line 1: not valid JSON"),
    "one line of garbage with a newline": ("hello\n", "line 1: not valid JSON"),
    "one line of brace garbage": ("{hello", "line 1: not valid JSON"),
    "old Mac line endings": (
        _line(A, "\r") + _line(B, "\r"),
        "line 1: not valid JSON (Extra data",
    ),
    "NaN in JSON": (
        GOOD + _line(A).replace('"objective": 1.0', '"objective": NaN'),
        "line 3: not valid JSON (NaN is not a JSON number",
    ),
    "number overflowing a float": (
        _line(A).replace('"total_s": 1.0', '"total_s": 1e999') + _line(B),
        "line 1: not valid JSON (the number 1e999 overflows to infinity)",
    ),
    "huge integer": (
        _line(A).replace('"seed": 0', '"seed": ' + "9" * 500),
        "line 1: not valid JSON (an integer of 500 digits exceed the limit json_int_digits",
    ),
    "key twice": (
        _line(A).replace('"seed": 0', '"seed": 0, "seed": 1'),
        "line 1: not valid JSON (the key 'seed' appears twice in one object)",
    ),
    "deep nesting": (
        _line(A) + '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
        "line 2: more than 64 nested levels exceed the limit json_depth",
    ),
    "invalid record in the complete last line": (GOOD + "{}", "line 3: missing required"),
}

BAD_BYTES = {
    "non-UTF-8 byte": (
        _line(A).encode() + _line(B).replace('"b"', '"b\x00"').encode().replace(b"\x00", b"\xff"),
        "line 2: not valid UTF-8: byte 0xff at column",
    ),
    "UTF-16 file": (GOOD.encode("utf-16"), "line 1: not valid UTF-8: byte 0xff at column 1"),
    "non-UTF-8 byte in a torn last line": (
        GOOD.encode() + b'{"instance": "\xff',
        "line 3: not valid UTF-8: byte 0xff at column 15",
    ),
}


def _bad_files() -> list[tuple[str, bytes, str]]:
    cases = [(name, text.encode(), words) for name, (text, words) in BAD_FILES.items()]
    return cases + [(name, data, words) for name, (data, words) in BAD_BYTES.items()]


@pytest.mark.parametrize(
    ("data", "words"), [case[1:] for case in _bad_files()], ids=[c[0] for c in _bad_files()]
)
def test_a_bad_file_is_a_named_error_and_is_never_modified(
    tmp_path: Path, data: bytes, words: str
) -> None:
    out = tmp_path / "results.jsonl"
    out.write_bytes(data)
    with pytest.raises(ResultsFileError, match="^" + re.escape(f"{out} line ")) as read:
        read_records(out)
    with pytest.raises(ResultsFileError) as resume:
        RecordWriter(out)
    assert str(read.value) == str(resume.value)
    assert words in str(read.value)
    assert "\n" not in str(read.value)
    assert out.read_bytes() == data


def test_a_line_longer_than_the_limit_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 100)
    out = tmp_path / "r.jsonl"
    data = ('{"message": "' + "x" * 200).encode()  # torn, but too long to tell
    out.write_bytes(data)
    with pytest.raises(ResultsFileError, match="line 1: longer than 100 bytes"):
        RecordWriter(out)
    assert out.read_bytes() == data


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    with pytest.raises(ResultsFileError, match="re0: not a regular file"):
        read_records(tmp_path)
    with pytest.raises(ResultsFileError, match="re0: cannot open: Is a directory"):
        RecordWriter(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ResultsFileError, match="fifo: not a regular file"):
        read_records(fifo)  # returns at once: a FIFO is not read
    with pytest.raises(ResultsFileError, match="fifo: not a regular file"):
        RecordWriter(fifo)
    with pytest.raises(ResultsFileError, match="null: not a regular file"):
        read_records("/dev/null")


def _with(**changes: object) -> dict:
    record = dict(A)
    for name, value in changes.items():
        if value is _MISSING:
            del record[name]
        else:
            record[name] = value
    return record


_MISSING = object()

BAD_RECORDS = {
    "missing field": (_with(seed=_MISSING), "missing required field(s): seed"),
    "empty object": ({}, "missing required field(s): " + ", ".join(REQUIRED)),
    "seed 'x'": (_with(seed="x"), "seed must be a non-negative integer, got 'x'"),
    "negative seed": (_with(seed=-1), "seed must be a non-negative integer, got -1"),
    "boolean repeat": (_with(repeat=True), "repeat must be a non-negative integer, got True"),
    "objective 'abc'": (_with(objective="abc"), "objective must be a finite number or null"),
    "unknown status": (_with(status="great"), "status must be one of 'no_solution', "),
    "unknown sense": (_with(sense="up"), "sense must be one of 'minimize', 'maximize'"),
    "backend number": (_with(backend=3), "backend must be a non-empty string or null, got 3"),
    "total_s null": (_with(total_s=None), "total_s must be a finite number >= 0, got None"),
    "negative time": (_with(total_s=-1.0), "total_s must be a finite number >= 0, got -1.0"),
    "size of strings": (_with(size={"nodes": "12"}), "size must be an object of non-negative"),
    "tags of numbers": (_with(tags={"setting": 1}), "tags must be an object of strings"),
    "record version 2": (_with(record_version=2), "record_version must be 1, got 2"),
    "metric text": (_with(dp_spread="abc"), "dp_spread (a metric) must be a finite number"),
    # a list or an object where a number or "inf" may stand: a named error, not a TypeError
    # (``v in JSON_INFINITY`` hashed the value; the fuzz test of results files found it)
    "metric list": (_with(dp_spread=[]), 'dp_spread (a metric) must be a finite number, "inf"'),
    "bound object": (_with(bound={}), 'bound must be a finite number, "inf" or "-inf" or null'),
    "message list": (_with(message=["x"]), "message must be a string or null, got ['x']"),
    "control characters": (
        _with(instance="a\nb", seed="\x1b[31m\n"),
        r"seed must be a non-negative integer, got '\x1b[31m\n'",
    ),
}


@pytest.mark.parametrize(("record", "words"), list(BAD_RECORDS.values()), ids=list(BAD_RECORDS))
def test_a_bad_record_is_a_named_error(tmp_path: Path, record: dict, words: str) -> None:
    out = tmp_path / "results.jsonl"
    data = (GOOD + _line(record) + _line(C)).encode()
    out.write_bytes(data)
    with pytest.raises(ResultsFileError) as error:
        read_records(out)
    assert str(error.value).startswith(f"{out} line 3: ")
    assert words in str(error.value)
    assert "\n" not in str(error.value)
    with pytest.raises(ResultsFileError):
        RecordWriter(out)
    assert out.read_bytes() == data


def test_the_table_accepts_records_as_the_supervisor_writes_them() -> None:
    assert record_problem(A) is None and record_problem(C) is None
    minimal = {name: A[name] for name in REQUIRED}
    assert record_problem(minimal) is None
    optional = {f.name for f in FIELDS if not f.required}
    assert "tags" in optional and "bound" in optional and "seed" not in optional


def test_committed_results_are_valid() -> None:
    root = Path(__file__).parents[2] / "benchmarks"
    files = sorted(root.glob("*/*.jsonl"))
    assert files
    for path in files:
        assert read_records(path)


def test_the_writer_refuses_an_invalid_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r.jsonl"
    with RecordWriter(out) as writer:
        writer.write(A)
        with pytest.raises(TopooptError, match="refusing to write an invalid record: seed"):
            writer.write(_with(seed="x"))
        with pytest.raises(TopooptError, match="host must be an object"):
            writer.write(_with(host=float("nan")))
        monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 100)  # a record the readers would refuse
        with pytest.raises(TopooptError, match="refusing to write a record of"):
            writer.write(B)
        monkeypatch.undo()
    assert read_records(out) == [A]


def test_duplicates_are_kept_by_the_reader_and_dropped_first_copy_first(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    second = {**A, "objective": 5.0}
    out.write_text(_line(A) + _line(B) + _line(second) + _line(A))
    records = read_records(out)
    assert len(records) == 4
    kept, dropped = drop_duplicates(records)
    assert (kept, dropped) == ([A, B], 2)
    with RecordWriter(out) as writer:
        assert (len(writer.keys), writer.records, writer.duplicates) == (2, 4, 2)


@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=8,
    ),
    st.booleans(),
)
def test_every_strict_prefix_of_a_json_object_is_a_prefix(value: object, ascii_only: bool) -> None:
    text = json.dumps({"v": value, "k": [1, -2.5e-3]}, ensure_ascii=ascii_only)
    assert json_prefix(text) == "complete"
    for cut in range(len(text)):
        assert json_prefix(text[:cut]) == ("prefix" if cut else "invalid")


@pytest.mark.parametrize(
    "text",
    ['{"a" 1', '{"a": 01', '{"a": tru e', '{"a": [1,]', '{"a": 1,}', '{"a": "\\x', "{'a'", "{,"],
)
def test_text_that_no_continuation_makes_an_object_is_no_prefix(text: str) -> None:
    assert json_prefix(text) == "invalid"


def test_instance_hash_follows_content_not_formatting(tmp_path: Path) -> None:
    instance = examples()[0]
    path = topoopt.save(instance, tmp_path / "a.json")
    path.write_text(json.dumps(instance.to_dict()))  # same content, other formatting
    assert instance_hash(topoopt.load(path)) == instance_hash(instance)
    assert instance_hash(examples()[1]) != instance_hash(instance)
