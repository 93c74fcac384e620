"""Several runs in one ``topoopt simulate`` call, and ``topoopt report`` of run folders: the
comparison table, the paired statistics (checked on hand-made runs) and the figures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from topoopt.cli import main
from topoopt.sim.report import Run, paired_statistics


def test_a_sweep_then_its_report(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = ["simulate", "--cluster-shape", "2x2x2:8", "--synthetic", "60", "--load", "1.5"]
    args += ["--policy", "fifo,fifo-backfill", "--placement", "best-fit,nope", "--seed", "0,1"]
    args += ["-j", "2", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    folders = sorted(p.name for p in out.iterdir())
    assert len(folders) == 8 and "fifo+best-fit+s1+l1.5" in folders
    assert (out / "fifo+best-fit+s0+l1.5" / "summary.json").is_file()
    error = json.loads((out / "fifo+nope+s0+l1.5" / "error.json").read_text())
    assert "nope" in error["error"] and result.output.count("error:") == 4
    report = CliRunner().invoke(main, ["report", str(out), "--out", str(tmp_path / "report")])
    assert report.exit_code == 0, report.output
    text = (tmp_path / "report" / "report.md").read_text()
    assert "fifo-backfill+best-fit+s1+l1.5 | fifo+best-fit+s1+l1.5 | 60 |" in text
    assert {p.name for p in (tmp_path / "report" / "figures").iterdir()} == {
        "jct-cdf.png",
        "utilisation.png",
        "fragmentation.png",
        "queue.png",
    }
    mixed = CliRunner().invoke(
        main, ["report", str(out), str(out / "fifo+best-fit+s0+l1.5" / "jobs.jsonl"), "--out", "x"]
    )
    assert mixed.exit_code == 2 and "not both" in mixed.output


def test_a_run_past_its_limits_is_killed_and_recorded(tmp_path: Path) -> None:
    from topoopt.sim.sweep import RunSpec, run_sweep

    spec = RunSpec(str(tmp_path / "run"), cluster_shape="2x2:8", synthetic_jobs=50)
    (killed,) = run_sweep([spec], run_timeout=0.01)  # less than the process takes to start
    assert "killed after 0.01 s" in killed["error"]
    assert "killed after" in json.loads((tmp_path / "run" / "error.json").read_text())["error"]
    (too_big,) = run_sweep([spec], memory_limit_mb=1.0)  # less than any Python process
    assert "killed past 1 MiB" in too_big["error"]
    (done,) = run_sweep([spec])
    assert done["summary"]["finished"] == 50 and not (tmp_path / "run" / "error.json").exists()


def _run(label: str, jct: dict[str, float], load: float = 1.0) -> Run:
    config = {"trace": "t", "load": load, "jobs_limit": None, "jobs": len(jct)}
    return Run(label, Path(label), {"config": config, "summary": {}}, jct, {"time_s": np.zeros(1)})


def test_paired_statistics_on_known_differences() -> None:
    base = _run("a", {"j1": 10.0, "j2": 20.0, "j3": 30.0, "j4": 40.0, "j5": 50.0, "j6": 60.0})
    faster = _run("b", {"j1": 8.0, "j2": 17.0, "j3": 29.0, "j4": 35.0, "j5": 49.0, "j6": 54.0})
    stat = paired_statistics(base, faster)
    assert stat is not None and stat["jobs"] == 6
    assert stat["mean_diff_s"] == pytest.approx(-3.0) and stat["median_diff_s"] == -2.5
    assert stat["ci_low_s"] <= -3.0 <= stat["ci_high_s"] < 0
    assert stat["wilcoxon_p"] == pytest.approx(0.03125)  # all 6 differences negative: 2 / 2**6
    same = paired_statistics(base, _run("c", dict(base.jct)))
    assert same is not None and same["wilcoxon_p"] is None and same["ci_low_s"] == 0
    assert paired_statistics(base, _run("d", dict(base.jct), load=2.0)) is None


def test_a_sweep_on_a_dask_cluster(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    from topoopt.sim.sweep import RunSpec, plan_sweep, run_sweep

    base = RunSpec(str(tmp_path / "runs"), cluster_shape="2x2:8", synthetic_jobs=30)
    specs = plan_sweep(
        base, policies=["fifo", "nope"], placements=["best-fit"], seeds=[0], loads=[1.0]
    )
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None
    ) as cluster:
        ok, failed = run_sweep(specs, scheduler=cluster.scheduler_address)
    assert ok["summary"]["finished"] == 30
    assert "unknown queue policy 'nope'" in failed["error"]
    assert (tmp_path / "runs" / "nope+best-fit+s0+l1" / "error.json").is_file()
