"""Appendix C volumes and the §5.2 affinity lookup."""

from __future__ import annotations

import pytest

from topoopt.core.errors import InvalidInstanceError
from topoopt.placement.affinity import (
    AffinityRecord,
    alpha_for,
    example_database,
    load_database,
    lookup_alpha,
)
from topoopt.placement.volumes import ModelConfig, affinity_ratios, communication_volumes

CFG = ModelConfig(V=50000, gb=512, mb=2, s=2048, h=4096, l=32, dp=16, pp=4, tp=2)


def test_volumes_follow_equations_11_to_13():
    h = 4096
    vol = communication_volumes(CFG)
    assert CFG.micro_batches == 512 / (2 * 16)
    assert vol.v_d == h * (50000 + 2048) + 32 / 4 * (4 * h * h + 2 * h + 8 * h * h + 7 * h)
    assert vol.v_p == 2 * 2 * 2048 * h
    assert vol.v_w == vol.v_d / 2
    r1, r2 = affinity_ratios(CFG)
    assert r1 == pytest.approx(2 * vol.v_w / (vol.v_d + vol.v_p))
    assert r2 == pytest.approx(vol.v_d / vol.v_p)


def test_moe_experts_multiply_the_mlp_parameters():
    dense = communication_volumes(CFG).v_d
    moe = communication_volumes(ModelConfig(**{**CFG.__dict__, "experts": 4})).v_d
    assert moe - dense == pytest.approx(32 / 4 * 3 * (8 * 4096**2 + 7 * 4096))


def test_bad_model_config_names_the_field():
    with pytest.raises(InvalidInstanceError, match=r"model\.h"):
        ModelConfig(V=1, gb=1, mb=1, s=1, h=0, l=1, dp=1, pp=1)


def test_example_database_reproduces_the_papers_alphas():
    alphas = {rec.label.split(":")[0]: rec.alpha for rec in example_database()}
    assert alphas["24B dense on H800"] == 0.0
    assert alphas["24B MoE on H800"] == pytest.approx(0.3)
    assert alphas["dense 7B on L20"] == 1.0
    assert alphas["dense 14B on L20"] == 0.0


def test_lookup_prefers_same_gpu_type_and_nearest_ratios():
    db = [AffinityRecord("A", 0.0, 0.0, 1.0, 0.0), AffinityRecord("B", 0.0, 0.1, 0.0, 1.0)]
    assert lookup_alpha(db, "A", 0.0, 0.1)[0] == 1.0  # same type wins over nearer record
    assert lookup_alpha(db, "C", 0.0, 0.09)[0] == 0.0  # unknown type: nearest overall
    assert alpha_for(CFG, "L20", db) in (0.0, 1.0)


def test_user_database_in_csv(tmp_path):
    path = tmp_path / "db.csv"
    path.write_text("gpu_type,r1,r2,j_dp,j_pp,label\nH100,0.1,50,1,3,x\n")
    (record,) = load_database(path)
    assert record.alpha == pytest.approx(0.25)
