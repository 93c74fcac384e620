"""Affinity lookup (Arnold §5.2): ``alpha`` from a characterisation database.

A record ``<gpu_type, r1, r2, j_dp, j_pp>`` says that a job with ratios ``(r1, r2)`` (see
:func:`topoopt.placement.volumes.affinity_ratios`) on ``gpu_type`` sped up by ``j_dp`` with
a DP-aligned placement and by ``j_pp`` with a PP-aligned one. A new job takes the record
nearest in Euclidean distance on ``(r1, r2)`` (among records of its GPU type when there are
any) and ``alpha = j_dp / (j_dp + j_pp)``; negative improvements count as 0, and a record
with neither improvement gives ``alpha = 0.5``.

The example database shipped with topoopt (:func:`example_database`) holds the paper's
examples — 24B dense on H800 (alpha 0), 24B MoE on H800 (alpha 0.3), and on L20 a dense 7B
that prefers DP alignment (+1.4 %) and a dense 14B that prefers PP alignment (+0.5 %). The
paper gives their improvements but not their configurations; the configurations in
``topoopt/data/affinity_example.json`` are illustrative GPT shapes of those sizes, and the
ratios are computed from them with Appendix C.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.placement.volumes import ModelConfig, affinity_ratios


@dataclass(frozen=True)
class AffinityRecord:
    """One characterised job: GPU type, its ratios, and the speed-ups of the two alignments."""

    gpu_type: str
    r1: float
    r2: float
    j_dp: float
    j_pp: float
    label: str = ""

    @property
    def alpha(self) -> float:
        """``j_dp / (j_dp + j_pp)`` with negative speed-ups clipped to 0 (0.5 if both are 0)."""
        dp, pp = max(self.j_dp, 0.0), max(self.j_pp, 0.0)
        return 0.5 if dp + pp == 0 else dp / (dp + pp)


def lookup_alpha(
    records: Iterable[AffinityRecord], gpu_type: str, r1: float, r2: float
) -> tuple[float, AffinityRecord]:
    """``alpha`` of the nearest record (and the record itself).

    Examples
    --------
    >>> db = [AffinityRecord("H800", 1.0, 10.0, 0.0, 2.3),
    ...       AffinityRecord("H800", 1.0, 50.0, 0.3, 0.7)]
    >>> lookup_alpha(db, "H800", 1.1, 45.0)[0]
    0.3
    """
    pool = list(records)
    if not pool:
        raise TopooptError("affinity database is empty")
    same_type = [rec for rec in pool if rec.gpu_type == gpu_type]
    candidates = same_type or pool
    best = min(candidates, key=lambda rec: math.hypot(r1 - rec.r1, r2 - rec.r2))
    return best.alpha, best


def alpha_for(
    cfg: ModelConfig, gpu_type: str, records: Iterable[AffinityRecord] | None = None
) -> float:
    """``alpha`` for a job configuration (example database unless ``records`` is given)."""
    r1, r2 = affinity_ratios(cfg)
    return lookup_alpha(example_database() if records is None else records, gpu_type, r1, r2)[0]


def _record_from_mapping(raw: Mapping[str, Any], path: str) -> AffinityRecord:
    raw = v.as_mapping(raw, path)
    if "model" in raw:
        cfg_raw = v.as_mapping(raw["model"], f"{path}.model")
        try:
            cfg = ModelConfig(**cfg_raw)
        except TypeError as exc:
            raise InvalidInstanceError(f"{path}.model", str(exc)) from None
        r1, r2 = affinity_ratios(cfg)
    else:
        r1 = v.as_float(v.field(raw, "r1", path), f"{path}.r1")
        r2 = v.as_float(v.field(raw, "r2", path), f"{path}.r2")
    return AffinityRecord(
        gpu_type=v.as_str(v.field(raw, "gpu_type", path), f"{path}.gpu_type"),
        r1=r1,
        r2=r2,
        j_dp=v.as_float(v.field(raw, "j_dp", path), f"{path}.j_dp"),
        j_pp=v.as_float(v.field(raw, "j_pp", path), f"{path}.j_pp"),
        label=str(raw.get("label", "")),
    )


def load_database(path: str | PathLike[str]) -> list[AffinityRecord]:
    """Read a database: JSON (a list of records, each with ``r1``/``r2`` or a ``model``
    configuration) or CSV with columns ``gpu_type,r1,r2,j_dp,j_pp[,label]``."""
    file = Path(path)
    if file.suffix.lower() == ".csv":
        with file.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        return [
            _record_from_mapping(
                {k: (float(x) if k in ("r1", "r2", "j_dp", "j_pp") else x) for k, x in row.items()},
                f"{file.name}[{i}]",
            )
            for i, row in enumerate(rows)
        ]
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TopooptError(f"cannot read affinity database {str(file)!r}: {exc}") from None
    items = v.as_list(data.get("records") if isinstance(data, dict) else data, f"{file.name}")
    return [_record_from_mapping(item, f"{file.name}[{i}]") for i, item in enumerate(items)]


def example_database() -> list[AffinityRecord]:
    """The example database shipped with topoopt (the paper's characterised jobs)."""
    ref = resources.files("topoopt").joinpath("data/affinity_example.json")
    with resources.as_file(ref) as path:
        return load_database(path)
