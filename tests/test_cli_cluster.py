"""The command line from a real cluster: ``topoopt instances import`` and ``solve --hostfile``
on the 256-node Slurm example of docs/scheduler.md."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

import topoopt
from topoopt.cli import main
from topoopt.gpuselect.loaders import INTRA_HEADER
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
    instance_file = ROOT / "instances" / "partition" / "small" / "small-0-0.json"
    out = invoke(
        "solve", str(instance_file), "-s", "greedy-lowcut", "--hostfile", str(tmp_path / "h")
    )
    assert out.exit_code == 2, out.output
    assert "--hostfile" in out.output and "no rank order" in out.output
    assert not (tmp_path / "h").exists()


# --------------------------------------------------------------------------- gpuselect

GPUSELECT = ROOT / "examples" / "gpuselect"


def import_pool(out: Path, *extra: str) -> Result:
    return invoke(
        "instances", "import", "gpuselect",
        "--hosts", "gpu[01-04]", "--hosts", "ws[01-02]",
        "--topo-file", f"gpu[01-04]={GPUSELECT / 'dgx-a100.txt'}",
        "--topo-file", f"ws[01-02]={GPUSELECT / 'pcie-4gpu.txt'}",
        "--idle", f"@{GPUSELECT / 'idle.txt'}",
        "--inter-gbps", "25",
        "--out", str(out),
        *extra,
    )  # fmt: skip


def test_gpuselect_import_then_solve_writes_cuda_visible_devices(tmp_path: Path) -> None:
    from topoopt.gpuselect.pool import devices_lines

    instance_file = tmp_path / "pool.json"
    made = import_pool(instance_file, "--k", "12")
    assert made.exit_code == 0, made.output
    assert "k=12 of 29 idle GPUs on 6 hosts" in made.output
    instance = topoopt.load(instance_file)
    assert instance.name == "pool-k12"
    assert [h.type for h in instance.hosts] == ["dgx-a100"] * 4 + ["pcie-4gpu"] * 2
    hostfile = tmp_path / "devices"
    solved = invoke("solve", str(instance_file), "-s", "auto", "--hostfile", str(hostfile))
    assert solved.exit_code == 0, solved.output
    lines = hostfile.read_text().splitlines()
    expected = topoopt.solve(instance, "gpuselect/auto")
    assert lines == devices_lines(expected)
    assert all(" CUDA_VISIBLE_DEVICES=" in line for line in lines)
    for line in lines:  # the printed summary shows the same devices
        host, devices = line.split(" ")
        assert f"{host} " in solved.output and devices in solved.output


def test_gpuselect_import_with_a_type_and_tables(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text(",".join(INTRA_HEADER) + "\nag,2,01,1048576,40\n")
    out = tmp_path / "pool.json"
    made = invoke(
        "instances", "import", "gpuselect", "--hosts", "n[1-3]", "--type", "T",
        "--table", f"T={table}", "--idle", "n1:0,n2", "--k", "3", "--inter-gbps", "10",
        "--name", "tiny", "--out", str(out),
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    instance = topoopt.load(out)
    assert instance.name == "tiny" and instance.bandwidth.kind == "bottleneck"
    assert [(h.gpus, h.available) for h in instance.hosts] == [(2, (0,)), (2, (0, 1)), (2, ())]


def test_gpuselect_import_errors_name_the_option(tmp_path: Path) -> None:
    out = tmp_path / "pool.json"
    unknown = import_pool(out, "--k", "2", "--idle", "gpu09:0")
    assert unknown.exit_code == 2
    assert "--idle: 'gpu09:0': host 'gpu09' is not in the pool" in unknown.output
    wide = import_pool(out, "--k", "2", "--idle", "ws01:4")
    assert wide.exit_code == 2
    assert "GPU 4 out of range: host 'ws01' has GPUs 0..3" in wide.output
    no_table = invoke(
        "instances", "import", "gpuselect", "--hosts", "n1=A", "--hosts", "n2=B",
        "--table", "A=data:none.csv", "--k", "1", "--out", str(out),
    )  # fmt: skip
    assert no_table.exit_code == 2 and "--table A" in no_table.output
    missing_k = import_pool(out)
    assert missing_k.exit_code == 2 and "Missing option '--k'" in missing_k.output
    stray = import_pool(out, "--k", "2", "--dp", "4")
    assert stray.exit_code == 2 and "No such option '--dp'" in stray.output
    no_hosts = invoke("instances", "import", "gpuselect", "--k", "2", "--out", str(out))
    assert no_hosts.exit_code == 2
    assert "--hosts: required unless --scontrol gives the nodes" in no_hosts.output
    assert not out.exists()


def test_placement_import_still_requires_its_options(tmp_path: Path) -> None:
    out = invoke(
        "instances", "import", "placement", "--topology", str(EXAMPLE / "topology.conf"),
        "--free", "n1", "--out", str(tmp_path / "x.json"),
    )  # fmt: skip
    assert out.exit_code == 2 and "Missing option '--level'" in out.output
    stray = import_example(tmp_path / "x.json", "--level", "1", "--idle", "n1:0")
    assert stray.exit_code == 2 and "No such option '--idle'" in stray.output


def test_gpuselect_import_from_scontrol(tmp_path: Path) -> None:
    out = tmp_path / "pool.json"
    made = invoke(
        "instances", "import", "gpuselect", "--scontrol", str(GPUSELECT / "scontrol.txt"),
        "--topo-file", f"a100={GPUSELECT / 'dgx-a100.txt'}", "--k", "6", "--inter-gbps", "25",
        "--out", str(out),
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    instance = topoopt.load(out)
    assert [(h.name, h.type, h.available) for h in instance.hosts][:2] == [
        ("gpu01", "a100", (2, 3, 4, 5, 6, 7)),
        ("gpu02", "a100", (3, 4, 6)),
    ]
    assert len(instance.hosts) == 5
    picked = invoke(
        "instances", "import", "gpuselect", "--scontrol", str(GPUSELECT / "scontrol.txt"),
        "--hosts", "gpu[01-02]", "--idle", "gpu02:0-7", "--type", "A800", "--k", "8",
        "--inter-gbps", "25", "--out", str(out),
    )  # fmt: skip
    assert picked.exit_code == 0, picked.output
    instance = topoopt.load(out)
    assert [(h.name, h.type, h.available) for h in instance.hosts] == [
        ("gpu01", "A800", ()),
        ("gpu02", "A800", tuple(range(8))),
    ]
    unknown = invoke(
        "instances", "import", "gpuselect", "--scontrol", str(GPUSELECT / "scontrol.txt"),
        "--hosts", "cpu01", "--k", "1", "--out", str(out),
    )  # fmt: skip
    assert unknown.exit_code == 2 and "--hosts: node 'cpu01' has no GPU" in unknown.output


def test_leaf_level_skips_a_level_below_the_minipods(tmp_path: Path) -> None:
    """--level 0 (the spine as one minipod) with --leaf-level 2: its leaves are the 16 leaf
    switches (those with a free node), not the 4 pods in between."""
    out = tmp_path / "job.json"
    made = import_example(out, "--level", "0", "--leaf-level", "2")
    assert made.exit_code == 0, made.output
    (spine,) = topoopt.load(out).minipods
    assert spine.name == "spine"
    assert all(leaf.name.startswith("leaf") for leaf in spine.leaves)
    assert len(spine.leaves) > 4
