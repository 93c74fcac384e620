"""The exact phase evaluator against brute force over every circuit matrix, the traffic model's
hand facts and invariants, and the ring enumeration."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.ocs import phases
from topoopt.ocs.choices import canonical_ring, ring_count, rings
from topoopt.ocs.phases import circuits_for, comm_time, min_circuits, oxc_time
from topoopt.ocs.traffic import Demand, job_demand, pair, ring_edges

REL = 1e-9
BPS = (1.0, 7.0, 12.5e9, 25e9, 50e9)
TRAFFIC = (0.0, 0.0, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 1 / 3, 6 / 7, 4 / 3)


def brute_min(pairs: dict[tuple[int, int], float], budget: list[int], bps: float) -> float | None:
    """The least ``max T_ab / (L_ab · B)`` over every symmetric non-negative integer matrix
    ``L`` (upper triangle; each entry at most the smaller budget) whose row sums fit the
    budgets and that gives every pair with traffic a circuit; ``None`` when there is none."""
    n = len(budget)
    keys = [(a, b) for a in range(n) for b in range(a + 1, n)]
    best = None
    for values in itertools.product(*(range(min(budget[a], budget[b]) + 1) for a, b in keys)):
        used = [0] * n
        for (a, b), count in zip(keys, values, strict=True):
            used[a] += count
            used[b] += count
        if any(u > c for u, c in zip(used, budget, strict=True)):
            continue
        circuits = dict(zip(keys, values, strict=True))
        if any(pairs.get(k, 0.0) > 0 and circuits[k] == 0 for k in keys):
            continue
        tau = max(
            (t / (circuits[k] * bps) for k, t in pairs.items() if t > 0),
            default=0.0,
        )
        best = tau if best is None else min(best, tau)
    return best


@st.composite
def phases_(draw: st.DrawFn) -> tuple[dict[tuple[int, int], float], list[int], float]:
    n = draw(st.integers(2, 4))
    budget = [draw(st.integers(0, 3)) for _ in range(n)]
    bps = draw(st.sampled_from(BPS))
    scale = 1e9 if bps > 10 else 1.0
    pairs = {
        (a, b): draw(st.sampled_from(TRAFFIC)) * scale
        for a in range(n)
        for b in range(a + 1, n)
        if draw(st.booleans())
    }
    return pairs, budget, bps


def used_circuits(circuits: dict[tuple[int, int], int], n: int) -> list[int]:
    used = [0] * n
    for (a, b), count in circuits.items():
        used[a] += count
        used[b] += count
    return used


@settings(max_examples=300, deadline=None)
@given(case=phases_())
def test_min_circuits_equals_brute_force_over_every_matrix(case) -> None:
    pairs, budget, bps = case
    expected = brute_min(pairs, budget, bps)
    got = min_circuits(pairs, budget, bps)
    if expected is None:
        assert got is None
        return
    assert got is not None
    tau, circuits = got
    assert math.isclose(tau, expected, rel_tol=REL, abs_tol=0.0), (tau, expected)
    assert all(isinstance(c, int) and c >= 1 for c in circuits.values())
    assert set(circuits) == {k for k, t in pairs.items() if t > 0}
    assert all(a < b for a, b in circuits)
    used = used_circuits(circuits, len(budget))
    assert all(u <= c for u, c in zip(used, budget, strict=True)), (used, budget)
    assert oxc_time(pairs, circuits, bps) == tau


@settings(max_examples=100, deadline=None)
@given(case=phases_(), tor=st.lists(st.sampled_from((0.5, 1.0, 4.0)), min_size=4, max_size=4))
def test_comm_time_adds_the_tor_bound(case, tor) -> None:
    pairs, budget, bps = case
    n = len(budget)
    sent = [float(i) for i in range(n)]
    received = [float(n - i) for i in range(n)]
    demand = Demand(dict(pairs), sent, received)
    comm = comm_time(demand, budget, bps, tor[:n])
    best = min_circuits(pairs, budget, bps)
    if best is None:
        assert comm is None
        return
    assert comm is not None
    tor_s = max(max(sent[i], received[i]) / tor[i] for i in range(n))
    assert comm.tor_s == tor_s
    assert comm.oxc_s == best[0] and comm.circuits == best[1]
    assert comm.time_s == max(best[0], tor_s)


@st.composite
def large_phases(draw: st.DrawFn) -> tuple[dict[tuple[int, int], float], list[int], float]:
    n = draw(st.integers(2, 24))
    budget = [draw(st.integers(0, 12)) for _ in range(n)]
    bps = draw(st.sampled_from(BPS))
    scale = 1e9 if bps > 10 else 1.0
    pairs = {
        (a, b): draw(st.sampled_from(TRAFFIC)) * scale * draw(st.integers(1, 50))
        for a in range(n)
        for b in range(a + 1, n)
        if draw(st.booleans())
    }
    return pairs, budget, bps


@settings(max_examples=200, deadline=None)
@given(case=large_phases())
def test_vector_search_gives_the_loop_search_answer(case) -> None:
    """The NumPy candidate test (many pairs) returns exactly what the Python loop returns."""
    pairs, budget, bps = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(phases, "VECTOR_PAIRS", 10**9)
        by_loop = min_circuits(pairs, budget, bps)
        patch.setattr(phases, "VECTOR_PAIRS", 1)
        assert min_circuits(pairs, budget, bps) == by_loop


def test_min_circuits_by_hand() -> None:
    # pod 1 has 5 circuits for pods 0 (4 bytes) and 2 (4 bytes): 2 + 2 give 2 s, the fifth
    # cannot help both, and the fewest circuits reaching 2 s are returned
    assert min_circuits({(0, 1): 4.0, (1, 2): 4.0}, [5, 5, 5], 1.0) == (
        2.0,
        {(0, 1): 2, (1, 2): 2},
    )
    # 6 bytes and 2 bytes through pod 0's 4 circuits: 3 + 1 give 2 s (docstring)
    assert min_circuits({(0, 1): 6.0, (0, 2): 2.0}, [4, 4, 4], 1.0) == (
        2.0,
        {(0, 1): 3, (0, 2): 1},
    )
    assert min_circuits({(0, 1): 6.0, (0, 2): 2.0}, [1, 4, 4], 1.0) is None
    assert min_circuits({}, [0, 0], 1.0) == (0.0, {})
    assert min_circuits({(0, 1): 0.0}, [0, 0], 1.0) == (0.0, {})
    assert min_circuits({(0, 1): 1.0}, [0, 1], 1.0) is None
    assert min_circuits({(0, 1): 6.0}, [3, 2], 2.0) == (1.5, {(0, 1): 2})


def test_circuits_for_and_ring_edges_doctested_facts() -> None:
    assert circuits_for(10.0, 2.5, 1.0) == 4
    assert circuits_for(10.0, 10.0 / 3, 1.0) == 3  # exactly 3 circuits, not 3 + rounding
    assert circuits_for(0.0, 1.0, 1.0) == 0
    assert circuits_for(10.0, 100.0, 1.0) == 1
    assert circuits_for(2e9, 0.032, 12.5e9) == 5
    assert ring_edges([2, 0, 1]) == [(0, 2), (0, 1), (1, 2)]
    assert ring_edges([3, 1]) == [(1, 3), (1, 3)]
    assert ring_edges([4]) == []


def test_job_demand_doctested_facts() -> None:
    d = job_demand(3, "PS", [(0, 2), (1, 1), (2, 1)], 10.0, server=0)
    assert (d.pairs, d.sent, d.received) == (
        {(0, 1): 10.0, (0, 2): 10.0},
        [20.0, 10.0, 10.0],
        [40.0, 0.0, 0.0],
    )
    assert job_demand(2, "RAR", [(0, 2), (1, 2)], 10.0, ring=[0, 1]).pairs == {(0, 1): 40.0}
    assert job_demand(2, "A2A", [(0, 2), (1, 1)], 10.0).pairs == {(0, 1): 20.0}
    three = job_demand(4, "RAR", [(3, 1), (0, 2), (2, 1)], 5.0, ring=[3, 0, 2])
    assert three.pairs == {(0, 3): 10.0, (0, 2): 10.0, (2, 3): 10.0}
    assert three.sent == three.received == [20.0, 0.0, 10.0, 10.0]
    with pytest.raises(ValueError, match="server"):
        job_demand(2, "PS", [(0, 1), (1, 1)], 1.0)
    with pytest.raises(ValueError, match="ring"):
        job_demand(2, "RAR", [(0, 1), (1, 1)], 1.0)
    with pytest.raises(ValueError, match="unknown job type"):
        job_demand(2, "AR", [(0, 1), (1, 1)], 1.0)


@st.composite
def placements(draw: st.DrawFn, min_pods: int = 1) -> list[tuple[int, int]]:
    k = draw(st.integers(min_pods, 5))
    pods = draw(st.permutations(range(6)))[:k]
    return [(p, draw(st.integers(1, 4))) for p in pods]


@settings(max_examples=100, deadline=None)
@given(gpus=placements(min_pods=2), f=st.sampled_from((1.0, 3.0, 1e9)), data=st.data())
def test_pair_sums_are_both_directions_and_ignore_the_listing_order(gpus, f, data) -> None:
    """Each pair carries the sum of its two directions, worked out per direction here, and
    neither the order the GPUs are listed in nor the ring's direction changes it."""
    n = 6
    flipped = list(reversed(gpus))
    total = sum(g for _, g in gpus)
    # A2A: i -> j carries G_i G_j F / (G - 1), and j -> i as much
    directed: dict[tuple[int, int], float] = {}
    for (a, ga), (b, gb) in itertools.permutations(gpus, 2):
        directed[a, b] = ga * gb * f / (total - 1)
    a2a = job_demand(n, "A2A", gpus, f).pairs
    assert a2a.keys() == {pair(a, b) for a, b in directed}
    for (a, b), amount in a2a.items():
        assert math.isclose(amount, directed[a, b] + directed[b, a], rel_tol=1e-12)
    assert job_demand(n, "A2A", flipped, f).pairs == pytest.approx(a2a, rel=1e-12)
    # PS: the push i -> s carries G_i F and nothing flows back in the same phase
    server = data.draw(st.sampled_from([p for p, _ in gpus]))
    ps = job_demand(n, "PS", gpus, f, server=server)
    assert ps.pairs == {pair(p, server): g * f for p, g in gpus if p != server}
    assert job_demand(n, "PS", flipped, f, server=server).pairs == ps.pairs
    # RAR: a ring and its reverse (and rotations) load every pair alike
    ring = [p for p, _ in gpus]
    rar = job_demand(n, "RAR", gpus, f, ring=ring).pairs
    for other in (ring[::-1], ring[1:] + ring[:1]):
        assert job_demand(n, "RAR", flipped, f, ring=other).pairs == rar
    assert math.fsum(rar.values()) == pytest.approx(2 * f * len(ring), rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(gpus=placements(), f=st.sampled_from((0.0, 1.0, 3.0, 1e9)), data=st.data())
def test_every_byte_sent_is_received(gpus, f, data) -> None:
    """A PS job's ToR totals: every worker sends ``F`` per GPU, the server receives all of it;
    RAR and A2A pods send what they receive."""
    n = 6
    total = sum(g for _, g in gpus)
    if len(gpus) >= 2:
        server = data.draw(st.sampled_from([p for p, _ in gpus]))
        ps = job_demand(n, "PS", gpus, f, server=server)
        assert math.fsum(ps.sent) == math.fsum(ps.received) == pytest.approx(total * f)
        assert ps.received[server] == pytest.approx(total * f)
    rar = job_demand(n, "RAR", gpus, f, ring=[p for p, _ in gpus])
    assert rar.sent == rar.received
    assert rar.sent == [2 * f * dict(gpus).get(i, 0) for i in range(n)]
    if total >= 2:
        a2a = job_demand(n, "A2A", gpus, f)
        assert a2a.sent == a2a.received == [f * dict(gpus).get(i, 0) for i in range(n)]


# ----------------------------------------------------------------------------------- rings


@pytest.mark.parametrize("k", [4, 5, 6])
def test_rings_are_every_hamiltonian_cycle_once(k: int) -> None:
    pods = [3 * i + 1 for i in range(k)]  # not 0..k-1, so pod numbers and positions differ
    found = list(rings(pods))
    assert len(found) == math.factorial(k - 1) // 2 == ring_count(k)
    assert all(sorted(r) == pods for r in found)
    canonical = {canonical_ring(r) for r in found}
    assert len(canonical) == len(found)
    every = {canonical_ring(p) for p in itertools.permutations(pods)}
    assert canonical == every
    # two distinct cycles use different pod pairs (so each is a distinct traffic pattern)
    edge_sets = {frozenset(ring_edges(r)) for r in found}
    assert len(edge_sets) == len(found)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_small_rings_are_the_pods_themselves(k: int) -> None:
    assert list(rings(list(range(k)))) == [tuple(range(k))]
    assert ring_count(k) == 1


@settings(max_examples=100, deadline=None)
@given(order=st.permutations(range(7)).map(lambda p: p[: 2 + p[0] % 6]), shift=st.integers(0, 6))
def test_canonical_ring_ignores_rotation_and_reversal(order, shift) -> None:
    k = len(order)
    rotated = [order[(t + shift) % k] for t in range(k)]
    canonical = canonical_ring(order)
    assert canonical_ring(rotated) == canonical
    assert canonical_ring(rotated[::-1]) == canonical
    assert canonical_ring(order[::-1]) == canonical
    assert sorted(canonical) == sorted(order) and canonical[0] == min(order)
    assert set(ring_edges(canonical)) == set(ring_edges(order))
