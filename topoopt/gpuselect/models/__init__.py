"""Bandwidth models ``B(S)``: the objective of the family (BandPilot eq. 2), as pluggable objects.

BandPilot treats ``B`` as a black box (§3.2). topoopt ships four kinds:

* :class:`TableModel` — measurements: per host type the bandwidth of every intra-host subset
  (nccl-tests tables, the paper's Stage-1 dictionaries, §4.2.1) and an optional cross-host
  table keyed by the per-host GPU counts of ``S``;
* :class:`BottleneckModel` — the paper's simulator (§5.1.1): the minimum of the measured
  intra-host bandwidths of the touched hosts and the inter-host link bandwidth, optionally
  reduced by NIC sharing on the most loaded host;
* :class:`TopologyModel` — the same bottleneck, its intra-host terms derived from an
  ``nvidia-smi topo -m`` matrix as the bottleneck link of the best ring;
* :class:`CallableModel` — any Python callable ``S -> GB/s`` (e.g. a learned surrogate).

The first three are *structured* (:class:`StructuredModel`):
``B(S) = min(min_h intra_h(S ∩ h), inter(counts(S)))`` where the inter term depends only on how
many GPUs ``S`` takes from each host. For ``S`` inside one host ``B(S) = intra_h(S)``; when
``S`` spans two or more hosts, hosts contributing a single GPU impose no intra term. Exact
solvers (MIP, fast oracle) exploit that structure.

Models are values: frozen dataclasses built with keyword arguments
(``BottleneckModel(intra={"H100": table}, inter_gbps=50.0)``), equal when their fields are
equal. The constructors validate and normalise every field and raise
:class:`~topoopt.core.errors.InvalidInstanceError` naming the field's JSON path inside an
instance (``bandwidth.inter_gbps``, ``bandwidth.intra.H100.01``), exactly as when the model is
read from JSON: ``from_dict`` only reads the files the JSON object references (as the
instance's :class:`~topoopt.core.safejson.FileAccess` allows) and calls the constructor. A
table read from a file is a value like any other: ``to_dict`` writes it inline, so the
written JSON loads anywhere and equals the model.

A model is *bound* to the hosts of an instance (:meth:`BandwidthModel.bind`), giving a
:class:`BoundModel` that evaluates one subset (:meth:`BoundModel.value`, the plain reference)
or a batch of them, vectorised, in three layouts with the same values: dense rows
(:meth:`BoundModel.batch`), sparse rows naming the few hosts a subset touches
(:meth:`BoundModel.batch_sparse`) and replacements of one host's mask
(:meth:`BoundModel.batch_replace`) — the last two keep the heuristics' memory independent of
the number of hosts times the number of candidates. A subset is one bitmask of local indices
per host (:mod:`topoopt.gpuselect.masks`).

The package has one module per kind; a new kind is one module and, for a kind read from
JSON, one entry of :data:`MODELS`:

==============================================  ============================================
module                                          what
==============================================  ============================================
:mod:`topoopt.gpuselect.models.base`            :class:`BandwidthModel`, :class:`BoundModel`
                                                (the interfaces), :class:`MissingEntryError`,
                                                :data:`BATCH_CELLS`
:mod:`topoopt.gpuselect.models.structured`      the structured form: :class:`StructuredBound`,
                                                :class:`CapBound`, :class:`ProfileBound`,
                                                :class:`StructuredModel`
:mod:`topoopt.gpuselect.models.fields`          readers and validators of the JSON fields,
                                                shared by the kinds
:mod:`topoopt.gpuselect.models.table`           :class:`TableModel`
:mod:`topoopt.gpuselect.models.bottleneck`      :class:`BottleneckModel`
:mod:`topoopt.gpuselect.models.topology`        :class:`TopologyModel`
:mod:`topoopt.gpuselect.models.callable`        :class:`CallableModel`
:mod:`topoopt.gpuselect.models.learned`         :class:`LearnedModel` (BandPilot's surrogate,
                                                trained by :mod:`topoopt.learn.bandwidth`)
==============================================  ============================================

Everything public is importable from :mod:`topoopt.gpuselect.models` itself.
"""

from __future__ import annotations

from typing import Any

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.core.safejson import FileAccess
from topoopt.gpuselect.models.base import BATCH_CELLS as BATCH_CELLS  # importable here, as before
from topoopt.gpuselect.models.base import BandwidthModel, BoundModel, MissingEntryError
from topoopt.gpuselect.models.bottleneck import BottleneckModel
from topoopt.gpuselect.models.callable import CallableModel
from topoopt.gpuselect.models.learned import LearnedModel
from topoopt.gpuselect.models.structured import (
    CapBound,
    ProfileBound,
    StructuredBound,
    StructuredModel,
)
from topoopt.gpuselect.models.table import TableModel
from topoopt.gpuselect.models.topology import TopologyModel

MODELS: dict[str, type[StructuredModel]] = {
    "table": TableModel,
    "bottleneck": BottleneckModel,
    "topology": TopologyModel,
    "learned": LearnedModel,
}
"""Built-in models by their JSON ``"model"`` name."""


def model_from_dict(data: Any, files: FileAccess | None = None) -> StructuredModel:
    """Read the ``bandwidth`` object of an instance (errors name ``bandwidth.<field>``).

    Dispatches on ``"model"`` to :meth:`StructuredModel.from_dict` of :data:`MODELS`; the
    files it names are read as ``files`` allows (default: inside the working directory).

    Examples
    --------
    >>> model_from_dict({"model": "topology", "inter_gbps": 12.5})
    TopologyModel(inter_gbps=12.5, gpus_per_nic=None, topology={}, links={})
    """
    data = v.as_mapping(data, "bandwidth")
    kind = v.field(data, "model", "bandwidth")
    if not isinstance(kind, str) or kind not in MODELS:
        raise InvalidInstanceError(
            "bandwidth.model", f"unknown model {kind!r}; one of {', '.join(MODELS)}"
        )
    return MODELS[kind].from_dict(data, files=files)


__all__ = [
    "MODELS",
    "BandwidthModel",
    "BottleneckModel",
    "BoundModel",
    "CallableModel",
    "CapBound",
    "LearnedModel",
    "MissingEntryError",
    "ProfileBound",
    "StructuredBound",
    "StructuredModel",
    "TableModel",
    "TopologyModel",
    "model_from_dict",
]
