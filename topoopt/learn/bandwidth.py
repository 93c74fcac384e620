"""BandPilot's bandwidth surrogate (§4.2): train it, score it, and choose what to measure next.

:func:`train_bandwidth` fits the learned inter-host term of a
:class:`~topoopt.gpuselect.models.learned.LearnedModel` on measured placements
(:func:`read_measurements`: nccl-tests cross-host tables) and the hosts' measured intra-host
tables — BandPilot's two stages (§4.2.1) — and scores it on the measurements it did not see
(:func:`score`: MAPE and Spearman's rank correlation, as §5.2). :func:`suggest` proposes the
count profiles worth measuring next: those the committee of bootstrap models disagrees on most.

The learner is scikit-learn's :class:`~sklearn.ensemble.HistGradientBoostingRegressor` on
``log B``; ``benchmarks/learn/bandwidth.py`` measures it against other tree ensembles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.gpuselect.loaders import read_cross_rows
from topoopt.gpuselect.masks import format_mask
from topoopt.gpuselect.models.learned import (
    LearnedModel,
    ProfileFeatures,
    TypedProfile,
    spanning_profile,
)
from topoopt.gpuselect.structure import spanning_profiles
from topoopt.learn.trees import TreeEnsemble, from_sklearn, require_sklearn

COMMITTEE = 8
"""Bootstrap models trained beside the predictor (for :func:`suggest`)."""


@dataclass(frozen=True)
class Measurement:
    """One measured placement: the GPUs taken on each host (bitmasks), the hosts' types and
    the bandwidth; ``source`` names the file and line."""

    masks: tuple[int, ...]
    types: tuple[str, ...]
    gbps: float
    source: str
    op: str = ""
    data_size: str = ""

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(m.bit_count() for m in self.masks)

    @property
    def spanning(self) -> bool:
        """Whether the placement uses two or more hosts (the learned term's rows)."""
        return sum(1 for m in self.masks if m) >= 2


def read_measurements(
    paths: Sequence[str], host_types: Sequence[str], gpus: Mapping[str, int]
) -> list[Measurement]:
    """The rows of nccl-tests cross-host tables (:func:`~topoopt.gpuselect.loaders.
    read_cross_rows`), with host types.

    Parameters
    ----------
    paths
        Cross-host CSV files.
    host_types
        One type for every host of every mapping, or one type per mapping position.
    gpus
        GPUs per host of each type: a mapping may not take a GPU beyond them.

    Raises
    ------
    InvalidInstanceError
        Naming the file and line of a mapping whose host count differs from ``host_types``,
        that takes a GPU its host does not have, whose host type has no GPU count, or whose
        bandwidth is not a positive number.
    """
    out = []
    for path in paths:
        for row in read_cross_rows(path, exact_columns=True):
            where = f"{path}:{row.line}"
            if len(host_types) == 1:
                types = tuple(host_types) * len(row.masks)
            elif len(row.masks) != len(host_types):
                raise InvalidInstanceError(
                    f"{where}: GPU_Mapping_Across_Nodes",
                    f"maps {len(row.masks)} hosts but {len(host_types)} host types were given",
                )
            else:
                types = tuple(host_types)
            for j, (mask, t) in enumerate(zip(row.masks, types, strict=True)):
                if t not in gpus:
                    raise InvalidInstanceError(
                        f"{where}: GPU_Mapping_Across_Nodes",
                        f"host {j} has type {t!r}, which has no intra-host table",
                    )
                if mask >> gpus[t]:
                    raise InvalidInstanceError(
                        f"{where}: GPU_Mapping_Across_Nodes",
                        f"host {j} ({t}) has {gpus[t]} GPUs; the mapping takes "
                        f"{format_mask(mask)!r}",
                    )
            if not row.gbps > 0:
                raise InvalidInstanceError(
                    f"{where}: Bandwidth(GB/s)", f"must be a positive number, got {row.gbps}"
                )
            out.append(Measurement(row.masks, types, row.gbps, where, row.op, row.data_size))
    return out


def _common(values: Iterable[str]) -> str:
    """The one value of ``values`` (``""`` when they differ): the measurements' OP or size."""
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else ""


def host_gpus(intra: Mapping[str, Mapping[int, float]]) -> dict[str, int]:
    """GPUs per host of each type: one more than the highest index its intra table names."""
    return {t: max((m.bit_length() for m in table), default=0) for t, table in intra.items()}


def _typed(m: Measurement, types: Sequence[str]) -> TypedProfile:
    return spanning_profile(m.counts, [types.index(t) for t in m.types])


def _fit(x: np.ndarray, y: np.ndarray, seed: int) -> TreeEnsemble:
    """Gradient-boosted trees of ``y`` over ``x``: 100 trees of at most 8 leaves and depth 4
    (as accurate as 300 deeper ones on the H100 table and 3x faster to evaluate, see
    ``benchmarks/learn/bandwidth.md``), few rows per leaf for the small training sets of
    BandPilot's protocol (25 to 250 rows)."""
    ensemble = require_sklearn()
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency

    estimator = ensemble.HistGradientBoostingRegressor(
        max_iter=100,
        learning_rate=0.2,
        max_leaf_nodes=8,
        max_depth=4,
        min_samples_leaf=int(min(20, max(2, len(y) // 25))),
        early_stopping=False,
        random_state=seed,
    )
    with threadpool_limits(1):  # tens of rows: threads only contend (7x slower on 2 cores)
        estimator.fit(x, y)
    return from_sklearn(estimator, x.shape[1])


@dataclass(frozen=True)
class Scores:
    """How well a model predicts measurements it did not see (BandPilot §5.2).

    ``mape`` in percent and ``r2`` are of the learned inter-host term against the measured
    bandwidth; ``spearman`` is the rank correlation between them.
    """

    rows: int
    mape: float
    spearman: float
    r2: float

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "mape": self.mape, "spearman": self.spearman, "r2": self.r2}


def score(model: LearnedModel, measurements: Sequence[Measurement]) -> Scores:
    """:class:`Scores` of ``model`` on the spanning ``measurements``."""
    rows = [m for m in measurements if m.spanning]
    if len(rows) < 2:
        return Scores(len(rows), math.nan, math.nan, math.nan)
    truth = np.array([m.gbps for m in rows])
    pred = model.predict_profiles([_typed(m, model.types) for m in rows])
    mape = float(np.mean(np.abs(pred - truth) / truth) * 100)
    rho = float(spearmanr(pred, truth).statistic)
    r2 = float(1 - np.sum((pred - truth) ** 2) / np.sum((truth - truth.mean()) ** 2))
    return Scores(len(rows), mape, rho, r2)


@dataclass(frozen=True)
class Training:
    """What :func:`train_bandwidth` returns: the model, the rows it was trained on and the
    held-out rows with their scores (``None`` when nothing was held out)."""

    model: LearnedModel
    trained: tuple[Measurement, ...]
    held_out: tuple[Measurement, ...]
    scores: Scores | None


def train_bandwidth(
    measurements: Sequence[Measurement],
    intra: Mapping[str, Mapping[int, float]],
    *,
    sample: int | None = None,
    seed: int = 0,
    committee: int = COMMITTEE,
    sources: Sequence[str] = (),
) -> Training:
    """Train a :class:`~topoopt.gpuselect.models.learned.LearnedModel`.

    Parameters
    ----------
    measurements
        Measured placements (:func:`read_measurements`); those inside one host are not
        training rows (the intra tables answer them) and are counted in the summary.
    intra
        The measured intra-host table of every host type (Stage 1).
    sample
        Train on a random ``sample`` of the spanning measurements (drawn with ``seed``) and
        score the model on the rest; ``None`` trains on all of them.
    seed
        Seed of the sample and of the committee's resamples.
    committee
        Number of bootstrap models trained beside the predictor (0 for none).
    sources
        Names of the measurement files, recorded in the model.
    """
    spanning = [m for m in measurements if m.spanning]
    if len(spanning) < 2:
        raise TopooptError(
            f"training needs at least 2 measurements spanning hosts; got {len(spanning)}"
        )
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(spanning))
    if sample is not None:
        if not 2 <= sample <= len(spanning):
            raise TopooptError(
                f"--sample must be between 2 and the {len(spanning)} spanning measurements, "
                f"got {sample}"
            )
        order = order[:sample]
    trained = [spanning[i] for i in sorted(order.tolist())]
    held_out = [m for i, m in enumerate(spanning) if i not in set(order.tolist())]
    gpus = host_gpus(intra)
    types = tuple(sorted(intra))
    profiles: dict[TypedProfile, list[float]] = {}
    for m in trained:
        profiles.setdefault(_typed(m, types), []).append(math.log(m.gbps))
    keys = list(profiles)
    x = ProfileFeatures(types, tuple(gpus[t] for t in types)).rows(keys)
    y = np.array([np.mean(profiles[k]) for k in keys])
    predictor = _fit(x, y, seed)
    members = []
    for _ in range(committee):
        pick = rng.integers(0, len(keys), len(keys))
        members.append(_fit(x[pick], y[pick], seed))
    summary = {
        "rows": len(trained),
        "profiles": len(keys),
        "single_host_rows": sum(1 for m in measurements if not m.spanning),
        "sample": sample,
        "seed": seed,
        "sources": list(sources),
        "measured": [[list(p) for p in key] for key in keys],
        "hosts": {t: max(m.types.count(t) for m in measurements) for t in types},
        "op": _common(m.op for m in measurements),
        "data_size": _common(m.data_size for m in measurements),
    }
    model = LearnedModel(
        intra=intra, gpus=gpus, predictor=predictor, committee=members, training=summary
    )
    scores = score(model, held_out) if held_out else None
    if scores is not None:
        model = LearnedModel(
            intra=intra,
            gpus=gpus,
            predictor=predictor,
            committee=members,
            training={**summary, "held_out": scores.to_dict()},
        )
    return Training(model, tuple(trained), tuple(held_out), scores)


@dataclass(frozen=True)
class Suggestion:
    """A placement worth measuring: its typed count profile, one mapping that realises it
    (the best-measured GPUs of each host, so that the inter-host term is what the measurement
    shows) and the committee's disagreement on it."""

    profile: TypedProfile
    mapping: tuple[tuple[str, int], ...]
    disagreement: float


def suggest(model: LearnedModel, count: int, hosts: Mapping[str, int]) -> list[Suggestion]:
    """The ``count`` spanning count profiles of a cluster with ``hosts[type]`` hosts of each
    trained type that the committee disagrees on most, measured ones excluded.

    The rule: largest standard deviation of ``log ĝ`` across the committee (query by
    committee); ties by the profile. ``benchmarks/learn/bandwidth.py`` compares it with
    random sampling.
    """
    if not model.committee:
        raise TopooptError("the model has no committee; train it with --committee >= 2")
    unknown = sorted(set(hosts) - set(model.types))
    if unknown:
        raise TopooptError(f"the model was not trained on host types {unknown}")
    measured = {tuple(tuple(p) for p in key) for key in model.training.get("measured", [])}
    candidates = [p for p in _typed_profiles(model, hosts) if p not in measured]
    spread = model.disagreement(candidates)
    order = sorted(range(len(candidates)), key=lambda i: (-spread[i], candidates[i]))
    out = []
    for i in order[:count]:
        profile = candidates[i]
        mapping = tuple(
            (model.types[t], _best_mask(model.intra[model.types[t]], c)) for t, c in profile
        )
        out.append(Suggestion(profile, mapping, float(spread[i])))
    return out


def _best_mask(table: Mapping[int, float], count: int) -> int:
    """The measured ``count``-subset with the highest intra-host bandwidth (GPUs 0.. if none)."""
    fits = [(gbps, -m) for m, gbps in table.items() if m.bit_count() == count]
    return -max(fits)[1] if fits else (1 << count) - 1


def _typed_profiles(model: LearnedModel, hosts: Mapping[str, int]) -> list[TypedProfile]:
    """Every spanning typed count profile of the cluster."""
    types = model.types
    per_type = []
    for t in types:
        n = hosts.get(t, 0)
        options = [()] + [
            p for k in range(1, n * model.gpus[t] + 1) for p in _profiles_of(k, n, model.gpus[t])
        ]
        per_type.append(options)
    out = []

    def combine(i: int, acc: list[tuple[int, int]]) -> None:
        if i == len(types):
            if len(acc) >= 2:
                out.append(tuple(sorted(acc, key=lambda p: (-p[1], p[0]))))
            return
        for part in per_type[i]:
            combine(i + 1, acc + [(i, c) for c in part])

    combine(0, [])
    return out


def _profiles_of(k: int, hosts: int, gpus: int) -> list[tuple[int, ...]]:
    """Decreasing count profiles of ``k`` GPUs on at most ``hosts`` hosts of ``gpus`` GPUs."""
    single = [(k,)] if k <= gpus and hosts >= 1 else []
    return single + list(spanning_profiles([gpus] * hosts, k))


__all__ = [
    "COMMITTEE",
    "Measurement",
    "Scores",
    "Suggestion",
    "Training",
    "host_gpus",
    "read_measurements",
    "score",
    "suggest",
    "train_bandwidth",
]
