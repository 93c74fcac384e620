"""A learned bandwidth model: measured intra-host tables and a learned inter-host term.

BandPilot's hierarchical surrogate (§4.2.1): Stage 1 looks up the measured intra-host bandwidth
of the GPUs a subset takes on each host; Stage 2 learns the inter-host dynamics from a sparse
set of nccl-tests measurements. topoopt keeps Stage 1 as it is and learns Stage 2 as a function
of the subset's **count profile** — how many GPUs it takes on each host, with the hosts' types —
through permutation-invariant features (:class:`ProfileFeatures`) and gradient-boosted trees
(:mod:`topoopt.learn.trees`)::

    B̂(S) = intra_h(S)                                            S inside one host h
    B̂(S) = min( min_{h : |S ∩ h| >= 2} intra_h(S ∩ h),  ĝ(profile(S)) )   S spanning hosts

the structured form of every measured model (:mod:`topoopt.gpuselect.models`), so that every
gpuselect solver — the MIP and the fast oracle included — searches it exactly: they read
``ĝ`` as the count-profile table the model predicts (:class:`PredictedProfiles`, filled on
demand). Hosts of one type are interchangeable and GPUs enter only through their host's measured
table, so ``B̂`` is invariant to the order of the hosts and to renaming GPUs within a host's
symmetric groups by construction.

The model is a versioned JSON file (:data:`FORMAT`, :data:`VERSION`) holding the intra tables,
the trees and a summary of the training; it loads without the training data and without
scikit-learn, and its loading runs no code. ``topoopt learn bandwidth`` writes it
(:mod:`topoopt.learn.bandwidth`); an instance names it as
``{"model": "learned", "file": "MODEL.json"}``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.safejson import FileAccess, parse_json
from topoopt.gpuselect.host import Host
from topoopt.gpuselect.loaders import load_path
from topoopt.gpuselect.masks import MAX_GPUS_PER_HOST
from topoopt.gpuselect.models.fields import (
    IntraTable,
    _check_entries,
    _intra_arrays,
    _intra_entries,
    _intra_json,
    _intra_tables,
)
from topoopt.gpuselect.models.structured import ProfileBound, StructuredModel
from topoopt.learn.trees import TreeEnsemble

FORMAT = "topoopt-bandwidth-model"
"""The ``"format"`` of a learned bandwidth model file."""

VERSION = 1
"""The file version this topoopt writes and reads."""

TypedProfile = tuple[tuple[int, int], ...]
"""A spanning subset's count profile: ``(type index, GPUs)`` per used host, sorted decreasingly."""


