"""Arnold's JCT predictor (``topoopt.learn.jct``): training, the model file, the CLI and the
simulator's learned predictor, on small synthetic traces (a few hundred jobs, few trees)."""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
import types
from collections.abc import Iterator
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


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    """Boosting on one thread: OpenMP threads wait on each other on a loaded machine (the
    module's fixtures, set up first, say so themselves)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="openmp"):
        yield


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
    return train_jct(_jobs(), max_intervals=36, max_iter=30, seed=0, threads=1)


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
        ({"top_mean_s": 600.0}, "top_mean_s", "must be a number >= max_intervals * interval_s"),
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


# ---------------------------------------------------------------------- the simulator

HAND = [  # docs/sim.md, "Reserving for a large job": L announced at 0, arrives at 100
    Job("L", 100, 16, 50, user="big"),
    Job("x", 10, 8, 200, user="long"),
    Job("y", 20, 8, 50, user="mid"),
    Job("z", 30, 8, 200, user="long"),
    Job("w", 40, 8, 30, user="short"),
]


@pytest.fixture(scope="module")
def by_user(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model of 10-second intervals that learned each user's running time: short 30 s,
    mid 50 s, long 200 s, big 50 s (no other feature tells them apart)."""
    seconds = {"short": 30.0, "mid": 50.0, "long": 200.0, "big": 50.0}
    jobs = [
        Job(f"t{i}", float(i), 8, seconds[user] + i % 3, user=user)
        for i, user in enumerate(list(seconds) * 60)
    ]
    model, evaluation = train_jct(
        jobs,
        interval_s=10.0,
        max_intervals=30,
        max_iter=20,
        features=["gpus", "user"],
        threads=1,
    )
    assert evaluation.accuracy == 1.0
    return model.save(tmp_path_factory.mktemp("model") / "by-user.json")


def _starts(
    predictor: object, mode: str = "predicted", jobs: list[Job] = HAND, announce: float = 0.0
) -> dict:
    from topoopt.sim import Simulation, Trace, parse_shape, records
    from topoopt.sim.reservation import Reservation

    sim = Simulation(
        parse_shape("2x2:8"),
        Trace(list(jobs)),
        policy="arnold",
        predictor=predictor,  # type: ignore[arg-type]
        reservation=Reservation("L", announce, mode),
        check_every_event=True,
    )
    return {r["job"]: r for r in records(sim)}


def test_the_reservation_plans_with_the_learned_predictions(by_user: Path) -> None:
    model = JctModel.load(by_user)
    assert [model.predict_duration(j) for j in HAND] == [55.0, 205.0, 55.0, 205.0, 35.0]
    exact = _starts("exact")
    learned = _starts(model.predictor())
    # the predictions keep exact's decisions here: w (predicted 35 s) enters the zone at 40
    assert {j: r["start_s"] for j, r in learned.items()} == {
        j: r["start_s"] for j, r in exact.items()
    }
    assert learned["w"]["start_s"] == 40 and learned["w"]["predictor"] == "learned"
    assert learned["w"]["predicted_s"] == 35.0 and exact["w"]["predicted_s"] == 30.0
    # the model, not the trace, decides: w submitted as a "long" user's job waits (205 s)
    relabelled = [j if j.id != "w" else dataclasses.replace(j, user="long") for j in HAND]
    starts = {j: r["start_s"] for j, r in _starts(model.predictor(), jobs=relabelled).items()}
    assert starts["w"] == 150  # the strict schedule's (docs/sim.md)


def test_no_predictor_keeps_everyone_out_of_the_zone() -> None:
    none = _starts("none")
    strict = _starts("exact", mode="strict")
    assert {j: r["start_s"] for j, r in none.items()} == {
        j: r["start_s"] for j, r in strict.items()
    }
    assert none["w"]["start_s"] == 150 and none["w"]["predicted_s"] is None
    from topoopt.sim import Simulation, Trace, parse_shape

    with pytest.raises(TopooptError, match="predictor 'none': the policy 'fifo-backfill'"):
        Simulation(
            parse_shape("2x2:8"), Trace(list(HAND)), policy="fifo-backfill", predictor="none"
        )


