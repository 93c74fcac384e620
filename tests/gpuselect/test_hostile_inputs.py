"""The user-reported gpuselect input classes (issue 9), each by name: every one ends in a
one-line :class:`~topoopt.core.errors.TopooptError` (or a correct load), never another
exception, a hang or an allocation in proportion to a number in the file."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import topoopt
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.gpuselect import (
    BottleneckModel,
    GpuSelectInstance,
    Host,
    TableModel,
    TopologyModel,
    model_from_dict,
)
from topoopt.gpuselect.loaders import (
    CROSS_HEADER,
    INTRA_HEADER,
    parse_cross_csv,
    parse_intra_csv,
)

HEADER = ",".join(INTRA_HEADER) + "\n"
CSV = HEADER + "ag,2,01,1048576,40.0\nag,2,02,1048576,30.0\nag,2,12,1048576,20.0\n"
TOPO = "GPU0 X NV2 SYS\nGPU1 NV2 X SYS\nGPU2 SYS SYS X\n"


def _instance(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "family": "gpuselect",
        "format_version": 1,
        "name": "hostile",
        "k": 2,
        "hosts": [
            {"name": "n0", "type": "T", "gpus": 3, "available": [0, 1, 2]},
            {"name": "n1", "type": "T", "gpus": 3, "available": [0]},
        ],
        "bandwidth": {"model": "topology", "inter_gbps": 12.5, "topology": {"T": TOPO}},
    }
    data.update(changes)
    return data


def _table_model(source: str) -> dict[str, Any]:
    return {"model": "bottleneck", "intra": {"T": source}, "inter_gbps": 10.0}


def _topology_model(source: str) -> dict[str, Any]:
    return {"model": "topology", "inter_gbps": 10.0, "topology": {"T": source}}


MODELS = {"table": _table_model, "topology": _topology_model}
"""A model naming one file, per kind of file: a CSV table or ``nvidia-smi topo -m`` text."""


def one_line_error(action: Callable[[], object]) -> TopooptError:
    """The :class:`TopooptError` ``action`` raises; its message is one line."""
    with pytest.raises(TopooptError) as info:
        action()
    text = str(info.value)
    assert "\n" not in text and "\r" not in text, text
    return info.value


def _write(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / "inst.json"
    path.write_text(json.dumps(data))
    return path


# --------------------------------------------------------------------------- numbers


def test_gpus_beyond_64_bits_is_a_one_line_error(tmp_path: Path) -> None:
    """``"gpus": 18446744073709551617`` (was ``OverflowError``)."""
    data = _instance()
    data["hosts"][0]["gpus"] = 18446744073709551617
    text = json.dumps(data)
    (tmp_path / "inst.json").write_text(text)
    error = one_line_error(lambda: topoopt.load(tmp_path / "inst.json"))
    assert "inst.json" in str(error) and "json_int_digits=19" in str(error)
    from_object = one_line_error(lambda: topoopt.load(data))
    assert str(from_object).startswith("hosts[0].gpus: ") and "json_int_digits" in str(from_object)
    in_code = one_line_error(lambda: Host("a", "T", 18446744073709551617))
    assert str(in_code) == "gpus: must be <= 16, got 18446744073709551617"


def test_gpus_1e9_is_refused_before_allocating() -> None:
    """``"gpus": 1e9`` (was ``MemoryError``: a range was built before the <= 16 check)."""
    data = _instance()
    data["hosts"][0]["gpus"] = 1e9
    error = one_line_error(lambda: topoopt.load(data))
    assert str(error) == "hosts[0].gpus: must be <= 16, got 1000000000.0"
    assert str(one_line_error(lambda: Host("a", "T", 1e9))) == (
        "gpus: must be <= 16, got 1000000000"
    )
    assert "gpus" in str(one_line_error(lambda: Host("a", "T", 1e300)))


def test_model_given_as_an_object_is_a_named_error() -> None:
    """``"bandwidth": {"model": {}}`` (was ``TypeError: unhashable type: 'dict'``)."""
    error = one_line_error(lambda: topoopt.load(_instance(bandwidth={"model": {}})))
    assert str(error) == (
        "bandwidth.model: must be one of 'table', 'bottleneck', 'topology', 'learned', got {}"
    )
    for kind in ({}, [], None, 3):
        in_code = one_line_error(lambda kind=kind: model_from_dict({"model": kind}))
        assert str(in_code).startswith("bandwidth.model: unknown model")


# --------------------------------------------------------------------------- files


@pytest.mark.parametrize("kind", MODELS)
def test_binary_file_is_a_named_error(tmp_path: Path, kind: str) -> None:
    """A table or topology path to a binary file (was ``UnicodeDecodeError``)."""
    (tmp_path / "blob").write_bytes(bytes(range(256)) * 4)
    path = _write(tmp_path, _instance(bandwidth=MODELS[kind]("blob")))
    error = one_line_error(lambda: topoopt.load(path))
    assert "not UTF-8" in str(error) and "blob" in str(error)


@pytest.mark.parametrize("kind", MODELS)
def test_file_of_nul_bytes_is_a_named_error(tmp_path: Path, kind: str) -> None:
    """Valid UTF-8 but not a table: NUL bytes, an overlong CSV field."""
    (tmp_path / "zeros").write_bytes(b"\x00" * 4096)
    path = _write(tmp_path, _instance(bandwidth=MODELS[kind]("zeros")))
    assert isinstance(one_line_error(lambda: topoopt.load(path)), InvalidInstanceError)
    long_field = HEADER + 'ag,2,01,1,"' + "9" * 200_000 + '"\n'
    assert "not a readable CSV table" in str(one_line_error(lambda: parse_intra_csv(long_field)))


@pytest.mark.parametrize("kind", MODELS)
def test_path_with_a_nul_is_a_named_error(tmp_path: Path, kind: str) -> None:
    """A path holding a NUL byte (was ``ValueError: embedded null byte``)."""
    path = _write(tmp_path, _instance(bandwidth=MODELS[kind]("t\x00.csv")))
    error = one_line_error(lambda: topoopt.load(path))
    assert "NUL" in str(error)


@pytest.mark.timeout(20)  # fails instead of hanging the suite if a read blocks
@pytest.mark.parametrize("kind", MODELS)
def test_dev_zero_is_refused(tmp_path: Path, kind: str) -> None:
    """``/dev/zero`` (was memory exhaustion): outside the folder, and not a regular file."""
    if not Path("/dev/zero").exists():  # pragma: no cover
        pytest.skip("no /dev/zero")
    path = _write(tmp_path, _instance(bandwidth=MODELS[kind]("/dev/zero")))
    assert "outside the instance's folder" in str(one_line_error(lambda: topoopt.load(path)))
    allowed = one_line_error(lambda: topoopt.load(path, allow_paths=True))
    assert "not a regular file" in str(allowed)


@pytest.mark.timeout(20)  # fails instead of hanging the suite if a read blocks
@pytest.mark.parametrize("kind", MODELS)
def test_fifo_is_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    """A FIFO (was a hang in load, solve and ``instances check``)."""
    if not hasattr(os, "mkfifo"):  # pragma: no cover
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(tmp_path / "pipe")
    path = _write(tmp_path, _instance(bandwidth=MODELS[kind]("pipe")))
    error = one_line_error(lambda: topoopt.load(path))
    assert "not a regular file" in str(error)
    assert "not a regular file" in str(
        one_line_error(lambda: topoopt.solve(path, "gpuselect/hybrid"))
    )


@pytest.mark.parametrize("kind", MODELS)
def test_absolute_and_escaping_paths_need_permission(tmp_path: Path, kind: str) -> None:
    """Absolute paths and ``..`` escapes are refused unless ``allow_paths`` allows them."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "t.csv").write_text(CSV)
    (data_dir / "t.txt").write_text(TOPO)
    name = "t.csv" if kind == "table" else "t.txt"
    folder = tmp_path / "instances"
    folder.mkdir()
    for reference in (str(data_dir / name), f"../data/{name}"):
        path = _write(folder, _instance(bandwidth=MODELS[kind](reference)))
        error = one_line_error(lambda path=path: topoopt.load(path))
        assert "outside the instance's folder" in str(error) and "allow_paths" in str(error)
        assert str(error).startswith("bandwidth.")
        expected = topoopt.load(path, allow_paths=True)
        assert topoopt.load(path, allow_paths=[data_dir]) == expected
        assert topoopt.load(path, allow_paths=[str(data_dir)]) == expected
        assert "outside" in str(
            one_line_error(lambda path=path: topoopt.load(path, allow_paths=[folder]))
        )
    inside = folder / "sub"
    inside.mkdir()
    (inside / name).write_text((data_dir / name).read_text())
    path = _write(folder, _instance(bandwidth=MODELS[kind](f"sub/../sub/{name}")))
    assert topoopt.load(path) == expected


