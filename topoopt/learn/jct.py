"""Arnold's job-completion-time predictor (Appendix G): a gradient-boosted classifier of the
interval a job's running time falls in, from the metadata its trace gives at submission.

Arnold divides running times into 10-minute intervals and trains a gradient-boosting classifier
(LightGBM) of the interval from job metadata — requested CPUs and GPUs, the owner's department,
... — on 90 % of four months of trace, reporting an RMSE of 1.61 intervals on the other 10 %.
Here:

* **Target.** ``min(floor(duration_s / interval_s), max_intervals)``: intervals ``0`` to
  ``max_intervals - 1`` are ``[k, k + 1)`` intervals long, the top one holds every job of at
  least ``max_intervals`` intervals (default 48 x 10 min = 8 h). Every figure in intervals
  (RMSE, the confusion matrix) is on these capped indices, as a classifier sees them.
* **Features** (:data:`FEATURES`), what a :class:`~topoopt.sim.jobs.Job` carries: GPUs, nodes,
  parallelism, priority, CPUs, memory (an absent number is ``-1``), the user, queue and QoS
  (categories, coded by their frequency rank on the training split: ``1`` the most frequent;
  ``0`` absent, unseen in training or beyond the ``max_categories`` most frequent; the
  ranking is stored in the model file, so the coding is reproducible), and the hour of day and
  day of the week of the submit time — counted from the trace's time 0 (readers that shift a
  trace to start at 0 keep its first job's phase), so train and predict on times of the same
  origin.
* **Splits.** ``holdout`` of the jobs (10 %) are the test split, drawn at random (``split =
  "random"``, as Arnold) or the latest by submit time (``"time"``, the honest one for a
  scheduler that learns from the past). ``validation`` of the rest (10 %), drawn the same way,
  stops the boosting early and chooses the decoder; the model is fitted on the remaining jobs.
* **Decoder.** A prediction is an interval index ``i`` — the expected index ``sum_k p_k k``
  (``"expected"``) or the most probable class (``"argmax"``) — whichever has the lower RMSE on
  the validation split (the expected index minimises squared error when the probabilities are
  calibrated; the argmax maximises accuracy). A scheduler that must not let a long job into a
  reservation may prefer a conservative decoder instead: ``"qNN"``, the smallest interval
  whose cumulative probability reaches ``NN`` % (``q90``), chosen at training (``decoder=``)
  or later (:meth:`JctModel.with_decoder`).
* **Running time.** Each interval stands for its middle, ``(k + 1/2) * interval_s``, but the
  top one for the mean running time of the training jobs in it (``top_mean_s``: a heavy tail
  is not 8 h long). The predicted running time is that of the decoded interval, or under
  ``expected`` the probability-weighted mean of them all. A job that has already run a while
  gets the same on the intervals it has not passed (:meth:`JctModel.predict_durations_given`:
  what a reservation's plan asks of the running jobs).

:func:`train_jct` needs scikit-learn (the ``learn`` extra); a :class:`JctModel` is saved as
JSON (:meth:`JctModel.save`, ``"format": "topoopt-jct-model"``, ``"version": 1``) with its
trees as :class:`~topoopt.learn.trees.TreeEnsemble` arrays, and loaded and evaluated with NumPy
alone (no pickle anywhere). :meth:`JctModel.predictor` is a simulator predictor
(:mod:`topoopt.sim.policies`): ``topoopt simulate --jct-model MODEL.json``.

Examples
--------
>>> from topoopt.sim import Job
>>> jobs = [Job(f"j{i}", 3600.0 * i, 1 + 7 * (i % 2), 300.0 + 3000.0 * (i % 2))
...         for i in range(200)]
>>> model, evaluation = train_jct(jobs, max_iter=20)
>>> evaluation.rmse_intervals < 0.5, model.predict_duration(Job("new", 0.0, 8, 1.0)) // 60
(True, 55.0)
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.learn.trees import TreeEnsemble, from_sklearn, require_sklearn
from topoopt.sim.jobs import Job

FORMAT = "topoopt-jct-model"
"""The ``format`` of a JCT model file."""
VERSION = 1
"""The ``version`` of a JCT model file this topoopt reads and writes."""
DAY_S = 86_400.0
PREDICT_CELLS = 4_000_000
"""Rows x trees evaluated at once (the trees walk an int64 node index per cell: 32 MB)."""
DECODERS = ("expected", "argmax")
"""The decoders the training chooses between (by validation RMSE); ``qNN`` are the others."""
SPLITS = ("random", "time")


def _number(value: float | None) -> float:
    return -1.0 if value is None else float(value)


NUMERIC: dict[str, Callable[[Job], float]] = {
    "gpus": lambda job: float(job.gpus),
    "nodes": lambda job: _number(job.nodes),
    "dp": lambda job: _number(job.dp),
    "tp": lambda job: _number(job.tp),
    "pp": lambda job: _number(job.pp),
    "priority": lambda job: float(job.priority),
    "cpus": lambda job: _number(job.cpus),
    "memory_gib": lambda job: _number(job.memory_gib),
    "hour": lambda job: (job.submit_s % DAY_S) / 3600.0,
    "weekday": lambda job: float((job.submit_s // DAY_S) % 7),
}
"""Numeric features by name (an absent number is ``-1``)."""
CATEGORICAL: dict[str, Callable[[Job], str | None]] = {
    "user": lambda job: job.user,
    "queue": lambda job: job.queue,
    "qos": lambda job: job.qos,
}
"""Categorical features by name, coded by frequency rank (module docstring)."""
FEATURES = (
    "gpus",
    "nodes",
    "dp",
    "tp",
    "pp",
    "priority",
    "cpus",
    "memory_gib",
    "user",
    "queue",
    "qos",
    "hour",
    "weekday",
)
"""Every feature, in the order of a model's rows (a model may use a subset)."""