def test_simulate_with_a_jct_model(tmp_path: Path, by_user: Path) -> None:
    from click.testing import CliRunner

    from topoopt.cli import main
    from topoopt.sim.traces.native import write_native

    trace = write_native(HAND, tmp_path / "jobs.jsonl")
    base = ["simulate", "--cluster-shape", "2x2:8", "--trace", str(trace), "--policy", "arnold"]
    base += ["--reserve", "L@0"]
    run = tmp_path / "run"
    result = CliRunner().invoke(main, [*base, "--jct-model", str(by_user), "--out", str(run)])
    assert result.exit_code == 0, result.output
    summary = json.loads((run / "summary.json").read_text())
    config = summary["config"]
    assert config["predictor"] == "learned" and config["jct_model"]["file"] == str(by_user)
    assert len(config["jct_model"]["sha256"]) == 64 and config["jct_model"]["interval_s"] == 10
    done = [json.loads(line) for line in (run / "jobs.jsonl").read_text().splitlines()]
    assert {r["job"]: r["predicted_s"] for r in done} == {
        "L": 55.0,
        "x": 205.0,
        "y": 55.0,
        "z": 205.0,
        "w": 35.0,
    }
    assert {r["predictor"] for r in done} == {"learned"}
    assert summary["summary"]["reservation"]["wait_s"] == 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**JctModel.load(by_user).to_dict(), "version": 7}))
    cases = [
        (["--jct-model", str(bad)], f"{bad}: version: "),
        (["--jct-model", str(tmp_path / "absent.json")], "cannot read JCT model"),
        (["--jct-model", str(by_user), "--predictor", "noisy"], "does not go with --predictor"),
        (["--predictor", "learned"], "needs a model: --jct-model MODEL.json"),
    ]
    for args, words in cases:
        result = CliRunner().invoke(main, [*base, *args, "--out", str(tmp_path / "r2")])
        assert result.exit_code == 2, (args, result.output)
        assert result.output.startswith("error: ") and words in result.output, result.output


def test_quantile_decoders_are_conservative(trained: tuple[JctModel, object]) -> None:
    model, _ = trained
    jobs = _jobs(60, seed=11)
    p = model.probabilities(jobs)
    q10, q50, q90 = (model.with_decoder(q).predict_intervals(jobs) for q in ("q10", "q50", "q90"))
    assert (q10 <= q50).all() and (q50 <= q90).all()
    cdf = np.cumsum(p, axis=1)
    rows = np.arange(len(jobs))
    below = q90.astype(int) - 1
    assert (cdf[rows, q90.astype(int)] >= 0.9 - 1e-9).all()
    assert (np.where(below >= 0, cdf[rows, np.maximum(below, 0)], 0) < 0.9).all()
    with pytest.raises(TopooptError, match="decoder: must be one of expected, argmax, q1"):
        model.with_decoder("q100")
    _, evaluation = train_jct(_jobs(), max_intervals=36, max_iter=10, decoder="q90")
    assert evaluation.decoder == "q90" and set(evaluation.by_decoder) == {
        "expected",
        "argmax",
        "q90",
    }


def test_predictions_given_the_time_already_run(trained: tuple[JctModel, object]) -> None:
    model, _ = trained
    jobs = _jobs(40, seed=5)
    now = model.predict_durations(jobs)
    np.testing.assert_allclose(model.predict_durations_given(jobs, np.zeros(40)), now)
    for elapsed in (300.0, 3_000.0, 15_000.0):
        later = model.predict_durations_given(jobs, np.full(40, elapsed))
        assert (later >= elapsed).all()
    # the intervals a job has passed no longer count: a job past its likely interval is
    # predicted to run into the next ones it could, not to have ended
    long = model.predict_durations_given(jobs, np.full(40, 20 * INTERVAL))
    assert (long > 20 * INTERVAL).all() or np.isinf(long).any()
    assert np.isinf(model.predict_durations_given(jobs[:1], [model.top_mean_s])).all()
    assert model.top_mean_s == (36 + 0.5) * INTERVAL  # no training job reached 36 intervals
    predictor = model.predictor()
    assert predictor.given_elapsed is not None
    assert predictor.given_elapsed(jobs[0], 0.0, 0) == pytest.approx(now[0])
    assert dataclasses.replace(predictor, conditional=False).given_elapsed is None


def test_the_plan_predicts_running_jobs_anew_from_the_time_they_have_run(by_user: Path) -> None:
    from topoopt.learn.jct import JctPredictor

    # x, a "short" user's job (the model: 35 s), has run 100 s of its 1,000 when L is announced
    jobs = [Job("x", 0, 8, 1000, user="short"), Job("L", 200, 16, 50, user="big")]
    model = JctModel.load(by_user)
    static = _starts(
        JctPredictor(model, "learned-static", conditional=False), jobs=jobs, announce=100
    )
    anew = _starts(model.predictor(), jobs=jobs, announce=100)
    assert static["x"]["nodes"] == anew["x"]["nodes"] == ["n0000"]
    # at submission x was predicted to end by L's arrival: the plan counted on its node
    assert static["L"]["nodes"] == ["n0000", "n0001"] and static["L"]["start_s"] == 1000
    # x has outlived every interval a short job runs: its end is unknown, its node not planned
    assert "n0000" not in anew["L"]["nodes"] and anew["L"]["start_s"] == 200
