"""The MIP's reduction (docs/clusterselect.md, "The MIP", steps 1-3) is safe: on many small
instances every set of clusters with the optimal ``(K, rank)`` lies among one host's candidates,
no set does better; and the swap start is feasible with that ``(K, rank)``."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import topoopt
from topoopt.clusterselect import ClusterSelectInstance, check, key
from topoopt.clusterselect.formulations.select_mip import reduce
from topoopt.clusterselect.generate import scaling
from topoopt.clusterselect.solvers.mip import swap_start
from topoopt.core.status import SolutionStatus

from .strategies import any_instances


def best_sets(inst: ClusterSelectInstance) -> tuple[tuple[int, int], list[frozenset[int]]]:
    """The best ``(K, rank)`` over all sets holding the demand, and every set reaching it."""
    free = inst.free
    best: tuple[int, int] | None = None
    found: list[frozenset[int]] = []
    for k in range(1, inst.n_clusters + 1):
        for s in itertools.combinations(range(inst.n_clusters), k):
            if sum(free[i] for i in s) < inst.demand:
                continue
            parts = key(inst, [inst.graph.clusters[i] for i in s])
            head = (parts.clusters, parts.rank)
            if best is None or head < best:
                best, found = head, [frozenset(s)]
            elif head == best:
                found.append(frozenset(s))
        if best is not None:
            return best, found
    raise AssertionError("the clusters cannot hold the demand")


@settings(max_examples=150)
@given(inst=any_instances())
def test_every_best_set_lies_among_one_hosts_candidates(inst: ClusterSelectInstance) -> None:
    (k, rank), sets = best_sets(inst)
    red = reduce(inst)
    assert (red.clusters, red.rank) == (k, rank)
    hosts = [frozenset(h) for h in red.hosts]
    assert len(set(hosts)) == len(hosts)
    assert all(len(a & b) == 0 for a, b in itertools.combinations(hosts, 2))  # disjoint
    for s in sets:
        assert any(s <= h for h in hosts), (s, hosts)


@settings(max_examples=100)
@given(inst=any_instances())
def test_swap_start_is_feasible_with_the_best_k_and_rank(inst: ClusterSelectInstance) -> None:
    red = reduce(inst)
    start = swap_start(inst, red)
    assert check(inst, start) == []
    parts = key(inst, start.chosen())
    assert (parts.clusters, parts.rank) == (red.clusters, red.rank)
    assert {inst.graph.index[c] for c in start.chosen()} <= set(red.hosts[0])


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(50, 400))
def test_mip_without_latency_proves_the_reduction_optimum_on_scaling_graphs(
    seed: int, n: int
) -> None:
    """Without latencies the key is (K, rank): the MIP proves the reduction's values (which the
    property test above checks against brute force on small instances)."""
    base = scaling(seed, sizes=(n,))[0]
    inst = ClusterSelectInstance(
        "no-latency",
        base.clusters,
        [(lk.a, lk.b, lk.bandwidth_gbps) for lk in base.graph.links],
        base.demand,
    )
    red = reduce(inst)
    result = topoopt.solve(inst, "clusterselect/mip")
    assert result.status is SolutionStatus.OPTIMAL, result
    assert (result.metrics["clusters"], result.metrics["bottleneck_rank"]) == (
        red.clusters,
        red.rank,
    )
    spin = topoopt.solve(inst, "clusterselect/spinsearch")
    assert spin.objective >= result.objective - 1e-12


def test_reduction_of_fig2_keeps_the_hosts_of_a_and_g() -> None:
    from topoopt.clusterselect.generate import fig2

    inst = fig2()
    red = reduce(inst)
    names = [[inst.graph.clusters[i] for i in h] for h in red.hosts]
    # K* = 2 (no cluster holds 16); rank 0 is the 100 Gb/s pair a-g, which holds 16
    assert (red.clusters, red.rank, names) == (2, 0, [["a", "g"]])
    assert np.array_equal(red.candidates, [0, 6])
