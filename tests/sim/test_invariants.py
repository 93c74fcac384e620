"""Property tests of the engine on random clusters and traces, for every built-in policy: the
invariants of ``docs/sim.md`` ("Engine") hold, the arrivals-only pass gives the schedule of a
full pass, and FIFO starts jobs in queue order."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from topoopt.sim import Job, Simulation, Trace, generated_cluster, records
from topoopt.sim.cluster import Cluster
from topoopt.sim.placer import Placer
from topoopt.sim.policies import QUEUE_POLICIES

POLICIES = QUEUE_POLICIES.names()


@st.composite
def cases(draw: st.DrawFn) -> tuple[Cluster, Trace]:
    fanouts = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2))
    cluster = generated_cluster(fanouts, draw(st.integers(1, 3)), draw(st.sampled_from([2, 4, 8])))
    n = draw(st.integers(1, 14))
    jobs = [
        Job(
            f"j{i}",
            draw(st.integers(0, 40)),
            draw(st.integers(1, cluster.total_gpus)),
            draw(st.integers(0, 30)),
            priority=draw(st.integers(0, 2)),
        )
        for i in range(n)
    ]
    return cluster, Trace(jobs)


def _run(cluster: Cluster, trace: Trace, policy: str, solver: str, **kw: object) -> list[dict]:
    placer = Placer(cluster, solver, time_limit=5.0)
    sim = Simulation(cluster, trace, policy=policy, placer=placer, check_every_event=True, **kw)
    return records(sim)


@settings(max_examples=60, deadline=None)
@given(
    case=cases(),
    policy=st.sampled_from(POLICIES),
    solver=st.sampled_from(["placement/best-fit", "placement/random-fit", "placement/exact-mip"]),
)
def test_invariants(case: tuple[Cluster, Trace], policy: str, solver: str) -> None:
    cluster, trace = case
    done = _run(cluster, trace, policy, solver)
    assert sorted(r["job"] for r in done) == sorted(job.id for job in trace.jobs)  # once each
    jobs = {job.id: job for job in trace.jobs}
    spans = []
    for r in done:
        assert r["status"] == "finished"
        job = jobs[r["job"]]
        assert r["start_s"] >= job.submit_s
        assert r["slowdown"] >= 1
        assert r["end_s"] == r["start_s"] + job.duration_s * r["slowdown"]
        shape_nodes = len(r["nodes"])
        assert len(set(r["nodes"])) == shape_nodes  # a node at most once per job
        if job.gpus > cluster.node_size:
            assert shape_nodes == -(-job.gpus // cluster.node_size)
        spans.append((r["start_s"], r["end_s"], r["nodes"], job.gpus, shape_nodes))
    # no GPU (node, index) is held by two jobs at once, and a job holds as many as its shape
    intervals: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for r in done:
        assert len(r["devices"]) == len(r["nodes"])
        held = sum(len(d) for d in r["devices"])
        assert held == (
            jobs[r["job"]].gpus if len(r["nodes"]) == 1 else cluster.node_size * len(r["nodes"])
        )
        for node, devices in zip(r["nodes"], r["devices"], strict=True):
            assert len(set(devices)) == len(devices) and all(
                0 <= d < cluster.node_size for d in devices
            )
            for d in devices:
                intervals.setdefault((node, d), []).append((r["start_s"], r["end_s"]))
    for spans_of_gpu in intervals.values():
        spans_of_gpu.sort()
        for (_, end), (start, _) in itertools.pairwise(spans_of_gpu):
            assert start >= end
    # at any start time, the GPUs held on every node fit the node (a second, independent check
    # of the occupancy the engine keeps)
    for t, *_ in spans:
        used: dict[str, int] = {}
        for start, end, nodes, gpus, count in spans:
            if start <= t < end:
                for node in nodes:
                    used[node] = used.get(node, 0) + (gpus if count == 1 else cluster.node_size)
        assert all(v <= cluster.node_size for v in used.values())


@settings(max_examples=60, deadline=None)
@given(case=cases(), policy=st.sampled_from(POLICIES))
def test_arrivals_pass_equals_a_full_pass(case: tuple[Cluster, Trace], policy: str) -> None:
    cluster, trace = case
    fast = _run(cluster, trace, policy, "placement/best-fit")
    full = _run(cluster, trace, policy, "placement/best-fit", incremental=False)
    assert [_schedule(r) for r in fast] == [_schedule(r) for r in full]


def _schedule(record: dict) -> dict:
    """A record without its wall-clock decision time."""
    return {key: value for key, value in record.items() if key != "decision_s"}


@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_fifo_starts_in_queue_order(case: tuple[Cluster, Trace]) -> None:
    cluster, trace = case
    done = _run(cluster, trace, "fifo", "placement/best-fit")
    start = {r["job"]: r["start_s"] for r in done}
    order = [job.id for job in trace.jobs]  # submit order, ties in trace order
    starts = [start[job] for job in order]
    assert starts == sorted(starts)


@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_backfilling_never_delays_the_first_job_under_exact_predictions(
    case: tuple[Cluster, Trace],
) -> None:
    """With exact predictions, a job only backfills when it ends by the reservation, so the
    first job of the queue starts no later than under plain FIFO."""
    cluster, trace = case
    plain = {r["job"]: r["start_s"] for r in _run(cluster, trace, "fifo", "placement/best-fit")}
    easy = {
        r["job"]: r["start_s"] for r in _run(cluster, trace, "fifo-backfill", "placement/best-fit")
    }
    first = trace.jobs[0].id
    assert easy[first] <= plain[first]


def test_the_occupancy_check_finds_a_gpu_held_twice() -> None:
    import pytest

    from topoopt.core.errors import TopooptError
    from topoopt.sim.cluster import Occupancy

    occupancy = Occupancy(generated_cluster([2], 2, 4))
    assert occupancy.allocate("a", {0: 3}) == {0: (0, 1, 2)}
    assert occupancy.allocate("b", {0: 1, 1: 4}) == {0: (3,), 1: (0, 1, 2, 3)}
    occupancy.check()
    occupancy.held["b"][0] = (2,)  # a corrupted state: GPU 2 of node 0 twice
    with pytest.raises(TopooptError, match="GPU 2 of node n0000 held by 'a' and 'b'"):
        occupancy.check()
    occupancy.held["b"][0] = (3,)
    occupancy.free[1] = 1
    with pytest.raises(TopooptError, match="node n0001"):
        occupancy.check()
