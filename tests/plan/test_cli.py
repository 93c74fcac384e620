"""``topoopt plan``: exit 0 with the files written, exit 2 with one line naming the stage, or
the file and the field, for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from topoopt.cli import main
from topoopt.cli import plan as cli_plan
from topoopt.crosscluster.settings import uniform
from topoopt.plan import pipeline
from topoopt.plan.job import Job
from topoopt.plan.output import parse_hostfile, parse_ranks

SLURM = Path(__file__).parents[1] / "topology" / "data" / "slurm" / "topology-guide-ex1.conf"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def one_error_line(result: Result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, result.stderr
    return result.stderr[:-1]


@pytest.fixture()
def files(tmp_path: Path) -> tuple[str, str]:
    uniform("demo", clusters=3, nodes=2, gpus_per_node=4).save(tmp_path / "mc.json")
    Job("j", 12, [(0.004, 1.5e8)] * 12, 1.6e7, 8, blocks=6).save(tmp_path / "job.json")
    return str(tmp_path / "job.json"), str(tmp_path / "mc.json")


def test_defaults_match_the_pipeline() -> None:
    assert (cli_plan.SELECT, cli_plan.PARTITION, cli_plan.CONFIG) == (
        pipeline.SELECT,
        pipeline.PARTITION,
        pipeline.CONFIG,
    )


def test_plan_writes_the_files(files: tuple[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke("plan", *files, "--out", str(out), "--time-limit", "60")
    assert result.exit_code == 0, result.output
    assert "12 ranks" in result.stdout and "step time" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "hostfile.c0",
        "hostfile.c1",
        "plan.json",
        "ranks.txt",
    ]
    ranks = parse_ranks((out / "ranks.txt").read_text())
    slots = sum(
        k for f in ("hostfile.c0", "hostfile.c1") for _, k in parse_hostfile((out / f).read_text())
    )
    assert len(ranks) == slots == 12
    data = json.loads((out / "plan.json").read_text())
    assert data["format"] == "topoopt-plan" and data["gpus"] == {
        "requested": 12,
        "ranks": 12,
        "idle": 0,
    }
    assert [s["check"] for s in data["stages"]] == ["passed"] * len(data["stages"])


def test_json_and_solver_options(files: tuple[str, str], tmp_path: Path) -> None:
    result = invoke(
        "plan",
        *files,
        "--out",
        str(tmp_path / "o"),
        "--partition-solver",
        "greedy-lowcut",
        "--config-solver",
        "parallelconfig/greedy",
        "--seed",
        "3",
        "--json",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [s["solver"] for s in data["stages"][:3]] == [
        "clusterselect/spinsearch",
        "partition/greedy-lowcut",
        "parallelconfig/greedy",
    ]


def test_unknown_solver(files: tuple[str, str], tmp_path: Path) -> None:
    line = one_error_line(invoke("plan", *files, "--out", str(tmp_path), "--select-solver", "spin"))
    assert line.startswith("error: unknown solver 'spin'")


def test_unknown_backend(files: tuple[str, str], tmp_path: Path) -> None:
    line = one_error_line(invoke("plan", *files, "--out", str(tmp_path), "--backend", "nope"))
    assert line.startswith("error: backend: unknown MIP backend 'nope'")


def test_job_no_set_of_clusters_holds(files: tuple[str, str], tmp_path: Path) -> None:
    job = Path(files[0])
    Job("big", 48, [(0.004, 1e8)] * 48, 1e6, 48).save(job)
    line = one_error_line(invoke("plan", str(job), files[1], "--out", str(tmp_path / "o")))
    assert line == (
        f"error: clusterselect: no set of clusters holds the job: {job}: gpus: 48 GPUs "
        f"requested, but {files[1]} has 24 free (c0: 8, c1: 8, c2: 8)"
    )
    assert not (tmp_path / "o").exists()


def test_links_and_clusters_disagree(files: tuple[str, str], tmp_path: Path) -> None:
    mc = json.loads(Path(files[1]).read_text())
    mc["links"][1]["b"] = "c9"
    Path(files[1]).write_text(json.dumps(mc))
    line = one_error_line(invoke("plan", files[0], files[1], "--out", str(tmp_path / "o")))
    assert line.startswith(f"error: {files[1]}: links[1].b: unknown cluster 'c9'")


def test_topology_that_does_not_parse(files: tuple[str, str], tmp_path: Path) -> None:
    (tmp_path / "bad.conf").write_text("SwitchName=s0 Nodes=\n")
    mc = json.loads(Path(files[1]).read_text())
    mc["clusters"][2] = {
        "name": "c2",
        "intra_node_gbps": 200,
        "inter_node_gbps": 8,
        "topology": "bad.conf",
        "gpus_per_node": 8,
    }
    Path(files[1]).write_text(json.dumps(mc))
    line = one_error_line(invoke("plan", files[0], files[1], "--out", str(tmp_path / "o")))
    assert line.startswith(f"error: {files[1]}: clusters[2].topology: ")
    assert "bad.conf:1" in line


def test_a_cluster_from_a_topology_file(files: tuple[str, str], tmp_path: Path) -> None:
    (tmp_path / "guide.conf").write_text(SLURM.read_text())
    mc = json.loads(Path(files[1]).read_text())
    mc["clusters"] = [
        {
            "name": "t",
            "intra_node_gbps": 200,
            "inter_node_gbps": 8,
            "topology": "guide.conf",
            "gpus_per_node": 2,
            "free": {"tux0": [], "tux1": [1]},
        }
    ]
    mc["links"] = []
    Path(files[1]).write_text(json.dumps(mc))
    result = invoke("plan", files[0], files[1], "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    ranks = parse_ranks((tmp_path / "o" / "ranks.txt").read_text())
    assert {r.node for r in ranks} >= {"tux1"} and "tux0" not in {r.node for r in ranks}


def test_bad_job_field(files: tuple[str, str], tmp_path: Path) -> None:
    data = json.loads(Path(files[0]).read_text())
    data["blocks"] = 5
    Path(files[0]).write_text(json.dumps(data))
    line = one_error_line(invoke("plan", files[0], files[1], "--out", str(tmp_path / "o")))
    assert line.startswith(f"error: {files[0]}: gpus: 12 GPUs do not split")


def test_missing_file(files: tuple[str, str], tmp_path: Path) -> None:
    line = one_error_line(
        invoke("plan", str(tmp_path / "x.json"), files[1], "--out", str(tmp_path))
    )
    assert "x.json" in line
