"""Hypothesis strategies for partition instances.

* :func:`seeded_small` — :func:`topoopt.partition.generate.small` with a drawn seed (pipeline ×
  data-parallel jobs of up to 8 units, all of one size, on 2-4 clusters), the generator's own
  distribution.
* :func:`packing_instances` — built directly so failures shrink: 2-4 clusters on a random
  tree (bandwidths from a small set, so equal widest paths are common), 1-7 vertices of 0-5
  GPUs (mixed sizes: bin packing may be tight or impossible), random edges with traffic from a
  small set that includes 0, and capacities with little slack (0-3 GPUs in all).
* :func:`tpa_instances` — :func:`topoopt.partition.generate.tpa_small` with a drawn seed
  (chain jobs of layer blocks with intra-cluster data, oracle-sized).
* :func:`intra_instances` — :func:`seeded_small` given random intra-cluster data
  (:func:`topoopt.partition.generate.with_intra`, nodes of 1-4 GPUs).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from topoopt.core.seeding import make_rng
from topoopt.partition.generate import small, tpa_small, with_intra
from topoopt.partition.instance import PartitionInstance

BANDWIDTHS = (1.0, 10.0, 25.0, 100.0)
TRAFFIC = (0.0, 0.5, 1.0, 2.0, 5.0)


@st.composite
def seeded_small(draw: st.DrawFn) -> PartitionInstance:
    """One instance of :func:`~topoopt.partition.generate.small` with a drawn seed."""
    return small(draw(st.integers(0, 2**32 - 1)), count=1)[0]


@st.composite
def packing_instances(draw: st.DrawFn, max_vertices: int = 7) -> PartitionInstance:
    """A small instance with mixed vertex sizes and tight capacities (module docstring)."""
    k = draw(st.integers(2, 4))
    names = [f"c{i}" for i in range(k)]
    links: list[tuple[Any, ...]] = [
        (names[draw(st.integers(0, i - 1))], names[i], draw(st.sampled_from(BANDWIDTHS)))
        for i in range(1, k)
    ]
    n = draw(st.integers(1, max_vertices))
    gpus = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    total = sum(gpus) + draw(st.integers(0, 3))
    # split total into k capacities, the largest at least the largest vertex
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=k - 1, max_size=k - 1)))
    caps = [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]
    if max(caps) < max(gpus):
        caps[caps.index(max(caps))] = max(gpus)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []
    edges = [(f"v{i}", f"v{j}", draw(st.sampled_from(TRAFFIC))) for i, j in chosen]
    return PartitionInstance(
        "packing",
        list(zip(names, caps, strict=True)),
        links,
        [(f"v{i}", g) for i, g in enumerate(gpus)],
        edges,
    )


def any_instances() -> st.SearchStrategy[PartitionInstance]:
    """Either strategy."""
    return st.one_of(seeded_small(), packing_instances())


@st.composite
def tpa_instances(draw: st.DrawFn) -> PartitionInstance:
    """One instance of :func:`~topoopt.partition.generate.tpa_small` with a drawn seed."""
    return tpa_small(draw(st.integers(0, 2**32 - 1)), count=1)[0]


@st.composite
def intra_instances(draw: st.DrawFn) -> PartitionInstance:
    """A :func:`seeded_small` instance with random intra-cluster data."""
    base = draw(seeded_small())
    rng = make_rng(draw(st.integers(0, 2**32 - 1)))
    return with_intra(base, rng, node_gpus=draw(st.integers(1, 4)))
