"""Hypothesis strategies for placement instances (all shrink: composites and builds)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import strategies as st

from topoopt.placement import Leaf, Minipod, PlacementInstance


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


@st.composite
def tight_instances(
    draw: st.DrawFn, max_cells: int = 30, max_rows: int = 8, any_alpha: bool = False
) -> PlacementInstance:
    """Jobs that fill their cluster exactly (2-5 minipods, at most ``max_cells`` cells):
    where counting is weakest and the constructions miss feasible pairs. Alpha 0.5, or any
    of 0.1 ... 0.9 with ``any_alpha``."""
    rows = draw(st.integers(2, max_rows))
    cols = draw(st.integers(2, max_cells // rows))
    n_pods = draw(st.integers(2, 5))
    cuts = sorted(draw(st.lists(st.integers(0, rows * cols), min_size=n_pods - 1,
                                max_size=n_pods - 1)))  # fmt: skip
    free = [b - a for a, b in zip([0, *cuts], [*cuts, rows * cols], strict=True)]
    alpha = draw(st.integers(1, 9)) / 10 if any_alpha else 0.5
    return PlacementInstance("tight", free, dp=rows, tp=8, pp=cols, alpha=alpha)


NAMES = st.text(min_size=1, max_size=6)
"""Names: any non-empty text (unicode, spaces, quotes, ...); shrinks towards ``"0"``."""


def label_maps(min_size: int = 0) -> st.SearchStrategy[dict[str, str]]:
    """User labels: up to 3 non-empty string keys to string values."""
    return st.dictionaries(
        st.text(min_size=1, max_size=8), st.text(max_size=8), min_size=min_size, max_size=3
    )


@st.composite
def _leaves(draw: st.DrawFn, nodes: list[str]) -> tuple[Leaf, ...]:
    """``nodes`` cut into 1 to 3 consecutive leaves (some possibly empty)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(nodes)), max_size=2)))
    bounds = [0, *cuts, len(nodes)]
    return tuple(
        draw(st.builds(Leaf, NAMES, st.just(tuple(nodes[a:b]))))
        for a, b in itertools.pairwise(bounds)
    )


