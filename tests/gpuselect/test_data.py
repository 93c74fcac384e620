"""The measured tables of ../shared/data/hosts (skipped when the folder is absent), and the
committed protocol-measured suites that name them by data name."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import plain_brute_force

import topoopt
from topoopt.bench.records import instance_hash
from topoopt.core.datapath import DataNotFoundError
from topoopt.gpuselect.generate import CLUSTERS, DATA_FILES, MEASURED, measured_bandwidth, protocol
from topoopt.gpuselect.loaders import parse_intra_csv, parse_topology
from topoopt.gpuselect.topologies import NVSWITCH_LINKS, builtin_topology

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hosts_dir(shared_data: Path) -> Path:
    return shared_data / "hosts"


@pytest.mark.parametrize("host_type", sorted(DATA_FILES))
def test_tables_cover_every_subset(hosts_dir: Path, host_type: str) -> None:
    for name in DATA_FILES[host_type]:
        table = parse_intra_csv((hosts_dir / name).read_text(), name)
        assert sorted(table) == list(range(1, 256))
        assert all(table[1 << i] == 0.0 for i in range(8))


@pytest.mark.parametrize("host_type", sorted(DATA_FILES))
def test_appendix_e_is_read_from_the_data_folders(
    hosts_dir: Path, host_type: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The built-in matrices equal the artifact's topo files: the NVSwitch hosts' by their rule,
    the others read from the data folders (the project keeps no copy), and without them there
    is none."""
    artifact = parse_topology((hosts_dir / f"{host_type}_topo.md").read_text(), host_type)
    monkeypatch.setenv("TOPOOPT_DATA", f"{tmp_path}{os.pathsep}{hosts_dir.parent}")
    assert builtin_topology(host_type) == artifact
    monkeypatch.setenv("TOPOOPT_DATA", str(tmp_path))
    assert builtin_topology(host_type) == (artifact if host_type in NVSWITCH_LINKS else None)


@pytest.mark.parametrize("cluster", ["h100", "het-ra", "het-va", "het-4mix"])
def test_protocol_on_measured_tables(hosts_dir: Path, cluster: str) -> None:
    """Small protocol scenarios: oracle and MIP agree with brute force on real tables."""
    for inst in protocol(seed=1, cluster=cluster, scenarios=1, ks=(3, 6), data_dir=str(hosts_dir)):
        small = inst if math.comb(inst.total_available, inst.k) <= 5000 else None
        oracle = topoopt.solve(inst, "gpuselect/enumerate")
        mip = topoopt.solve(inst, "gpuselect/mip")
        assert math.isclose(oracle.objective, mip.objective, abs_tol=1e-6)
        if small is not None:
            assert math.isclose(oracle.objective, plain_brute_force(inst), abs_tol=1e-9)
        hybrid = topoopt.solve(inst, "gpuselect/hybrid")
        assert hybrid.objective <= oracle.objective + 1e-9


def test_h100_tables_are_averaged(hosts_dir: Path) -> None:
    inst = protocol(seed=0, cluster="h100", scenarios=1, ks=(8,), data_dir=str(hosts_dir))[0]
    a, b = (parse_intra_csv((hosts_dir / n).read_text()) for n in DATA_FILES["H100"])
    row = inst.bound.tables[0]
    assert np.allclose(row[1:256], [(a[m] + b[m]) / 2 for m in range(1, 256)])


MEASURED_SUITES = sorted((ROOT / "instances" / "gpuselect").glob("protocol-measured-*"))


def test_measured_suites_name_their_tables_and_hold_no_copy() -> None:
    """Every committed protocol-measured file's model is the JSON object of
    measured_bandwidth: data names, never a table (the data may not be copied) nor a path
    relative to the repository's location."""
    assert len(MEASURED_SUITES) == len(CLUSTERS)
    for suite in MEASURED_SUITES:
        cluster = suite.name.removeprefix("protocol-measured-")
        files = sorted(suite.glob("*.json"))
        assert len(files) == 32
        for path in files:
            data = json.loads(path.read_text())
            assert data["bandwidth"] == measured_bandwidth(CLUSTERS[cluster], MEASURED), path


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
def test_measured_suites_are_what_the_generator_makes(hosts_dir: Path, cluster: str) -> None:
    """Loaded, the committed files equal the generator's instances (benchmarks/gpuselect/
    make_instances.py) and the same instances read from the tables' folder by path."""
    by_name = protocol(seed=0, cluster=cluster, scenarios=1, ks=(1, 7, 20), data_dir=MEASURED)
    by_path = protocol(seed=0, cluster=cluster, scenarios=1, ks=(1, 7, 20), data_dir=str(hosts_dir))
    assert by_name == by_path
    folder = ROOT / "instances" / "gpuselect" / f"protocol-measured-{cluster}"
    for inst in by_name:
        loaded = topoopt.load(folder / f"{inst.name}.json")
        assert loaded == inst
        assert instance_hash(loaded) == instance_hash(inst)


def test_a_measured_file_copied_elsewhere_loads(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A protocol-measured file copied alone to another folder loads and solves: from the
    repository (default data folder) and from anywhere with TOPOOPT_DATA; with an empty
    TOPOOPT_DATA it is the one-line error naming the field, the name and the folder."""
    source = ROOT / "instances" / "gpuselect" / "protocol-measured-het-4mix" / "het-4mix-k6-s0.json"
    copy = tmp_path / "copy.json"
    shutil.copy(source, copy)
    expected = topoopt.load(source)
    monkeypatch.delenv("TOPOOPT_DATA", raising=False)
    monkeypatch.chdir(ROOT)  # the default: shared/data beside the checkout
    assert topoopt.load(copy) == expected
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOPOOPT_DATA", str(shared_data))
    assert topoopt.load(copy) == expected
    assert topoopt.solve(copy, "gpuselect/enumerate").objective > 0
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("TOPOOPT_DATA", str(empty))
    with pytest.raises(DataNotFoundError) as caught:
        topoopt.load(copy)
    assert str(caught.value) == (
        "bandwidth.intra.4090[0]: data file 'data:hosts/4090_bandwidth_16MiB.csv' not found: "
        f"looked in {empty} (TOPOOPT_DATA='{empty}'); set TOPOOPT_DATA to the folder holding it"
    )


def test_relative_paths_still_name_tables(hosts_dir: Path, tmp_path: Path) -> None:
    """A user's relative path (here to the data folder, allowed) gives the same instance and
    the same benchmark hash as the data name: the content is the tables, not their names."""
    source = ROOT / "instances" / "gpuselect" / "protocol-measured-h100" / "h100-k8-s0.json"
    data = json.loads(source.read_text())
    data["bandwidth"] = measured_bandwidth(CLUSTERS["h100"], os.path.relpath(hosts_dir, tmp_path))
    path = tmp_path / "relative.json"
    path.write_text(json.dumps(data))
    by_path = topoopt.load(path, allow_paths=[hosts_dir])
    assert by_path == topoopt.load(source)
    assert instance_hash(by_path) == instance_hash(topoopt.load(source))
