"""Every gpuselect solver returns k distinct idle GPUs; no heuristic beats the oracle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import small_instances

import topoopt
from topoopt.core.registry import solver_names
from topoopt.gpuselect import check
from topoopt.gpuselect.generate import MODEL_KINDS, examples
from topoopt.gpuselect.solution import to_masks
from topoopt.gpuselect.solvers.bandpilot import balanced_splits, min_hosts

SOLVERS = [s for s in solver_names("gpuselect") if s != "gpuselect/mip"]


@pytest.mark.parametrize("kind", MODEL_KINDS)
@settings(max_examples=25)
@given(data=st.data(), solver_seed=st.integers(min_value=0, max_value=999))
def test_feasible_and_never_beat_oracle(kind: str, data: st.DataObject, solver_seed: int) -> None:
    """The instance is drawn by hypothesis; ``solver_seed`` is the solvers' own option."""
    inst = data.draw(small_instances(kind))
    best = topoopt.solve(inst, "gpuselect/enumerate").objective
    for name in SOLVERS:
        result = topoopt.solve(inst, name, seed=solver_seed)
        gpus = result.solution.gpus
        assert len(gpus) == inst.k and len(set(gpus)) == inst.k
        assert check(inst, result.solution) == []
        assert result.objective <= best + 1e-9, (name, result.objective, best)


def _counts(inst: topoopt.Instance, result: topoopt.Result) -> list[int]:
    return sorted((bin(m).count("1") for m in to_masks(inst, result.solution) if m), reverse=True)


def test_fig1_balanced_beats_compact() -> None:
    """BandPilot Fig. 1: two hosts with 6 idle GPUs, k = 8 — Topo packs 6+2, BandPilot 4+4."""
    inst = examples()[0]
    topo = topoopt.solve(inst, "gpuselect/topo")
    hybrid = topoopt.solve(inst, "gpuselect/hybrid")
    assert _counts(inst, topo) == [6, 2]
    assert _counts(inst, hybrid) == [4, 4]
    assert hybrid.objective > topo.objective
    assert hybrid.metrics["hosts_used"] == 2


def test_eha_balanced_splits() -> None:
    assert list(balanced_splits([8, 8, 8], 8)) == [[3, 3, 2], [3, 2, 3], [2, 3, 3]]
    assert list(balanced_splits([1, 3, 8], 8)) == [[1, 3, 4]]
    assert min_hosts([3, 8, 2], 10) == 2


@pytest.mark.usefixtures("host_topologies")
def test_eha_bounds_host_combinations() -> None:
    from topoopt.gpuselect.generate import large_pool

    inst = large_pool(seed=0, gpus=512, ks=(64,))[0]
    bounded = topoopt.solve(inst, "gpuselect/eha", max_combinations=10)
    assert bounded.is_ok


def test_random_is_seeded() -> None:
    inst = examples()[1]
    a = topoopt.solve(inst, "gpuselect/random", seed=5).solution
    b = topoopt.solve(inst, "gpuselect/random", seed=5).solution
    assert a == b


def test_default_takes_one_host_when_it_fits() -> None:
    inst = examples()[2]
    result = topoopt.solve(inst, "gpuselect/default")
    assert result.metrics["hosts_used"] == 1


def test_result_json_holds_gpu_pairs() -> None:
    data = topoopt.solve(examples()[0], "gpuselect/hybrid").to_dict()
    assert data["solution"]["gpus"][0][0] == "n0"
    assert data["bandwidth"] == data["objective"]
    assert {"hosts_used", "bandwidth"} <= set(data)


def test_size_reports_k() -> None:
    family = topoopt.get_family("gpuselect")
    inst = examples()[0]
    assert family.size(inst) == {"k": 8, "gpus": 16, "available": 12, "hosts": 2}
