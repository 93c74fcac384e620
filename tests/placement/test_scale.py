"""Placement solvers on the largest valid instances: time limit, memory and clean outcomes.

Slow (``python -m pytest -m slow tests/placement/test_scale.py``, about 70 s): every
placement solver under a 5 s limit on instances at the family's size limits (100,000
minipods, 1,000,000 free nodes, a job of 1,000,000 nodes) returns a checked placement within
the limit plus :data:`SLACK` and raises nothing.

Fast (default run): a mid-size instance on which the recursive oracle raised
``RecursionError`` and topo-aware ran for minutes, and the scalable rewrites (baselines,
random-fit, topo-aware, target pairs, block designs, coarse start) checked against the
straightforward implementations they replaced, on random small instances: same placements,
so results on small instances are unchanged.
"""

from __future__ import annotations

import functools
import itertools
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.core.registry import solver_names
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.placement import Minipod, PlacementInstance, check, spread
from topoopt.placement.exact_mip.targets import Constructions, TargetPair, iter_target_pairs
from topoopt.placement.solvers import baselines, mip, topo_aware

from .strategies import small_instances

SLACK = 2.5
"""Seconds a solve may run past its time limit (packaging a 1M-node answer, a shared CPU)."""

SOLVERS = solver_names("placement")
LIMIT_TERMINATIONS = {
    TerminationReason.OPTIMAL,
    TerminationReason.COMPLETED,
    TerminationReason.TIME_LIMIT,
    TerminationReason.ITERATION_LIMIT,
}


def _solve_timed(instance: PlacementInstance, solver: str, limit: float, **options):
    started = time.perf_counter()
    result = topoopt.solve(instance, solver, time_limit=limit, **options)
    return result, time.perf_counter() - started


def _assert_clean(instance: PlacementInstance, result, elapsed: float, limit: float) -> None:
    assert elapsed <= limit + SLACK, f"{result.solver}: {elapsed:.1f} s ({result.message})"
    assert result.termination in LIMIT_TERMINATIONS, result.message
    if result.status is not SolutionStatus.NO_SOLUTION:
        assert result.status >= SolutionStatus.FEASIBLE, result.message
        assert check(instance, result.solution) == []


# --- the old failure classes, on a mid-size instance (default run) ----------------------------


def _mid_size() -> PlacementInstance:
    """4,000 cells (55 s for the old topo-aware, whose FM passes were quadratic; a
    search deeper than the recursion limit for the old oracle)."""
    pods = [Minipod(f"mp{i}", 450 if i % 2 else 13) for i in range(40)]
    return PlacementInstance("mid", pods, dp=1000, tp=8, pp=4, alpha=0.37)


@pytest.mark.parametrize("solver", ["placement/enumerate", "placement/topo-aware"])
def test_no_recursion_error_and_time_limit_on_a_mid_size_instance(solver: str) -> None:
    instance = _mid_size()
    result, elapsed = _solve_timed(instance, solver, 0.5)
    _assert_clean(instance, result, elapsed, 0.5)
    assert result.status >= SolutionStatus.FEASIBLE
    assert elapsed <= 2.0


# --- reference implementations: the rewrites give the same placements ------------------------


def _best_fit_reference(instance: PlacementInstance) -> list[int]:
    free = list(instance.capacities)
    pods = []
    for _ in range(instance.n_nodes):
        pod = min((j for j in range(len(free)) if free[j] > 0), key=lambda j: (free[j], j))
        free[pod] -= 1
        pods.append(pod)
    return pods


def _tree_reference(instance: PlacementInstance) -> list[int]:
    free = list(instance.capacities)
    takes, left = [], instance.n_nodes
    while left:
        fitting = [j for j in range(len(free)) if free[j] >= left]
        if fitting:
            j, take = min(fitting, key=lambda j: (free[j], j)), left
        else:
            j = max(range(len(free)), key=lambda j: (free[j], -j))
            take = free[j]
        takes.append((j, take))
        free[j] -= take
        left -= take
    return [pod for pod, count in takes for _ in range(count)]


def _groups_reference(capacities, size: int, count: int) -> list[int] | None:
    free = list(capacities)
    owners = []
    for _ in range(count):
        fitting = [j for j in range(len(free)) if free[j] >= size]
        if not fitting:
            return None
        j = min(fitting, key=lambda j: (free[j], j))
        free[j] -= size
        owners.append(j)
    return owners


