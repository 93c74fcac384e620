"""Hypothesis strategies for small placement instances."""

from __future__ import annotations

from hypothesis import strategies as st

from topoopt.placement import Minipod, PlacementInstance


@st.composite
def small_instances(draw: st.DrawFn, max_cells: int = 8, max_pods: int = 4) -> PlacementInstance:
    """Instances with at most ``max_cells`` nodes and ``max_pods`` minipods (any shape)."""
    rows = draw(st.integers(1, max_cells))
    cols = draw(st.integers(1, max_cells // rows))
    n_pods = draw(st.integers(1, max_pods))
    free = draw(st.lists(st.integers(0, rows * cols), min_size=n_pods, max_size=n_pods))
    shortfall = rows * cols - sum(free)
    if shortfall > 0:
        free[draw(st.integers(0, n_pods - 1))] += shortfall
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    alpha = draw(st.integers(0, 10)) / 10
    return PlacementInstance(
        "hyp",
        tuple(Minipod(f"mp{j}", f) for j, f in enumerate(free)),
        dp=rows * (8 // tp),
        tp=tp,
        pp=cols,
        alpha=alpha,
    )
