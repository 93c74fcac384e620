"""The measured tables of ../shared/data/hosts (skipped when the folder is absent)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers import plain_brute_force

import topoopt
from topoopt.gpuselect.generate import DATA_FILES, protocol
from topoopt.gpuselect.loaders import parse_intra_csv, parse_topology
from topoopt.gpuselect.topologies import builtin_topology


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
def test_appendix_e_matches_the_artifact(hosts_dir: Path, host_type: str) -> None:
    """The built-in matrices typed from the paper equal the artifact's topo files."""
    text = (hosts_dir / f"{host_type}_topo.md").read_text()
    assert parse_topology(text, host_type) == builtin_topology(host_type)


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
