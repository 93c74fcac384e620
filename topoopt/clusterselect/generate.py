"""Instances of the clusterselect family: the paper's Fig. 2 example and random cluster graphs.

SpiderFlow's Fig. 2 is not given in full in the text; :func:`fig2` builds a graph consistent
with §2.3 and Table 1 (seven clusters ``a``–``g``, a task of 16 GPUs arriving at ``a``) in which
the three trajectories of Table 1 exist: ``a(4), b(4), c(4), d(4)`` (K = 4, crawl latency 3),
``a(4), e(12)`` (K = 2, latency 7) and ``a(4), g(12)`` (K = 2, latency 1, the best).

Random graphs (:func:`random_graph`) come from :func:`topoopt.crosscluster.random.random_links`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.core.errors import InvalidOptionError
from topoopt.core.seeding import make_rng, normalize_seed
from topoopt.core.validate import option_int
from topoopt.crosscluster.random import random_links

MAX_COUNT = 10_000
"""Most instances one generator call makes."""
MAX_CLUSTERS = 1_000_000
"""Most clusters a generator option may ask for."""


def fig2() -> ClusterSelectInstance:
    """SpiderFlow Fig. 2 / Table 1: 16 GPUs from clusters ``a``–``g``, the task arriving at
    ``a``. Latency labels are the figure's red numbers (smaller = faster link); the bandwidths
    follow them (100, 40, 20, 10, 5 Gb/s).

    The optimum is ``{a: 4, g: 12}``: no cluster has 16 free GPUs, so K >= 2; among the pairs
    with 16 free GPUs ``a``–``g`` has the widest link (100 Gb/s), ``a``–``e`` only 10 Gb/s.
    """
    clusters = [("a", 4), ("b", 4), ("c", 4), ("d", 4), ("e", 12), ("f", 2), ("g", 12)]
    links = [
        ("a", "b", 40.0, 1.0),
        ("b", "c", 40.0, 1.0),
        ("c", "d", 40.0, 1.0),
        ("a", "e", 10.0, 7.0),
        ("a", "g", 100.0, 1.0),
        ("e", "f", 10.0, 3.0),
        ("f", "g", 5.0, 6.0),
        ("d", "f", 20.0, 2.0),
    ]
    return ClusterSelectInstance(
        "fig2", clusters, links, demand=16, source="a", labels={"setting": "fig2"}
    )


def random_graph(
    rng: np.random.Generator,
    n: int,
    *,
    extra_links: int | None = None,
    max_free: int = 16,
    latency: bool = True,
) -> tuple[list[tuple[str, int]], list[tuple[Any, ...]]]:
    """Clusters ``c0 .. c{n-1}`` with ``0..max_free`` free GPUs and a connected set of links:
    a random spanning tree plus ``extra_links`` (default ``n``) random other pairs."""
    clusters = [(f"c{i}", int(rng.integers(0, max_free + 1))) for i in range(n)]
    links = random_links(rng, n, extra_links=extra_links, latency=latency)
    return clusters, links


def random_instance(
    rng: np.random.Generator, n: int, name: str, *, with_source: bool = True
) -> ClusterSelectInstance:
    """A random graph of ``n`` clusters and a demand between one GPU and all free GPUs (at
    least one cluster gets a free GPU), with a random source half of the time."""
    clusters, links = random_graph(rng, n)
    if sum(g for _, g in clusters) == 0:
        clusters[0] = (clusters[0][0], 1)
    total = sum(g for _, g in clusters)
    demand = int(rng.integers(1, total + 1))
    source = f"c{int(rng.integers(0, n))}" if with_source and rng.random() < 0.5 else None
    return ClusterSelectInstance(name, clusters, links, demand, source=source)


def random_small(seed: int = 0, count: int = 20, clusters: int = 8) -> list[ClusterSelectInstance]:
    """``count`` random instances of 2 to ``clusters`` clusters (the oracle solves them fast)."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    high = option_int("clusters", clusters, 2, 64)
    rng = make_rng(seed)
    return [
        random_instance(rng, int(rng.integers(2, high + 1)), f"small-{seed}-{i}")
        for i in range(count)
    ]