@dataclass(frozen=True)
class ProfileFeatures:
    """Permutation-invariant features of a typed count profile (the learned term's input).

    With ``c`` the per-host GPU counts of the hosts a subset uses and ``G`` the most GPUs of a
    trained host type: the number of GPUs and of hosts, the largest and smallest count, how many
    hosts have each, the mean, the standard deviation, smallest / largest, the number of hosts
    taking ``1 .. G`` GPUs, and with several host types the hosts and GPUs of each type.
    None depends on the order of the hosts; every one extends to any number of hosts.
    """

    types: tuple[str, ...]
    gpus: tuple[int, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Feature names, in column order (written to the model file and checked on load)."""
        top = max(self.gpus)
        names = ["gpus", "hosts", "max", "min", "hosts_at_min", "hosts_at_max", "mean", "std"]
        names += ["min_over_max", *(f"hosts_with_{c}" for c in range(1, top + 1))]
        if len(self.types) > 1:
            for t in self.types:
                names += [f"hosts_{t}", f"gpus_{t}"]
        return tuple(names)

    def rows(self, profiles: Sequence[TypedProfile]) -> np.ndarray:
        """One feature row per profile (shape ``(len(profiles), len(names))``), vectorised over
        the profiles (each given decreasingly, as :data:`TypedProfile` says)."""
        n = len(profiles)
        sizes = np.array([len(p) for p in profiles], dtype=np.int64)
        flat = np.array([pair for p in profiles for pair in p], dtype=np.int64).reshape(-1, 2)
        row = np.repeat(np.arange(n), sizes)
        kind, c = flat[:, 0], flat[:, 1].astype(float)
        hosts = sizes.astype(float)
        gpus = np.bincount(row, weights=c, minlength=n)
        mean = gpus / hosts
        var = np.bincount(row, weights=c * c, minlength=n) / hosts - mean**2
        ends = np.cumsum(sizes)
        hi, lo = c[ends - sizes], c[ends - 1]
        at_lo = np.bincount(row, weights=c == lo[row], minlength=n)
        at_hi = np.bincount(row, weights=c == hi[row], minlength=n)
        top = max(self.gpus)
        hist = np.bincount(row * (top + 1) + flat[:, 1], minlength=n * (top + 1))
        columns = [gpus, hosts, hi, lo, at_lo, at_hi, mean, np.sqrt(np.maximum(var, 0.0))]
        columns += [lo / hi, *hist.reshape(n, top + 1)[:, 1:].T]
        if len(self.types) > 1:
            for t in range(len(self.types)):
                mine = kind == t
                columns += [
                    np.bincount(row, weights=mine, minlength=n),
                    np.bincount(row, weights=c * mine, minlength=n),
                ]
        return np.column_stack(columns).astype(float).reshape(n, len(self.names))

    def histogram_rows(self, hist: np.ndarray) -> np.ndarray:
        """:meth:`rows` of one-type profiles given as histograms: ``hist[i, c]`` hosts take
        ``c`` GPUs (column 0 ignored), vectorised without a Python step per profile."""
        if len(self.types) != 1:
            raise ValueError("histogram rows need a model of one host type")
        counts = np.arange(hist.shape[1], dtype=float)
        h = np.asarray(hist, dtype=float)[:, 1:]
        c = counts[1:]
        hosts = h.sum(axis=1)
        gpus = h @ c
        mean = gpus / hosts
        std = np.sqrt(np.maximum(h @ (c * c) / hosts - mean**2, 0.0))
        present = h > 0
        hi = c[present.shape[1] - 1 - np.argmax(present[:, ::-1], axis=1)]
        lo = c[np.argmax(present, axis=1)]
        at_hi = h[np.arange(len(h)), hi.astype(int) - 1]
        at_lo = h[np.arange(len(h)), lo.astype(int) - 1]
        top = self.gpus[0]
        padded = np.zeros((len(h), top))
        padded[:, : min(top, h.shape[1])] = h[:, :top]
        columns = [gpus, hosts, hi, lo, at_lo, at_hi, mean, std, lo / hi, *padded.T]
        return np.column_stack(columns).reshape(len(h), len(self.names))


class PredictedProfiles(Mapping[tuple[int, ...], float]):
    """The count-profile table the model predicts, filled on demand and cached.

    Keys are those of :class:`~topoopt.gpuselect.models.ProfileBound`: with one host type,
    decreasing count profiles; with several, the full count vector in the bound hosts' order.
    A key is *in* the table when it is a spanning profile the hosts could take (>= 2 hosts, no
    count above its host's GPUs); iteration yields the keys predicted so far.
    """

    def __init__(self, model: LearnedModel, hosts: Sequence[Host]) -> None:
        self.model = model
        types = model.types
        self.single_type = len(types) == 1
        self.host_types = [types.index(h.type) for h in hosts]
        self.type_gpus = [model.gpus[t] for t in types]
        self.cache: dict[tuple[int, ...], float] = {}
        self.by_histogram: dict[bytes, float] = {}

    def histogram_values(self, hist: np.ndarray) -> np.ndarray:
        """``ĝ`` of one-type profiles given as histograms (``int64`` rows, see
        :meth:`ProfileFeatures.histogram_rows`), each distinct row predicted once."""
        hist = np.array(hist, dtype=np.int64)
        hist[:, 0] = 0
        first, inverse = _distinct_rows(hist)
        codes = [row.tobytes() for row in hist[first]]
        known = self.by_histogram
        todo = {code: i for i, code in enumerate(codes) if code not in known}
        if todo:
            values = self.model.predict_histograms(hist[first[list(todo.values())]])
            known.update(zip(todo, values.tolist(), strict=True))
        return np.array([known[code] for code in codes])[inverse]

    def _typed(self, key: tuple[int, ...]) -> TypedProfile | None:
        if self.single_type:  # keys are decreasing count profiles
            top = self.type_gpus[0]
            if len(key) < 2 or not 0 < key[-1] <= key[0] <= top:
                return None
            return tuple((0, c) for c in key)
        if len(key) != len(self.host_types):
            return None
        pairs = [(t, c) for t, c in zip(self.host_types, key, strict=True) if c]
        if len(pairs) < 2 or any(c < 0 or c > self.type_gpus[t] for t, c in pairs):
            return None
        return tuple(sorted(pairs, key=lambda p: (-p[1], p[0])))

    def prefetch(self, keys: Sequence[tuple[int, ...]]) -> None:
        """Predict every valid key of ``keys`` not predicted yet, in one batch."""
        if self.single_type:
            valid = [k for k in keys if k not in self.cache and self._typed(k) is not None]
            if valid:
                hist = np.zeros((len(valid), self.type_gpus[0] + 1), dtype=np.int64)
                for i, key in enumerate(valid):
                    hist[i] = np.bincount(key, minlength=self.type_gpus[0] + 1)
                values = self.histogram_values(hist)
                self.cache.update(zip(valid, values.tolist(), strict=True))
            return
        todo = {}
        for key in keys:
            if key not in self.cache:
                typed = self._typed(key)
                if typed is not None:
                    todo[key] = typed
        if todo:
            values = self.model.predict_profiles(list(todo.values()))
            self.cache.update(zip(todo, values.tolist(), strict=True))

    def __getitem__(self, key: tuple[int, ...]) -> float:
        if key not in self.cache:
            if self._typed(key) is None:
                raise KeyError(key)
            self.prefetch([key])
        return self.cache[key]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and self._typed(key) is not None

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        return iter(list(self.cache))

    def __len__(self) -> int:
        return len(self.cache)


class LearnedBound(ProfileBound):
    """:class:`~topoopt.gpuselect.models.ProfileBound` over :class:`PredictedProfiles`.

    With one host type the inter term of a batch is computed from the count histograms of its
    rows (NumPy throughout, each distinct histogram predicted once); with several, from the
    count vectors' keys, the missing ones predicted in one batch.
    """

    profiles: PredictedProfiles

    def _histograms(self, counts: np.ndarray) -> np.ndarray:
        """Histogram of each row of per-host ``counts`` (``out[i, c]`` hosts with ``c``)."""
        width = self.profiles.type_gpus[0] + 1
        cells = np.arange(len(counts))[:, None] * width + counts
        hist = np.bincount(cells.ravel(), minlength=len(counts) * width)
        return hist.reshape(len(counts), width)

    def inter(self, counts: Sequence[int]) -> float:
        if not self.interchangeable:
            return super().inter(counts)
        return float(self.inter_batch(np.asarray([counts], dtype=np.int64))[0])

    def inter_batch(self, counts: np.ndarray) -> np.ndarray:
        if not self.interchangeable:
            self.profiles.prefetch([self.key(row) for row in counts.tolist()])
            return super().inter_batch(counts)
        if not len(counts):
            return np.empty(0)
        return self.profiles.histogram_values(self._histograms(counts))

    def inter_replace(self, counts: np.ndarray, hosts: np.ndarray, new: np.ndarray) -> np.ndarray:
        if not self.interchangeable:
            return super().inter_replace(counts, hosts, new)
        if not len(hosts):
            return np.empty(0)
        hist = np.repeat(self._histograms(np.asarray([counts])), len(hosts), axis=0)
        rows = np.arange(len(hosts))
        np.subtract.at(hist, (rows, counts[hosts]), 1)
        np.add.at(hist, (rows, new), 1)
        return self.profiles.histogram_values(hist)


def _distinct_rows(hist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, inverse)``: row ``i`` of ``hist`` equals row ``first[inverse[i]]``, the
    ``first`` rows distinct. Rows are encoded as one integer (base: the largest entry + 1) when
    that fits in 62 bits, else compared whole."""
    base = int(hist.max(initial=0)) + 1
    if hist.shape[1] * math.log2(base) > 62:
        _, first, inverse = np.unique(hist, axis=0, return_index=True, return_inverse=True)
        return first, inverse.ravel()
    code = np.zeros(len(hist), dtype=np.int64)
    for column in hist.T:
        code = code * base + column
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def _host_gpus(value: Any, path: str) -> int:
    """GPUs per host of a trained type: an integer in ``1 .. MAX_GPUS_PER_HOST``."""
    n = v.as_int(value, path, minimum=1)
    if n > MAX_GPUS_PER_HOST:
        raise InvalidInstanceError(path, f"must be <= {MAX_GPUS_PER_HOST}, got {n}")
    return n


def _digest(document: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a model file's content (its identity in results)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, init=False, repr=False, eq=False)
class LearnedModel(StructuredModel):
    """Measured intra-host tables and a learned inter-host term (module docstring).

    Parameters
    ----------
    intra
        Per host type, the measured intra-host table (as for
        :class:`~topoopt.gpuselect.models.TableModel`); its keys are the trained types.
    gpus
        Per trained host type, its GPUs per host.
    predictor
        The trees of ``log ĝ`` over :class:`ProfileFeatures` rows.
    committee
        Trees trained on bootstrap resamples of the training rows: their disagreement says
        where the model is unsure (``topoopt learn suggest``); may be empty.
    training
        What the model was trained on (JSON-ready: rows, sample, seed, sources, measured
        profiles, scores); not used by predictions.

    Notes
    -----
    Two learned models are equal when their files' content is (:attr:`digest`).
    """

    kind = "learned"

    intra: Mapping[str, IntraTable] = field(hash=False)
    gpus: Mapping[str, int] = field(hash=False)
    predictor: TreeEnsemble = field(hash=False)
    committee: tuple[TreeEnsemble, ...] = field(hash=False)
    training: Mapping[str, Any] = field(hash=False)
    types: tuple[str, ...] = field(init=False)
    """The trained host types, sorted."""
    digest: str = field(init=False)
    """SHA-256 of :meth:`document` (canonical JSON): the model's identity."""
    _cell_values: dict[bytes, float] = field(init=False, repr=False)

    def __init__(
        self,
        *,
        intra: Mapping[str, Any],
        gpus: Mapping[str, int],
        predictor: TreeEnsemble,
        committee: Sequence[TreeEnsemble] = (),
        training: Mapping[str, Any] | None = None,
    ) -> None:
        put = object.__setattr__
        _check_entries(_intra_entries(intra))
        put(self, "intra", _intra_tables(intra))
        put(self, "types", tuple(sorted(self.intra)))
        sizes = {}
        for t in self.intra:
            n = _host_gpus(
                gpus.get(t) if isinstance(gpus, Mapping) else None, f"bandwidth.gpus.{t}"
            )
            sizes[t] = n
        put(self, "gpus", sizes)
        width = len(self.features.names)
        for i, trees in enumerate([predictor, *committee]):
            if trees.n_features != width or trees.link != "identity":
                where = "predictor" if i == 0 else f"committee[{i - 1}]"
                raise InvalidInstanceError(
                    f"bandwidth.{where}",
                    f"must be regression trees over the {width} profile features",
                )
        put(self, "predictor", predictor)
        put(self, "committee", tuple(committee))
        put(self, "training", dict(training or {}))
        put(self, "digest", _digest(self.document()))
        put(self, "_cell_values", {})

    @property
    def features(self) -> ProfileFeatures:
        """The feature map of the trained types."""
        return ProfileFeatures(self.types, tuple(self.gpus[t] for t in self.types))

    def predict_profiles(self, profiles: Sequence[TypedProfile]) -> np.ndarray:
        """``ĝ`` of typed count profiles (GB/s).

        Profiles whose features fall in the same cell of the trees' thresholds
        (:meth:`~topoopt.learn.trees.TreeEnsemble.cells`) have the same value: the trees walk
        one row per cell, and the model remembers the value of every cell it met (profiles
        with more hosts than any training row mostly share the cells of the largest ones)."""
        if not profiles:
            return np.empty(0)
        return self._predict_rows(self.features.rows(profiles))

    def predict_histograms(self, hist: np.ndarray) -> np.ndarray:
        """``ĝ`` of one-type profiles given as histograms (:meth:`ProfileFeatures.
        histogram_rows`)."""
        return self._predict_rows(self.features.histogram_rows(hist))

    def _predict_rows(self, rows: np.ndarray) -> np.ndarray:
        """``ĝ`` of feature rows, one tree walk per new cell (see :meth:`predict_profiles`)."""
        cells = self.predictor.cells(rows)
        codes = [row.tobytes() for row in cells]
        known = self._cell_values
        todo = {code: i for i, code in enumerate(codes) if code not in known}
        if todo:
            values = np.exp(self.predictor.predict(rows[list(todo.values())]))
            known.update(zip(todo, values.tolist(), strict=True))
        return np.array([known[code] for code in codes])

    def disagreement(self, profiles: Sequence[TypedProfile]) -> np.ndarray:
        """Standard deviation of ``log ĝ`` across the committee (0 without one)."""
        if not self.committee:
            return np.zeros(len(profiles))
        rows = self.features.rows(profiles)
        return np.std([trees.predict(rows) for trees in self.committee], axis=0)

    def bind(self, hosts: Sequence[Host]) -> LearnedBound:
        for i, h in enumerate(hosts):
            if h.type not in self.gpus:
                raise InvalidInstanceError(
                    "bandwidth",
                    f"the learned model was trained on host types {', '.join(self.types)}, "
                    f"not on {h.type!r} of hosts[{i}] ({h.name!r})",
                )
            if h.gpus != self.gpus[h.type]:
                raise InvalidInstanceError(
                    "bandwidth",
                    f"the learned model's {h.type} hosts have {self.gpus[h.type]} GPUs, "
                    f"hosts[{i}] ({h.name!r}) has {h.gpus}",
                )
        single = len(self.types) == 1
        bound = LearnedBound(hosts, _intra_arrays(self.intra, hosts), None, single)
        bound.profiles = PredictedProfiles(self, hosts)
        return bound

    # -- the file
    def document(self) -> dict[str, Any]:
        """The model file's content (:data:`FORMAT`, version :data:`VERSION`)."""
        intra = _intra_json(self.intra)
        return {
            "format": FORMAT,
            "version": VERSION,
            "types": {t: {"gpus": self.gpus[t], "intra": intra[t]} for t in self.types},
            "features": list(self.features.names),
            "target": "log_gbps",
            "predictor": self.predictor.to_dict(),
            "committee": [trees.to_dict() for trees in self.committee],
            "training": dict(self.training),
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LearnedModel):
            return NotImplemented
        return self.digest == other.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        rows = self.training.get("rows", "?")
        return f"LearnedModel(types={list(self.types)}, rows={rows}, digest={self.digest[:12]})"

    def to_dict(self) -> dict[str, Any]:
        """The instance's ``bandwidth`` object: ``{"model": "learned", **document}`` (inline,
        so the written instance loads anywhere)."""
        return {"model": self.kind, **self.document()}

    def identity(self) -> dict[str, Any]:
        """What a result records of the model: kind, digest and training rows."""
        return {"model": self.kind, "sha256": self.digest, "rows": self.training.get("rows")}

    def save(self, path: str) -> None:
        """Write the model file (JSON)."""
        with open(path, "w", encoding="utf-8") as out:
            json.dump(self.document(), out, separators=(",", ":"))
            out.write("\n")

    @classmethod
    def load(cls, path: str, files: FileAccess | None = None, field: str = "file") -> LearnedModel:
        """Read a model file (paths as :func:`~topoopt.gpuselect.loaders.load_path` says);
        errors name the file and the field."""
        file, text = load_path(path, files, field)
        return cls.from_document(parse_json(text, str(file)), str(file))

    @classmethod
    def from_document(cls, data: Any, source: str = "bandwidth") -> LearnedModel:
        """Read a model file's content; errors name ``source`` and the field."""
        data = v.as_mapping(data, source)

        def at(field: str) -> str:  # "MODEL.json: types.H100" or, inline, "bandwidth.types.H100"
            return f"{source}.{field}" if source == "bandwidth" else f"{source}: {field}"

        if data.get("format") != FORMAT:
            raise InvalidInstanceError(
                at("format"), f"must be {FORMAT!r}, got {data.get('format')!r}"
            )
        if data.get("version") != VERSION:
            raise InvalidInstanceError(
                at("version"),
                f"this topoopt reads version {VERSION} of {FORMAT}, got {data.get('version')!r}",
            )
        types = v.as_mapping(v.field(data, "types", source), at("types"))
        intra, gpus = {}, {}
        for name, entry in types.items():
            where = at(f"types.{name}")
            entry = v.as_mapping(entry, where)
            intra[name] = v.field(entry, "intra", where)
            gpus[name] = _host_gpus(v.field(entry, "gpus", where), f"{where}.gpus")
        model_types = tuple(sorted(_intra_tables(intra, at("types"))))
        expected = ProfileFeatures(model_types, tuple(gpus[t] for t in model_types)).names
        if data.get("features") != list(expected):
            raise InvalidInstanceError(
                at("features"),
                f"the file's features differ from this topoopt's {list(expected)}",
            )
        if data.get("target") != "log_gbps":
            raise InvalidInstanceError(at("target"), "must be 'log_gbps'")
        predictor = TreeEnsemble.from_dict(data.get("predictor"), at("predictor"))
        raw_committee = data.get("committee", [])
        if not isinstance(raw_committee, list):
            raise InvalidInstanceError(at("committee"), "must be a list")
        committee = [
            TreeEnsemble.from_dict(c, at(f"committee[{i}]")) for i, c in enumerate(raw_committee)
        ]
        training = v.as_mapping(data.get("training", {}), at("training"))
        return cls(
            intra=intra, gpus=gpus, predictor=predictor, committee=committee, training=training
        )

    @classmethod
    def from_dict(cls, data: Any, *, files: FileAccess | None = None) -> LearnedModel:
        """The instance's ``bandwidth`` object: ``{"model": "learned", "file": "MODEL.json"}``
        (read as ``files`` allows) or the file's content inline."""
        data = cls._object(data)
        if "file" in data:
            path = data["file"]
            if not isinstance(path, str) or set(data) - {"model", "file"}:
                raise InvalidInstanceError(
                    "bandwidth.file", "must be the model file's path, alone beside 'model'"
                )
            return cls.load(path, files, "bandwidth.file")
        return cls.from_document({k: x for k, x in data.items() if k != "model"})


def spanning_profile(counts: Sequence[int], types: Sequence[int]) -> TypedProfile:
    """The typed count profile of per-host ``counts`` on hosts of type indices ``types``."""
    pairs = [(t, c) for t, c in zip(types, counts, strict=True) if c]
    return tuple(sorted(pairs, key=lambda p: (-p[1], p[0])))


__all__ = [
    "FORMAT",
    "VERSION",
    "LearnedBound",
    "LearnedModel",
    "PredictedProfiles",
    "ProfileFeatures",
    "TypedProfile",
    "spanning_profile",
]