def _random_fit_reference(instance: PlacementInstance, seed: int) -> tuple[tuple[int, ...], ...]:
    rng = np.random.default_rng(seed)
    free = list(instance.capacities)
    load = [0] * instance.n_minipods
    matrix = [[-1] * instance.cols for _ in range(instance.rows)]
    cells = baselines.rank_order_cells(instance)
    for k in rng.permutation(len(cells)):
        r, c = cells[k]
        open_pods = [j for j in range(len(free)) if free[j] > 0]
        least = min(load[j] for j in open_pods)
        candidates = [j for j in open_pods if load[j] == least]
        pod = candidates[int(rng.integers(len(candidates)))]
        matrix[r][c] = pod
        free[pod] -= 1
        load[pod] += 1
    return tuple(map(tuple, matrix))


@st.composite
def _many_pods(draw: st.DrawFn) -> PlacementInstance:
    """Up to 64 cells over up to 40 small minipods (long candidate lists for random-fit)."""
    rows = draw(st.integers(1, 16))
    cols = draw(st.integers(1, 64 // rows))
    free = draw(st.lists(st.integers(0, 4), min_size=1, max_size=40))
    while sum(free) < rows * cols:
        free.append(4)
    alpha = draw(st.integers(0, 10)) / 10
    return PlacementInstance("many", free, dp=rows, tp=8, pp=cols, alpha=alpha)


@given(st.one_of(small_instances(max_cells=24, max_pods=6), _many_pods()))
def test_baselines_equal_their_reference(instance: PlacementInstance) -> None:
    assert baselines.best_fit_pods(instance) == _best_fit_reference(instance)
    assert baselines.tree_pods(instance) == _tree_reference(instance)
    caps = instance.capacities
    for size, count in ((instance.n_nodes, 1), (instance.cols, instance.rows)):
        assert baselines._groups_best_fit(caps, size, count) == _groups_reference(caps, size, count)


@pytest.mark.parametrize("pop_limit", [baselines._POP_LIMIT, 0])  # 0: Fenwick tree throughout
@given(instance=st.one_of(small_instances(max_cells=24, max_pods=6), _many_pods()))
def test_random_fit_equals_step_by_step_reference(
    pop_limit: int, instance: PlacementInstance
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(baselines, "_POP_LIMIT", pop_limit)
        for seed in (0, 7):
            result = topoopt.solve(instance, "placement/random-fit", seed=seed)
            assert result.solution.matrix == _random_fit_reference(instance, seed)


def _fm_reference(graph, side, size_bounds) -> None:
    lo, hi = size_bounds
    order = {v: i for i, v in enumerate(graph.nodes)}

    def gain_of(v):
        return sum(d["weight"] * (1 if side[u] != side[v] else -1) for u, d in graph[v].items())

    for _ in range(topo_aware.MAX_PASSES):
        gain = {v: gain_of(v) for v in graph.nodes}
        size0 = sum(1 for v in graph.nodes if side[v] == 0)
        locked, moves = set(), []
        total, best_total, best_len = 0.0, 0.0, 0
        while len(locked) < len(side):
            allowed = [
                v
                for v in graph.nodes
                if v not in locked and lo <= size0 + (1 if side[v] == 1 else -1) <= hi
            ]
            if not allowed:
                break
            v = max(allowed, key=lambda u: (gain[u], -order[u]))
            total += gain[v]
            size0 += 1 if side[v] == 1 else -1
            side[v] ^= 1
            locked.add(v)
            moves.append(v)
            for u in graph.neighbors(v):
                if u not in locked:
                    gain[u] = gain_of(u)
            if total > best_total + 1e-12:
                best_total, best_len = total, len(moves)
        for v in moves[best_len:]:
            side[v] ^= 1
        if best_len == 0:
            return


def _topo_aware_reference(instance: PlacementInstance, dp: float, pp: float):
    """The networkx implementation topo-aware had before its rewrite."""
    graph = topo_aware.job_graph(instance, dp, pp)
    free = instance.capacities
    chosen: list[int] = []
    for j in sorted(range(instance.n_minipods), key=lambda j: (-free[j], j)):
        if sum(free[i] for i in chosen) >= instance.n_nodes:
            break
        chosen.append(j)
    owner: dict = {}

    def bipartition(cells, pods):
        if len(pods) == 1:
            owner.update(dict.fromkeys(cells, pods[0]))
            return
        first, second = [], []
        for j in sorted(pods, key=lambda j: (-free[j], j)):
            half = first if sum(free[i] for i in first) <= sum(free[i] for i in second) else second
            half.append(j)
        cap0, cap1 = sum(free[j] for j in first), sum(free[j] for j in second)
        lo, hi = max(0, len(cells) - cap1), min(len(cells), cap0)
        target = min(max(round(len(cells) * cap0 / (cap0 + cap1)), lo), hi)
        side = {cell: (0 if k < target else 1) for k, cell in enumerate(cells)}
        _fm_reference(graph.subgraph(cells), side, (lo, hi))
        for part, pods_of_part in ((0, first), (1, second)):
            cells_of_part = [c for c in cells if side[c] == part]
            if cells_of_part:
                bipartition(cells_of_part, pods_of_part)

    bipartition(baselines.rank_order_cells(instance), chosen)
    return tuple(tuple(owner[r, c] for c in range(instance.cols)) for r in range(instance.rows))


@st.composite
def _wide_instances(draw: st.DrawFn) -> PlacementInstance:
    """Up to 160 cells over up to 8 minipods, so that parts fall below half the graph (where
    networkx lists a subgraph's vertices in set order)."""
    rows = draw(st.integers(1, 40))
    cols = draw(st.integers(1, 160 // rows))
    free = draw(st.lists(st.integers(0, rows * cols), min_size=2, max_size=8))
    free[0] += max(0, rows * cols - sum(free))
    alpha = draw(st.integers(0, 10)) / 10
    return PlacementInstance("wide", free, dp=rows, tp=8, pp=cols, alpha=alpha)


@settings(max_examples=40)
@given(
    instance=st.one_of(small_instances(max_cells=24, max_pods=6), _wide_instances()),
    weights=st.sampled_from([None, (0.5, 0.25), (1.0, 1.0)]),
)
def test_topo_aware_equals_networkx_reference(instance: PlacementInstance, weights) -> None:
    """With ``moves=0`` (every FM pass moves every vertex) the placement is the reference's."""
    dp, pp = (instance.alpha, instance.beta) if weights is None else weights
    options = {} if weights is None else {"dp_weight": dp, "pp_weight": pp}
    result = topoopt.solve(instance, "placement/topo-aware", moves=0, **options)
    assert result.solution.matrix == _topo_aware_reference(instance, dp, pp)


def test_job_graph_neighbours_follow_networkx_insertion_order() -> None:
    for rows, cols in itertools.product(range(1, 6), range(1, 4)):
        instance = PlacementInstance("g", [rows * cols], dp=rows, tp=8, pp=cols, alpha=0.5)
        graph = topo_aware.job_graph(instance, 0.5, 0.25)
        implicit = topo_aware.JobGraph(rows, cols, 0.5, 0.25)
        for k in range(rows * cols):
            expected = [
                (c * rows + r, d["weight"]) for (r, c), d in graph[k % rows, k // rows].items()
            ]
            assert implicit.neighbours(k) == expected


@given(small_instances(max_cells=24, max_pods=8))
def test_target_pairs_in_the_order_of_a_full_sort(instance: PlacementInstance) -> None:
    pairs = [
        TargetPair(instance.alpha * spread(range(a)) + instance.beta * spread(range(b)), a, b)
        for a in range(1, min(instance.rows, instance.n_minipods) + 1)
        for b in range(1, min(instance.cols, instance.n_minipods) + 1)
    ]
    expected = sorted(pairs, key=lambda p: (round(p.score, 12), p.max_dp_use + p.max_pp_use))
    assert list(iter_target_pairs(instance)) == expected


def _block_design_reference(instance: PlacementInstance, max_dp_use: int, max_pp_use: int):
    rows, cols = instance.rows, instance.cols
    for p in range(1, min(max_dp_use, rows) + 1):
        for q in range(1, min(max_pp_use, cols) + 1):
            row_sizes = [rows // p + 1] * (rows % p) + [rows // p] * (p - rows % p)
            col_sizes = [cols // q + 1] * (cols % q) + [cols // q] * (q - cols % q)
            blocks = sorted(
                (
                    (rs * cs, i, k)
                    for i, rs in enumerate(row_sizes)
                    for k, cs in enumerate(col_sizes)
                ),
                reverse=True,
            )
            free = list(instance.capacities)
            owner = {}
            for size, i, k in blocks:
                fitting = [j for j in range(len(free)) if free[j] >= size]
                if not fitting:
                    break
                j = min(fitting, key=lambda j: (free[j], j))
                free[j] -= size
                owner[i, k] = j
            else:
                row_group = np.repeat(np.arange(p), row_sizes)
                col_group = np.repeat(np.arange(q), col_sizes)
                return tuple(
                    tuple(owner[row_group[r], col_group[c]] for c in range(cols))
                    for r in range(rows)
                )
    return None


@given(small_instances(max_cells=24, max_pods=6))
def test_block_designs_equal_their_reference_with_the_memo(instance: PlacementInstance) -> None:
    build = Constructions(instance)  # one object over every pair, as in the decomposition
    for pair in iter_target_pairs(instance):
        a, b = pair.max_dp_use, pair.max_pp_use
        found = build.block_design(a, b)
        expected = _block_design_reference(instance, a, b)
        assert (found.matrix if found is not None else None) == expected


def _start_counts_reference(instance: PlacementInstance, unit: str) -> list[list[int]]:
    from topoopt.placement.formulations import coarse

    n_units, size, w_y, w_t = coarse._shape(instance, unit)
    caps = instance.capacities
    order = sorted(range(instance.n_minipods), key=lambda j: (-caps[j], j))
    slots = [j for j in order for _ in range(caps[j])]
    end_to_end = [[0] * instance.n_minipods for _ in range(n_units)]
    for i in range(n_units):
        for j in slots[i * size : (i + 1) * size]:
            end_to_end[i][j] += 1
    candidates = [end_to_end]
    homes = [j for j in order for _ in range(caps[j] // size)]
    if len(homes) >= n_units:
        whole = [[0] * instance.n_minipods for _ in range(n_units)]
        for i, j in enumerate(homes[:n_units]):
            whole[i][j] = size
        candidates.append(whole)
    return min(candidates, key=lambda counts: coarse._coarse_objective(counts, w_y, w_t))


@given(small_instances(max_cells=24, max_pods=6))
def test_coarse_start_equals_its_dense_reference(instance: PlacementInstance) -> None:
    from topoopt.placement.formulations import coarse

    for unit in coarse.UNITS:
        assert coarse.start_counts(instance, unit) == _start_counts_reference(instance, unit)


def test_coarse_mip_returns_its_start_when_the_time_is_used_up_before_solving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Out of time before the backend runs (in the start, or in a build the estimate let
    through): the closed-form start, with termination ``time_limit``."""
    # alpha 0: every minipod is a candidate, 149 x 150 unit-minipod pairs (seconds to build)
    instance = PlacementInstance("build", [40] * 150, dp=750, tp=8, pp=8, alpha=0.0)
    monkeypatch.setattr(mip, "COARSE_S_PER_PAIR", 0.0)  # the estimate lets it build
    result, elapsed = _solve_timed(instance, "placement/coarse-mip", 0.2)
    _assert_clean(instance, result, elapsed, 0.2)
    assert result.termination is TerminationReason.TIME_LIMIT
    assert "closed-form start" in result.message


# --- the largest valid instances (slow) --------------------------------------------------------


@functools.cache
def _large(key: str) -> PlacementInstance:
    if key == "200-pods":  # the example: 903,700 free nodes, a job of 32,000
        pods = [Minipod(f"mp{i}", 9_000 if i % 2 else 37) for i in range(200)]
        return PlacementInstance("big", pods, dp=4000, tp=8, pp=8, alpha=0.37)
    if key == "100k-pods":  # the most minipods; a job of 8,000 nodes
        return PlacementInstance("pods", [10] * 100_000, dp=1000, tp=8, pp=8, alpha=0.37)
    if key == "1M-free":  # the most free nodes in 100 minipods; a job of 32,000
        return PlacementInstance("free", [10_000] * 100, dp=4000, tp=8, pp=8, alpha=0.37)
    if key == "1M-job":  # a job of 1,000,000 nodes filling 1,000 minipods
        return PlacementInstance("job", [1000] * 1000, dp=125_000, tp=8, pp=8, alpha=0.37)
    if key == "both-limits":  # 100,000 minipods, a job filling all 1,000,000 free nodes
        return PlacementInstance("max", [10] * 100_000, dp=125_000, tp=8, pp=8, alpha=0.37)
    raise KeyError(key)


@pytest.mark.slow
@pytest.mark.parametrize("key", ["200-pods", "100k-pods", "1M-free", "1M-job", "both-limits"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_within_the_time_limit_on_the_largest_instances(solver: str, key: str) -> None:
    instance = _large(key)
    result, elapsed = _solve_timed(instance, solver, 5.0)
    _assert_clean(instance, result, elapsed, 5.0)
    assert result.status >= SolutionStatus.FEASIBLE


@pytest.mark.slow
@pytest.mark.parametrize("options", [{"unit": "dp"}, {"unit": "auto"}])
def test_coarse_mip_units_on_one_million_free_nodes(options: dict) -> None:
    instance = _large("1M-free")
    result, elapsed = _solve_timed(instance, "placement/coarse-mip", 5.0, **options)
    _assert_clean(instance, result, elapsed, 5.0)
    assert result.status >= SolutionStatus.FEASIBLE


@pytest.mark.slow
def test_exact_mip_monolithic_beyond_its_size_limit_returns_a_placement() -> None:
    instance = _large("200-pods")
    for limit in (5.0, None):  # over MAX_ASSIGNMENTS: never built, whatever the time left
        started = time.perf_counter()
        result = topoopt.solve(
            instance, "placement/exact-mip", time_limit=limit, method="monolithic"
        )
        assert time.perf_counter() - started <= 5.0 + SLACK
        assert result.status is SolutionStatus.FEASIBLE
        assert result.termination is TerminationReason.ITERATION_LIMIT
        assert "model not built" in result.message and "MAX_ASSIGNMENTS" in result.message
