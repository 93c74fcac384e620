"""The learned bandwidth surrogate: reading measurements, training, the model file, the solvers.

Small synthetic clusters of 4-GPU hosts whose intra table has a symmetry group (two NVLink
pairs {0, 1} and {2, 3}) and whose measured cross-host bandwidth is a known function of the
count profile; the real 4x8 H100 table where ../shared/data is present.
"""

from __future__ import annotations

import builtins
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

import topoopt
from topoopt.cli import main
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.gpuselect import GpuSelectInstance
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.loaders import (
    CROSS_HEADER,
    INTRA_HEADER,
    parse_cross_rows,
    read_intra_csv,
)
from topoopt.gpuselect.models import TableModel
from topoopt.gpuselect.models.learned import FORMAT, LearnedModel, ProfileFeatures
from topoopt.gpuselect.solution import Selection, evaluate
from topoopt.learn.bandwidth import (
    host_gpus,
    read_measurements,
    score,
    suggest,
    train_bandwidth,
)
from topoopt.learn.trees import TreeEnsemble, from_sklearn

HEADER = ",".join(CROSS_HEADER) + "\n"
GPUS = 4
HOSTS = 4


def intra_value(mask: int) -> float:
    """Symmetric under swapping 0<->1, 2<->3 and the two pairs."""
    pairs = sum(1 for pair in (0b0011, 0b1100) if mask & pair == pair)
    return 0.0 if mask.bit_count() < 2 else 100.0 + 10 * mask.bit_count() + 20 * pairs


def cross_value(counts: list[int]) -> float:
    """The 'true' inter-host bandwidth of a count profile."""
    used = [c for c in counts if c]
    return 10.0 + 8 * min(used) + 3 * len(used) - 0.5 * (max(used) - min(used))


INTRA = {m: intra_value(m) for m in range(1, 1 << GPUS)}


def profiles() -> list[list[int]]:
    """Every count vector over HOSTS hosts (sorted decreasingly) spanning >= 2 hosts."""
    out = set()
    for counts in itertools.product(range(GPUS + 1), repeat=HOSTS):
        if sum(1 for c in counts if c) >= 2:
            out.add(tuple(sorted(counts, reverse=True)))
    return [list(c) for c in sorted(out)]


def cross_csv(flags: bool = True) -> str:
    rows = [HEADER]
    for counts in profiles():
        if flags:
            mapping = [[1 if i < c else 0 for i in range(GPUS)] for c in counts]
        else:
            mapping = [list(range(c)) for c in counts]
        rows.append(f'ar,{sum(counts)},"{json.dumps(mapping)}",1024,{cross_value(counts)}\n')
    return "".join(rows)


def intra_csv() -> str:
    lines = [",".join(INTRA_HEADER) + "\n"]
    for mask, gbps in INTRA.items():
        used = "".join(str(i) for i in range(GPUS) if mask >> i & 1)
        lines.append(f"ar,{mask.bit_count()},{used},1024,{gbps}\n")
    return "".join(lines)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("measurements")
    out = {"cross": folder / "cross.csv", "intra": folder / "intra.csv"}
    out["cross"].write_text(cross_csv())
    out["intra"].write_text(intra_csv())
    return out


@pytest.fixture(scope="module")
def model(files: dict[str, Path]) -> LearnedModel:
    intra = {"T": read_intra_csv(files["intra"])}
    rows = read_measurements([str(files["cross"])], ["T"], host_gpus(intra))
    return train_bandwidth(rows, intra, sample=40, seed=1, committee=3).model


# ----------------------------------------------------------------------------- tree export


def test_exported_trees_predict_as_scikit_learn() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((200, 3))
    regressor = HistGradientBoostingRegressor(max_iter=30, min_samples_leaf=2)
    regressor.fit(x, 3 * x[:, 0] + x[:, 1])
    trees = TreeEnsemble.from_dict(from_sklearn(regressor, 3).to_dict(), "m")
    assert np.allclose(trees.predict(x), regressor.predict(x), atol=1e-12)
    for classes in (2, 4):
        classifier = HistGradientBoostingClassifier(max_iter=10, min_samples_leaf=2)
        classifier.fit(x, (x[:, 0] * classes).astype(int))
        trees = TreeEnsemble.from_dict(from_sklearn(classifier, 3).to_dict(), "m")
        assert np.allclose(trees.predict(x), classifier.predict_proba(x), atol=1e-12)


