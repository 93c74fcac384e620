"""Arnold's JCT predictor (``topoopt.learn.jct``): training, the model file, the CLI and the
simulator's learned predictor, on small synthetic traces (a few hundred jobs, few trees)."""

from __future__ import annotations

import functools
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from topoopt.core.errors import TopooptError
from topoopt.learn.jct import (
    FEATURES,
    JctModel,
    plot_confusion,
    target_intervals,
    train_jct,
)
from topoopt.sim import Job

INTERVAL = 600.0


def _jobs(n: int = 300, seed: int = 0) -> list[Job]:
    """Jobs whose running time depends on their user, queue and GPUs (plus noise)."""
    rng = np.random.default_rng(seed)
    users = ["ann", "bob", "cid", "dee"]
    out = []
    for i in range(n):
        user = users[int(rng.integers(4))]
        gpus = int(rng.choice([1, 2, 8, 16]))
        queue = "long" if user in ("cid", "dee") else "short"
        base = {"ann": 0.5, "bob": 3.0, "cid": 12.0, "dee": 30.0}[user] + gpus / 8
        duration = base * INTERVAL * float(rng.uniform(0.98, 1.02))
        out.append(
            Job(
                f"j{i}",
                float(i * 97 % 86_400 + 86_400 * (i % 9)),
                gpus,
                duration,
                user=user,
                queue=queue,
                qos="BE" if i % 3 else "LS",
                cpus=4.0 * gpus,
                memory_gib=None if i % 5 == 0 else 16.0 * gpus,
            )
        )
    return out


@pytest.fixture(scope="module")
def trained() -> tuple[JctModel, object]:
    return train_jct(_jobs(), max_intervals=36, max_iter=30, seed=0)


def test_training_learns_the_intervals(trained: tuple[JctModel, object]) -> None:
    model, evaluation = trained
    jobs = _jobs()
    true = target_intervals((j.duration_s for j in jobs), INTERVAL, 36)
    assert model.features == FEATURES and model.interval_s == INTERVAL
    assert (evaluation.rows_fit, evaluation.rows_validation, evaluation.rows_test) == (243, 27, 30)
    # the metadata decide the interval up to the noise: far better than no metadata
    assert evaluation.rmse_intervals < 0.3 * evaluation.baseline_rmse_intervals
    assert evaluation.accuracy >= 0.6 and evaluation.within_one >= 0.9
    assert evaluation.confusion.shape == (37, 37) and evaluation.confusion.sum() == 30
    assert evaluation.decoder in ("expected", "argmax")
    picked = evaluation.validation_rmse_by_decoder
    assert picked[evaluation.decoder] == min(picked.values())
    assert evaluation.by_decoder[evaluation.decoder]["rmse_intervals"] == evaluation.rmse_intervals
    predicted = model.predict_durations(jobs)
    assert np.mean(np.abs(predicted / INTERVAL - 0.5 - true) <= 1) >= 0.9
    # categories are coded by training frequency; an unseen user shares code 0 with none
    assert set(model.encoders) == {"user", "queue", "qos"}
    assert sorted(model.encoders["user"]) == ["ann", "bob", "cid", "dee"]
    rows = model.rows([Job("x", 0.0, 1, 1.0, user="zed"), Job("y", 0.0, 1, 1.0)])
    user = FEATURES.index("user")
    assert rows[0, user] == rows[1, user] == 0.0


def test_training_is_reproducible_and_the_time_split_holds_out_the_latest() -> None:
    jobs = _jobs(200, seed=3)
    one, e1 = train_jct(jobs, max_iter=10, seed=5)
    two, e2 = train_jct(jobs, max_iter=10, seed=5)
    assert json.dumps(one.to_dict()) == json.dumps(two.to_dict())
    assert e1.rmse_intervals == e2.rmse_intervals
    _, timed = train_jct(jobs, max_iter=10, split="time")
    assert timed.split == "time" and timed.rows_test == 20


