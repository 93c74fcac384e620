"""Gradient-boosted tree ensembles as plain arrays: written to JSON, read and evaluated with NumPy.

A learned model of topoopt is saved without pickle (whose loading runs code): scikit-learn's
fitted :class:`~sklearn.ensemble.HistGradientBoostingRegressor` or
:class:`~sklearn.ensemble.HistGradientBoostingClassifier` is exported by
:func:`from_sklearn` into a :class:`TreeEnsemble` — per output, a baseline and the trees'
split features, thresholds, children and leaf values — which :meth:`TreeEnsemble.to_dict`
writes as JSON numbers and :meth:`TreeEnsemble.from_dict` reads back with every field checked.
Prediction (:meth:`TreeEnsemble.raw`) needs NumPy only, so a saved model is *used* without
scikit-learn; only training needs it (the ``learn`` extra).

A node is a leaf when its ``left`` child is ``-1``; a row goes left when
``x[feature] <= threshold`` (scikit-learn's rule; the features here are never missing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topoopt.core.errors import InvalidInstanceError

CELLS = 1 << 21
"""Most (row, tree) pairs one step of :meth:`TreeEnsemble.raw` holds (16 MiB of indices)."""

LINKS = ("identity", "softmax", "sigmoid")
"""How raw scores become predictions: regression, multi-class and binary classification."""


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """Additive trees: ``raw[:, o] = baseline[o] + sum of the leaf values of output o's trees``.

    Attributes
    ----------
    n_features
        Width of the feature rows the trees read.
    baseline
        One raw score per output.
    link
        One of :data:`LINKS`.
    feature, threshold, left, right, value
        The nodes of all trees, concatenated; ``left``/``right`` are absolute node indices
        (``-1`` at leaves).
    roots
        Index of each tree's root node.
    outputs
        Output each tree adds to.
    """

    n_features: int
    baseline: np.ndarray
    link: str
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    outputs: np.ndarray
    _feature: np.ndarray = field(init=False, repr=False)
    _threshold: np.ndarray = field(init=False, repr=False)
    _left: np.ndarray = field(init=False, repr=False)
    _right: np.ndarray = field(init=False, repr=False)
    _depth: int = field(init=False, repr=False)
    _cuts: tuple[np.ndarray, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # The walk of :meth:`raw`: leaves loop onto themselves, so every row takes exactly
        # ``depth`` steps and no step asks which rows are still inside a tree.
        leaf = self.left < 0
        own = np.arange(len(self.left))
        object.__setattr__(self, "_left", np.where(leaf, own, self.left))
        object.__setattr__(self, "_right", np.where(leaf, own, self.right))
        object.__setattr__(self, "_threshold", np.where(leaf, np.inf, self.threshold))
        object.__setattr__(self, "_feature", np.where(leaf, 0, self.feature))
        object.__setattr__(self, "_depth", _depth(self.left, self.right, self.roots))
        inner = ~leaf
        cuts = tuple(
            np.unique(self.threshold[inner & (self.feature == f)]) for f in range(self.n_features)
        )
        object.__setattr__(self, "_cuts", cuts)

    def cells(self, x: np.ndarray) -> np.ndarray:
        """For each row of ``x`` and each feature, how many of the trees' thresholds on that
        feature lie below the value: rows with equal cells take every split the same way, so
        the ensemble gives them the same prediction."""
        x = np.asarray(x, dtype=float)
        out = np.empty(x.shape, dtype=np.int32)
        for f, cuts in enumerate(self._cuts):
            out[:, f] = np.searchsorted(cuts, x[:, f], side="left")
        return out

    @property
    def n_outputs(self) -> int:
        return len(self.baseline)

    def raw(self, x: np.ndarray) -> np.ndarray:
        """Raw scores of the rows of ``x`` (shape ``(rows, n_outputs)``), all trees at once."""
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"expected rows of {self.n_features} features, got {x.shape}")
        owner = np.zeros((len(self.roots), self.n_outputs))
        owner[np.arange(len(self.roots)), self.outputs] = 1.0  # tree -> its output
        out = np.tile(self.baseline, (len(x), 1))
        step = max(1, CELLS // max(1, len(self.roots)))
        for start in range(0, len(x), step):  # rows x trees at a time: bounded memory
            part = x[start : start + step]
            rows = np.arange(len(part))[:, None]
            node = np.broadcast_to(self.roots, (len(part), len(self.roots)))
            for _ in range(self._depth):
                go_left = part[rows, self._feature[node]] <= self._threshold[node]
                node = np.where(go_left, self._left[node], self._right[node])
            out[start : start + step] += self.value[node] @ owner
        return out

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Regression values (``identity``) or class probabilities (the other links)."""
        raw = self.raw(x)
        if self.link == "identity":
            return raw[:, 0]
        if self.link == "sigmoid":
            p = 1.0 / (1.0 + np.exp(-raw[:, 0]))
            return np.column_stack([1.0 - p, p])
        shifted = np.exp(raw - raw.max(axis=1, keepdims=True))
        return shifted / shifted.sum(axis=1, keepdims=True)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: plain lists of numbers (:meth:`from_dict` reads it back)."""
        return {
            "n_features": self.n_features,
            "link": self.link,
            "baseline": self.baseline.tolist(),
            "roots": self.roots.tolist(),
            "outputs": self.outputs.tolist(),
            "feature": self.feature.tolist(),
            "threshold": self.threshold.tolist(),
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "value": self.value.tolist(),
        }

    @classmethod
    def from_dict(cls, data: Any, path: str) -> TreeEnsemble:
        """Read :meth:`to_dict`'s form; any inconsistency is an error naming ``path.field``."""
        if not isinstance(data, Mapping):
            raise InvalidInstanceError(path, "must be an object")

        def numbers(name: str, kind: type) -> np.ndarray:
            raw = data.get(name)
            where = f"{path}.{name}"
            if not isinstance(raw, list) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in raw
            ):
                raise InvalidInstanceError(where, "must be a list of numbers")
            if kind is int and not all(float(x).is_integer() for x in raw):
                raise InvalidInstanceError(where, "must be a list of integers")
            if kind is float and not all(math.isfinite(x) for x in raw):
                raise InvalidInstanceError(where, "must be a list of finite numbers")
            return np.array(raw, dtype=np.int64 if kind is int else float)

        n_features = data.get("n_features")
        if not isinstance(n_features, int) or isinstance(n_features, bool) or n_features < 1:
            raise InvalidInstanceError(f"{path}.n_features", "must be an integer >= 1")
        link = data.get("link")
        if link not in LINKS:
            raise InvalidInstanceError(f"{path}.link", f"must be one of {', '.join(LINKS)}")
        baseline = numbers("baseline", float)
        feature, left, right = (numbers(n, int) for n in ("feature", "left", "right"))
        threshold, value = numbers("threshold", float), numbers("value", float)
        roots, outputs = numbers("roots", int), numbers("outputs", int)
        nodes = len(feature)
        if (
            not baseline.size
            or any(len(a) != nodes for a in (threshold, left, right, value))
            or len(roots) != len(outputs)
        ):
            raise InvalidInstanceError(path, "node arrays and tree arrays must have equal lengths")
        inner = left >= 0
        checks = (
            ("roots", roots, 0, nodes),
            ("outputs", outputs, 0, len(baseline)),
            ("feature", feature[inner], 0, n_features),
            ("left", left[inner], 0, nodes),
            ("right", right[inner], 0, nodes),
        )
        for name, arr, low, high in checks:
            if arr.size and (arr.min() < low or arr.max() >= high):
                raise InvalidInstanceError(f"{path}.{name}", f"entries must be in [{low}, {high})")
        if (right[~inner] != -1).any():
            raise InvalidInstanceError(f"{path}.right", "a leaf (left -1) must have right -1")
        _check_acyclic(left, right, f"{path}.left")
        return cls(
            n_features, baseline, link, feature, threshold, left, right, value, roots, outputs
        )