def test_cross_csv_with_deep_nesting_is_a_named_error() -> None:
    text = ",".join(CROSS_HEADER) + '\nag,2,"' + "[" * 5000 + '",1,3.0\n'
    error = one_line_error(lambda: parse_cross_csv(text, "c.csv"))
    assert str(error).startswith("c.csv:2: GPU_Mapping_Across_Nodes")


# --------------------------------------------------------------------------- host types


def test_host_type_must_be_a_string() -> None:
    """A numeric host type is refused in JSON and in code, not silently stringified."""
    data = _instance()
    data["hosts"][0]["type"] = 4090
    assert str(one_line_error(lambda: topoopt.load(data))) == (
        "hosts[0].type: must be a string, got 4090"
    )
    in_code = one_line_error(lambda: Host("a", 4090, 8))  # type: ignore[arg-type]
    assert (
        str(in_code)
        == 'type: must be a string, got 4090 (write a numeric host type in quotes: "4090")'
    )
    assert Host("a", "4090", 8).type == "4090"
    table = one_line_error(lambda: BottleneckModel(intra={4090: {"01": 1.0}}, inter_gbps=1))
    assert str(table).startswith("bandwidth.intra.4090: must be a string, got 4090")


def test_host_type_with_a_newline_gives_a_one_line_error() -> None:
    """A host type holding a newline: the message shows it escaped (``repr``)."""
    weird = "V\n100"
    data = _instance(bandwidth={"model": "topology", "inter_gbps": 1.0})
    for host in data["hosts"]:
        host["type"] = weird
    error = one_line_error(lambda: topoopt.load(data))
    assert "'V\\n100'" in str(error)
    assert str(error).startswith("bandwidth.topology['V\\n100']: no topology for host type")
    bottleneck = _instance(
        bandwidth={"model": "bottleneck", "inter_gbps": 1.0, "intra": {"A\tB": {"01": 1.0}}}
    )
    for host in bottleneck["hosts"]:
        host["type"] = weird
    text = str(one_line_error(lambda: topoopt.load(bottleneck)))
    assert "'V\\n100'" in text and "'A\\tB'" in text
    bad_table = {"model": "table", "intra": {weird: {"0x": 1.0}}}
    text = str(one_line_error(lambda: topoopt.load(_instance(bandwidth=bad_table))))
    assert text.startswith("bandwidth.intra['V\\n100'].0x: ")