def target_intervals(
    durations: Iterable[float], interval_s: float, max_intervals: int
) -> np.ndarray:
    """The interval index of each running time: ``min(floor(d / interval_s), max_intervals)``.

    >>> target_intervals([0, 599, 600, 1e9], 600, 48).tolist()
    [0, 0, 1, 48]
    """
    d = np.asarray(list(durations), dtype=float)
    return np.minimum(np.floor(d / interval_s), max_intervals).astype(np.int64)


def _rank(values: Iterable[str | None], limit: int) -> tuple[str, ...]:
    """The values by decreasing frequency (ties by value), at most ``limit`` of them."""
    counts = Counter(v for v in values if v is not None)
    return tuple(sorted(counts, key=lambda v: (-counts[v], v))[:limit])


@dataclass(frozen=True, eq=False)
class Evaluation:
    """A trained model's figures on the held-out test split (intervals are capped indices).

    Attributes
    ----------
    rows_fit, rows_validation, rows_test
        Jobs the trees were fitted on, that chose the decoder and stopped the boosting, held out.
    split
        ``random`` or ``time`` (module docstring).
    interval_s, max_intervals
        The target's intervals.
    decoder
        The decoder (chosen on the validation split unless the training named one).
    rmse_intervals, mae_intervals
        Root-mean-square and mean absolute error of the decoded index, in intervals.
    accuracy, within_one
        Share of test jobs whose predicted interval (the decoded index, rounded) is the true
        one, or at most one away.
    by_decoder
        Each decoder's ``rmse_intervals``, ``mae_intervals``, ``accuracy`` and ``within_one``
        on the test split (the chosen one's are the attributes above).
    validation_rmse_by_decoder
        Each decoder's RMSE on the validation split (what chose the decoder).
    baseline_rmse_intervals
        RMSE of the constant prediction "the fit split's mean interval" (what no metadata gives).
    confusion
        ``confusion[true, predicted]`` counts of test jobs, ``max_intervals + 1`` square.
    iterations
        Boosting iterations kept (early stopping on the validation split).
    """

    rows_fit: int
    rows_validation: int
    rows_test: int
    split: str
    interval_s: float
    max_intervals: int
    decoder: str
    rmse_intervals: float
    mae_intervals: float
    accuracy: float
    within_one: float
    by_decoder: dict[str, dict[str, float]]
    validation_rmse_by_decoder: dict[str, float]
    baseline_rmse_intervals: float
    confusion: np.ndarray
    iterations: int

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the confusion matrix as nested lists)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["confusion"] = self.confusion.tolist()
        return out

    def summary(self) -> str:
        """The headline figures, one line."""
        return (
            f"RMSE {self.rmse_intervals:.3f} intervals of {self.interval_s:g} s "
            f"(constant baseline {self.baseline_rmse_intervals:.3f}; Arnold: 1.61), MAE "
            f"{self.mae_intervals:.3f}, accuracy {self.accuracy:.3f}, within one interval "
            f"{self.within_one:.3f}; decoder {self.decoder}; rows fit {self.rows_fit}, "
            f"validation {self.rows_validation}, test {self.rows_test} ({self.split} split)"
        )


