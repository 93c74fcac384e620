"""Selections of clusters, their lexicographic key (the objective) and their feasibility check.

The root of the family's trust chain. A selection takes ``Δ_i`` GPUs from cluster ``i``; the
*chosen* clusters ``S`` are those with ``Δ_i > 0``. SpiderFlow's objective (§4.1.1, §4.1.5) is
lexicographic, compared in this order:

1. ``K = |S|``, the number of clusters the task spans — fewer is better;
2. the bottleneck bandwidth ``min over u != v in S of beta(u -> v)`` (eq. 1) — larger is better
   (``inf`` when ``K = 1``);
3. the total pairwise latency ``λ(S) = sum over pairs {u, v} of S of lat(u, v)``, with ``lat``
   the shortest-path latency (ms) — smaller is better (``0`` without latencies).

:func:`evaluate` turns the key into one number to minimise that orders selections exactly like
the key::

    objective = K + (ρ + λ / (1 + λ)) / (q + 1)

where ``q`` is the number of distinct widest-path bandwidths of the instance (the levels of
:attr:`ClusterGraph.levels <topoopt.crosscluster.graph.ClusterGraph.levels>`) and ``ρ`` the
number of levels strictly larger than the bottleneck (``0`` for the widest level and for
``K = 1``). As ``ρ <= q - 1`` and ``λ / (1 + λ) < 1``, the fraction lies in ``[0, 1)``: the
integer part of the objective *is* ``K``, a smaller bottleneck rank always outweighs latency,
and latency decides last. Objectives are comparable within one instance (``q`` is the
instance's).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.core.errors import InvalidSolutionError


@dataclass(frozen=True)
class Selection:
    """GPUs taken per cluster, as ``(cluster name, GPUs)`` pairs in instance order.

    Examples
    --------
    >>> Selection.of({"g": 12, "a": 4}).as_dict()
    {'g': 12, 'a': 4}
    """

    take: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, take: Mapping[str, int] | Iterable[tuple[str, int]]) -> Selection:
        """From a mapping or pairs ``cluster -> GPUs``."""
        pairs = take.items() if isinstance(take, Mapping) else take
        return cls(tuple((str(name), int(gpus)) for name, gpus in pairs))

    @classmethod
    def from_counts(cls, instance: ClusterSelectInstance, counts: Iterable[int]) -> Selection:
        """From ``Δ_i`` in cluster order (zeros left out)."""
        return cls(
            tuple((c.name, int(k)) for c, k in zip(instance.clusters, counts, strict=True) if k > 0)
        )

    def as_dict(self) -> dict[str, int]:
        """``{cluster: GPUs}``."""
        return dict(self.take)

    def chosen(self) -> list[str]:
        """The clusters with at least one GPU taken."""
        return [name for name, gpus in self.take if gpus > 0]


@dataclass(frozen=True)
class Key:
    """The lexicographic key of a selection (SpiderFlow §4.1.1) and its scalar objective.

    Attributes
    ----------
    clusters
        ``K``, the clusters spanned.
    bottleneck_gbps
        Smallest widest-path bandwidth between two chosen clusters (``inf`` for ``K = 1``).
    rank
        ``ρ``, how many of the instance's bandwidth levels exceed the bottleneck.
    latency_ms
        ``λ``, total shortest-path latency over the pairs of chosen clusters.
    levels
        ``q``, the number of distinct widest-path bandwidths of the instance.
    """

    clusters: int
    bottleneck_gbps: float
    rank: int
    latency_ms: float
    levels: int

    @property
    def objective(self) -> float:
        """``K + (ρ + λ / (1 + λ)) / (q + 1)`` (module docstring)."""
        return scalar(self.clusters, self.rank, self.latency_ms, self.levels)


def scalar(clusters: int, rank: int, latency_ms: float, levels: int) -> float:
    """The objective of a key's parts: ``K + (ρ + λ / (1 + λ)) / (q + 1)``.

    Examples
    --------
    >>> scalar(2, 0, 1.0, 3)  # K = 2, widest level, λ = 1 ms, q = 3
    2.125
    """
    return clusters + (rank + latency_ms / (1.0 + latency_ms)) / (levels + 1)


def key(instance: ClusterSelectInstance, chosen: Iterable[str]) -> Key:
    """The key of the chosen clusters ``S`` (eq. 1 widest paths, shortest-path latencies)."""
    names = list(dict.fromkeys(chosen))
    graph = instance.graph
    bottleneck = graph.bottleneck(names)
    return Key(
        clusters=len(names),
        bottleneck_gbps=bottleneck,
        rank=graph.rank(bottleneck),
        latency_ms=graph.total_latency(names),
        levels=len(graph.levels),
    )


def split(free: list[int], used: list[int], demand: int) -> list[int]:
    """``Δ`` over the clusters ``used``: a GPU each while the demand lasts, then ``min(g_i,
    R)`` in order (eq. 4).

    Examples
    --------
    >>> split([4, 0, 12, 6], [0, 2], 16), split([4, 9], [0, 1], 1)
    ([4, 0, 12, 0], [1, 0])
    """
    take = [0] * len(free)
    residual = demand
    for i in used:
        if residual > 0:
            take[i], residual = 1, residual - 1
    for i in used:
        extra = min(free[i] - take[i], residual)
        take[i] += extra
        residual -= extra
    return take


def check(instance: ClusterSelectInstance, selection: Selection) -> list[str]:
    """The rules ``selection`` breaks: known clusters named once, ``0 <= Δ_i <= g_i`` and
    ``sum Δ_i = demand`` (§4.1.1).

    Examples
    --------
    >>> from topoopt.clusterselect.generate import fig2
    >>> check(fig2(), Selection.of([("a", 5), ("zz", 1), ("a", 1)]))
    ['takes 5 GPUs from a, which has 4 free', 'names unknown cluster zz', \
'names cluster a twice', 'takes 7 GPUs in all, the demand is 16']
    """
    problems = []
    free = {c.name: c.free_gpus for c in instance.clusters}
    seen: set[str] = set()
    for name, gpus in selection.take:
        if name not in free:
            problems.append(f"names unknown cluster {name}")
        elif name in seen:
            problems.append(f"names cluster {name} twice")
        elif gpus < 0:
            problems.append(f"takes {gpus} GPUs from {name}")
        elif gpus > free[name]:
            problems.append(f"takes {gpus} GPUs from {name}, which has {free[name]} free")
        seen.add(name)
    total = sum(gpus for _, gpus in selection.take)
    if total != instance.demand:
        problems.append(f"takes {total} GPUs in all, the demand is {instance.demand}")
    return problems


def evaluate(instance: ClusterSelectInstance, selection: Selection) -> float:
    """The scalar objective of the selection's key (to minimise; module docstring).

    Examples
    --------
    >>> from topoopt.clusterselect.generate import fig2
    >>> inst = fig2()
    >>> [math.floor(evaluate(inst, Selection.of(t))) for t in
    ...  ({"a": 4, "g": 12}, {"a": 4, "e": 12}, {"a": 4, "b": 4, "c": 4, "d": 4})]
    [2, 2, 4]
    """
    return key(instance, selection.chosen()).objective


def metrics(instance: ClusterSelectInstance, selection: Selection) -> dict[str, float]:
    """The key's parts: ``clusters`` (K), ``bottleneck_gbps`` (``inf`` for K = 1, written
    ``"inf"`` in JSON), ``bottleneck_rank`` and ``latency_ms``."""
    parts = key(instance, selection.chosen())
    return {
        "clusters": float(parts.clusters),
        "bottleneck_gbps": parts.bottleneck_gbps,
        "bottleneck_rank": float(parts.rank),
        "latency_ms": parts.latency_ms,
    }


def to_dict(instance: ClusterSelectInstance, selection: Selection) -> dict[str, Any]:
    """JSON form ``{"take": {"a": 4, "g": 12}}``."""
    return {"take": selection.as_dict()}


def from_dict(instance: ClusterSelectInstance, data: Mapping[str, Any]) -> Selection:
    """Read ``{"take": {"a": 4, "g": 12}}``."""
    take = data.get("take") if isinstance(data, Mapping) else None
    if not isinstance(take, Mapping) or not all(
        isinstance(k, str) and isinstance(g, int) and not isinstance(g, bool)
        for k, g in take.items()
    ):
        raise InvalidSolutionError("solution.take: must map cluster names to GPU counts")
    return Selection.of(take)


def describe(instance: ClusterSelectInstance, selection: Selection) -> str:
    """The objective explained (a lexicographic key in one number), then one line per chosen
    cluster.

    Examples
    --------
    >>> from topoopt.clusterselect.generate import fig2
    >>> print(describe(fig2(), Selection.of({"a": 4, "g": 12})))
    objective 2.1: K = 2 clusters, bottleneck 100 Gb/s, total pairwise latency 1 ms
      lower is better, in this order: fewer clusters, then a wider bottleneck (the
      narrowest widest-path bandwidth between two chosen clusters, SpiderFlow eq. 1), then
      less latency; the integer part is K (docs/clusterselect.md, "Objective")
    a: 4 of 4 free GPUs
    g: 12 of 12 free GPUs
    """
    free = {c.name: c.free_gpus for c in instance.clusters}
    parts = key(instance, selection.chosen())
    width = (
        "none (one cluster)"
        if math.isinf(parts.bottleneck_gbps)
        else (f"{parts.bottleneck_gbps:g} Gb/s")
    )
    lines = [
        f"objective {evaluate(instance, selection):.6g}: K = {parts.clusters} clusters, "
        f"bottleneck {width}, total pairwise latency {parts.latency_ms:g} ms",
        "  lower is better, in this order: fewer clusters, then a wider bottleneck (the",
        "  narrowest widest-path bandwidth between two chosen clusters, SpiderFlow eq. 1), then",
        '  less latency; the integer part is K (docs/clusterselect.md, "Objective")',
    ]
    lines += [f"{n}: {g} of {free[n]} free GPUs" for n, g in selection.take if g > 0]
    return "\n".join(lines)


def fewest_clusters(free: list[int], demand: int) -> int:
    """The smallest ``k`` whose ``k`` largest clusters hold ``demand`` GPUs: the number of
    clusters of every optimal selection (the oracle's and the MIP's step 1).

    Examples
    --------
    >>> fewest_clusters([4, 4, 12, 12, 2], 16)
    2
    """
    total = 0
    for k, g in enumerate(sorted(free, reverse=True), start=1):
        total += g
        if total >= demand:
            return k
    raise ValueError(f"{demand} GPUs exceed the {total} free")
