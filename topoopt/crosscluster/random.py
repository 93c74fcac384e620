"""Random connected cluster graphs for the generators of SpiderFlow's families.

A random spanning tree (each cluster ``i > 0`` linked to a uniformly drawn earlier one) plus
random extra links, with bandwidths drawn from a few heterogeneous WAN classes (ties are common,
as with real link classes) and latencies in whole milliseconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

BANDWIDTH_CLASSES_GBPS = (1.0, 5.0, 10.0, 25.0, 40.0, 100.0)
"""Link bandwidths random graphs draw from (Gb/s)."""


def random_links(
    rng: np.random.Generator,
    n: int,
    *,
    extra_links: int | None = None,
    latency: bool = True,
    prefix: str = "c",
) -> list[tuple[Any, ...]]:
    """Links ``(a, b, bandwidth[, latency])`` over clusters ``{prefix}0 .. {prefix}{n-1}``: a
    random spanning tree plus ``extra_links`` (default ``n``) other random pairs, as many as
    exist.

    Examples
    --------
    >>> from topoopt.core.seeding import make_rng
    >>> len(random_links(make_rng(0), 5, extra_links=2)), len(random_links(make_rng(0), 3))
    (6, 3)
    """
    pairs: set[tuple[int, int]] = set()
    for i in range(1, n):
        j = int(rng.integers(0, i))
        pairs.add((j, i))
    wanted = n if extra_links is None else extra_links
    wanted = min(wanted, n * (n - 1) // 2 - len(pairs))
    while wanted > 0:
        i, j = sorted(int(x) for x in rng.integers(0, n, size=2))
        if i != j and (i, j) not in pairs:
            pairs.add((i, j))
            wanted -= 1
    links: list[tuple[Any, ...]] = []
    for i, j in sorted(pairs):
        bandwidth = float(rng.choice(BANDWIDTH_CLASSES_GBPS))
        link: tuple[Any, ...] = (f"{prefix}{i}", f"{prefix}{j}", bandwidth)
        if latency:
            link += (float(rng.integers(1, 21)),)
        links.append(link)
    return links
