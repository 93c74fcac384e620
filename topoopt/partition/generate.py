"""Instances of the partition family: pipeline × data-parallel job graphs over cluster graphs.

A job of ``S`` pipeline stages and ``R`` data-parallel replicas is a grid of compute units
``s{s}r{r}`` (``gpus`` GPUs each). Its edges (SpiderFlow §4.2): *pipeline* edges between
consecutive stages of a replica (activations; traffic per stage boundary, the same in every
replica), *data-parallel* edges around a ring of the replicas of each stage (gradients; traffic
per stage), and random *extra* edges with small traffic until the graph has the target edge
count (other collectives, embedding sharing). Clusters come from
:func:`topoopt.crosscluster.random.random_links` (heterogeneous bandwidths, no latency) with
capacities in whole units of ``gpus`` GPUs, ``slack`` times the job in all, split at random.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from topoopt.core.errors import InvalidOptionError
from topoopt.core.seeding import make_rng, normalize_seed
from topoopt.core.validate import option_int
from topoopt.crosscluster.random import random_links
from topoopt.partition.instance import PartitionInstance

MAX_COUNT = 10_000
"""Most instances one generator call makes."""
PIPELINE_TRAFFIC = (1.0, 3.0)
"""Range of the activation traffic of a stage boundary."""
DP_TRAFFIC = (4.0, 12.0)
"""Range of the gradient traffic of a stage's data-parallel ring."""
EXTRA_TRAFFIC = (0.1, 1.0)
"""Range of the traffic of a random extra edge."""


def job_graph(
    rng: np.random.Generator, stages: int, replicas: int, *, gpus: int = 8, edges: int = 0
) -> tuple[list[tuple[str, int]], list[tuple[str, str, float]]]:
    """Vertices and edges of an ``stages × replicas`` job with at least ``edges`` edges (random
    extra edges fill up to that count, as far as pairs remain)."""
    names = [[f"s{s}r{r}" for r in range(replicas)] for s in range(stages)]
    vertices = [(names[s][r], gpus) for s in range(stages) for r in range(replicas)]
    out: dict[frozenset[str], tuple[str, str, float]] = {}
    for s in range(stages - 1):
        traffic = round(float(rng.uniform(*PIPELINE_TRAFFIC)), 3)
        for r in range(replicas):
            out[frozenset((names[s][r], names[s + 1][r]))] = (names[s][r], names[s + 1][r], traffic)
    for s in range(stages):
        traffic = round(float(rng.uniform(*DP_TRAFFIC)), 3)
        for r in range(replicas if replicas > 2 else replicas - 1):
            a, b = names[s][r], names[s][(r + 1) % replicas]
            out[frozenset((a, b))] = (a, b, traffic)
    n = len(vertices)
    target = min(edges, n * (n - 1) // 2)
    while len(out) < target:
        i, j = (int(x) for x in rng.integers(0, n, size=2))
        pair = frozenset((vertices[i][0], vertices[j][0]))
        if i != j and pair not in out:
            traffic = round(float(rng.uniform(*EXTRA_TRAFFIC)), 3)
            out[pair] = (vertices[i][0], vertices[j][0], traffic)
    return vertices, list(out.values())


def clusters_for(
    rng: np.random.Generator, n: int, units: int, *, gpus: int = 8, slack: float = 1.25
) -> tuple[list[tuple[str, int]], list[tuple[Any, ...]]]:
    """``n`` clusters holding ``ceil(slack · units)`` units of ``gpus`` GPUs in all (at least
    one each, the rest split at random) and a random connected set of links."""
    total = max(n, math.ceil(slack * units))
    shares = rng.multinomial(total - n, rng.dirichlet(np.ones(n))) + 1
    clusters = [(f"c{i}", int(k) * gpus) for i, k in enumerate(shares)]
    return clusters, random_links(rng, n, extra_links=n, latency=False)


def job_instance(
    rng: np.random.Generator,
    name: str,
    *,
    stages: int,
    replicas: int,
    edges: int,
    clusters: int,
    gpus: int = 8,
) -> PartitionInstance:
    """A job graph and a cluster graph for it (see the module docstring)."""
    vertices, job_edges = job_graph(rng, stages, replicas, gpus=gpus, edges=edges)
    cluster_list, links = clusters_for(rng, clusters, len(vertices), gpus=gpus)
    return PartitionInstance(
        name,
        cluster_list,
        links,
        vertices,
        job_edges,
        labels={"size": f"{len(vertices)}/{len(job_edges)}"},
    )


def small(seed: int = 0, count: int = 20) -> list[PartitionInstance]:
    """``count`` jobs of at most 8 units (1–4 stages × 1–3 replicas, up to 3 extra edges) on 2–4
    clusters: the oracle enumerates them at once."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    rng = make_rng(seed)
    out = []
    for i in range(count):
        replicas = int(rng.integers(1, 4))
        stages = int(rng.integers(1, 8 // replicas + 1))
        base = (stages - 1) * replicas + stages * (replicas if replicas > 2 else replicas - 1)
        extra = int(rng.integers(0, 4))
        out.append(
            job_instance(
                rng,
                f"small-{seed}-{i}",
                stages=stages,
                replicas=replicas,
                edges=base + extra,
                clusters=int(rng.integers(2, 5)),
                gpus=int(rng.choice([1, 2, 4, 8])),
            )
        )
    return out


def table2(seed: int = 0, count: int = 3, vertices: int = 128) -> list[PartitionInstance]:
    """SpiderFlow Table 2 sizes: 128 units / 512 edges (16 stages × 8 replicas) or 512 / 2048
    (32 × 16), on 8 clusters."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    shapes = {128: (16, 8, 512), 512: (32, 16, 2048)}
    if vertices not in shapes:
        raise InvalidOptionError(f"vertices: must be 128 or 512, got {vertices!r}")
    stages, replicas, edges = shapes[vertices]
    rng = make_rng(seed)
    return [
        job_instance(
            rng,
            f"t2-{vertices}-{seed}-{i}",
            stages=stages,
            replicas=replicas,
            edges=edges,
            clusters=8,
        )
        for i in range(count)
    ]


def examples() -> list[PartitionInstance]:
    """Fixed small instances for the conformance suite: a 2 × 2 job that fits one cluster, and
    random small ones."""
    fits = PartitionInstance(
        "fits-one",
        [("c0", 8), ("c1", 4), ("c2", 4)],
        [("c0", "c1", 10.0), ("c1", "c2", 40.0)],
        [("s0r0", 2), ("s0r1", 2), ("s1r0", 2), ("s1r1", 2)],
        [
            ("s0r0", "s1r0", 1.0),
            ("s0r1", "s1r1", 1.0),
            ("s0r0", "s0r1", 5.0),
            ("s1r0", "s1r1", 5.0),
        ],
    )
    return [fits, *small(seed=5, count=4)]


def _table2_512(seed: int = 0, count: int = 3) -> list[PartitionInstance]:
    return table2(seed, count, vertices=512)


GENERATORS: dict[str, Callable[..., list[PartitionInstance]]] = {
    "small": small,
    "table2-128": table2,
    "table2-512": _table2_512,
}
"""Suites for ``topoopt instances generate partition --suite NAME --seed N``."""
