"""The lower bounds of issue #29 (:mod:`topoopt.partition.bounds`, :mod:`topoopt.partition.colgen`):
never above the oracle's optimum, on the generator's small instances and on mixed-size, tight
ones; ``partition/bound`` certifies greedy-lowcut's cut; the MIP with its bounds (and with the
column generation) still equals the oracle on HiGHS and SCIP."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from tests.partition.strategies import packing_instances, seeded_small
from tests.partition.test_core import BACKENDS, assert_mip_equals_oracle
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.partition import bounds, colgen
from topoopt.partition.cut_pricing import CutNetwork
from topoopt.partition.generate import small, table2
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment, check, evaluate

TOL = 1e-7


def _optimum(inst: PartitionInstance) -> float | None:
    result = topoopt.solve(inst, "partition/enumerate")
    return result.objective


def _sub(sub: PartitionInstance, limit: float) -> float:
    result = topoopt.solve(sub, "partition/mip", time_limit=min(limit, 30.0), bounds=False)
    return max(0.0, result.bound) if math.isfinite(result.bound) else 0.0


def _all_bounds(inst: PartitionInstance, where: list[int] | None) -> list[bounds.Bound]:
    return list(bounds.lower_bounds(inst, where, _sub, time.perf_counter() + 60.0))


@settings(max_examples=30, deadline=None)
@given(inst=st.one_of(seeded_small(), packing_instances()))
def test_every_bound_is_at_most_the_optimum(inst: PartitionInstance) -> None:
    optimum = _optimum(inst)
    if optimum is None:
        return
    greedy = topoopt.solve(inst, "partition/greedy-lowcut")
    where = None if greedy.solution is None else greedy.solution.indices(inst)
    for found in _all_bounds(inst, where):
        assert found.value <= optimum + TOL * max(1.0, optimum), (found, optimum)
    assert bounds.spreading_bound(inst) <= optimum + 1e-6 * max(1.0, optimum)


@settings(max_examples=30, deadline=None)
@given(inst=st.one_of(seeded_small(), packing_instances()), data=st.data())
def test_coarsenings_and_the_exact_profile_bound_the_optimum(
    inst: PartitionInstance, data: st.DataObject
) -> None:
    """Any merge of clusters (not only the levels') and the profile from the exact ``φ``."""
    optimum = _optimum(inst)
    if optimum is None:
        return
    labels = data.draw(
        st.lists(st.integers(0, 2), min_size=inst.n_clusters, max_size=inst.n_clusters)
    )
    groups = [[c for c in range(inst.n_clusters) if labels[c] == k] for k in range(3)]
    merged = bounds.merged(inst, [g for g in groups if g])
    coarse = _optimum(merged)
    assert coarse is not None and coarse <= optimum + TOL * max(1.0, optimum)
    phi = {}
    for k in range(1, inst.total_gpus // 2 + 1):
        sub = bounds.carve(inst, k)
        if sub is not None:
            value = _optimum(sub)
            phi[k] = math.inf if value is None else value
    finite = {k: v for k, v in phi.items() if math.isfinite(v)}
    assert bounds.profile_bound(inst, finite) <= optimum + TOL * max(1.0, optimum)


def test_carve_is_the_isoperimetric_profile() -> None:
    """``carve(k)``'s optimum is the least cut of a set with k <= g(S) <= n - k."""
    inst = small(seed=4, count=1)[0]
    n = inst.total_gpus
    u, w, t = inst.edge_arrays
    g = np.array([v.gpus for v in inst.vertices])
    for k in range(1, n // 2 + 1):
        sub = bounds.carve(inst, k)
        if sub is None:
            continue
        best = math.inf
        for mask in range(2**inst.n_vertices):
            side = (mask >> np.arange(inst.n_vertices)) & 1
            if k <= g[side == 1].sum() <= n - k:
                best = min(best, float(t[side[u] != side[w]].sum()))
        assert _optimum(sub) == pytest.approx(best)


def test_level_coarsening_keeps_costs_between_groups() -> None:
    inst = table2(0, 1)[0]
    for part in inst.graph.hierarchy[1:-1]:
        groups = [sorted(g) for g in part]
        m = bounds.merged(inst, groups)
        for a, ga in enumerate(groups):
            for b, gb in enumerate(groups):
                if a != b:
                    assert m.weights[a, b] == pytest.approx(inst.weights[ga[0], gb[0]])


@settings(max_examples=15, deadline=None)
@given(inst=seeded_small())
def test_bound_solver_certifies_greedy(inst: PartitionInstance) -> None:
    optimum = _optimum(inst)
    result = topoopt.solve(inst, "partition/bound")
    greedy = topoopt.solve(inst, "partition/greedy-lowcut")
    assert result.objective == greedy.objective
    if optimum is not None:
        assert result.bound <= optimum + TOL * max(1.0, optimum)
        if result.status is SolutionStatus.OPTIMAL:
            assert result.objective == pytest.approx(optimum)


def test_mip_honours_its_time_limit_at_table2_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 128 units under a time limit no MIP runs: the iterated search's default run goes
    first (within its share of the time), the bounds run in a child process killed in time
    (HiGHS overruns its own limit there) from the search's assignment, and the search goes
    on from it, with the same random stream, for the time they leave."""
    from topoopt.partition.solvers import ils, mip

    runs: list[tuple[float, dict, list[int], np.ndarray]] = []
    improve = ils.improve

    def recorded(instance, start, ctx, **options):  # type: ignore[no-untyped-def]
        left = ctx.time_left()
        best, done = improve(instance, start, ctx, **options)
        runs.append((left, options, list(start), best))
        return best, done

    bounded: list[Assignment] = []
    bounds_only = mip.PartitionMipSolver.bounds_only

    def recorded_bounds(self, instance, ctx, start, *rest):  # type: ignore[no-untyped-def]
        bounded.append(start)
        return bounds_only(self, instance, ctx, start, *rest)

    monkeypatch.setattr(ils, "improve", recorded)
    monkeypatch.setattr(mip.PartitionMipSolver, "bounds_only", recorded_bounds)
    inst = table2(0, 1)[0]
    greedy = topoopt.solve(inst, "partition/greedy-lowcut")
    t0 = time.perf_counter()
    result = topoopt.solve(inst, "partition/mip", time_limit=8.0, threads=1)
    wall = time.perf_counter() - t0
    assert wall <= 8.0 * 1.05 + 1.0, result
    assert result.solution is not None
    assert result.termination in (TerminationReason.TIME_LIMIT, TerminationReason.OPTIMAL)
    assert 0.0 < result.bound <= result.objective <= greedy.objective
    assert "iterated search" in result.message and "spreading" in result.message
    (left, before, start, searched), (_, after, restart, _) = runs
    assert start == greedy.solution.indices(inst)
    assert before["restarts"] == ils.RESTARTS and left <= 8.0 * mip.FIRST_SEARCH_SHARE
    assert bounded[0].indices(inst) == searched.tolist() == restart
    assert after["rng"] is before["rng"]
    assert result.objective <= evaluate(inst, bounded[0]) + 1e-9


def test_bound_names_its_method() -> None:
    inst = PartitionInstance(
        "ring",
        [("a", 6), ("b", 2)],
        [("a", "b", 10.0)],
        [(f"v{i}", 2) for i in range(4)],
        [(f"v{i}", f"v{(i + 1) % 4}", 3.0) for i in range(4)],
    )
    result = topoopt.solve(inst, "partition/bound")
    assert result.status is SolutionStatus.OPTIMAL
    assert result.bound == pytest.approx(0.6)
    assert "profile" in result.message or "coarsening" in result.message
    assignment = Assignment.from_indices(inst, [0, 0, 0, 1])
    assert evaluate(inst, assignment) == pytest.approx(0.6)


@settings(max_examples=5, deadline=None)
@given(
    inst=st.one_of(seeded_small(), packing_instances()),
    warm=st.booleans(),
    workers=st.sampled_from([1, 2]),
)
def test_column_generation_bound_is_at_most_the_optimum(
    inst: PartitionInstance, warm: bool, workers: int
) -> None:
    """Every bound of every round, with and without an incumbent's columns, pricing one
    group at a time or two at once."""
    optimum = _optimum(inst)
    if optimum is None:
        return
    where = None
    if warm:
        greedy = topoopt.solve(inst, "partition/greedy-lowcut")
        where = None if greedy.solution is None else greedy.solution.indices(inst)
    for found in colgen.colgen_bounds(inst, where, time.perf_counter() + 10.0, workers):
        assert found.value <= optimum + TOL * max(1.0, optimum), (found, optimum)


@settings(max_examples=12, deadline=None)
@given(
    inst=st.one_of(seeded_small(), packing_instances()),
    start=st.sampled_from(["partition/greedy-lowcut", "partition/metis"]),
)
def test_branch_and_price_proves_the_optimum_when_it_ends(
    inst: PartitionInstance, start: str
) -> None:
    """From a heuristic's assignment (greedy-lowcut's, often optimal, or metis', often not:
    then the nodes solved as assignments replace it), the column generation and then branch
    and price never bound above the optimum, and when they end before the deadline (every
    node closed) their last bound is the optimum: the fixings keep every assignment in
    some node and price it exactly there. The assignments met at integral nodes are
    feasible, each better than the one before, and their cut is at least the optimum."""
    optimum = _optimum(inst)
    if optimum is None:
        return
    heuristic = topoopt.solve(inst, start)
    if heuristic.solution is None:
        return
    where = heuristic.solution.indices(inst)
    deadline = time.perf_counter() + 10.0
    bounds = list(colgen.colgen_bounds(inst, where, deadline))
    found = [b.value for b in bounds]
    assert all(value <= optimum + TOL * max(1.0, optimum) for value in found), (found, optimum)
    best = evaluate(inst, heuristic.solution)
    for met in (b.where for b in bounds if b.where is not None):
        assignment = Assignment.from_indices(inst, met)
        assert check(inst, assignment) == []
        assert optimum - TOL <= evaluate(inst, assignment) < best
        best = evaluate(inst, assignment)
    if time.perf_counter() < deadline:  # nothing yielded: only 0 proven, cuts are never below
        last = found[-1] if found else 0.0
        assert last >= optimum - 1e-5 * max(1.0, optimum), (found, optimum)


def test_fixing_a_vertex_keeps_it_on_the_path_of_its_group() -> None:
    """Fixed in a leaf group, a vertex is fixed in its ancestors and out of every other
    group off that path; fixed out, it is out of the group and its descendants; a
    contradiction is ``None``; the prizes and columns follow the fixings."""
    inst = table2(0, 1, vertices=128)[0]
    problem = colgen.Problem.of(inst)
    leaf = next(g for g in range(len(problem.cost)) if g not in problem.internal)
    above = problem.ancestors(leaf)
    inside = problem.fix(leaf, 3, True)
    assert inside is not None and inside.inside is not None and inside.outside is not None
    assert set(np.flatnonzero(inside.inside[:, 3])) == {leaf, *above}
    assert set(np.flatnonzero(inside.outside[:, 3])) == set(range(len(problem.cost))) - {
        leaf,
        *above,
    }
    assert inside.fix(above[0], 3, False) is None
    outside = problem.fix(above[0], 3, False)
    assert outside is not None and outside.outside is not None
    assert outside.outside[leaf, 3] and outside.outside[above[0], 3]
    duals = np.zeros((len(problem.internal), inst.n_vertices))
    assert inside.prizes(duals, leaf)[3] == inside.penalty > 0
    mask = np.zeros(inst.n_vertices, bool)
    assert not inside.admits(leaf, mask) and inside.admits(above[0], mask | (np.arange(128) == 3))


@pytest.mark.parametrize("seed", [0, 4, 9])
def test_parallel_pricing_follows_the_same_rounds(seed: int) -> None:
    """Pricing two groups at once changes the time, not the rounds: without time pressure
    every pricing problem is solved to optimality and the columns are added in the same
    order, so the bounds are the same."""
    inst = small(seed, count=1)[0]
    where = topoopt.solve(inst, "partition/greedy-lowcut").solution.indices(inst)
    one, two = (
        [b.value for b in colgen.colgen_bounds(inst, where, time.perf_counter() + 60.0, w)]
        for w in (1, 2)
    )
    assert two == pytest.approx(one)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_mip_with_column_generation_equals_oracle(backend: str, seed: int) -> None:
    assert_mip_equals_oracle(small(seed=seed, count=1)[0], backend=backend, columns=True)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_safe_dual_bound_is_below_the_lp_optimum_for_any_multipliers(data: st.DataObject) -> None:
    """``safe_dual_bound`` (the spreading LP's certificate) is at most the optimum of a random
    bounded LP for any multipliers, and reaches it at the optimal duals."""
    from scipy.optimize import linprog

    rows, cols = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    number = st.floats(-3, 3, allow_nan=False).map(lambda x: round(x, 2))
    a = np.array(data.draw(st.lists(number, min_size=rows * cols, max_size=rows * cols)))
    a = a.reshape(rows, cols)
    cost = np.array(data.draw(st.lists(number, min_size=cols, max_size=cols)))
    lo = np.array(data.draw(st.lists(st.sampled_from([-np.inf, -1.0, 0.0]), min_size=rows,
                                     max_size=rows)))  # fmt: skip
    up = np.array(data.draw(st.lists(st.sampled_from([np.inf, 1.0, 2.0]), min_size=rows,
                                     max_size=rows)))  # fmt: skip
    columns = (np.zeros(cols), np.ones(cols))
    a_ub = np.vstack([a[np.isfinite(up)], -a[np.isfinite(lo)]])
    b_ub = np.concatenate([up[np.isfinite(up)], -lo[np.isfinite(lo)]])
    solved = linprog(cost, A_ub=a_ub if len(b_ub) else None, b_ub=b_ub if len(b_ub) else None,
                     bounds=[(0, 1)] * cols, method="highs")  # fmt: skip
    if solved.status != 0:
        return  # infeasible: nothing to bound
    y = np.array(data.draw(st.lists(number, min_size=rows, max_size=rows)))
    bound = bounds.safe_dual_bound(sp.csr_matrix(a), (lo, up), columns, cost, y)
    assert bound <= solved.fun + 1e-7
    duals = np.zeros(rows)  # linprog's duals of A_ub rows (<= 0) back to y on A x
    marg = solved.ineqlin.marginals
    duals[np.isfinite(up)] += marg[: int(np.isfinite(up).sum())]
    duals[np.isfinite(lo)] -= marg[int(np.isfinite(up).sum()) :]
    best = bounds.safe_dual_bound(sp.csr_matrix(a), (lo, up), columns, cost, duals)
    assert best == pytest.approx(solved.fun, abs=1e-6)


def _admissible_values(
    problem: colgen.Problem, group: int, prize: np.ndarray
) -> tuple[float, np.ndarray]:
    """The least ``c δ(S) − prize(S)`` over admissible sets (brute force) and every set's
    value without the cardinality (``inf`` where inadmissible, as a second array)."""
    nv = len(prize)
    masks = ((np.arange(2**nv)[:, None] >> np.arange(nv)) & 1).astype(bool)
    cut = (masks[:, problem.heads] != masks[:, problem.tails]) @ problem.traffic
    values = problem.cost[group] * cut - masks @ prize
    size = masks @ problem.gpus
    ok = (size >= problem.low[group]) & (size <= problem.high[group])
    return float(values[ok].min()) if ok.any() else math.inf, values


_PRIZES = st.lists(st.floats(-3.0, 3.0), min_size=8, max_size=8)


@settings(max_examples=25, deadline=None)
@given(inst=st.one_of(seeded_small(), packing_instances()), raw=_PRIZES, data=st.data())
def test_pricing_bounds_and_sets(
    inst: PartitionInstance, raw: list[float], data: st.DataObject
) -> None:
    """Each exact pricer's bound is at most the least admissible value (brute force), it
    proves these small problems and its best set attains that value; every set of every
    pricing heuristic is admissible, and the min cut minimises its objective."""
    problem = colgen.Problem.of(inst)
    if len(problem.cost) == 0 or inst.n_vertices == 0:
        return
    group = data.draw(st.integers(0, len(problem.cost) - 1))
    prize = np.array(raw[: inst.n_vertices]) * float(problem.cost[group] + 0.1)
    least, values = _admissible_values(problem, group, prize)
    found = []
    for pricer in colgen.PRICERS.values():
        bound, sets, optimal = pricer(problem, group, prize, None, 10.0)
        assert bound <= least + 1e-6 * max(1.0, abs(least))
        if math.isinf(least):  # no admissible set (sizes that miss the range)
            assert not sets and not optimal, pricer
            continue
        assert optimal and sets, pricer  # ten seconds prove these small problems
        value = problem.cost[group] * problem.boundary(sets[0]) - prize[sets[0]].sum()
        assert value == pytest.approx(least, abs=1e-6 * max(1.0, abs(least)))
        found += sets
    master = colgen.Master(problem, inst.n_vertices, 1.0)
    sets = [*found, *colgen.heuristic_columns(problem, group, prize)]
    sets += colgen.grown_columns(problem, group, prize, np.arange(inst.n_vertices))
    for mask in sets:
        master.add(group, mask)
    sets += colgen.pool_columns(problem, group, prize, master.pool(group))
    for mask in sets:
        assert problem.low[group] <= problem.gpus[mask].sum() <= problem.high[group]
    weight = float(problem.cost[group])
    network = CutNetwork(problem.heads, problem.tails, weight * problem.traffic, len(prize))
    cut = colgen.min_cut(network, prize)
    free = weight * problem.boundary(cut) - prize[cut].sum()
    assert free <= values.min() + 1e-6 * max(1.0, float(np.abs(values).max()))


@contextlib.contextmanager
def _scheduler_of_two_threads() -> Iterator[None]:
    """HiGHS' thread scheduler restarted by a solve with ``threads = 2`` (a later model with
    another ``threads`` option is then refused), and reset afterwards."""
    import highspy

    from topoopt.core.backends import quiet_highs

    highspy.Highs.resetThreadScheduler(True)  # the next run starts a scheduler of 2 threads
    other = quiet_highs()
    other.setOptionValue("threads", 2)
    other.addVar(0.0, 1.0)
    try:
        other.run()
        yield
    finally:
        highspy.Highs.resetThreadScheduler(True)  # blocking: the next run starts a new one


def test_pricing_after_another_thread_count_still_bounds() -> None:
    """HiGHS refuses to run with a ``threads`` option other than the one its scheduler started
    with; the pricing must then still give a bound (it once took the unset dual bound 0)."""
    inst = small(seed=0, count=1)[0]
    problem = colgen.Problem.of(inst)
    prize = np.linspace(-0.05, 0.05, inst.n_vertices)
    with _scheduler_of_two_threads():
        for group in range(len(problem.cost)):
            least, _ = _admissible_values(problem, group, prize)
            bound, found, _ = colgen.price_exactly(problem, group, prize, None, 10.0)
            assert bound <= least + 1e-9 and found, (group, bound, least)


def test_the_spreading_certificate_reaches_the_lp_optimum() -> None:
    """The bound certified at PDLP's duals (rows scaled, loose tolerances) is near the
    spreading LP's optimum, solved independently by scipy's HiGHS dual simplex on the
    unscaled LP: not above it (validity) and within 0.5 % of it (PDLP's relative optimality
    tolerance is 1e-3; a weak certificate, e.g. PDLP stopping at the zero point, fails)."""
    from scipy.optimize import linprog

    checked = 0
    for inst in small(seed=3, count=8):
        for _, largest, squares in bounds.spreading_levels(inst):
            matrix, (lo, up), (left, right), cost = bounds.spreading_lp(inst, largest, squares)
            a_ub = sp.vstack([matrix[np.isfinite(up)], -matrix[np.isfinite(lo)]]).tocsr()
            b_ub = np.concatenate([up[np.isfinite(up)], -lo[np.isfinite(lo)]])
            optimum = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=np.stack([left, right], axis=1),
                              method="highs-ds").fun  # fmt: skip
            certified = bounds.spreading_level(inst, largest, squares)
            assert optimum - 5e-3 * max(1.0, optimum) <= certified <= optimum + 1e-7
            checked += 1
    assert checked


def test_the_spreading_lp_is_not_built_for_a_dense_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dense job graph of 200 vertices would need 8 million path rows: the spreading LP is
    skipped (by its size, not by a crash or the memory), while Table 2's 512 units fit."""
    names = [f"v{i}" for i in range(200)]
    dense = PartitionInstance(
        "dense",
        [("a", 500), ("b", 500)],
        [("a", "b", 1.0)],
        [(name, 4) for name in names],
        [(a, b, 1.0) for i, a in enumerate(names) for b in names[i + 1 :]],
    )
    assert not bounds.spreading_fits(dense)
    assert bounds.spreading_fits(table2(0, 1, vertices=512)[0])

    def refuse(*_: object) -> Iterator[float]:
        raise AssertionError("the spreading LP was built")

    monkeypatch.setattr(bounds, "spreading_bounds", refuse)
    deadline = time.perf_counter() + 1.0  # the coarsenings and the profile stop there
    found = list(bounds.lower_bounds(dense, None, lambda *_: 0.0, deadline, columns=False))
    assert found and found[0].method == "projected eigenvalue bound"


def test_spreading_bound_after_another_thread_count() -> None:
    """The spreading LP still runs after HiGHS started its scheduler with another thread count
    (it once returned 0 then)."""
    inst = small(seed=1, count=1)[0]
    before = bounds.spreading_bound(inst)
    with _scheduler_of_two_threads():
        assert bounds.spreading_bound(inst) == pytest.approx(before)


@pytest.mark.parametrize(
    ("vertices", "columns", "expected"),
    [
        (128, None, ["eigenvalue", "spreading", "columns"]),
        (128, False, ["eigenvalue", "spreading"]),
        (512, None, ["eigenvalue", "spreading"]),
        (512, True, ["eigenvalue", "spreading", "columns"]),
        (6, None, ["eigenvalue", "spreading"]),
        (6, True, ["eigenvalue", "spreading", "columns"]),
    ],
)
def test_column_generation_follows_the_spreading_metric_by_default(
    monkeypatch: pytest.MonkeyPatch, vertices: int, columns: bool | None, expected: list[str]
) -> None:
    """By default the column generation takes the time after the spreading metric on jobs of
    ``COLUMNS_AUTO_VERTICES`` to ``COLUMNS_AUTO_MAX_VERTICES`` vertices, and from
    ``COLUMNS_AUTO_VERTICES`` on nothing else follows (the stages stubbed: only the order
    counts)."""
    inst = table2(0, 1, vertices=vertices)[0] if vertices >= 128 else small(1, count=1)[0]
    assert inst.n_vertices == vertices
    ran: list[str] = []

    def stage(name: str, value: float) -> Iterator[bounds.Bound]:
        ran.append(name)
        yield bounds.Bound(value, name)

    monkeypatch.setattr(bounds, "eigenvalue_bound", lambda _: 0.0)
    monkeypatch.setattr(bounds, "spreading_bounds", lambda *_: (b.value for b in stage("x", 1.0)))
    monkeypatch.setattr(colgen, "colgen_bounds", lambda *_: stage("columns", 2.0))
    found = list(
        bounds._every_bound(
            inst, None, lambda sub, limit: 0.0, time.perf_counter() + 600, True, columns
        )
    )
    methods = [b.method for b in found]
    names = [
        "eigenvalue" if "eigenvalue" in m else "spreading" if "spreading" in m else m
        for m in methods
    ]
    assert [n for n in names if n in ("eigenvalue", "spreading", "columns")] == expected
    assert ran.count("columns") == expected.count("columns")
    if vertices >= bounds.COLUMNS_AUTO_VERTICES:
        assert names == expected  # no coarsening or profile after them


def test_a_finished_branch_and_price_can_prove_its_incumbent() -> None:
    """``partition/mip`` calls a bound within ``PROOF_TOLERANCE`` of the incumbent a proof,
    and the branch and price closes its nodes within ``BOUND_MARGIN`` of it: the first must
    be at least the second, or a search that closed every node would prove nothing."""
    from topoopt.partition.solvers.mip import PROOF_TOLERANCE, _closes

    assert PROOF_TOLERANCE >= colgen.BOUND_MARGIN
    incumbent = 21.05524
    closed = incumbent - colgen.BOUND_MARGIN * max(1.0, abs(incumbent))
    assert _closes(closed, incumbent)
