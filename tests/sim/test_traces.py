"""Trace readers: real rows of the shared Philly-derived trace, sample rows of the other
formats, and malformed rows (an error naming the file, row and column, or with ``skip_bad`` a
rejected job: never a lost one)."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import pytest

from topoopt.sim import Job, Simulation, TraceError, parse_shape, read_trace, records
from topoopt.sim.traces import guess_format, synthetic
from topoopt.sim.traces.native import JOB_SCHEMA, write_native

PHILLY_HEADER = "#job id,arrival time (sec),topology,shape,size,duration (sec)\n"


@pytest.fixture(scope="module")
def philly_rows(shared_data: Path) -> list[str]:
    """The first 300 lines of the shared trace (read at run time, never copied in)."""
    path = shared_data / "traces" / "philly_trace.csv"
    if not path.is_file():
        pytest.skip(f"the Philly-derived trace is not at {path}")
    with open(path, encoding="utf-8") as handle:
        return list(islice(handle, 300))


def test_real_philly_rows(philly_rows: list[str], tmp_path: Path) -> None:
    path = tmp_path / "philly.csv"
    path.write_text("".join(philly_rows))
    assert guess_format(path) == "philly"
    trace = read_trace(path)
    assert len(trace.jobs) == len(philly_rows) - 1 and not trace.rejected
    first = next(job for job in trace.jobs if job.id == "0")
    fields = philly_rows[1].strip().split(",")
    assert (first.submit_s, first.gpus, first.duration_s) == (
        float(fields[1]),
        int(fields[4]),
        float(fields[5]),
    )
    assert [j.submit_s for j in trace.jobs] == sorted(j.submit_s for j in trace.jobs)
    done = records(Simulation(parse_shape("4x2x4:8"), trace, policy="fifo-backfill"))
    assert sorted(r["job"] for r in done) == sorted(j.id for j in trace.jobs)


@pytest.mark.parametrize(
    ("row", "column", "words"),
    [
        ("7,12.0,CLOS,1,1,-5.0", "duration (sec)", "must be >= 0"),
        ("7,soon,CLOS,1,1,5.0", "arrival time (sec)", "expected a number"),
        ("7,12.0,CLOS,2,2.5,5.0", "size", "expected an integer"),
        ("7,12.0,CLOS,0,0,5.0", "size", "must be >= 1"),
        ("7,12.0,CLOS,1,1,nan", "duration (sec)", "must be finite"),
    ],
)
def test_malformed_philly_rows(tmp_path: Path, row: str, column: str, words: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(PHILLY_HEADER + "1,0.0,CLOS,1,1,10.0\n" + row + "\n")
    with pytest.raises(TraceError) as err:
        read_trace(path, "philly")
    assert str(err.value).startswith(f"{path}:3: {column}: ") and words in str(err.value)
    skipped = read_trace(path, "philly", skip_bad=True)
    assert [j.id for j in skipped.jobs] == ["1"]
    assert [r.id for r in skipped.rejected] == ["7"] and words in skipped.rejected[0].reason
    done = records(Simulation(parse_shape("1x1:8"), skipped))
    assert {r["job"]: r["status"] for r in done} == {"1": "finished", "7": "rejected"}


def test_philly_header_and_shape_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(PHILLY_HEADER.replace("shape", "form") + "1,0,CLOS,1,1,1\n")
    with pytest.raises(TraceError, match=r"t.csv:1: shape: column missing"):
        read_trace(path, "philly")
    path.write_text(PHILLY_HEADER.strip() + ",queue\n1,0,CLOS,1,1,1,x\n")
    with pytest.raises(TraceError, match=r"t.csv:1: queue: unknown column"):
        read_trace(path, "philly")
    path.write_text(PHILLY_HEADER + "1,0,CLOS,1,1\n")
    with pytest.raises(TraceError, match=r"t.csv:2: 5 fields, the header has 6"):
        read_trace(path, "philly")
    path.write_text(PHILLY_HEADER + "1,0,CLOS,1,1,1\n1,5,CLOS,1,1,1\n")
    with pytest.raises(TraceError, match=r"job id '1' repeats"):
        read_trace(path, "philly")
    path.write_text("")
    with pytest.raises(TraceError, match="empty file"):
        read_trace(path, "philly")


def test_a_job_larger_than_the_cluster(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text(PHILLY_HEADER + "1,0,CLOS,1,1,5\n2,1,CLOS,64,64,5\n")
    trace = read_trace(path)
    with pytest.raises(TraceError, match=r"big.csv:3: gpus: asks 8 whole nodes"):
        records(Simulation(parse_shape("2x2:8"), trace))
    done = records(Simulation(parse_shape("2x2:8"), trace, skip_unfit=True))
    rejected = [r for r in done if r["status"] == "rejected"]
    assert [r["job"] for r in rejected] == ["2"] and "cluster has 4" in rejected[0]["reason"]


def test_alibaba_pod_list(tmp_path: Path) -> None:
    path = tmp_path / "openb_pod_list_default.csv"
    path.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "openb-pod-0017,88000,327680,8,1000,V100M32,LS,Running,9437497,10769854,9437497\n"
        "openb-pod-0022,6000,12288,1,460,,BE,Succeeded,9000000,9001000,9000100\n"
        "openb-pod-0023,6000,12288,0,0,,BE,Succeeded,9000000,9001000,9000100\n"
        "openb-pod-0024,6000,12288,1,1000,,LS,Pending,9500000,,\n"
        "openb-pod-0025,6000,12288,1,1000,,LS,Failed,9500000,,9500001\n"
    )
    assert guess_format(path) == "alibaba"
    trace = read_trace(path)
    jobs = {job.id: job for job in trace.jobs}
    assert jobs["openb-pod-0022"] == Job(
        "openb-pod-0022", 0.0, 1, 900.0, qos="BE", cpus=6.0, memory_gib=12.0
    )
    assert jobs["openb-pod-0017"].submit_s == 437497 and jobs["openb-pod-0017"].gpus == 8
    assert jobs["openb-pod-0017"].duration_s == 10769854 - 9437497
    reasons = {r.id: r.reason for r in trace.rejected}
    assert "asks no GPU" in reasons["openb-pod-0023"]
    assert "scheduled_time: never ran" in reasons["openb-pod-0024"]
    assert "deletion_time: no end" in reasons["openb-pod-0025"]  # scheduled, never ended


def test_helios_log(tmp_path: Path) -> None:
    path = tmp_path / "cluster_log.csv"
    path.write_text(
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration\n"
        "6aHNh,u1,vc1,16,64,2,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:01:00,,3600\n"
        "7bQ,u2,vc1,1,4,1,FAILED,2020-04-01 00:00:00,,,60\n"
        "8c,u2,vc2,0,4,1,COMPLETED,2020-04-01 00:00:05,,,60\n"
    )
    assert guess_format(path) == "helios"
    trace = read_trace(path)
    assert [(j.id, j.submit_s, j.gpus, j.nodes, j.user) for j in trace.jobs] == [
        ("7bQ", 0.0, 1, 1, "u2"),
        ("6aHNh", 10.0, 16, 2, "u1"),
    ]
    assert [(j.queue, j.cpus) for j in trace.jobs] == [("vc1", 4.0), ("vc1", 64.0)]
    assert [r.id for r in trace.rejected] == ["8c"]
    path.write_text("job_id,gpu_num,submit_time,duration\nx,1,yesterday,5\n")
    with pytest.raises(TraceError, match=r"cluster_log.csv:2: submit_time: expected seconds"):
        read_trace(path, "helios")


def test_native_round_trip_and_schema(tmp_path: Path) -> None:
    trace = synthetic(jobs=20, cluster_gpus=64, seed=4)
    jobs = [
        *trace.jobs,
        Job("p", 5.0, 16, 7.0, dp=2, tp=8, pp=1, priority=3, user="ann"),
        Job("q", 6.0, 2, 9.0, queue="vc1", qos="BE", cpus=12.5, memory_gib=64.0),
    ]
    for name in ("t.jsonl", "t.csv"):
        back = read_trace(write_native(jobs, tmp_path / name))
        assert back.jobs == sorted(jobs, key=lambda j: j.submit_s)
    assert JOB_SCHEMA["required"] == ["id", "submit_s", "gpus", "duration_s"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"id": "a", "submit_s": 0, "gpus": 2, "duration_s": 1})
        + "\n"
        + json.dumps({"id": "b", "submit_s": 0, "gpu": 2, "duration_s": 1})
        + "\n"
    )
    with pytest.raises(TraceError, match=r"bad.jsonl:2: .*gpu"):
        read_trace(bad)
    skipped = read_trace(bad, skip_bad=True)
    assert [r.id for r in skipped.rejected] == ["b"]
    bad.write_text(
        json.dumps(
            {"id": "a", "submit_s": 0, "gpus": 4, "duration_s": 1, "dp": 1, "tp": 2, "pp": 1}
        )
        + "\n"
    )
    with pytest.raises(TraceError, match=r"bad.jsonl:1: .*dp \* tp \* pp = 2 must equal gpus"):
        read_trace(bad)
    bad.write_text("{not json\n")
    with pytest.raises(TraceError, match=r"bad.jsonl:1"):
        read_trace(bad)


def test_unknown_format_and_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(TraceError, match="cannot tell the trace format"):
        read_trace(path)
    from topoopt.core.errors import TopooptError

    with pytest.raises(TopooptError, match="unknown trace format 'phily'; did you mean 'philly'"):
        read_trace(path, "phily")
    with pytest.raises(TraceError, match="cannot read"):
        read_trace(tmp_path / "missing.csv", "philly")