def test_host_type_with_a_newline_is_accepted_when_covered() -> None:
    """Control characters are data, not an error: a table for that type serves it."""
    weird = "V\n100"
    data = _instance(
        bandwidth={"model": "bottleneck", "inter_gbps": 1.0, "intra": {weird: {"01": 4.0}}}
    )
    data["k"] = 2
    data["hosts"] = [{"name": "n0", "type": weird, "gpus": 2}]
    result = topoopt.solve(data, "gpuselect/hybrid")
    assert result.objective == 4.0


# --------------------------------------------------------------------------- unknown keys


def test_unknown_host_key_suggests_the_field() -> None:
    """``"gpu": 8`` in a host (was silently ignored)."""
    data = _instance()
    data["hosts"][1]["gpu"] = 8
    assert str(one_line_error(lambda: topoopt.load(data))) == (
        "hosts[1].gpu: unknown field; did you mean 'gpus'?"
    )


@pytest.mark.parametrize(
    ("where", "key", "field"),
    [
        ((), "hots", "hosts"),
        (("bandwidth",), "gpus_per_nick", "gpus_per_nic"),
        (("bandwidth",), "topolgy", "topology"),
    ],
)
def test_unknown_keys_suggest_the_field(where: tuple[str, ...], key: str, field: str) -> None:
    data = copy.deepcopy(_instance())
    target = data
    for part in where:
        target = target[part]
    target[key] = 1
    assert f"did you mean {field!r}" in str(one_line_error(lambda: topoopt.load(data)))


