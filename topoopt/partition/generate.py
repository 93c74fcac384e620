"""Instances of the partition family: pipeline × data-parallel job graphs over cluster graphs.

A job of ``S`` pipeline stages and ``R`` data-parallel replicas is a grid of compute units
``s{s}r{r}`` (``gpus`` GPUs each). Its edges (SpiderFlow §4.2): *pipeline* edges between
consecutive stages of a replica (activations; traffic per stage boundary, the same in every
replica), *data-parallel* edges around a ring of the replicas of each stage (gradients; traffic
per stage), and random *extra* edges with small traffic until the graph has the target edge
count (other collectives, embedding sharing). Clusters come from
:func:`topoopt.crosscluster.random.random_links` (heterogeneous bandwidths, no latency) with
capacities in whole units of ``gpus`` GPUs, ``slack`` times the job in all, split at random.

The ``tpa-*`` suites carry the intra-cluster data of the two-level Heuristic-ILP
(:mod:`topoopt.partition.intra`): the job is a chain of layer blocks ``b0 .. b{n-1}`` (each a
vertex with its GPUs, ``compute_s`` and ``param_bytes``; the first and last also hold the
embeddings and the head) with an *activation* edge between consecutive blocks — ``A · M /
10⁹`` GB per step, the activation bytes of a micro-batch boundary times the micro-batches — and
a few *skip* edges (residual or tied-embedding traffic, 10–50 % of that); clusters are nodes
of GPUs (capacity = the GPUs of the nodes) with intra- and inter-node bandwidths. Figures are
drawn from a few values per instance (the blocks of one model are alike), in the ranges of
:mod:`topoopt.parallelconfig.generate`; they are synthetic, as SpiderFlow gives none.
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
from topoopt.parallelconfig.instance import Node
from topoopt.partition.instance import Cluster, PartitionInstance, Training, Vertex

MAX_COUNT = 10_000
"""Most instances one generator call makes."""
PIPELINE_TRAFFIC = (1.0, 3.0)
"""Range of the activation traffic of a stage boundary."""
DP_TRAFFIC = (4.0, 12.0)
"""Range of the gradient traffic of a stage's data-parallel ring."""
EXTRA_TRAFFIC = (0.1, 1.0)
"""Range of the traffic of a random extra edge."""
INTRA_NODE_GBPS = (600.0, 2400.0)
"""Intra-node bandwidths of the ``tpa`` suites (PCIe-class, NVLink-class; Gb/s)."""
INTER_NODE_GBPS = (100.0, 200.0, 400.0)
"""Inter-node bandwidths of the ``tpa`` suites (Gb/s)."""
BLOCK_COMPUTE_S = (0.004, 0.006, 0.008)
"""Forward + backward time of one layer block per micro-batch (s)."""
BLOCK_PARAM_BYTES = (1e8, 2e8, 4e8)
"""Gradient bytes of one layer block (50–200 M parameters in bf16)."""
ACTIVATION_BYTES = (8e6, 16e6, 32e6)
"""Bytes crossing a block boundary per micro-batch (forward plus backward)."""
SKIP_SHARE = (0.1, 0.5)
"""Range of a skip edge's traffic as a share of an activation edge's."""
END_BLOCK = (1.5, 2.0)
"""Compute and gradient factors of the first and last blocks (embeddings, head)."""


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


def _training(rng: np.random.Generator, micro_batches: tuple[int, ...]) -> Training:
    return Training(float(rng.choice(ACTIVATION_BYTES)), int(rng.choice(micro_batches)))


def _bandwidths(rng: np.random.Generator) -> tuple[float, float]:
    return float(rng.choice(INTRA_NODE_GBPS)), float(rng.choice(INTER_NODE_GBPS))


def with_intra(
    instance: PartitionInstance,
    rng: np.random.Generator,
    *,
    node_gpus: int = 4,
    micro_batches: tuple[int, ...] = (2, 4, 8),
) -> PartitionInstance:
    """``instance`` with random intra-cluster data: each cluster's capacity on nodes of
    ``node_gpus`` GPUs (the last one smaller), every vertex (of at least one GPU) a layer block,
    a training; the eq. 9 problem is unchanged.

    Examples
    --------
    >>> inst = with_intra(small(seed=1, count=1)[0], make_rng(0))
    >>> inst.has_intra, inst == PartitionInstance.from_dict(inst.to_dict())
    (True, True)
    """
    clusters = []
    for cluster in instance.clusters:
        full, rest = divmod(cluster.capacity_gpus, node_gpus)
        sizes = [node_gpus] * full + ([rest] if rest else [])
        if not sizes:
            clusters.append(cluster)
            continue
        nodes = tuple(Node(f"n{i}", size) for i, size in enumerate(sizes))
        clusters.append(Cluster(cluster.name, cluster.capacity_gpus, nodes, *_bandwidths(rng)))
    compute, params = float(rng.choice(BLOCK_COMPUTE_S)), float(rng.choice(BLOCK_PARAM_BYTES))
    vertices = [Vertex(u.name, u.gpus, compute, params) for u in instance.vertices]
    return PartitionInstance(
        instance.name,
        clusters,
        instance.graph.to_dicts(),
        vertices,
        instance.edges,
        labels=instance.labels,
        training=_training(rng, micro_batches),
    )