def scaling(
    seed: int = 0, sizes: Sequence[int] = (10, 100, 1000, 10_000), latency: bool = True
) -> list[ClusterSelectInstance]:
    """One random graph per size ``n`` (about ``2n`` links, up to 64 free GPUs per cluster, a
    demand of a quarter of the free GPUs), for SpinSearch's running time (eq. 8).

    ``latency=False`` drops the links' latencies from the same graphs (the key is then ``K``
    and the bottleneck; the total pairwise latency is the costliest part of evaluating a large
    selection: ``docs/clusterselect.md``, "Scale")."""
    seed = normalize_seed(seed)
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or not sizes:
        raise InvalidOptionError(f"sizes: must be a list of cluster counts, got {sizes!r}")
    if not isinstance(latency, bool):
        raise InvalidOptionError(f"latency: must be true or false, got {latency!r}")
    counts = [option_int("sizes[]", n, 2, MAX_CLUSTERS) for n in sizes]
    rng = make_rng(seed)
    out = []
    for n in counts:
        clusters, links = random_graph(rng, n, max_free=64)
        if not latency:
            links = [link[:3] for link in links]
        total = sum(g for _, g in clusters)
        demand = max(1, total // 4)
        name = f"scale-{n}" if latency else f"scale-{n}-no-latency"
        out.append(ClusterSelectInstance(name, clusters, links, demand, labels={"n": str(n)}))
    return out


def examples() -> list[ClusterSelectInstance]:
    """Fixed small instances for the conformance suite: Fig. 2, a graph without latencies,
    one cluster, and random graphs of 5 to 9 clusters."""
    rng = make_rng(11)
    clusters, links = random_graph(rng, 6, latency=False)
    no_latency = ClusterSelectInstance(
        "no-latency", clusters, links, max(1, sum(g for _, g in clusters) // 2)
    )
    single = ClusterSelectInstance("single", [("only", 8)], [], demand=5)
    return [
        fig2(),
        no_latency,
        single,
        *(random_instance(rng, n, f"random-{n}") for n in (5, 7, 9)),
    ]


def paper(seed: int = 0) -> list[ClusterSelectInstance]:
    """The paper's worked example: :func:`fig2` (``seed`` is accepted and unused)."""
    normalize_seed(seed)
    return [fig2()]


GENERATORS: dict[str, Callable[..., list[ClusterSelectInstance]]] = {
    "paper": paper,
    "random-small": random_small,
    "scaling": scaling,
}
"""Suites for ``topoopt instances generate clusterselect --suite NAME --seed N``."""


LARGE_CLUSTERS = 100_000
"""Clusters of the large slow instance: ten times the largest :func:`scaling` size."""


def slow_examples() -> list[ClusterSelectInstance]:
    """Instances on which the solvers need the longest (the time-limit check of the conformance
    suite, which by default takes the first one a solver accepts):

    1. ``scale-100000-no-latency``: :func:`scaling` with ten times its largest size, without
       latencies (about 4 s to make). SpinSearch, the baselines and the MIP (whose start,
       reduction and build the limit stops) take it; the oracle refuses it. With latencies no
       solver could return within a limit on it: evaluating a selection of ``K`` clusters costs
       ``K`` Dijkstra searches (``docs/clusterselect.md``, "Scale");
    2. ``scale-400``: 400 clusters with latencies;
    3. ``enum-28``: 28 clusters, within the oracle's limit.
    """
    rng = make_rng(7)
    random_graph(rng, 24, max_free=16)  # the draw before: keeps the instance below as measured
    clusters, links = random_graph(rng, 28, max_free=16)
    demand = sum(g for _, g in clusters) // 3
    return [
        scaling(0, sizes=(LARGE_CLUSTERS,), latency=False)[0],
        scaling(0, sizes=(400,))[0],
        ClusterSelectInstance("enum-28", clusters, links, demand),
    ]
