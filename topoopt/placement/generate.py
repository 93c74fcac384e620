"""Instance generators of the placement family (deterministic given the seed).

* :func:`arnold_paper` — Arnold Table 1: (i) 3 minipods / 18 free nodes, job DP 12, TP 4,
  PP 2; (ii) 5 / 438, job 24, 4, 8; (iii) 11 / 1019, job 46, 8, 8; each with an even split of
  the free nodes and seeded uneven splits (:func:`seeded_split`), times alpha in
  {0.2, 0.5, 0.8}; labelled ``{"setting": "<i|ii|iii>"}``.
* :func:`random_small` — small random instances the oracle solves in well under a second.
* :func:`random_large` — jobs up to 512 nodes in clusters of 1000+ free nodes.
* :func:`uneven` — issue #14's production-scale classes: uneven free counts (uniform on
  ``0..max_free``, a share of small minipods), a fixed or random job shape, ``tp = 8``.
* :func:`levels_tree` — issue #30's multi-level trees (e.g. 4 x 16 x 16 x 16 nodes), every
  node free with a probability drawn per leaf (a fragmented cluster), a lex or weighted
  objective.

Every generator checks its options first and raises
:class:`~topoopt.core.errors.InvalidOptionError` as ``"<option>: <rule>, got <value>"``
(``topoopt instances generate`` shows the option as ``--<option>``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from topoopt.core.errors import InvalidOptionError
from topoopt.core.seeding import make_rng, normalize_seed
from topoopt.core.validate import option_int
from topoopt.placement.instance import (
    Constraints,
    Leaf,
    LevelObjective,
    Minipod,
    PlacementInstance,
    as_constraints,
    as_objective,
)

PAPER_ALPHAS = (0.2, 0.5, 0.8)

MAX_COUNT = 100_000
"""Most instances one generator call makes (``count``, ``splits``)."""
MAX_NODES = 1_000_000
"""Most nodes a generator option may ask for (cells, job nodes, cluster nodes)."""
MAX_MINIPODS = 10_000
"""Most minipods a generator option may ask for."""


@dataclass(frozen=True)
class PaperSetting:
    """One row of Arnold Table 1."""

    label: str
    minipods: int
    free_nodes: int
    dp: int
    tp: int
    pp: int


PAPER_SETTINGS = (
    PaperSetting("i", 3, 18, 12, 4, 2),
    PaperSetting("ii", 5, 438, 24, 4, 8),
    PaperSetting("iii", 11, 1019, 46, 8, 8),
)


def even_split(total: int, parts: int) -> list[int]:
    """``total`` split as evenly as possible, larger parts first.

    Examples
    --------
    >>> even_split(1019, 11)
    [93, 93, 93, 93, 93, 93, 93, 92, 92, 92, 92]
    """
    base, extra = divmod(total, parts)
    return [base + 1] * extra + [base] * (parts - extra)


def seeded_split(total: int, parts: int, seed: int) -> list[int]:
    """An uneven split of ``total`` free nodes over ``parts`` minipods.

    Weights ``w_j ~ Uniform(0.5, 1.5)`` from ``numpy.random.default_rng(seed)``; minipod ``j``
    gets ``floor(total * w_j / sum(w))`` nodes and the remainder goes, one node each, to the
    largest fractional parts (largest-remainder apportionment), so the total is exact.

    Examples
    --------
    >>> sum(seeded_split(438, 5, seed=1))
    438
    """
    weights = make_rng(seed).uniform(0.5, 1.5, size=parts)
    shares = total * weights / weights.sum()
    counts = np.floor(shares).astype(int)
    for j in np.argsort(-(shares - counts), kind="stable")[: total - counts.sum()]:
        counts[j] += 1
    return [int(c) for c in counts]


def _instance(
    name: str,
    free: list[int],
    dp: int,
    tp: int,
    pp: int,
    alpha: float,
    gpus_per_node: int = 8,
    labels: dict[str, str] | None = None,
) -> PlacementInstance:
    pods = tuple(Minipod(f"mp{j}", f) for j, f in enumerate(free))
    return PlacementInstance(
        name, pods, dp, tp, pp, alpha, gpus_per_node=gpus_per_node, labels=labels or {}
    )


def spanning_split(setting: PaperSetting, seed: int) -> tuple[int, list[int]]:
    """The first seeded split, trying seeds ``seed, seed + 1, ...``, in which no minipod can
    hold the whole job (in the paper every setting spans minipods); returns (seed, split)."""
    n_nodes = setting.dp * setting.tp * setting.pp // 8
    while True:
        split = seeded_split(setting.free_nodes, setting.minipods, seed)
        if max(split) < n_nodes:
            return seed, split
        seed += 1


def arnold_paper(seed: int = 0, splits: int = 2) -> list[PlacementInstance]:
    """Arnold Table 1 settings x (even split + ``splits`` seeded splits) x alpha.

    Seeded split ``k`` (1-based) starts from seed ``seed + 100 * k`` and takes the first seed
    whose split leaves no minipod able to hold the whole job (:func:`spanning_split`); the seed
    used is in the name. Names look like ``iii-even-a0.5`` and ``ii-s203-a0.2``; every instance
    carries the label ``{"setting": "i" | "ii" | "iii"}`` (its Table 1 row).

    ``splits`` lies in [0, 1000].
    """
    seed = normalize_seed(seed)
    splits = option_int("splits", splits, 0, 1000)
    out = []
    for setting in PAPER_SETTINGS:
        labels = {"setting": setting.label}
        splits_of = {"even": even_split(setting.free_nodes, setting.minipods)}
        for k in range(1, splits + 1):
            used, split = spanning_split(setting, seed + 100 * k)
            splits_of[f"s{used}"] = split
        for split_name, free in splits_of.items():
            for alpha in PAPER_ALPHAS:
                name = f"{setting.label}-{split_name}-a{alpha}"
                job = (setting.dp, setting.tp, setting.pp)
                out.append(_instance(name, free, *job, alpha=alpha, labels=labels))
    return out


def random_small(
    seed: int = 0, count: int = 20, max_cells: int = 9, max_minipods: int = 4
) -> list[PlacementInstance]:
    """Small random instances (at most ``max_cells`` nodes) for oracle comparisons.

    Rows and columns are drawn so that ``rows * cols <= max_cells``; TP from {2, 4, 8} with 8
    GPUs per node; 2 to ``max_minipods`` minipods whose free nodes sum to at least the job;
    alpha uniform on a 0.1 grid.

    Options: ``count`` in [1, :data:`MAX_COUNT`], ``max_cells`` in [1, :data:`MAX_NODES`],
    ``max_minipods`` in [2, :data:`MAX_MINIPODS`].
    """
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    max_cells = option_int("max_cells", max_cells, 1, MAX_NODES)
    max_minipods = option_int("max_minipods", max_minipods, 2, MAX_MINIPODS)
    rng = make_rng(seed)
    out = []
    for i in range(count):
        rows = int(rng.integers(1, max_cells + 1))
        cols = int(rng.integers(1, max_cells // rows + 1))
        tp = int(rng.choice([2, 4, 8]))
        n_pods = int(rng.integers(2, max_minipods + 1))
        free = [int(f) for f in rng.integers(0, rows * cols + 1, size=n_pods)]
        free[int(rng.integers(n_pods))] += max(0, rows * cols - sum(free))
        alpha = round(float(rng.integers(0, 11)) / 10, 1)
        out.append(_instance(f"small-{seed}-{i}", free, rows * (8 // tp), tp, cols, alpha))
    return out


def random_large(
    seed: int = 0,
    count: int = 10,
    max_nodes: int = 512,
    cluster_nodes: int = 1024,
    max_minipods: int = 16,
) -> list[PlacementInstance]:
    """Large random instances: jobs of up to ``max_nodes`` nodes in ``cluster_nodes`` free
    nodes spread over 4 to ``max_minipods`` minipods (seeded uneven splits).

    Options: ``count`` in [1, :data:`MAX_COUNT`], ``max_nodes`` in [16, :data:`MAX_NODES`]
    (a job has at least 16 nodes), ``cluster_nodes`` in [``max_nodes``, :data:`MAX_NODES`]
    (every job fits), ``max_minipods`` in [4, :data:`MAX_MINIPODS`].
    """
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    max_nodes = option_int("max_nodes", max_nodes, 16, MAX_NODES)
    cluster_nodes = option_int("cluster_nodes", cluster_nodes, max_nodes, MAX_NODES)
    max_minipods = option_int("max_minipods", max_minipods, 4, MAX_MINIPODS)
    rng = make_rng(seed)
    out = []
    for i in range(count):
        cols = int(rng.choice([1, 2, 4, 8, 16]))
        rows = int(rng.integers(max(1, 16 // cols), max_nodes // cols + 1))
        n_pods = int(rng.integers(4, max_minipods + 1))
        free = seeded_split(cluster_nodes, n_pods, seed=int(rng.integers(2**31)))
        alpha = round(float(rng.integers(0, 11)) / 10, 1)
        out.append(_instance(f"large-{seed}-{i}", free, rows, 8, cols, alpha))
    return out


def uneven(
    seed: int = 0,
    count: int = 1,
    minipods: int = 32,
    min_minipods: int = 0,
    max_free: int = 128,
    small_share: float = 0.0,
    rows: int = 128,
    cols: int = 8,
    max_rows: int = 0,
    max_cols: int = 0,
    alpha: float = 0.37,
) -> list[PlacementInstance]:
    """Uneven clusters at production scale (issue #14), ``tp = 8`` (one DP rank per node).

    Each instance has ``minipods`` minipods, or with ``min_minipods`` > 0 a number drawn
    uniform on ``min_minipods..minipods``. Each minipod's free nodes are uniform on
    ``0..max_free``, except that with probability ``small_share`` a minipod gets a small
    count, uniform on ``0..max(1, max_free // 8)``; if
    the cluster cannot hold the job, the shortfall goes to random minipods (at most
    ``max_free`` each) and then to the first ones. The job is ``rows x cols`` nodes, or with
    ``max_rows`` / ``max_cols`` > 0 each instance draws ``rows`` uniform on
    ``2..max_rows`` and ``cols`` on ``2..max_cols``. ``alpha`` < 0 draws an "odd" alpha per
    instance, uniform on ``(0.01, 0.99)`` rounded to two decimals. Names look like
    ``uneven-32x128-r128c8-s0-0``.

    Options: ``count`` in [1, :data:`MAX_COUNT`], ``minipods`` in [1, :data:`MAX_MINIPODS`],
    ``min_minipods`` in [0, ``minipods``],
    ``max_free`` in [1, :data:`MAX_NODES`], ``small_share`` in [0, 1], ``rows`` and
    ``cols`` in [1, :data:`MAX_NODES`], ``max_rows`` / ``max_cols`` in [0, :data:`MAX_NODES`],
    ``alpha`` in [-1, 1].

    Examples
    --------
    >>> inst = uneven(seed=3, minipods=32, rows=128, cols=8)[0]
    >>> inst.n_minipods, inst.rows, inst.cols, inst.alpha, inst.n_nodes <= sum(inst.capacities)
    (32, 128, 8, 0.37, True)
    """
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    minipods = option_int("minipods", minipods, 1, MAX_MINIPODS)
    min_minipods = option_int("min_minipods", min_minipods, 0, minipods)
    max_free = option_int("max_free", max_free, 1, MAX_NODES)
    rows = option_int("rows", rows, 1, MAX_NODES)
    cols = option_int("cols", cols, 1, MAX_NODES)
    max_rows = option_int("max_rows", max_rows, 0, MAX_NODES)
    max_cols = option_int("max_cols", max_cols, 0, MAX_NODES)
    if not 0.0 <= float(small_share) <= 1.0:
        raise InvalidOptionError(f"small_share: must lie in [0, 1], got {small_share!r}")
    if not -1.0 <= float(alpha) <= 1.0:
        raise InvalidOptionError(f"alpha: must lie in [-1, 1], got {alpha!r}")
    rng = make_rng(seed)
    out = []
    for i in range(count):
        n_pods = int(rng.integers(min_minipods, minipods + 1)) if min_minipods else minipods
        r = int(rng.integers(2, max_rows + 1)) if max_rows >= 2 else rows
        c = int(rng.integers(2, max_cols + 1)) if max_cols >= 2 else cols
        small = rng.random(n_pods) < small_share
        free = np.where(
            small,
            rng.integers(0, max(1, max_free // 8) + 1, size=n_pods),
            rng.integers(0, max_free + 1, size=n_pods),
        ).tolist()
        short = r * c - sum(free)
        for j in rng.permutation(n_pods).tolist():
            if short <= 0:
                break
            add = min(short, max_free - free[j])
            free[j] += add
            short -= add
        free[0] += max(0, short)
        a = round(float(rng.uniform(0.01, 0.99)), 2) if alpha < 0 else float(alpha)
        name = f"uneven-{n_pods}x{max_free}-r{r}c{c}-s{seed}-{i}"
        out.append(_instance(name, [int(f) for f in free], r, 8, c, a))
    return out


def tree_instance(
    name: str,
    free: Sequence[Sequence[Sequence[int]]] | np.ndarray,
    *,
    rows: int,
    cols: int,
    alpha: float,
    objective: str | dict[str, object] | LevelObjective = "lex",
    level_names: Sequence[str] = ("pod", "group", "rack"),
    labels: dict[str, str] | None = None,
    constraints: Constraints | dict[str, object] | None = None,
) -> PlacementInstance:
    """A three-level instance from ``free[p][g][k]``, the free nodes of rack ``k`` of group
    ``g`` of pod ``p`` (nodes named ``n<p>-<g>-<k>-<i>``), ``tp = 8``.

    Examples
    --------
    >>> inst = tree_instance("t", [[[2, 1], [3]], [[2]]], rows=2, cols=2, alpha=0.5)
    >>> inst.levels, inst.capacities, inst.minipods[0].leaves[2].path
    (('pod', 'group', 'rack'), (6, 2), ('g1',))
    """
    pods = []
    for p, groups in enumerate(free):
        leaves = [
            Leaf(f"r{g}-{k}", tuple(f"n{p}-{g}-{k}-{i}" for i in range(int(f))), (f"g{g}",))
            for g, racks in enumerate(groups)
            for k, f in enumerate(racks)
        ]
        pods.append(Minipod.from_leaves(f"p{p}", leaves))
    return PlacementInstance(
        name,
        tuple(pods),
        rows,
        8,
        cols,
        alpha,
        labels=labels or {},
        level_names=tuple(level_names),
        objective=as_objective(objective),
        constraints=as_constraints(constraints),
    )


def levels_tree(
    seed: int = 0,
    count: int = 1,
    pods: int = 4,
    groups: int = 16,
    racks: int = 16,
    nodes: int = 16,
    min_free: float = 0.2,
    max_free: float = 0.8,
    rows: int = 64,
    cols: int = 8,
    alpha: float = 0.5,
    objective: str = "lex",
) -> list[PlacementInstance]:
    """Fragmented multi-level clusters (issue #30): ``pods`` x ``groups`` x ``racks`` x
    ``nodes`` nodes (4 x 16 x 16 x 16 = 16,384 by default), levels ``pod``, ``group``,
    ``rack``.

    Each rack draws a probability uniform on ``[min_free, max_free]`` and each of its nodes
    is free with that probability (racks differ, as in a busy cluster); if the cluster
    cannot hold the ``rows x cols`` job (``tp = 8``), more racks are freed in order.
    ``objective`` is ``lex``, ``top`` or ``weighted`` (weights ``4^(L-1-l)``: 16, 4, 1).
    Names look like ``tree-4x16x16x16-r64c8-s0-0``.

    Examples
    --------
    >>> inst = levels_tree(seed=1, pods=2, groups=2, racks=2, nodes=4, rows=4, cols=2)[0]
    >>> inst.levels, inst.n_minipods, len(inst.minipods[0].leaves), inst.n_nodes
    (('pod', 'group', 'rack'), 2, 4, 8)
    """
    seed = normalize_seed(seed)
    count = option_int("count", count, 1, MAX_COUNT)
    pods, groups, racks, nodes = (
        option_int(k, v, 1, MAX_NODES)
        for k, v in (("pods", pods), ("groups", groups), ("racks", racks), ("nodes", nodes))
    )
    if pods * groups * racks * nodes > MAX_NODES:
        raise InvalidOptionError(f"pods x groups x racks x nodes: at most {MAX_NODES:,} nodes")
    rows = option_int("rows", rows, 1, MAX_NODES)
    cols = option_int("cols", cols, 1, MAX_NODES)
    if not 0.0 <= float(min_free) <= float(max_free) <= 1.0:
        raise InvalidOptionError(
            f"min_free, max_free: must satisfy 0 <= min_free <= max_free <= 1, got "
            f"{min_free!r}, {max_free!r}"
        )
    if not 0.0 <= float(alpha) <= 1.0:
        raise InvalidOptionError(f"alpha: must lie in [0, 1], got {alpha!r}")
    if objective not in ("top", "lex", "weighted"):
        raise InvalidOptionError(f"objective: must be top, lex or weighted, got {objective!r}")
    if rows * cols > pods * groups * racks * nodes:
        raise InvalidOptionError("rows x cols: the job has more nodes than the cluster")
    rng = make_rng(seed)
    out = []
    for i in range(count):
        share = rng.uniform(min_free, max_free, size=(pods, groups, racks))
        free = (rng.random((pods, groups, racks, nodes)) < share[..., None]).sum(axis=3)
        short = rows * cols - int(free.sum())
        flat = free.reshape(-1)
        for k in range(flat.size):
            if short <= 0:
                break
            add = min(short, nodes - int(flat[k]))
            flat[k] += add
            short -= add
        spec: str | dict[str, object] = objective
        if objective == "weighted":
            spec = {"levels": "weighted", "weights": [16.0, 4.0, 1.0]}
        name = f"tree-{pods}x{groups}x{racks}x{nodes}-r{rows}c{cols}-s{seed}-{i}"
        out.append(tree_instance(name, free, rows=rows, cols=cols, alpha=float(alpha),
                                 objective=spec))  # fmt: skip
    return out


def _blocks() -> PlacementInstance:
    """A Slurm topology/block cluster: two aggregated blocks of two base blocks of 4 nodes
    (``BlockSizes=4,8``), some nodes busy."""
    base = tree_instance("blocks", [[[3, 3]], [[4, 1]]], rows=3, cols=2, alpha=0.5,
                         level_names=("block8", "block4", "block"))  # fmt: skip
    pods = tuple(
        Minipod.from_leaves(pod.name, [Leaf(leaf.name, leaf.nodes) for leaf in pod.leaves])
        for pod in base.minipods
    )
    return PlacementInstance(
        "slurm-blocks",
        pods,
        3,
        8,
        2,
        0.5,
        level_names=("block8", "block"),
        block_sizes=(4, 8),
        objective=LevelObjective("lex"),
    )


def examples() -> list[PlacementInstance]:
    """Small fixed instances for the conformance suite (each solved by the oracle quickly)."""
    return [
        _instance("fig12-two-pods", [6, 6], dp=6, tp=8, pp=2, alpha=0.5),
        _instance("three-by-three", [4, 3, 2], dp=3, tp=8, pp=3, alpha=0.3),
        _instance("wide-row", [3, 3, 3], dp=2, tp=8, pp=4, alpha=0.7),
        _instance("paper-i-even", [6, 6, 6], dp=12, tp=4, pp=2, alpha=0.2, labels={"setting": "i"}),
        tree_instance("tree-lex", [[[2, 1], [2]], [[3], [1, 1]]], rows=3, cols=2, alpha=0.4),
        tree_instance(
            "tree-weighted",
            [[[2, 2], [1]], [[2], [2]]],
            rows=2,
            cols=3,
            alpha=0.6,
            objective={"levels": "weighted", "weights": [4, 2, 1]},
        ),
        _blocks(),
        tree_instance(
            "tree-slices",
            [[[4, 2], [3]], [[4], [2, 2]]],
            rows=4,
            cols=2,
            alpha=0.5,
            constraints=Constraints(slice_size=2, slice_level="rack", required_level="pod"),
        ),
    ]


def slow_examples() -> list[PlacementInstance]:
    """The instances on which the solvers need the longest (the time-limit check of the
    conformance suite): issue #14's 32-minipod class, uneven free counts up to 128, a 128 x 8
    job; and issue #30's 16,384-node tree (4 x 16 x 16 x 16, lex objective, Slurm block
    sizes 16, 256, 4096), a 512 x 8 job, and a 32 x 8 job on another draw of it (its rack
    level below the split level has the conditional bound's constructions)."""
    tree = levels_tree(seed=0, rows=512, cols=8)[0]
    blocks = dataclasses.replace(tree, block_sizes=(16, 256, 4096))
    spanning = levels_tree(seed=1, rows=32, cols=8)[0]
    return [*uneven(seed=0, count=1, minipods=32, rows=128, cols=8), blocks, spanning]


GENERATORS: dict[str, Callable[..., Sequence[PlacementInstance]]] = {
    "arnold-paper": arnold_paper,
    "random-small": random_small,
    "random-large": random_large,
    "uneven": uneven,
    "levels-tree": levels_tree,
}
