"""Integral cells of a transportation problem, by a maximum flow.

The packing programmes of :mod:`topoopt.placement.exact_mip.sides` and
:mod:`topoopt.placement.exact_mip.typed` fix integral counts of groups and leave the cells
continuous: given the counts, the cells are a transportation problem with integral data (supplies to
be placed, each on a set of allowed minipods, within the free nodes), so integral cells exist
whenever fractional ones do, and a maximum flow finds them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def transport(
    supplies: Sequence[int], allowed: Sequence[Iterable[int]], caps: Sequence[int]
) -> list[dict[int, int]] | None:
    """Integral ``x[i][j] >= 0`` for ``j`` in ``allowed[i]`` with ``sum_j x[i][j] =
    supplies[i]`` and ``sum_i x[i][j] <= caps[j]``, or ``None`` when there are none.

    Examples
    --------
    >>> transport([3, 2], [[0, 1], [1]], [2, 3])
    [{0: 2, 1: 1}, {1: 2}]
    >>> transport([3, 2], [[0, 1], [1]], [2, 2]) is None
    True
    """
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(["s", "t"])
    for i, (supply, pods) in enumerate(zip(supplies, allowed, strict=True)):
        graph.add_edge("s", ("supply", i), capacity=supply)
        for j in pods:
            graph.add_edge(("supply", i), ("pod", j))
    for j, f in enumerate(caps):
        graph.add_edge(("pod", j), "t", capacity=f)
    value, flow = nx.maximum_flow(graph, "s", "t")
    if value != sum(supplies):
        return None
    return [
        {pod: amount for (_, pod), amount in flow[("supply", i)].items()}
        for i in range(len(supplies))
    ]
