"""Hypothesis strategies that build gpuselect instances directly, so failures shrink.

* :func:`small_instances` — the small pools of the exactness and solver tests, one strategy per
  model variant of :data:`~topoopt.gpuselect.generate.MODEL_KINDS` (the distribution of
  :func:`~topoopt.gpuselect.generate.random_instance`: 1-4 hosts of 2-5 GPUs, or 4/8 GPUs of
  the Appendix E types for ``topology``; at most ``max_pool`` idle GPUs; complete tables).
* :func:`any_instances` — instances of every JSON model kind with everything the format
  allows (partial tables, cross tables or none, custom topologies and link overrides, labels,
  names in any script), for the round-trip tests.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import strategies as st

from topoopt.gpuselect import (
    BottleneckModel,
    GpuSelectInstance,
    Host,
    StructuredModel,
    TableModel,
    TopologyModel,
)
from topoopt.gpuselect.masks import indices_of, popcount

RULE_TYPES = ("A800", "H100")
"""The Appendix E host types built in by their rule (NVSwitch): no data folder needed."""
DRAWN_TYPES = ("T0", "T1")
"""Host types whose link matrices the strategies draw (the instance carries them)."""
LINKS = ("NV1", "NV2", "NV4", "NV8", "PIX", "PXB", "PHB", "NODE", "SYS")

GBPS = st.integers(10, 1000).map(lambda tenths: tenths / 10)
"""A bandwidth of 1.0 .. 100.0 GB/s in steps of 0.1 (as ``random_instance`` rounds them)."""


def gbps_block(n: int) -> st.SearchStrategy[list[float]]:
    """``n`` bandwidths as :data:`GBPS`, drawn as one block of bytes: ten times faster than
    ``n`` separate draws (tables have hundreds of entries), and it still shrinks (to 1.0)."""
    return st.binary(min_size=2 * n, max_size=2 * n).map(
        lambda raw: [
            (10 + int.from_bytes(raw[i : i + 2], "big") % 991) / 10 for i in range(0, 2 * n, 2)
        ]
    )


ANY_GBPS = st.floats(min_value=0.0, max_value=1e4, allow_nan=False, allow_infinity=False)
NAMES = st.text(st.characters(codec="utf-8"), min_size=1, max_size=5)


@st.composite
def pools(
    draw: st.DrawFn, gpus: int, types: Sequence[str], max_hosts: int = 4, max_pool: int = 12
) -> tuple[Host, ...]:
    """1..``max_hosts`` hosts ``n0, n1, ...`` of ``gpus`` GPUs, each with >= 1 idle GPU and at
    most ``max_pool`` idle GPUs in total."""
    hosts: list[Host] = []
    left = max_pool
    for j in range(draw(st.integers(1, max_hosts))):
        if left == 0:
            break
        idle = indices_of(draw(st.integers(1, (1 << gpus) - 1)))[:left]  # one draw per host
        left -= len(idle)
        hosts.append(Host(f"n{j}", draw(st.sampled_from(types)), gpus, idle))
    return tuple(hosts)


@st.composite
def complete_tables(draw: st.DrawFn, types: Sequence[str], gpus: int) -> dict[str, dict]:
    """An intra table for every type with every subset of ``gpus`` GPUs (single GPUs 0)."""
    masks = range(1, 1 << gpus)
    tables = {}
    for t in types:
        values = iter(draw(gbps_block(len(masks))))
        tables[t] = {m: 0.0 if popcount(m) == 1 else next(values) for m in masks}
    return tables


@st.composite
def complete_cross(draw: st.DrawFn, hosts: Sequence[Host], interchangeable: bool) -> dict:
    """A cross entry for every spanning count key the hosts can realise."""
    keys = set()
    for counts in itertools.product(*(range(h.n_available + 1) for h in hosts)):
        if sum(1 for c in counts if c) >= 2:
            nonzero = tuple(sorted((c for c in counts if c), reverse=True))
            keys.add(nonzero if interchangeable else counts)
    return dict(zip(sorted(keys), draw(gbps_block(len(keys))), strict=True))


@st.composite
def small_instances(
    draw: st.DrawFn, kind: str, max_hosts: int = 4, max_pool: int = 12
) -> GpuSelectInstance:
    """A small instance under one of ``MODEL_KINDS`` with complete tables."""
    topology = kind == "topology"
    gpus = draw(st.sampled_from([4, 8])) if topology else draw(st.integers(2, 5))
    hosts = draw(
        pools(gpus, RULE_TYPES + DRAWN_TYPES if topology else ("P", "Q"), max_hosts, max_pool)
    )
    k = draw(st.integers(1, sum(h.n_available for h in hosts)))
    types = sorted({h.type for h in hosts})
    model: StructuredModel
    if kind in ("table", "table-ordered"):
        interchangeable = kind == "table"
        model = TableModel(
            intra=draw(complete_tables(types, gpus)),
            cross=draw(complete_cross(hosts, interchangeable)),
            interchangeable_hosts=interchangeable,
        )
    elif kind in ("bottleneck", "bottleneck-nic"):
        model = BottleneckModel(
            intra=draw(complete_tables(types, gpus)),
            inter_gbps=draw(GBPS),
            gpus_per_nic=draw(st.integers(1, gpus)) if kind == "bottleneck-nic" else None,
        )
    elif topology:
        model = TopologyModel(
            inter_gbps=draw(GBPS),
            gpus_per_nic=draw(st.none() | st.integers(1, gpus)),
            topology={t: draw(matrices(gpus)) for t in types if t in DRAWN_TYPES},
        )
    else:
        raise ValueError(f"unknown model kind {kind!r}")
    return GpuSelectInstance(f"small-{kind}", k, hosts, model)


# --------------------------------------------------------------------------- round trips


@st.composite
def matrices(draw: st.DrawFn, gpus: int) -> list[list[str]]:
    """A symmetric ``nvidia-smi topo -m`` matrix of ``gpus`` GPUs as rows of link tokens."""
    rows = [["X"] * gpus for _ in range(gpus)]
    for i, j in itertools.combinations(range(gpus), 2):
        rows[i][j] = rows[j][i] = draw(st.sampled_from(LINKS))
    return rows


def partial_tables(types: Sequence[str], gpus: int) -> st.SearchStrategy[dict[str, dict]]:
    """Intra tables for ``types`` with any subset of the entries, keyed by mask."""
    table = st.dictionaries(st.integers(1, (1 << gpus) - 1), ANY_GBPS, max_size=8)
    return st.fixed_dictionaries({t: table for t in types})


@st.composite
def any_models(draw: st.DrawFn, kind: str, hosts: Sequence[Host]) -> StructuredModel:
    """A model of ``kind`` that binds to ``hosts``."""
    types = sorted({h.type for h in hosts})
    gpus = max(h.gpus for h in hosts)
    nic = draw(st.none() | st.integers(1, 16))
    if kind == "table":
        interchangeable = draw(st.booleans())
        width = st.just(len(hosts)) if not interchangeable else st.integers(1, 4)
        counts = width.flatmap(lambda n: st.tuples(*[st.integers(0, 8)] * n))
        cross = draw(st.none() | st.dictionaries(counts, ANY_GBPS, max_size=6))
        return TableModel(
            intra=draw(partial_tables(types, gpus)),
            cross=cross,
            interchangeable_hosts=interchangeable,
        )
    if kind == "bottleneck":
        return BottleneckModel(
            intra=draw(partial_tables(types, gpus)), inter_gbps=draw(ANY_GBPS), gpus_per_nic=nic
        )
    custom = [t for t in types if t not in RULE_TYPES]
    topology = {
        t: draw(matrices(draw(st.integers(max(h.gpus for h in hosts if h.type == t), 6))))
        for t in custom
    }
    links = draw(st.dictionaries(st.sampled_from(LINKS), ANY_GBPS, max_size=2))
    for t in draw(st.lists(st.sampled_from(types), max_size=2, unique=True)):
        links[t] = draw(st.dictionaries(st.sampled_from(LINKS), ANY_GBPS, min_size=1, max_size=2))
    return TopologyModel(
        inter_gbps=draw(ANY_GBPS), gpus_per_nic=nic, topology=topology, links=links
    )


@st.composite
def any_hosts(draw: st.DrawFn, types: st.SearchStrategy[str]) -> list[Host]:
    """1-4 hosts of 1-6 GPUs with distinct names; the first has an idle GPU, others may not."""
    names = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    hosts = []
    for j, name in enumerate(names):
        gpus = draw(st.integers(1, 6))
        idle = draw(st.sets(st.integers(0, gpus - 1), min_size=1 if j == 0 else 0))
        hosts.append(Host(name, draw(types), gpus, idle))
    return hosts


@st.composite
def any_instances(draw: st.DrawFn, kind: str) -> GpuSelectInstance:
    """An instance whose model is of the JSON kind ``kind`` (table, bottleneck, topology)."""
    types = st.sampled_from(RULE_TYPES + DRAWN_TYPES) if kind == "topology" else NAMES
    hosts = draw(any_hosts(types))
    return GpuSelectInstance(
        name=draw(NAMES),
        k=draw(st.integers(1, sum(h.n_available for h in hosts))),
        hosts=hosts,
        bandwidth=draw(any_models(kind, hosts)),
        cluster=draw(st.none() | NAMES),
        labels=draw(st.dictionaries(NAMES, st.text(max_size=5), max_size=2)),
    )
