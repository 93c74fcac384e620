"""Hypothesis strategies that build cluster graphs and clusterselect instances directly, so
failures shrink.

* :func:`graph_parts` — 2-8 clusters joined by a random spanning tree plus random extra links,
  bandwidths from a small set (ties are common, as with real link classes), latencies on every
  link or on none (whole milliseconds, ``0`` allowed).
* :func:`instances` — such a graph with ``0..16`` free GPUs per cluster (at least one GPU in
  all), a demand between one GPU and all of them, and an optional source cluster.
* :func:`seeded_instances` — :func:`topoopt.clusterselect.generate.random_instance` with a
  drawn seed, so the generator's own distribution is covered too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from topoopt.clusterselect import ClusterSelectInstance
from topoopt.clusterselect.generate import random_instance
from topoopt.crosscluster.graph import ClusterGraph

BANDWIDTHS = (1.0, 5.0, 10.0, 40.0, 100.0)
"""Few distinct values, so equal widest paths (and equal levels) happen often."""


@st.composite
def graph_parts(
    draw: st.DrawFn, min_n: int = 2, max_n: int = 8, latency: bool | None = None
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Cluster names and connected ``(a, b, bandwidth[, latency])`` links (``latency=None``:
    drawn)."""
    n = draw(st.integers(min_n, max_n))
    names = [f"c{i}" for i in range(n)]
    # a random spanning tree over a random order, so cluster 0 is not always a leaf or a hub
    order = draw(st.permutations(range(n)))
    pairs = []
    for k in range(1, n):
        parent = order[draw(st.integers(0, k - 1))]
        pairs.append((parent, order[k]))
    seen = {frozenset(p) for p in pairs}
    others = [(i, j) for i in range(n) for j in range(i + 1, n) if frozenset((i, j)) not in seen]
    if others:
        pairs += draw(st.lists(st.sampled_from(others), unique=True, max_size=len(others)))
    with_latency = draw(st.booleans()) if latency is None else latency
    links: list[tuple[Any, ...]] = []
    for i, j in pairs:
        a, b = (names[i], names[j]) if draw(st.booleans()) else (names[j], names[i])
        link: tuple[Any, ...] = (a, b, draw(st.sampled_from(BANDWIDTHS)))
        if with_latency:
            link += (float(draw(st.integers(0, 9))),)
        links.append(link)
    return names, links


def graphs(**kwargs: Any) -> st.SearchStrategy[ClusterGraph]:
    """:class:`ClusterGraph` objects of :func:`graph_parts`."""
    return graph_parts(**kwargs).map(lambda parts: ClusterGraph(*parts))


@st.composite
def instances(draw: st.DrawFn, max_n: int = 9, max_free: int = 16) -> ClusterSelectInstance:
    """A small instance: a :func:`graph_parts` graph, free GPUs, a demand and maybe a source."""
    names, links = draw(graph_parts(max_n=max_n))
    free = draw(st.lists(st.integers(0, max_free), min_size=len(names), max_size=len(names)))
    if sum(free) == 0:
        free[draw(st.integers(0, len(names) - 1))] = 1
    demand = draw(st.integers(1, sum(free)))
    source = draw(st.none() | st.sampled_from(names))
    return ClusterSelectInstance(
        "hyp", list(zip(names, free, strict=True)), links, demand, source=source
    )


@st.composite
def seeded_instances(draw: st.DrawFn, max_n: int = 9) -> ClusterSelectInstance:
    """``random_instance`` of 2..``max_n`` clusters with a drawn seed."""
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(2, max_n))
    return random_instance(np.random.default_rng(seed), n, f"seed-{seed}-{n}")


def any_instances(max_n: int = 9) -> st.SearchStrategy[ClusterSelectInstance]:
    """Either strategy."""
    return st.one_of(instances(max_n=max_n), seeded_instances(max_n=max_n))