@st.composite
def instances(
    draw: st.DrawFn,
    *,
    leaves: bool | None = None,
    labels: bool | None = None,
    max_cells: int = 8,
    max_pods: int = 4,
) -> PlacementInstance:
    """Valid instances of any shape: names, ``gpus_per_node``, ``alpha`` and labels vary.

    ``leaves`` / ``labels``: ``True`` forces them (leaves on the first minipod at least,
    at least one label), ``False`` forbids them, ``None`` lets hypothesis choose.
    """
    rows = draw(st.integers(1, max_cells))
    cols = draw(st.integers(1, max_cells // rows))
    gpus = draw(st.sampled_from([1, 2, 4, 8, 16]))
    tp = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16) if gpus % d == 0]))
    n_pods = draw(st.integers(1, max_pods))
    free = draw(st.lists(st.integers(0, rows * cols), min_size=n_pods, max_size=n_pods))
    shortfall = rows * cols - sum(free)
    if shortfall > 0:
        free[draw(st.integers(0, n_pods - 1))] += shortfall
    pod_names = draw(st.lists(NAMES, min_size=n_pods, max_size=n_pods, unique=True))
    if leaves is None:
        with_leaves = draw(st.lists(st.booleans(), min_size=n_pods, max_size=n_pods))
    else:
        with_leaves = [leaves and (j == 0 or draw(st.booleans())) for j in range(n_pods)]
    n_named = sum(f for f, named in zip(free, with_leaves, strict=True) if named)
    node_names = iter(draw(st.lists(NAMES, min_size=n_named, max_size=n_named, unique=True)))
    pods = []
    for name, f, named in zip(pod_names, free, with_leaves, strict=True):
        if named:
            pod_leaves = draw(_leaves([next(node_names) for _ in range(f)]))
            pods.append(draw(st.builds(Minipod, st.just(name), st.just(f), st.just(pod_leaves))))
        else:
            pods.append(Minipod(name, f))
    user_labels = {} if labels is False else draw(label_maps(min_size=1 if labels else 0))
    return draw(
        st.builds(
            PlacementInstance,
            name=NAMES,
            minipods=st.just(tuple(pods)),
            dp=st.just(rows * (gpus // tp)),
            tp=st.just(tp),
            pp=st.just(cols),
            alpha=st.floats(0.0, 1.0),
            gpus_per_node=st.just(gpus),
            labels=st.just(user_labels),
        )
    )


def _integer_forms(value: int) -> st.SearchStrategy[object]:
    """``value`` as a Python int, an integral float or a NumPy integer."""
    return st.sampled_from([value, float(value), np.int64(value), np.int32(value)])


@st.composite
def raw_forms(draw: st.DrawFn, instance: PlacementInstance) -> dict[str, object]:
    """Constructor keyword arguments equivalent to ``instance``, written the loose way a
    scheduler might: lists instead of tuples, ``(name, free_nodes)`` pairs or JSON-like
    mappings instead of :class:`Minipod`, integral floats and NumPy scalars for numbers."""
    pods: list[object] = []
    for pod in instance.minipods:
        free = draw(_integer_forms(pod.free_nodes))
        leaves = [
            draw(st.sampled_from([leaf, (leaf.name, list(leaf.nodes))])) for leaf in pod.leaves
        ]
        forms: list[object] = [
            pod,
            {"name": pod.name, "free_nodes": free, "leaves": leaves},
            (pod.name, free, leaves),
        ]
        if not pod.leaves:
            forms.append((pod.name, free))
        else:
            forms.append({"name": pod.name, "leaves": leaves})
        pods.append(draw(st.sampled_from(forms)))
    return {
        "name": instance.name,
        "minipods": draw(st.sampled_from([pods, tuple(pods)])),
        "dp": draw(_integer_forms(instance.dp)),
        "tp": draw(_integer_forms(instance.tp)),
        "pp": draw(_integer_forms(instance.pp)),
        "alpha": draw(st.sampled_from([instance.alpha, np.float64(instance.alpha)])),
        "gpus_per_node": draw(_integer_forms(instance.gpus_per_node)),
        "labels": dict(instance.labels),
    }


@st.composite
def tree_instances(
    draw: st.DrawFn,
    *,
    max_cells: int = 6,
    max_pods: int = 2,
    max_groups: int = 2,
    max_leaves: int = 2,
    max_free: int = 3,
    objective: str | None = None,
) -> PlacementInstance:
    """Small three-level trees (minipods -> groups -> leaves with 0 to ``max_free`` free
    nodes; a minipod may list no leaves) and a job they hold, with a ``lex`` or ``weighted``
    objective (``objective`` forces one; weights 0 to 4 per level, one positive)."""
    rows = draw(st.integers(1, max_cells))
    cols = draw(st.integers(1, max_cells // rows))
    n = rows * cols
    pods: list[Minipod] = []
    count = 0
    for j in range(draw(st.integers(1, max_pods))):
        leaves = []
        for g in range(draw(st.integers(1, max_groups))):
            for k in range(draw(st.integers(1, max_leaves))):
                free = draw(st.integers(0, max_free))
                nodes = [f"n{count + i}" for i in range(free)]
                count += free
                leaves.append(Leaf(f"l{g}{k}", nodes, [f"g{g}"]))
        pods.append(Minipod.from_leaves(f"p{j}", leaves))
    if count < n:  # top up the last leaf so that the job fits
        last = pods[-1]
        leaf = last.leaves[-1]
        extra = [f"n{count + i}" for i in range(n - count)]
        bigger = Leaf(leaf.name, (*leaf.nodes, *extra), leaf.path)
        pods[-1] = Minipod.from_leaves(last.name, (*last.leaves[:-1], bigger))
    mode = objective or draw(st.sampled_from(["lex", "weighted"]))
    weights: tuple[float, ...] = ()
    if mode == "weighted":
        weights = tuple(draw(st.lists(st.integers(0, 4), min_size=3, max_size=3)))
        if not any(weights):
            weights = (0, 0, 1)
    alpha = draw(st.integers(0, 10)) / 10
    return PlacementInstance(
        "tree",
        pods,
        dp=rows,
        tp=8,
        pp=cols,
        alpha=alpha,
        objective={"levels": mode, "weights": weights} if weights else mode,
    )


@st.composite
def constrained_tree_instances(draw: st.DrawFn, **options: object) -> PlacementInstance:
    """:func:`tree_instances` with one or two constraints (a required or preferred level, a
    slice that divides the job, Kueue's slices in two layers, a Slurm segment, a switch
    count), often infeasible."""
    import dataclasses

    instance = draw(tree_instances(**options))  # type: ignore[arg-type]
    n = instance.n_nodes
    divisors = [s for s in range(1, n + 1) if n % s == 0]
    choices = ["required", "preferred", "slice", "layers", "segment", "switches"]
    kinds = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=2, unique=True))
    if "required" in kinds and "preferred" in kinds:
        kinds.remove("preferred")
    if "slice" in kinds and "segment" in kinds:
        kinds.remove("segment")
    if "layers" in kinds and ("slice" in kinds or "segment" in kinds):
        kinds = [k for k in kinds if k not in ("slice", "segment")]
    given: dict[str, object] = {}
    level = draw(st.integers(0, 2))
    if "required" in kinds:
        given["required_level"] = level
    if "preferred" in kinds:
        given["preferred_level"] = level
    if "slice" in kinds:
        given["slice_size"] = draw(st.sampled_from(divisors))
        given["slice_level"] = draw(st.integers(level if len(given) > 1 else 0, 2))
    if "layers" in kinds:
        outer = draw(st.sampled_from(divisors))
        inner = draw(st.sampled_from([s for s in divisors if outer % s == 0]))
        top = draw(st.integers(level if len(given) else 0, 2))
        layers = [{"size": outer, "level": top}]
        if top < 2:  # a second, finer layer
            layers.append({"size": inner, "level": draw(st.integers(top + 1, 2))})
        given["slice_layers"] = layers
    if "segment" in kinds:
        given["segment"] = draw(st.sampled_from([*divisors, n + 1]))
    if "switches" in kinds:
        given["max_switches"] = draw(st.integers(1, 4))
    return dataclasses.replace(instance, constraints=given)


def group_and_rack_spreads(grid: np.ndarray) -> tuple[int, int, int, int]:
    """Most groups and racks per column and per row of a ``(rows, cols, 2)`` grid."""
    rows, cols, _ = grid.shape
    col = [{tuple(grid[r, c]) for r in range(rows)} for c in range(cols)]
    row = [{tuple(grid[r, c]) for c in range(cols)} for r in range(rows)]
    return (
        max(len({g for g, _ in s}) for s in col),
        max(len({g for g, _ in s}) for s in row),
        max(map(len, col)),
        max(map(len, row)),
    )


def racks_by_group(instance: PlacementInstance) -> list[list[int]]:
    """The free nodes of each rack, grouped by the group above it, of a one-pod tree."""
    racks: dict[str, list[int]] = {}
    for leaf in instance.minipods[0].leaves:
        racks.setdefault(leaf.path[0], []).append(len(leaf.nodes))
    return list(racks.values())


def arnold_d(k: int) -> int:
    """Arnold's eq. 3, written again for the tests: ``k`` switches count when at least 2."""
    return k if k >= 2 else 0