def test_export_matches_scikit_learn(monkeypatch: pytest.MonkeyPatch) -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier

    fitted: list[HistGradientBoostingClassifier] = []

    class Spy(HistGradientBoostingClassifier):
        @functools.wraps(HistGradientBoostingClassifier.fit)
        def fit(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            fitted.append(self)
            return super().fit(*args, **kwargs)

    monkeypatch.setattr(
        "topoopt.learn.jct.require_sklearn",
        lambda: types.SimpleNamespace(HistGradientBoostingClassifier=Spy),
    )
    model, _ = train_jct(_jobs(250, seed=1), max_iter=15)
    other = _jobs(80, seed=9)
    want = fitted[0].predict_proba(model.rows(other))
    assert list(fitted[0].classes_) == model.classes.tolist()
    np.testing.assert_allclose(model.probabilities(other)[:, model.classes], want, atol=1e-9)
    assert np.allclose(model.probabilities(other).sum(axis=1), 1.0)


def test_save_load_round_trip(tmp_path: Path, trained: tuple[JctModel, object]) -> None:
    model, _ = trained
    path = model.save(tmp_path / "m.json")
    back = JctModel.load(path)
    jobs = _jobs(50, seed=7)
    np.testing.assert_array_equal(back.probabilities(jobs), model.probabilities(jobs))
    assert back.to_dict() == model.to_dict()
    data = json.loads(path.read_text())
    assert data["format"] == "topoopt-jct-model" and data["version"] == 1
    assert data["training"]["evaluation"]["rows_test"] == 30


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"version": 2}, "version", "reads version 1"),
        ({"version": None}, "version", "reads version 1"),
        ({"format": "topoopt-bandwidth-model"}, "format", "expected 'topoopt-jct-model'"),
        ({"decoder": "mean"}, "decoder", "must be one of expected, argmax"),
        ({"features": ["gpus", "colour"]}, "features", "unknown feature 'colour'"),
        ({"classes": [3, 1]}, "classes", "increasing integers"),
        ({"interval_s": -1}, "interval_s", "must be a number > 0"),
        ({"encoders": {}}, "encoders", "exactly the keys"),
    ],
)
def test_bad_model_files_name_the_file_and_the_field(
    tmp_path: Path,
    trained: tuple[JctModel, object],
    change: dict[str, object],
    field: str,
    words: str,
) -> None:
    path = tmp_path / "model.json"
    path.write_text(json.dumps({**trained[0].to_dict(), **change}))
    with pytest.raises(TopooptError) as info:
        JctModel.load(path)
    assert str(info.value).startswith(f"{path}: {field}: ") and words in str(info.value)


def test_malformed_model_files(tmp_path: Path, trained: tuple[JctModel, object]) -> None:
    path = tmp_path / "model.json"
    data = trained[0].to_dict()
    data["trees"]["left"][0] = 10**9
    path.write_text(json.dumps(data))
    with pytest.raises(TopooptError, match=rf"{path}: trees\.left: entries must be in"):
        JctModel.load(path)
    path.write_text("{not json")
    with pytest.raises(TopooptError, match=str(path)):
        JctModel.load(path)
    path.write_text("[1, 2]")
    with pytest.raises(TopooptError, match=rf"{path}: a JCT model must be a JSON object"):
        JctModel.load(path)
    with pytest.raises(TopooptError, match="cannot read JCT model"):
        JctModel.load(tmp_path / "absent.json")


def test_missing_extra_is_named_and_a_saved_model_needs_numpy_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trained: tuple[JctModel, object]
) -> None:
    path = trained[0].save(tmp_path / "m.json")
    for name in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn: ImportError
    with pytest.raises(TopooptError, match=r"pip install 'topoopt\[learn\]'"):
        train_jct(_jobs(50), max_iter=5)
    model = JctModel.load(path)
    assert model.predict_duration(_jobs(1)[0]) > 0