def _packs(capacities: list[int], sizes: list[int]) -> bool:
    """Whether first-fit decreasing packs ``sizes`` into ``capacities`` (exact for sizes 1
    and 2, the sizes the ``tpa`` suites use)."""
    room = sorted(capacities, reverse=True)
    for size in sorted(sizes, reverse=True):
        fit = next((i for i, left in enumerate(room) if left >= size), None)
        if fit is None:
            return False
        room[fit] -= size
    return True


def chain_job(
    rng: np.random.Generator,
    gpus: list[int],
    training: Training,
    *,
    skips: int,
) -> tuple[list[Vertex], list[tuple[str, str, float]]]:
    """Layer blocks ``b0 ..`` with ``gpus`` GPUs each, their activation edges and ``skips``
    random skip edges (module docstring)."""
    n = len(gpus)
    compute, params = float(rng.choice(BLOCK_COMPUTE_S)), float(rng.choice(BLOCK_PARAM_BYTES))
    vertices = []
    for i, g in enumerate(gpus):
        end = i in (0, n - 1)
        factor_c, factor_p = END_BLOCK if end else (1.0, 1.0)
        vertices.append(Vertex(f"b{i}", g, round(compute * factor_c, 6), params * factor_p))
    traffic = round(training.activation_bytes * training.micro_batches / 1e9, 4)
    edges = {(i, i + 1): traffic for i in range(n - 1)}
    pairs = [(i, j) for i in range(n) for j in range(i + 2, n)]
    for k in rng.permutation(len(pairs))[: min(skips, len(pairs))]:
        edges[pairs[int(k)]] = round(traffic * float(rng.uniform(*SKIP_SHARE)), 4)
    return vertices, [(f"b{i}", f"b{j}", t) for (i, j), t in sorted(edges.items())]


def tpa_instance(
    rng: np.random.Generator,
    name: str,
    node_counts: list[list[int]],
    gpus: list[int],
    *,
    skips: int,
    micro_batches: tuple[int, ...],
) -> PartitionInstance:
    """A chain job of blocks with ``gpus`` GPUs on clusters ``c0 ..`` whose nodes have
    ``node_counts[c]`` GPUs (capacity = their sum), random links between the clusters."""
    training = _training(rng, micro_batches)
    vertices, edges = chain_job(rng, gpus, training, skips=skips)
    clusters = [
        Cluster(
            f"c{c}",
            sum(nodes),
            tuple(Node(f"n{k}", g) for k, g in enumerate(nodes)),
            *_bandwidths(rng),
        )
        for c, nodes in enumerate(node_counts)
    ]
    links = random_links(rng, len(clusters), extra_links=len(clusters), latency=False)
    return PartitionInstance(
        name,
        clusters,
        links,
        vertices,
        edges,
        labels={"size": f"{len(vertices)}/{len(edges)}"},
        training=training,
    )