def _check_acyclic(left: np.ndarray, right: np.ndarray, path: str) -> None:
    """Every child index is larger than its parent's, so evaluation always ends."""
    inner = np.flatnonzero(left >= 0)
    if ((left[inner] <= inner) | (right[inner] <= inner)).any():
        raise InvalidInstanceError(path, "children must come after their parent")


def _depth(left: np.ndarray, right: np.ndarray, roots: np.ndarray) -> int:
    """Most splits on a path from a root to a leaf (children come after their parent)."""
    depth = np.zeros(len(left), dtype=np.int64)
    for node in range(len(left)):  # parents first: children have larger indices
        if left[node] >= 0:
            depth[left[node]] = depth[right[node]] = depth[node] + 1
    return int(depth.max(initial=0))


def from_sklearn(estimator: Any, n_features: int) -> TreeEnsemble:
    """Export a fitted scikit-learn ``HistGradientBoosting{Regressor,Classifier}``.

    Reads the estimator's fitted trees (``_predictors``, stable since scikit-learn 0.21;
    the tests compare this export's predictions with the estimator's own).
    """
    baseline = np.asarray(estimator._baseline_prediction, dtype=float).ravel()
    n_out = len(baseline)
    link = "identity"
    if hasattr(estimator, "classes_"):
        link = "sigmoid" if len(estimator.classes_) == 2 else "softmax"
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("f", "t", "l", "r", "v")}
    roots, outputs = [], []
    offset = 0
    for iteration in estimator._predictors:
        for out, tree in enumerate(iteration):
            nodes = tree.nodes
            leaf = nodes["is_leaf"].astype(bool)
            parts["f"].append(np.where(leaf, 0, nodes["feature_idx"]).astype(np.int64))
            parts["t"].append(np.where(leaf, 0.0, nodes["num_threshold"]).astype(float))
            parts["l"].append(np.where(leaf, -1, nodes["left"].astype(np.int64) + offset))
            parts["r"].append(np.where(leaf, -1, nodes["right"].astype(np.int64) + offset))
            parts["v"].append(np.where(leaf, nodes["value"], 0.0).astype(float))
            roots.append(offset)
            outputs.append(out)
            offset += len(nodes)
    if n_out != max(outputs, default=0) + 1:
        raise ValueError("estimator's trees do not match its baseline")
    return TreeEnsemble(
        n_features=n_features,
        baseline=baseline,
        link=link,
        feature=np.concatenate(parts["f"]),
        threshold=np.concatenate(parts["t"]),
        left=np.concatenate(parts["l"]),
        right=np.concatenate(parts["r"]),
        value=np.concatenate(parts["v"]),
        roots=np.array(roots, dtype=np.int64),
        outputs=np.array(outputs, dtype=np.int64),
    )


def require_sklearn() -> Any:
    """Import scikit-learn's ensemble module, or a clear error naming the extra to install."""
    try:
        from sklearn import ensemble
    except ImportError:
        from topoopt.core.errors import TopooptError

        raise TopooptError(
            "training a learned model needs scikit-learn: pip install 'topoopt[learn]'"
        ) from None
    return ensemble


__all__ = ["LINKS", "TreeEnsemble", "from_sklearn", "require_sklearn"]