def test_a_tree_file_that_loops_or_points_outside_is_refused(model: LearnedModel) -> None:
    data = model.predictor.to_dict()
    looping = {**data, "left": [0 if x >= 0 else x for x in data["left"]]}
    with pytest.raises(InvalidInstanceError, match=r"m\.left: children must come after"):
        TreeEnsemble.from_dict(looping, "m")
    outside = {**data, "feature": [99] * len(data["feature"])}
    with pytest.raises(InvalidInstanceError, match=r"m\.feature: entries must be in"):
        TreeEnsemble.from_dict(outside, "m")


# ----------------------------------------------------------------------------- measurements


def test_flag_and_index_mappings_read_alike() -> None:
    flags = parse_cross_rows(cross_csv(flags=True))
    lists = parse_cross_rows(cross_csv(flags=False))
    assert [r.masks for r in flags] == [r.masks for r in lists]
    assert flags[0].counts == tuple(profiles()[0])


@pytest.mark.parametrize(
    ("text", "host_types", "message"),
    [
        (HEADER.replace("\n", ",extra\n") + 'ar,2,"[[0],[1]]",1,5,x\n', ["T"], "unknown column"),
        (HEADER + 'ar,2,"[[0],[1]]",1,5\n', ["T", "T", "T"], "maps 2 hosts but 3 host types"),
        (HEADER + 'ar,2,"[[0],[1]]",1,0\n', ["T"], r"Bandwidth\(GB/s\): must be a positive"),
        (HEADER + 'ar,2,"[[0],[7]]",1,5\n', ["T"], "has 4 GPUs; the mapping takes '7'"),
        (HEADER + 'ar,2,"[[0],[1]]",1,5\n', ["U"], "type 'U', which has no intra-host table"),
        (HEADER + 'ar,3,"[[0],[1]]",1,5\n', ["T"], "must give 3 GPUs"),
    ],
)
def test_bad_measurements_name_file_line_and_field(
    tmp_path: Path, text: str, host_types: list[str], message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InvalidInstanceError, match=message) as error:
        read_measurements([str(path)], host_types, {"T": GPUS})
    assert str(path) in str(error.value)


# ----------------------------------------------------------------------------- training


def test_training_scores_the_held_out_rows(files: dict[str, Path]) -> None:
    intra = {"T": read_intra_csv(files["intra"])}
    rows = read_measurements([str(files["cross"])], ["T"], host_gpus(intra))
    training = train_bandwidth(rows, intra, sample=40, seed=1, committee=0)
    assert len(training.trained) == 40
    assert len(training.held_out) == len(rows) - 40
    assert training.scores is not None and training.scores.rows == len(rows) - 40
    # the function is simple: a few dozen rows predict the rest well
    assert training.scores.mape < 10 and training.scores.spearman > 0.8
    assert training.model.training["held_out"]["mape"] == training.scores.mape
    again = train_bandwidth(rows, intra, sample=40, seed=1, committee=0)
    assert again.model == training.model  # same seed, same model


