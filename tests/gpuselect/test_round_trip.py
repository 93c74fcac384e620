"""JSON round trips: ``load(x.to_dict()) == x`` and ``load(save(x, path)) == x`` for every model
kind, including models whose tables and topologies were read from files."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_instances

import topoopt
from topoopt.gpuselect import (
    BottleneckModel,
    GpuSelectInstance,
    TableModel,
    TopologyModel,
)
from topoopt.gpuselect.loaders import CROSS_COLUMNS, INTRA_COLUMNS
from topoopt.gpuselect.masks import format_mask, popcount
from topoopt.gpuselect.topologies import APPENDIX_E_TYPES, NVSWITCH_LINKS

KINDS = ("table", "bottleneck", "topology")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_load_of_to_dict_and_of_save_equal_the_instance(
    kind: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    inst = data.draw(any_instances(kind))
    assert topoopt.load(inst.to_dict()) == inst
    assert topoopt.load(json.loads(json.dumps(inst.to_dict()))) == inst
    path = tmp_path_factory.mktemp("saved") / "nested" / "inst.json"
    again = topoopt.load(topoopt.save(inst, path))
    assert again == inst
    assert hash(again) == hash(inst)


def _write_intra(folder: Path, name: str, table: dict[int, float]) -> str:
    with (folder / name).open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["OP", *INTRA_COLUMNS[:2], "data_size(B)", INTRA_COLUMNS[2]])
        for mask, gbps in table.items():
            writer.writerow(["all_reduce", popcount(mask), format_mask(mask), 1048576, repr(gbps)])
    return name


def _write_cross(folder: Path, cross: dict[tuple[int, ...], float]) -> str:
    with (folder / "cross.csv").open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["OP", *CROSS_COLUMNS[:2], "data_size(B)", CROSS_COLUMNS[2]])
        for counts, gbps in cross.items():
            mapping = json.dumps([list(range(c)) for c in counts])
            writer.writerow(["all_reduce", sum(counts), mapping, 1048576, repr(gbps)])
    return "cross.csv"


def _as_files(inst: GpuSelectInstance, folder: Path) -> dict[str, Any]:
    """The JSON object of ``inst`` with its tables and matrices written to files in
    ``folder`` and referenced by relative paths (a table of >= 2 entries split in two files,
    which the reader averages entry by entry; empty tables stay inline)."""
    data = inst.to_dict()
    model = inst.bandwidth
    spec = data["bandwidth"]
    if isinstance(model, (TableModel, BottleneckModel)):
        for i, (host_type, table) in enumerate(model.intra.items()):
            entries = list(table.items())
            if len(entries) >= 2:
                half = len(entries) // 2
                spec["intra"][host_type] = [
                    _write_intra(folder, f"intra{i}a.csv", dict(entries[:half])),
                    _write_intra(folder, f"intra{i}b.csv", dict(entries[half:])),
                ]
            elif entries:
                spec["intra"][host_type] = _write_intra(folder, f"intra{i}.csv", table)
    if isinstance(model, TableModel) and model.cross and all(sum(c) for c in model.cross):
        spec["cross"] = _write_cross(folder, dict(model.cross))
    if isinstance(model, TopologyModel):
        for i, (host_type, matrix) in enumerate(model.topology.items()):
            text = "\n".join(f"GPU{j}\t" + "\t".join(row) for j, row in enumerate(matrix))
            (folder / f"topo{i}.txt").write_text(text + "\n")
            spec["topology"][host_type] = f"topo{i}.txt"
    return data


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=30)
@given(data=st.data())
def test_models_read_from_files_round_trip_from_anywhere(
    kind: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A model read from CSV / topology files equals the same model built in code, and its
    instance round-trips through dicts and through files saved in another folder."""
    inst = data.draw(any_instances(kind))
    folder = tmp_path_factory.mktemp("tables")
    (folder / "inst.json").write_text(json.dumps(_as_files(inst, folder)))
    loaded = topoopt.load(folder / "inst.json")
    assert loaded == inst
    assert topoopt.load(loaded.to_dict()) == loaded
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "copy.json"
    assert topoopt.load(topoopt.save(loaded, elsewhere)) == loaded


READ_FROM_DATA = set(APPENDIX_E_TYPES) - set(NVSWITCH_LINKS)
"""Appendix E types whose built-in matrices are read from the data folders."""


def _committed() -> list[Path]:
    """Every committed example and random-small instance, two files of every other suite."""
    files = []
    for suite in sorted((ROOT / "instances" / "gpuselect").iterdir()):
        found = sorted(suite.glob("*.json"))
        files += found if suite.name in ("examples", "random-small") else found[:2]
    return files


@pytest.mark.parametrize("path", _committed(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_committed_instances_round_trip(path: Path, request: pytest.FixtureRequest) -> None:
    if "measured" in path.parent.name:  # their tables: data names, in ../shared/data
        request.getfixturevalue("shared_data")
    if {h["type"] for h in json.loads(path.read_text())["hosts"]} & READ_FROM_DATA:
        request.getfixturevalue("host_topologies")  # built-in matrices read from the data
    inst = topoopt.load(path)
    assert topoopt.load(inst.to_dict()) == inst
    if "measured" not in path.parent.name:  # tables inline already: to_dict is the file
        assert inst.to_dict() == json.loads(path.read_text())
