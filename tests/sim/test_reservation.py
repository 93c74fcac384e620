"""Arnold's reservation (``topoopt.sim.reservation``) on a trace derived by hand in
``docs/sim.md`` ("Reserving for a large job"): the three modes keep other jobs out of the
zone as documented, and the reserved job starts on its planned nodes."""

from __future__ import annotations

import pytest

from topoopt.core.errors import TopooptError
from topoopt.sim import Job, Simulation, Trace, parse_shape, records
from topoopt.sim.reservation import Reservation

JOBS = [
    Job("L", 100, 16, 50),  # the large job: 2 whole nodes, announced at 0, arrives at 100
    Job("x", 10, 8, 200),
    Job("y", 20, 8, 50),
    Job("z", 30, 8, 200),
    Job("w", 40, 8, 30),
]
EXPECTED = {
    "predicted": {"L": 100, "x": 10, "y": 20, "z": 70, "w": 40},  # w ends by 100: may enter
    "strict": {"L": 100, "x": 10, "y": 20, "z": 70, "w": 150},  # nobody enters the zone
    "best-effort": {"L": 100, "x": 10, "y": 20, "z": 30, "w": 40},  # z and w enter anyway
}


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_the_three_modes(mode: str) -> None:
    sim = Simulation(
        parse_shape("2x2:8"),
        Trace(list(JOBS)),
        policy="arnold",
        reservation=Reservation("L", 0, mode),
        check_every_event=True,
    )
    done = {r["job"]: r for r in records(sim)}
    assert {job: r["start_s"] for job, r in done.items()} == EXPECTED[mode]
    assert sim.plan is not None and sim.plan.nodes == ("n0000", "n0001")
    zone = {"n0000", "n0001"}
    if mode == "best-effort":
        assert set(done["z"]["nodes"]) <= zone  # z sat in the zone when L arrived
        assert done["L"]["slowdown"] > 1  # L placed wherever: across both minipods
    else:
        assert done["L"]["nodes"] == ["n0000", "n0001"] and done["L"]["slowdown"] == 1
        entered = [r["job"] for r in done.values() if r["job"] != "L" and set(r["nodes"]) & zone
                   and r["start_s"] < 100]  # fmt: skip
        assert entered == (["w"] if mode == "predicted" else [])
        assert all(done[j]["end_s"] <= 100 for j in entered)
    held = [h for t, h in zip(sim.timeline.time_s, sim.timeline.zone_held, strict=True) if t < 100]
    assert max(held) == {"predicted": 1, "strict": 0, "best-effort": 2}[mode]


def test_refused_reservations() -> None:
    cluster, trace = parse_shape("2x2:8"), Trace(list(JOBS))
    with pytest.raises(TopooptError, match="'nobody' is not a runnable job"):
        records(Simulation(cluster, trace, policy="arnold", reservation=Reservation("nobody", 0)))
    with pytest.raises(TopooptError, match="after the job's arrival"):
        records(Simulation(cluster, trace, policy="arnold", reservation=Reservation("L", 200)))
    with pytest.raises(TopooptError, match="backfills"):
        Simulation(cluster, trace, policy="fifo-backfill", reservation=Reservation("L", 0))
    with pytest.raises(TopooptError, match="mode"):
        Reservation("L", 0, "maybe")
    with pytest.raises(TopooptError, match="JOB@SECONDS"):
        Reservation.parse("L")