def test_training_needs_scikit_learn(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_sklearn(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("sklearn"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    intra = {"T": read_intra_csv(files["intra"])}
    rows = read_measurements([str(files["cross"])], ["T"], host_gpus(intra))
    monkeypatch.setattr(builtins, "__import__", no_sklearn)
    with pytest.raises(TopooptError, match=r"pip install 'topoopt\[learn\]'"):
        train_bandwidth(rows, intra, committee=0)


def test_suggestions_skip_measured_profiles_most_uncertain_first(model: LearnedModel) -> None:
    proposals = suggest(model, 5, {"T": HOSTS})
    measured = {tuple(tuple(p) for p in key) for key in model.training["measured"]}
    assert len(proposals) == 5
    assert not {s.profile for s in proposals} & measured
    spreads = [s.disagreement for s in proposals]
    assert spreads == sorted(spreads, reverse=True)
    others = model.disagreement(
        [
            p
            for p in _all_profiles()
            if p not in measured and p not in {s.profile for s in proposals}
        ]
    )
    assert spreads[-1] >= others.max() - 1e-12
    best_pair = max((m for m in INTRA if m.bit_count() == 2), key=INTRA.__getitem__)
    for s in proposals:  # the best-measured GPUs of each host
        for (_, mask), (_, count) in zip(s.mapping, s.profile, strict=True):
            assert mask.bit_count() == count
            if count == 2:
                assert INTRA[mask] == INTRA[best_pair]


def _all_profiles() -> list[tuple[tuple[int, int], ...]]:
    return [tuple((0, c) for c in counts if c) for counts in profiles()]


# ----------------------------------------------------------------------------- the model file


def test_model_file_round_trip(model: LearnedModel, tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    model.save(str(path))
    loaded = LearnedModel.load(str(path))
    assert loaded == model and loaded.digest == model.digest
    some = _all_profiles()[:20]
    assert np.array_equal(loaded.predict_profiles(some), model.predict_profiles(some))
    inline = LearnedModel.from_dict(model.to_dict())
    assert inline == model


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 2}, r"model\.json: version: this topoopt reads version 1"),
        ({"format": "topoopt-jct-model"}, rf"model\.json: format: must be '{FORMAT}'"),
        ({"features": ["gpus"]}, r"model\.json: features: the file's features differ"),
        ({"predictor": {"link": "identity"}}, r"model\.json: predictor\.n_features"),
    ],
)
def test_a_model_file_of_another_version_or_shape_is_refused(
    model: LearnedModel, tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = tmp_path / "model.json"
    path.write_text(json.dumps({**model.document(), **change}))
    with pytest.raises(InvalidInstanceError, match=message):
        LearnedModel.load(str(path))


def test_a_model_is_never_used_on_hosts_it_was_not_trained_on(model: LearnedModel) -> None:
    with pytest.raises(InvalidInstanceError, match=r"trained on host types T, not on 'A100'"):
        model.bind([Host("a", "T", GPUS), Host("b", "A100", GPUS)])
    with pytest.raises(InvalidInstanceError, match=r"T hosts have 4 GPUs, hosts.1. .'b'. has 8"):
        model.bind([Host("a", "T", GPUS), Host("b", "T", 8)])


# ----------------------------------------------------------------------------- invariance


def _instance(model: LearnedModel, avail: list[list[int]], k: int) -> GpuSelectInstance:
    hosts = [Host(f"h{j}", "T", GPUS, a) for j, a in enumerate(avail)]
    return GpuSelectInstance(name="learned", hosts=hosts, k=k, bandwidth=model)


SWAPS = (lambda i: i ^ 1, lambda i: (i + 2) % 4, lambda i: [1, 0, 3, 2][i])
"""GPU renamings that map the intra table onto itself (two pairs: swap within, swap pairs)."""


@settings(max_examples=40)
@given(
    subsets=st.lists(st.sets(st.integers(0, GPUS - 1)), min_size=2, max_size=5),
    order=st.randoms(use_true_random=False),
    swap=st.sampled_from(SWAPS),
)
def test_predictions_ignore_host_order_and_symmetric_gpu_renaming(
    model: LearnedModel, subsets: list[set[int]], order: object, swap: object
) -> None:
    if sum(len(s) for s in subsets) < 1:
        return
    hosts = [Host(f"h{j}", "T", GPUS) for j in range(len(subsets))]
    bound = model.bind(hosts)
    masks = [sum(1 << i for i in s) for s in subsets]
    value = bound.value(masks)
    permuted = list(masks)
    order.shuffle(permuted)  # type: ignore[attr-defined]
    assert bound.value(permuted) == value
    renamed = [sum(1 << swap(i) for i in s) for s in subsets]  # type: ignore[operator]
    assert bound.value(renamed) == value
    assert all(INTRA[m] == INTRA[r] for m, r in zip(masks, renamed, strict=True) if m)


# ----------------------------------------------------------------------------- the solvers


@st.composite
def small_pools(draw: st.DrawFn) -> tuple[list[list[int]], int]:
    avail = draw(
        st.lists(
            st.lists(st.integers(0, GPUS - 1), unique=True, max_size=GPUS), min_size=2, max_size=4
        )
    )
    total = sum(len(a) for a in avail)
    if total < 2:
        avail[0] = [0, 1]
        total = sum(len(a) for a in avail)
    return avail, draw(st.integers(1, min(total, 9)))


def _brute_force(inst: GpuSelectInstance) -> float:
    gpus = [(h.name, i) for h in inst.hosts for i in h.available]
    return max(evaluate(inst, Selection(c)) for c in itertools.combinations(gpus, inst.k))


@settings(max_examples=25)
@given(pool=small_pools())
def test_exact_solvers_find_the_learned_optimum(
    model: LearnedModel, pool: tuple[list[list[int]], int]
) -> None:
    inst = _instance(model, *pool)
    expected = _brute_force(inst)
    for solver, backend in (
        ("gpuselect/enumerate", None),
        ("gpuselect/mip", "highs"),
        ("gpuselect/mip", "scip"),
    ):
        result = topoopt.solve(inst, solver, backend=backend)
        assert result.status is topoopt.SolutionStatus.OPTIMAL, (solver, result)
        assert math.isclose(result.objective, expected, abs_tol=1e-6), (solver, backend)
    for heuristic in ("gpuselect/hybrid", "gpuselect/eha"):
        assert topoopt.solve(inst, heuristic).objective <= expected + 1e-9


# ----------------------------------------------------------------------------- command line


def test_cli_trains_suggests_and_solves_with_the_model(
    files: dict[str, Path], tmp_path: Path
) -> None:
    runner = CliRunner()
    out = tmp_path / "model.json"
    args = ["learn", "bandwidth", str(files["cross"]), "--intra", f"T={files['intra']}"]
    args += ["--host-types", "T", "--out", str(out), "--sample", "30", "--committee", "2"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "trained on 30 measurements" in result.output and "held out" in result.output

    template = tmp_path / "next.csv"
    result = runner.invoke(
        main, ["learn", "suggest", str(out), "--count", "3", "--csv", str(template)]
    )
    assert result.exit_code == 0, result.output
    filled = template.read_text().replace(",\n", ",1.0\n")
    rows = parse_cross_rows(filled)
    assert len(rows) == 3 and all(r.op == "ar" and r.data_size == "1024" for r in rows)

    instance = tmp_path / "instance.json"
    hosts = [{"name": f"h{j}", "type": "T", "gpus": GPUS} for j in range(3)]
    bandwidth = {"model": "learned", "file": out.name}
    instance.write_text(
        json.dumps(
            {"family": "gpuselect", "name": "x", "k": 6, "hosts": hosts, "bandwidth": bandwidth}
        )
    )
    result = runner.invoke(main, ["solve", str(instance), "-s", "gpuselect/mip", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    loaded = LearnedModel.load(str(out))
    assert record["solution"]["bandwidth_model"]["sha256"] == loaded.digest
    assert record["status"] == "optimal"


def test_cli_bad_measurements_are_one_error_line(files: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + 'ar,2,"[[0],[1]]",1,-3\n')
    args = ["learn", "bandwidth", str(bad), "--intra", f"T={files['intra']}"]
    result = CliRunner().invoke(main, [*args, "--host-types", "T", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert "bad.csv:2: Bandwidth(GB/s) must be finite and >= 0, got -3" in result.output


# ----------------------------------------------------------------------------- real data


def test_learns_the_real_h100_table_from_a_hundred_rows(shared_data: Path) -> None:
    """BandPilot's protocol on one seed (the full protocol is benchmarks/learn/bandwidth.py)."""
    tables = [read_intra_csv(p) for p in sorted(shared_data.glob("hosts/H100_node*.csv"))]
    intra = TableModel(intra={"H100": tables}).intra
    rows = read_measurements(
        [str(shared_data / "cluster" / "H100_4x8_allreduce_2GiB.csv")], ["H100"], host_gpus(intra)
    )
    training = train_bandwidth(rows, intra, sample=100, seed=0, committee=0)
    scores = score(training.model, training.held_out)
    assert scores.rows == len([r for r in rows if r.spanning]) - 100
    assert scores.mape < 15 and scores.spearman > 0.85


@settings(max_examples=30)
@given(st.lists(st.lists(st.integers(1, 8), min_size=2, max_size=40), min_size=1, max_size=20))
def test_features_of_histograms_equal_features_of_profiles(parts: list[list[int]]) -> None:
    """The vectorised path of one-type models computes the same feature rows."""
    features = ProfileFeatures(("H",), (8,))
    typed = [tuple((0, c) for c in sorted(p, reverse=True)) for p in parts]
    hist = np.array([np.bincount(p, minlength=9) for p in parts])
    assert np.array_equal(features.rows(typed), features.histogram_rows(hist))