def tpa_small(seed: int = 0, count: int = 20) -> list[PartitionInstance]:
    """``count`` chain jobs of 4–8 blocks of 1–2 GPUs with 0–2 skip edges on 2–3 clusters of 1–2
    nodes of 2 or 4 GPUs: the partition oracle enumerates them at once and every cluster's
    sub-problem (at most 8 GPUs) is within ``parallelconfig/enumerate``'s reach."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    rng = make_rng(seed)
    out = []
    for i in range(count):
        nodes = [
            [int(rng.choice([2, 4])) for _ in range(int(rng.integers(1, 3)))]
            for _ in range(int(rng.integers(2, 4)))
        ]
        capacities = [sum(c) for c in nodes]
        gpus = [int(rng.integers(1, 3)) for _ in range(int(rng.integers(4, 9)))]
        while not _packs(capacities, gpus):  # blocks of 1 GPU, then fewer (4 GPUs at least)
            if max(gpus) > 1:
                gpus[gpus.index(max(gpus))] = 1
            else:
                gpus.pop()
        out.append(
            tpa_instance(
                rng,
                f"tpa-small-{seed}-{i}",
                nodes,
                gpus,
                skips=int(rng.integers(0, 3)),
                micro_batches=(2, 4, 8),
            )
        )
    return out


def tpa_64(seed: int = 0, count: int = 3) -> list[PartitionInstance]:
    """``count`` chain jobs of 64 blocks of 2 GPUs with 8 skip edges on 4–8 clusters of 2–8
    nodes of 8 GPUs (SpiderFlow's simulated clusters, §5.5 and A.3), at least 1.25 times the
    job's 128 GPUs in all (nodes are added to random clusters until then)."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    rng = make_rng(seed)
    blocks, block_gpus, node_gpus, most_nodes = 64, 2, 8, 8
    out = []
    for i in range(count):
        nodes = [
            [node_gpus] * int(rng.integers(2, most_nodes + 1))
            for _ in range(int(rng.integers(4, 9)))
        ]
        while sum(map(sum, nodes)) < math.ceil(1.25 * blocks * block_gpus):
            open_ = [c for c, n in enumerate(nodes) if len(n) < most_nodes]
            nodes[open_[int(rng.integers(0, len(open_)))]].append(node_gpus)
        out.append(
            tpa_instance(
                rng,
                f"tpa-64-{seed}-{i}",
                nodes,
                [block_gpus] * blocks,
                skips=8,
                micro_batches=(8, 16, 32),
            )
        )
    return out


def tpa_64_mixed(seed: int = 0, count: int = 3) -> list[PartitionInstance]:
    """:func:`tpa_64` on nodes of mixed sizes: ``count`` chain jobs of 64 blocks of 2 GPUs with
    8 skip edges on 4–8 clusters of 2–8 nodes of 2 to 8 GPUs each (drawn independently), at
    least 1.25 times the job's 128 GPUs in all (nodes are added to random clusters until then;
    when every cluster has 8 nodes, a random node below 8 GPUs grows). Every cluster's
    sub-problem is a mixed-size ``parallelconfig`` instance of at most 64 GPUs on at most 8
    nodes (issue #25: ``parallelconfig/mip`` proves those)."""
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    rng = make_rng(seed)
    blocks, block_gpus, most_nodes = 64, 2, 8
    out = []
    for i in range(count):
        nodes = [
            [int(rng.integers(2, 9)) for _ in range(int(rng.integers(2, most_nodes + 1)))]
            for _ in range(int(rng.integers(4, 9)))
        ]
        while sum(map(sum, nodes)) < math.ceil(1.25 * blocks * block_gpus):
            open_ = [c for c, n in enumerate(nodes) if len(n) < most_nodes]
            if open_:
                nodes[open_[int(rng.integers(0, len(open_)))]].append(int(rng.integers(2, 9)))
                continue
            # every cluster has its most nodes: a node below 8 GPUs grows (4 x 8 x 8 >= 160)
            small = [(c, k) for c, n in enumerate(nodes) for k, g in enumerate(n) if g < 8]
            c, k = small[int(rng.integers(0, len(small)))]
            nodes[c][k] = int(rng.integers(nodes[c][k] + 1, 9))
        out.append(
            tpa_instance(
                rng,
                f"tpa-64-mixed-{seed}-{i}",
                nodes,
                [block_gpus] * blocks,
                skips=8,
                micro_batches=(8, 16, 32),
            )
        )
    return out


def examples() -> list[PartitionInstance]:
    """Fixed small instances for the conformance suite: a 2 × 2 job that fits one cluster, and
    random small ones, all with intra-cluster data (:func:`with_intra`, so that every solver,
    the two-level Heuristic-ILP among them, runs on them; the eq. 9 problems are those of the
    plain instances)."""
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
    rng = make_rng(5)
    return [with_intra(inst, rng) for inst in [fits, *small(seed=5, count=4)]]


def _table2_512(seed: int = 0, count: int = 3) -> list[PartitionInstance]:
    return table2(seed, count, vertices=512)


GENERATORS: dict[str, Callable[..., list[PartitionInstance]]] = {
    "small": small,
    "table2-128": table2,
    "table2-512": _table2_512,
    "tpa-small": tpa_small,
    "tpa-64": tpa_64,
    "tpa-64-mixed": tpa_64_mixed,
}
"""Suites for ``topoopt instances generate partition --suite NAME --seed N``."""


def slow_examples() -> list[PartitionInstance]:
    """Instances on which the solvers need far longer than a second (the time-limit check of
    the conformance suite): a Table 2 job of 512 units, a 64-unit TPA job with the intra-cluster
    data (``partition/heuristic-ilp``), and 7 units on 8 clusters (``8^7`` assignments, within
    the oracle's limit)."""
    return [
        table2(0, 1, vertices=512)[0],
        tpa_64(0, 1)[0],
        job_instance(make_rng(1), "enum-7x8", stages=7, replicas=1, edges=10, clusters=8),
    ]
