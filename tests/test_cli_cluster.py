"""The command line from a real cluster: ``topoopt instances import`` and ``solve --hostfile``
on the 256-node Slurm example of docs/scheduler.md."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

import topoopt
from topoopt.cli import main
from topoopt.topology import read_free

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "slurm"
H100 = ROOT / "instances" / "gpuselect" / "protocol-h100"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def import_example(out: Path, *extra: str) -> Result:
    return invoke(
        "instances", "import", "placement",
        "--topology", str(EXAMPLE / "topology.conf"),
        "--free", f"@{EXAMPLE / 'sinfo.txt'}",
        "--dp", "16", "--tp", "8", "--pp", "4", "--alpha", "0.5",
        "--out", str(out),
        *extra,
    )  # fmt: skip


def test_import_then_solve_writes_the_rank_order_as_a_hostfile(tmp_path: Path) -> None:
    instance_file = tmp_path / "job.json"
    made = import_example(instance_file, "--level", "1")
    assert made.exit_code == 0, made.output
    assert "4 minipods" in made.output
    instance = topoopt.load(instance_file)
    assert instance.name == "topology-level1"
    assert [m.name for m in instance.minipods] == ["pod0", "pod1", "pod2", "pod3"]
    hostfile = tmp_path / "hosts"
    solved = invoke("solve", str(instance_file), "-s", "exact-mip", "--hostfile", str(hostfile))
    assert solved.exit_code == 0, solved.output
    hosts = hostfile.read_text().splitlines()
    expected = topoopt.solve(instance, "placement/exact-mip").to_dict()["solution"]["rank_order"]
    assert hosts == expected
    assert len(hosts) == 64 == len(set(hosts))
    assert set(hosts) <= read_free(f"@{EXAMPLE / 'sinfo.txt'}")


def test_level_by_negative_depth_and_mixed_nodes(tmp_path: Path) -> None:
    out = tmp_path / "job.json"
    assert import_example(out, "--level", "-2", "--mixed").exit_code == 0
    with_mixed = topoopt.load(out)
    assert import_example(out, "--level", "-2").exit_code == 0
    assert with_mixed.total_free > topoopt.load(out).total_free


def test_unknown_level_is_a_usage_error_naming_the_levels(tmp_path: Path) -> None:
    out = import_example(tmp_path / "job.json", "--level", "pods")
    assert out.exit_code == 2
    assert "unknown level 'pods'" in out.output


def test_hostfile_of_a_family_without_a_rank_order_is_refused(tmp_path: Path) -> None:
    instance_file = sorted(H100.glob("*.json"))[0]
    out = invoke("solve", str(instance_file), "-s", "eha", "--hostfile", str(tmp_path / "h"))
    assert out.exit_code == 2
    assert "--hostfile" in out.output and "no rank order" in out.output
    assert not (tmp_path / "h").exists()