@dataclass(frozen=True, eq=False)
class JctModel:
    """A trained JCT predictor (module docstring): feature coding, trees and decoder.

    Attributes
    ----------
    interval_s, max_intervals
        The target's intervals.
    top_mean_s
        Mean running time of the training jobs in the top interval (what it stands for).
    decoder
        ``expected``, ``argmax`` or ``qNN`` (module docstring).
    features
        The features of a row, in order (names of :data:`FEATURES`).
    encoders
        For each categorical feature used, its values by decreasing training frequency (the
        code of a value is its position + 1; anything else is 0).
    classes
        The interval index of each of the trees' outputs (the classes seen in training).
    trees
        The classifier's trees.
    training
        Where the model came from (rows, split, scikit-learn version, evaluation; for the
        record only).
    """

    interval_s: float
    max_intervals: int
    top_mean_s: float
    decoder: str
    features: tuple[str, ...]
    encoders: Mapping[str, tuple[str, ...]]
    classes: np.ndarray
    trees: TreeEnsemble
    training: Mapping[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ prediction

    def rows(self, jobs: Sequence[Job]) -> np.ndarray:
        """The feature rows of ``jobs`` (shape ``(len(jobs), len(features))``)."""
        return _rows(jobs, self.features, self.encoders)

    def probabilities(self, jobs: Sequence[Job]) -> np.ndarray:
        """``p[j, k]``: probability that job ``j`` runs ``k`` intervals (``k`` up to
        ``max_intervals``; classes never seen in training get 0)."""
        out = np.zeros((len(jobs), self.max_intervals + 1))
        rows = self.rows(jobs)
        step = max(1, PREDICT_CELLS // len(self.trees.roots))  # rows x trees node indices
        for start in range(0, len(jobs), step):
            part = slice(start, start + step)
            out[part, self.classes] = self.trees.predict(rows[part])
        return out

    def predict_intervals(self, jobs: Sequence[Job]) -> np.ndarray:
        """The decoded interval index of each job (a real number under ``expected``)."""
        return _decode(self.probabilities(jobs), self.decoder)

    def _seconds(self, p: np.ndarray) -> np.ndarray:
        """The running times of class probabilities ``p`` (module docstring)."""
        stands = (np.arange(self.max_intervals + 1) + 0.5) * self.interval_s
        stands[-1] = self.top_mean_s
        if self.decoder == "expected":
            return np.asarray(p @ stands, dtype=float)
        return stands[_decode(p, self.decoder).astype(np.int64)]

    def predict_durations(self, jobs: Sequence[Job]) -> np.ndarray:
        """Predicted running times (s): what the decoded interval stands for (module
        docstring)."""
        return self._seconds(self.probabilities(jobs))

    def predict_duration(self, job: Job) -> float:
        """Predicted running time of one job (s)."""
        return float(self.predict_durations([job])[0])

    def predict_durations_given(
        self, jobs: Sequence[Job], elapsed_s: Sequence[float] | np.ndarray
    ) -> np.ndarray:
        """Predicted running times (s) of jobs that have run ``elapsed_s`` so far: the decoder
        on the class probabilities of the intervals not yet passed, renormalised, and never
        less than the time elapsed. ``inf`` (unknown) for a job that has run ``top_mean_s``
        already, or whose model gives the intervals left no probability. With nothing
        elapsed, the same as :meth:`predict_durations`.
        """
        elapsed = np.asarray(elapsed_s, dtype=float)
        p = self.probabilities(jobs)
        passed = np.minimum(np.floor(elapsed / self.interval_s), self.max_intervals)
        left = np.where(np.arange(p.shape[1]) >= passed[:, None], p, 0.0)
        mass = left.sum(axis=1)
        known = (elapsed < self.top_mean_s) & (mass > 1e-12)
        out = np.full(len(jobs), math.inf)
        if known.any():
            seconds = self._seconds(left[known] / mass[known, None])
            out[known] = np.maximum(seconds, elapsed[known])
        return out

    def with_decoder(self, decoder: str) -> JctModel:
        """The same trees with another decoder (``expected``, ``argmax`` or ``qNN``)."""
        _check_decoder("decoder", decoder)
        return dataclasses.replace(self, decoder=decoder)

    def predictor(self) -> JctPredictor:
        """This model as a simulator predictor (``topoopt simulate --jct-model``)."""
        return JctPredictor(self)

    # ------------------------------------------------------------------ files

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of a model file (:meth:`from_dict` reads it back)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "interval_s": self.interval_s,
            "max_intervals": self.max_intervals,
            "top_mean_s": self.top_mean_s,
            "decoder": self.decoder,
            "features": list(self.features),
            "encoders": {name: list(values) for name, values in self.encoders.items()},
            "classes": self.classes.tolist(),
            "trees": self.trees.to_dict(),
            "training": dict(self.training),
        }

    @classmethod
    def from_dict(cls, data: Any, path: str = "<model>") -> JctModel:
        """Read :meth:`to_dict`'s form; an error names ``path`` and the field."""

        def fail(name: str, rule: str) -> InvalidInstanceError:
            return InvalidInstanceError(f"{path}: {name}", rule)

        if not isinstance(data, Mapping):
            raise InvalidInstanceError(path, "a JCT model must be a JSON object")
        if data.get("format") != FORMAT:
            raise fail("format", f"expected {FORMAT!r}, got {data.get('format')!r}")
        version = data.get("version")
        if version != VERSION or isinstance(version, bool):
            raise fail(
                "version",
                f"this topoopt reads version {VERSION} of {FORMAT!r}, the file has "
                f"{version!r} (train the model again with this topoopt)",
            )
        interval = data.get("interval_s")
        if (
            isinstance(interval, bool)
            or not isinstance(interval, (int, float))
            or not (math.isfinite(interval) and interval > 0)
        ):
            raise fail("interval_s", f"must be a number > 0, got {interval!r}")
        top = data.get("max_intervals")
        if isinstance(top, bool) or not isinstance(top, int) or top < 1:
            raise fail("max_intervals", f"must be an integer >= 1, got {top!r}")
        top_mean = data.get("top_mean_s")
        if (
            isinstance(top_mean, bool)
            or not isinstance(top_mean, (int, float))
            or not (math.isfinite(top_mean) and top_mean >= top * interval)
        ):
            raise fail(
                "top_mean_s",
                f"must be a number >= max_intervals * interval_s = {top * interval:g}, "
                f"got {top_mean!r}",
            )
        decoder = data.get("decoder")
        _check_decoder(f"{path}: decoder", decoder)
        features = data.get("features")
        if not isinstance(features, list) or not features:
            raise fail("features", "must be a non-empty list of feature names")
        for name in features:
            if name not in FEATURES:
                raise fail("features", f"unknown feature {name!r}; known: {', '.join(FEATURES)}")
        if len(set(features)) != len(features):
            raise fail("features", "a feature appears twice")
        encoders = data.get("encoders")
        wanted = [name for name in features if name in CATEGORICAL]
        if not isinstance(encoders, Mapping) or sorted(encoders) != sorted(wanted):
            raise fail("encoders", f"must be an object with exactly the keys {wanted}")
        for name, values in encoders.items():
            if (
                not isinstance(values, list)
                or not all(isinstance(v, str) for v in values)
                or len(set(values)) != len(values)
            ):
                raise fail(f"encoders.{name}", "must be a list of distinct strings")
        classes = data.get("classes")
        if (
            not isinstance(classes, list)
            or len(classes) < 2
            or not all(isinstance(c, int) and not isinstance(c, bool) for c in classes)
            or classes != sorted(set(classes))
            or classes[0] < 0
            or classes[-1] > top
        ):
            raise fail(
                "classes", f"must be at least 2 increasing integers in [0, max_intervals = {top}]"
            )
        trees = TreeEnsemble.from_dict(data.get("trees"), f"{path}: trees")
        if trees.n_features != len(features):
            raise fail("trees.n_features", f"{trees.n_features}, but {len(features)} features")
        outputs = 1 if len(classes) == 2 else len(classes)
        if trees.n_outputs != outputs or trees.link != ("sigmoid" if outputs == 1 else "softmax"):
            raise fail("trees", f"the trees do not classify the {len(classes)} classes")
        training = data.get("training", {})
        if not isinstance(training, Mapping):
            raise fail("training", "must be an object")
        return cls(
            interval_s=float(interval),
            max_intervals=top,
            top_mean_s=float(top_mean),
            decoder=str(decoder),
            features=tuple(features),
            encoders={name: tuple(values) for name, values in encoders.items()},
            classes=np.array(classes, dtype=np.int64),
            trees=trees,
            training=dict(training),
        )

    def save(self, path: str | Path) -> Path:
        """Write the model file (JSON)."""
        file = Path(path)
        try:
            file.write_text(json.dumps(self.to_dict()) + "\n", encoding="utf-8")
        except OSError as exc:
            raise TopooptError(f"cannot write {file}: {exc.strerror or exc}") from None
        return file

    @classmethod
    def load(cls, path: str | Path) -> JctModel:
        """Read a model file; an error names the file and the field."""
        from topoopt.core.safejson import read_json_file

        return cls.from_dict(read_json_file(path, what="JCT model"), str(path))


@dataclass(frozen=True, eq=False)
class JctPredictor:
    """A :class:`JctModel` as a simulator predictor (:class:`topoopt.sim.policies.Predictor`):
    a job's predicted running time, the same whatever the seed.

    With ``conditional`` (the default) it also predicts the running time of a job that has
    already run a while (:meth:`given_elapsed`), which a reservation's plan asks of the running
    jobs: the jobs running at any moment are the long ones of their kind (the inspection
    paradox), so their running time predicted at submission is too short once they have
    outlived it. ``conditional=False`` (the predictor ``learned-static``) plans with the
    predictions made at submission.
    """

    model: JctModel
    name: str = "learned"
    conditional: bool = True

    def __call__(self, job: Job, seed: int) -> float:
        """Seconds."""
        return self.model.predict_duration(job)

    def batch(self, jobs: Sequence[Job], seed: int) -> list[float]:
        """Seconds for each of ``jobs`` (all trees evaluated once, for a whole trace)."""
        return [float(x) for x in self.model.predict_durations(jobs)]

    @property
    def given_elapsed(self) -> Callable[[Job, float, int], float] | None:
        """``given_elapsed(job, elapsed_s, seed)``: seconds, for a job that has run
        ``elapsed_s`` (under the reference placement) so far
        (:meth:`JctModel.predict_durations_given`); ``None`` unless ``conditional``."""
        return self._given_elapsed if self.conditional else None

    def _given_elapsed(self, job: Job, elapsed_s: float, seed: int) -> float:
        return float(self.model.predict_durations_given([job], [elapsed_s])[0])


def model_digest(path: str | Path) -> str:
    """SHA-256 of a model file, for the record of a run that used it."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---------------------------------------------------------------------- training


def _rows(
    jobs: Sequence[Job], features: Sequence[str], encoders: Mapping[str, Sequence[str]]
) -> np.ndarray:
    columns = []
    for name in features:
        if name in CATEGORICAL:
            code = {value: rank + 1 for rank, value in enumerate(encoders[name])}
            values = [CATEGORICAL[name](job) for job in jobs]
            columns.append([0.0 if v is None else float(code.get(v, 0)) for v in values])
        else:
            columns.append([NUMERIC[name](job) for job in jobs])
    return np.array(columns, dtype=float).T.reshape(len(jobs), len(features))


def _quantile(decoder: Any) -> float | None:
    """The level of a ``qNN`` decoder (``q90``: 0.9), else ``None``."""
    if isinstance(decoder, str) and re.fullmatch(r"q[1-9][0-9]?", decoder):
        return int(decoder[1:]) / 100
    return None


def _check_decoder(where: str, decoder: Any) -> None:
    if decoder not in DECODERS and _quantile(decoder) is None:
        raise InvalidInstanceError(
            where, f"must be one of expected, argmax, q1 ... q99 (a quantile), got {decoder!r}"
        )


def _decode(p: np.ndarray, decoder: str) -> np.ndarray:
    index = np.arange(p.shape[1], dtype=float)
    if decoder == "expected":
        return p @ index
    level = _quantile(decoder)
    if level is not None:  # the first interval whose cumulative probability reaches the level
        reached = np.cumsum(p, axis=1) >= level - 1e-12
        return index[reached.argmax(axis=1)]
    return index[p.argmax(axis=1)]


def _rmse(predicted: np.ndarray, true: np.ndarray) -> float:
    return float(np.sqrt(np.mean((predicted - true) ** 2))) if len(true) else math.nan


def _interval_of(decoded: np.ndarray, max_intervals: int) -> np.ndarray:
    """The interval a decoded index predicts (the nearest; the expected index is real)."""
    return np.minimum(np.floor(decoded + 0.5), max_intervals).astype(np.int64)


def _scores(decoded: np.ndarray, true: np.ndarray, max_intervals: int) -> dict[str, float]:
    predicted = _interval_of(decoded, max_intervals)
    return {
        "rmse_intervals": _rmse(decoded, true),
        "mae_intervals": float(np.mean(np.abs(decoded - true))),
        "accuracy": float(np.mean(predicted == true)),
        "within_one": float(np.mean(np.abs(predicted - true) <= 1)),
    }


def _split(
    jobs: Sequence[Job], share: float, how: str, rng: np.random.Generator
) -> tuple[list[int], list[int]]:
    """Indices of ``jobs`` kept and taken out (``ceil(share * n)`` of them, at least one)."""
    n = len(jobs)
    taken = max(1, math.ceil(share * n)) if share > 0 else 0
    if how == "time":
        order = sorted(range(n), key=lambda i: jobs[i].submit_s)  # stable: ties in order
    else:
        order = [int(i) for i in rng.permutation(n)]
    cut = n - taken
    return sorted(order[:cut]), sorted(order[cut:])


def _check(name: str, ok: bool, rule: str, value: Any) -> None:
    if not ok:
        raise TopooptError(f"{name}: {rule}, got {value!r}")


def train_jct(
    jobs: Sequence[Job],
    *,
    interval_s: float = 600.0,
    max_intervals: int = 48,
    holdout: float = 0.1,
    validation: float = 0.1,
    split: str = "random",
    seed: int = 0,
    max_iter: int = 200,
    learning_rate: float = 0.1,
    max_leaf_nodes: int = 31,
    features: Sequence[str] = FEATURES,
    max_categories: int = 1000,
    decoder: str = "auto",
    threads: int | None = None,
) -> tuple[JctModel, Evaluation]:
    """Train a JCT predictor on ``jobs`` and evaluate it on a held-out split.

    Parameters
    ----------
    jobs
        The jobs of a trace (their ``duration_s`` is the target).
    interval_s, max_intervals
        Interval length (s) and the top bucket (module docstring).
    holdout, validation
        Shares of the jobs held out for the test, and of the rest for the validation.
    split
        ``random`` (seeded) or ``time`` (the latest jobs held out).
    seed
        Seeds the random split and the boosting's.
    max_iter, learning_rate, max_leaf_nodes
        Of scikit-learn's ``HistGradientBoostingClassifier`` (boosting stops early once the
        validation loss stops improving for 10 iterations).
    features
        The features used (names of :data:`FEATURES`).
    max_categories
        Most values of a categorical feature coded apart (the rest share code 0).
    decoder
        ``auto`` (whichever of :data:`DECODERS` has the lower validation RMSE) or the decoder to
        use (``expected``, ``argmax``, ``qNN``).
    threads
        Threads of the boosting (``None``: scikit-learn's default, every core; ``1`` is steadier
        on a loaded machine, where OpenMP threads wait on each other).

    Returns
    -------
    (JctModel, Evaluation)

    Raises
    ------
    TopooptError
        For bad parameters, too few jobs, every job in one interval, or scikit-learn missing
        (naming the ``learn`` extra).
    """
    _check("interval_s", math.isfinite(interval_s) and interval_s > 0, "must be > 0", interval_s)
    _check(
        "max_intervals",
        isinstance(max_intervals, int) and max_intervals >= 1,
        "must be an integer >= 1",
        max_intervals,
    )
    _check("holdout", 0 < holdout < 1, "must be in (0, 1)", holdout)
    _check("validation", 0 < validation < 1, "must be in (0, 1)", validation)
    _check("split", split in SPLITS, f"must be one of {', '.join(SPLITS)}", split)
    _check("max_iter", isinstance(max_iter, int) and max_iter >= 1, "must be >= 1", max_iter)
    _check("max_categories", max_categories >= 1, "must be >= 1", max_categories)
    if decoder != "auto":
        _check_decoder("decoder", decoder)
    _check("threads", threads is None or threads >= 1, "must be >= 1", threads)
    unknown = [name for name in features if name not in FEATURES]
    _check("features", bool(features) and not unknown, f"known: {', '.join(FEATURES)}", unknown)
    features = tuple(dict.fromkeys(features))
    jobs = list(jobs)
    if len(jobs) < 20:
        raise TopooptError(f"training a JCT model needs at least 20 jobs, got {len(jobs)}")
    ensemble = require_sklearn()

    rng = np.random.default_rng(seed)
    train, test = _split(jobs, holdout, split, rng)
    fit_local, val_local = _split([jobs[i] for i in train], validation, split, rng)
    fit = [train[i] for i in fit_local]
    val = [train[i] for i in val_local]
    y = target_intervals((job.duration_s for job in jobs), interval_s, max_intervals)
    if len(np.unique(y[fit])) < 2:
        raise TopooptError(
            f"every training job runs {int(y[fit][0])} intervals of {interval_s:g} s: nothing to "
            "classify (a shorter --interval?)"
        )
    encoders = {
        name: _rank((CATEGORICAL[name](jobs[i]) for i in train), max_categories)
        for name in features
        if name in CATEGORICAL
    }
    x = _rows(jobs, features, encoders)

    estimator = ensemble.HistGradientBoostingClassifier(
        max_iter=max_iter,
        learning_rate=learning_rate,
        max_leaf_nodes=max_leaf_nodes,
        early_stopping=True,
        n_iter_no_change=10,
        random_state=seed,
    )
    seen = np.isin(y[val], np.unique(y[fit]))
    fit_args: dict[str, Any] = {}
    if "X_val" in inspect.signature(estimator.fit).parameters and seen.any():
        # scikit-learn >= 1.6: stop on the validation split (its classes seen in the fit)
        fit_args = {"X_val": x[val][seen], "y_val": y[val][seen]}
    elif min(Counter(y[fit].tolist()).values()) < 2:
        estimator.set_params(early_stopping=False)  # its stratified inner split would fail
    from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

    with threadpool_limits(limits=threads, user_api="openmp"):
        estimator.fit(x[fit], y[fit], **fit_args)
    trees = from_sklearn(estimator, len(features))
    classes = np.asarray(estimator.classes_, dtype=np.int64)

    def probabilities(rows: list[int]) -> np.ndarray:
        out = np.zeros((len(rows), max_intervals + 1))
        if rows:
            out[:, classes] = trees.predict(x[rows])
        return out

    p_val, p_test = probabilities(val), probabilities(test)
    candidates = DECODERS if decoder in ("auto", *DECODERS) else (*DECODERS, decoder)
    val_rmse = {d: _rmse(_decode(p_val, d), y[val]) for d in candidates}
    if decoder == "auto":
        decoder = min(DECODERS, key=lambda d: (val_rmse[d], DECODERS.index(d)))
    true = y[test]
    scores = {d: _scores(_decode(p_test, d), true, max_intervals) for d in candidates}
    predicted = _interval_of(_decode(p_test, decoder), max_intervals)
    confusion = np.zeros((max_intervals + 1, max_intervals + 1), dtype=np.int64)
    np.add.at(confusion, (true, predicted), 1)
    evaluation = Evaluation(
        rows_fit=len(fit),
        rows_validation=len(val),
        rows_test=len(test),
        split=split,
        interval_s=float(interval_s),
        max_intervals=max_intervals,
        decoder=decoder,
        **scores[decoder],
        by_decoder=scores,
        validation_rmse_by_decoder=val_rmse,
        baseline_rmse_intervals=_rmse(np.full(len(test), y[fit].mean()), true),
        confusion=confusion,
        iterations=int(estimator.n_iter_),
    )
    import sklearn

    summary = evaluation.to_dict()
    del summary["confusion"]
    in_top = [jobs[i].duration_s for i in train if y[i] == max_intervals]
    model = JctModel(
        interval_s=float(interval_s),
        max_intervals=max_intervals,
        top_mean_s=float(np.mean(in_top)) if in_top else (max_intervals + 0.5) * interval_s,
        decoder=decoder,
        features=features,
        encoders=encoders,
        classes=classes,
        trees=trees,
        training={
            "jobs": len(jobs),
            "seed": seed,
            "scikit_learn": sklearn.__version__,
            "params": {
                "max_iter": max_iter,
                "learning_rate": learning_rate,
                "max_leaf_nodes": max_leaf_nodes,
                "holdout": holdout,
                "validation": validation,
                "max_categories": max_categories,
            },
            "evaluation": summary,
        },
    )
    return model, evaluation


def plot_confusion(evaluation: Evaluation, path: str | Path, *, title: str | None = None) -> Path:
    """The test split's confusion matrix as a PNG: each true interval's row as shares of its
    jobs (matplotlib, the ``report`` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TopooptError(
            "plotting the confusion matrix needs matplotlib: pip install 'topoopt[report]'"
        ) from None
    counts = evaluation.confusion.astype(float)
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    top = evaluation.max_intervals
    fig, ax = plt.subplots(figsize=(7.2, 5.6))
    image = ax.imshow(shares, origin="lower", cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(image, ax=ax, label="share of the true interval's jobs")
    ax.set_xlabel(f"predicted interval ({evaluation.interval_s:g} s each; {top}: >= {top})")
    ax.set_ylabel("true interval")
    ax.set_title(
        title
        or f"JCT intervals: RMSE {evaluation.rmse_intervals:.2f}, accuracy "
        f"{evaluation.accuracy:.2f} ({evaluation.rows_test} test jobs)",
        fontsize=10,
    )
    file = Path(path)
    try:
        fig.savefig(file, dpi=120, bbox_inches="tight")
    except OSError as exc:
        raise TopooptError(f"cannot write {file}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return file


__all__ = [
    "DECODERS",
    "FEATURES",
    "FORMAT",
    "VERSION",
    "Evaluation",
    "JctModel",
    "JctPredictor",
    "model_digest",
    "plot_confusion",
    "target_intervals",
    "train_jct",
]