def test_bad_training_input() -> None:
    jobs = _jobs(40)
    with pytest.raises(TopooptError, match="at least 20 jobs"):
        train_jct(jobs[:5])
    with pytest.raises(TopooptError, match=r"holdout: must be in \(0, 1\)"):
        train_jct(jobs, holdout=1.5)
    with pytest.raises(TopooptError, match="split: must be one of random, time"):
        train_jct(jobs, split="later")
    with pytest.raises(TopooptError, match="features: known: gpus"):
        train_jct(jobs, features=["gpus", "colour"])
    same = [Job(f"s{i}", float(i), 1, 30.0) for i in range(30)]
    with pytest.raises(TopooptError, match="every training job runs 0 intervals"):
        train_jct(same)
    with pytest.raises(TopooptError, match="cpus: must be finite and >= 0"):
        Job("c", 0.0, 1, 1.0, cpus=-2)


def test_confusion_plot(tmp_path: Path, trained: tuple[JctModel, object]) -> None:
    path = plot_confusion(trained[1], tmp_path / "confusion.png")  # type: ignore[arg-type]
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------- the command line

HEADER = "#job id,arrival time (sec),topology,shape,size,duration (sec)\n"


def _philly_csv(path: Path, n: int = 300) -> Path:
    """A small trace in the Philly-derived format: the running time follows the GPUs."""
    rows = [
        f"{i},{i * 600.0},CLOS,{g},{g},{(1 + g) * INTERVAL * (1 + 0.01 * (i % 3))}"
        for i, g in ((i, [1, 2, 4, 8][i % 4]) for i in range(n))
    ]
    path.write_text(HEADER + "\n".join(rows) + "\n")
    return path


def _cli(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from topoopt.cli import main

    result = CliRunner().invoke(main, ["learn", "jct", *args])
    return result.exit_code, result.output


def test_cli_trains_evaluates_and_writes_the_model(tmp_path: Path) -> None:
    trace = _philly_csv(tmp_path / "philly.csv")
    out, png, report = tmp_path / "m.json", tmp_path / "c.png", tmp_path / "e.json"
    code, output = _cli(
        str(trace),
        "--out",
        str(out),
        "--max-iter",
        "20",
        "--max-intervals",
        "12",
        "--plot",
        str(png),
        "--evaluation",
        str(report),
    )
    assert code == 0, output
    assert "300 jobs of" in output and "(philly)" in output and "RMSE " in output
    assert "rows fit 243, validation 27, test 30 (random split)" in output
    model = JctModel.load(out)
    assert model.max_intervals == 12 and model.training["format"] == "philly"
    evaluation = json.loads(report.read_text())
    assert evaluation["rmse_intervals"] < 0.5 and evaluation["accuracy"] > 0.8
    assert len(evaluation["confusion"]) == 13 and png.read_bytes()[:4] == b"\x89PNG"
    # the model predicts the interval of the GPUs' running time: 1 + 8 intervals for 8 GPUs
    assert model.predict_duration(Job("new", 0.0, 8, 1.0)) == pytest.approx(9.5 * INTERVAL)


def test_cli_bad_input_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    trace = _philly_csv(tmp_path / "philly.csv")
    short = _philly_csv(tmp_path / "short.csv", n=10)
    out = str(tmp_path / "m.json")
    cases = [
        ([str(tmp_path / "absent.csv"), "--out", out], "absent.csv"),
        ([str(trace), "--format", "slurm", "--out", out], "unknown trace format 'slurm'"),
        ([str(trace), "--holdout", "1.5", "--out", out], "--holdout"),
        ([str(short), "--out", out], "needs at least 20 jobs, got 10"),
        ([str(trace), "--out", str(tmp_path / "no" / "m.json")], "cannot write"),
        ([str(trace), "--split", "later", "--out", out], "--split"),
    ]
    for args, words in cases:
        code, output = _cli(*args, "--max-iter", "5")
        assert code == 2, (args, output)
        assert output.startswith("error: ") and output.count("\n") == 1, output
        assert words in output, output
