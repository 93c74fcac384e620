"""Data names (``data:NAME``) and the data folders (``TOPOOPT_DATA``, default ``shared/data``
beside the checkout): lookup order, refused names, the one-line error, the CLI's exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import topoopt
from topoopt.cli import main
from topoopt.core import datapath
from topoopt.core.datapath import DataNotFoundError
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.core.safejson import FileAccess
from topoopt.gpuselect.loaders import INTRA_HEADER

ROOT = Path(__file__).resolve().parents[1]
CSV = ",".join(INTRA_HEADER) + "\nag,2,01,1048576,40.0\n"
NAME = "data:hosts/t.csv"


def instance(reference: str) -> dict:
    """A one-host gpuselect instance whose table is the file ``reference``."""
    return {
        "family": "gpuselect",
        "name": "d",
        "k": 2,
        "hosts": [{"name": "n0", "type": "T", "gpus": 2}],
        "bandwidth": {"model": "table", "intra": {"T": reference}},
    }


@pytest.fixture()
def data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder holding ``hosts/t.csv``, the only one (``TOPOOPT_DATA``)."""
    folder = tmp_path / "data"
    (folder / "hosts").mkdir(parents=True)
    (folder / "hosts" / "t.csv").write_text(CSV)
    monkeypatch.setenv("TOPOOPT_DATA", str(folder))
    return folder


def test_a_data_name_loads_from_any_folder(
    data_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is found in the data folder wherever the instance file is, whatever
    allow_paths says (relative paths would need the folder allowed)."""
    elsewhere = tmp_path / "a" / "b"
    elsewhere.mkdir(parents=True)
    path = elsewhere / "i.json"
    path.write_text(json.dumps(instance(NAME)))
    monkeypatch.chdir(tmp_path / "a")
    inst = topoopt.load(path)
    assert inst.bandwidth.intra == {"T": {0b11: 40.0}}
    assert topoopt.load(instance(NAME)) == inst
    assert topoopt.load(path, allow_paths=False) == inst
    with pytest.raises(InvalidInstanceError, match="outside the instance's folder"):
        topoopt.load(instance(str(data_folder / "hosts" / "t.csv")))


def test_missing_data_is_one_line_naming_field_name_and_folders(
    data_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("TOPOOPT_DATA", str(empty))  # the default is not searched
    with pytest.raises(DataNotFoundError) as caught:
        topoopt.load(instance(NAME))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("bandwidth.intra.T: data file 'data:hosts/t.csv' not found")
    assert f"looked in {empty} (TOPOOPT_DATA=" in message
    assert "set TOPOOPT_DATA" in message
    assert isinstance(caught.value, InvalidInstanceError)  # bad input: CLI exit 2


def test_resolver_with_no_folder_says_so() -> None:
    with pytest.raises(DataNotFoundError, match=r"^f: data file 'data:x\.csv' not found: no"):
        datapath.resolve("data:x.csv", "f", folders=[])
    with pytest.raises(DataNotFoundError, match="TOPOOPT_DATA unset; the default is shared/data"):
        datapath.resolve("data:no-such-file-anywhere.csv", "f", environ={})


def test_cli_exits_2_with_one_line(data_folder: Path, tmp_path: Path) -> None:
    path = tmp_path / "i.json"
    path.write_text(json.dumps(instance(NAME)))
    solve = ["solve", str(path), "--solver", "gpuselect/enumerate", "--json"]
    assert CliRunner().invoke(main, solve).exit_code == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    out = CliRunner().invoke(main, solve, env={"TOPOOPT_DATA": str(empty)})
    assert out.exit_code == 2
    lines = out.output.strip().splitlines()
    assert len(lines) == 1
    assert "bandwidth.intra.T: data file 'data:hosts/t.csv' not found: looked in" in lines[0]


def test_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TOPOOPT_DATA's folders in order, the first holding the name wins; an empty entry is the
    default; unset means the default only; relative folders are the working directory's."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, value in ((first, "1"), (second, "2")):
        folder.mkdir()
        (folder / "both.txt").write_text(value)
    (second / "only.txt").write_text("2")
    default = tmp_path / "default"
    monkeypatch.setattr(datapath, "default_folders", lambda: [default])
    monkeypatch.chdir(tmp_path)
    env = {"TOPOOPT_DATA": os.pathsep.join(["first", str(second)])}
    assert datapath.search_path(env) == [first, second]
    assert datapath.resolve("data:both.txt", "f", environ=env) == first / "both.txt"
    assert datapath.resolve("data:only.txt", "f", environ=env) == second / "only.txt"
    assert datapath.search_path({"TOPOOPT_DATA": f"{first}{os.pathsep}"}) == [first, default]
    assert datapath.search_path({"TOPOOPT_DATA": ""}) == [default]
    assert datapath.search_path({}) == [default]


def test_default_folder_is_shared_data_beside_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkout holding the working directory counts (a non-editable install run from a
    clone), found from any subfolder; a folder that is not a checkout adds nothing."""
    clone = tmp_path / "clone"
    (clone / "topoopt").mkdir(parents=True)
    (clone / "topoopt" / "__init__.py").write_text("")
    (clone / "pyproject.toml").write_text("")
    (clone / "docs").mkdir()
    shared = tmp_path / "shared" / "data"
    shared.mkdir(parents=True)
    monkeypatch.chdir(clone / "docs")
    assert clone in datapath.checkouts()
    assert shared in datapath.default_folders()
    monkeypatch.chdir(tmp_path)
    assert shared not in datapath.default_folders()
    assert datapath.checkouts() == [c for c in datapath.checkouts() if c != clone]


@pytest.mark.parametrize(
    "reference",
    [
        "data:",
        "data:/etc/passwd",
        "data:../x.csv",
        "data:a/../../x.csv",
        "data:a//b.csv",
        "data:./a.csv",
        "data:a\\b.csv",
        "data:a/",
    ],
)
def test_names_that_could_leave_their_folder_are_refused(data_folder: Path, reference: str) -> None:
    with pytest.raises(InvalidInstanceError) as caught:
        topoopt.load(instance(reference))
    assert not isinstance(caught.value, DataNotFoundError)
    assert str(caught.value).startswith("bandwidth.intra.T: data name ")


def test_data_files_follow_the_file_rules(data_folder: Path) -> None:
    """Regular files only, strict UTF-8: the rules of every file an instance names."""
    (data_folder / "hosts" / "dir.csv").mkdir()
    (data_folder / "hosts" / "bin.csv").write_bytes(b"\xff\xfe")
    with pytest.raises(TopooptError, match="not a regular file"):
        topoopt.load(instance("data:hosts/dir.csv"))
    with pytest.raises(TopooptError, match="not UTF-8"):
        topoopt.load(instance("data:hosts/bin.csv"))
    access = FileAccess(ROOT, allow=False)
    assert access.resolve(NAME, "f") == data_folder / "hosts" / "t.csv"