# --------------------------------------------------------------------------- limits


def test_host_limit_is_checked_before_the_hosts_are_read() -> None:
    with topoopt.limits_raised(gpuselect_hosts=2):
        error = one_line_error(
            lambda: GpuSelectInstance("x", 1, [object()] * 3, TopologyModel(inter_gbps=1.0))
        )
    assert str(error).startswith("hosts: 3 hosts exceed the limit gpuselect_hosts=2")
    assert "TOPOOPT_LIMIT_GPUSELECT_HOSTS" in str(error)


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ({"gpuselect_gpus": 5}, "hosts: 6 GPUs exceed the limit gpuselect_gpus=5"),
        ({"gpuselect_host_types": 1}, "hosts: 2 host types exceed the limit"),
        ({"gpuselect_hosts": 1}, "hosts: 2 hosts exceed the limit"),
    ],
)
def test_instance_limits(limit: dict[str, int], message: str) -> None:
    data = _instance()
    data["hosts"][1]["type"] = "A800"
    with topoopt.limits_raised(**limit):
        assert str(one_line_error(lambda: topoopt.load(data))).startswith(message)
    assert topoopt.load(data).total_gpus == 6


def test_table_entry_limit_covers_tables_csv_rows_and_matrices(tmp_path: Path) -> None:
    with topoopt.limits_raised(gpuselect_table_entries=2):
        for build in (
            lambda: TableModel(intra={"T": {"01": 1.0, "02": 1.0}}, cross={(1, 1): 1.0}),
            lambda: BottleneckModel(intra={"T": [{"01": 1.0}, {"01": 2.0, "1": 0}]}, inter_gbps=1),
            lambda: TopologyModel(inter_gbps=1, topology={"T": [["X", "NV1"], ["NV1", "X"]]}),
        ):
            assert "gpuselect_table_entries=2" in str(one_line_error(build))
        error = one_line_error(lambda: parse_intra_csv(CSV, "t.csv"))
        assert str(error).startswith("t.csv: its data rows exceed the limit")


def test_matrix_of_more_than_16_gpus_is_refused() -> None:
    rows = [["X" if i == j else "SYS" for j in range(17)] for i in range(17)]
    error = one_line_error(lambda: TopologyModel(inter_gbps=1, topology={"T": rows}))
    assert "at most 16" in str(error)


def test_default_limits_admit_a_100k_gpu_pool() -> None:
    hosts = [Host(f"n{i}", ("H100", "A800")[i % 2], 8, (0, 1, 2)) for i in range(12_500)]
    inst = GpuSelectInstance("big", 64, hosts, TopologyModel(inter_gbps=50.0))
    assert inst.total_gpus == 100_000 and inst.total_available == 37_500
