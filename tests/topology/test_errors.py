"""Malformed inputs: one test per rule, each error naming the file, the line and the rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from topoopt.core.errors import TopooptError
from topoopt.topology import (
    Switch,
    Topology,
    TopologyError,
    expand,
    load_topology,
    parse_sinfo,
    read_free,
)


def conf(tmp_path: Path, text: str, name: str = "topology.conf") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


CONF_RULES = [
    # (id, file text, line, message part)
    (
        "node-under-two-switches",
        "SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 Nodes=n[4-6]\n",
        2,
        "node 'n4' is under two switches: 's0' (line 1) and 's1'",
    ),
    (
        "switch-cycle",
        "SwitchName=a Switches=b\nSwitchName=b Switches=c\nSwitchName=c Switches=a\n"
        "SwitchName=s Nodes=n1\n",
        1,
        "switch cycle: a -> b -> c -> a",
    ),
    ("self-cycle", "SwitchName=a Switches=a\n", 1, "switch cycle: 'a' lists itself"),
    (
        "dangling-switch",
        "SwitchName=s0 Nodes=n1\nSwitchName=top Switches=s[0-1]\n",
        2,
        "dangling switch name: 'top' lists child switch 's1', which is not defined",
    ),
    ("empty-hostlist", "SwitchName=s0 Nodes=\n", 1, "Nodes= has an empty hostlist"),
    ("bad-hostlist", "SwitchName=s0 Nodes=tux[1-\n", 1, "missing bracket"),
    ("reversed-range", "SwitchName=s0 Nodes=tux[5-1]\n", 1, "bad range"),
    ("not-slurm-hostlist", "SwitchName=s0 Nodes=a!b\n", 1, "not Slurm hostlist syntax"),
    ("unknown-key", "SwitchName=s0 Nodes=n1 Speed=10\n", 1, "unknown parameter Speed="),
    ("unknown-line", "Include other.conf\n", 1, "expected Key=Value"),
    ("unknown-first-key", "Nodes=n1\n", 1, "unknown parameter Nodes="),
    ("repeated-key", "SwitchName=s0 Nodes=n1 nodes=n2\n", 1, "Nodes= given twice"),
    (
        "switch-defined-twice",
        "SwitchName=s0 Nodes=n1\nSwitchName=s0 Nodes=n2\n",
        2,
        "switch 's0' is defined twice (first defined on line 1)",
    ),
    (
        "neither-switches-nor-nodes",
        "SwitchName=s0 LinkSpeed=5\n",
        1,
        "neither Switches= nor Nodes=",
    ),
    (
        "both-switches-and-nodes",
        "SwitchName=s0 Nodes=n1\nSwitchName=s1 Switches=s0 Nodes=n2\n",
        2,
        "has both child switches and nodes",
    ),
    (
        "two-parents",
        "SwitchName=a Nodes=n1\nSwitchName=b Nodes=n2\nSwitchName=p Switches=a,b\n"
        "SwitchName=q Switches=a\n",
        4,
        "switch 'a' has two parents, 'p' (line 3) and 'q'",
    ),
    ("bad-link-speed", "SwitchName=s0 Nodes=n1 LinkSpeed=fast\n", 1, "LinkSpeed must be"),
    ("mixed-tree-and-block", "SwitchName=s0 Nodes=n1\nBlockName=b Nodes=n2\n", 2, "are mixed"),
    (
        "node-in-two-blocks",
        "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[4-8]\n",
        2,
        "node 'n4' is in two blocks",
    ),
    (
        "block-sizes-not-power-of-two",
        "BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,12\n",
        2,
        "power-of-two multiple",
    ),
    (
        "block-smaller-than-base",
        "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-6]\nBlockSizes=4\n",
        2,
        "block 'b2' has 2 nodes, fewer than the base block size 4",
    ),
    (
        "block-sizes-twice",
        "BlockName=b1 Nodes=n[1-4]\nBlockSizes=4\nBlockSizes=4\n",
        3,
        "BlockSizes= given twice",
    ),
    ("ring", "RingName=r0 Nodes=n[1-8]\n", 1, "topology/ring is not supported"),
    ("nothing", "# only a comment\n", None, "defines no topology"),
]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [c[1:] for c in CONF_RULES],
    ids=[c[0] for c in CONF_RULES],
)
def test_topology_conf_rule(tmp_path: Path, text: str, line: int | None, message: str) -> None:
    path = conf(tmp_path, text)
    with pytest.raises(TopologyError) as err:
        load_topology(path, format="slurm")
    assert message in str(err.value)
    assert err.value.line == line
    assert err.value.source == str(path)
    where = f"{path}:{line}: " if line else f"{path}: "
    assert str(err.value).startswith(where)
    assert isinstance(err.value, TopooptError) and isinstance(err.value, ValueError)


YAML_RULES = [
    ("invalid-yaml", "- topology: [a\n", None, "not valid YAML"),
    ("not-a-list", "topology: t\n", 1, "must be a list"),
    (
        "unknown-key",
        "- topology: t\n  tree:\n    switches: []\n  speed: 3\n",
        4,
        "unknown key 'speed' in a topology",
    ),
    (
        "unknown-switch-key",
        "- topology: t\n  tree:\n    switches:\n    - switch: s\n      nodes: n1\n      link: 3\n",
        6,
        "unknown key 'link' in a switch",
    ),
    ("no-type", "- topology: t\n", 1, "exactly one of tree, block, flat"),
    ("two-types", "- topology: t\n  flat: true\n  tree: {switches: []}\n", 1, "exactly one"),
    (
        "empty-hostlist",
        "- topology: t\n  tree:\n    switches:\n    - switch: s\n      nodes: ''\n",
        5,
        "nodes has an empty hostlist",
    ),
    (
        "dangling",
        "- topology: t\n  tree:\n    switches:\n    - switch: s\n      children: x\n",
        4,
        "dangling switch name",
    ),
    (
        "duplicate-key",
        "- topology: t\n  topology: u\n  flat: true\n",
        2,
        "key 'topology' given twice",
    ),
    (
        "duplicate-topology",
        "- topology: t\n  flat: true\n- topology: t\n  flat: true\n",
        3,
        "topology 't' is defined twice",
    ),
    (
        "block-without-nodes",
        "- topology: t\n  block:\n    blocks:\n    - block: b\n",
        4,
        "block 'b' has no nodes",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [c[1:] for c in YAML_RULES],
    ids=[c[0] for c in YAML_RULES],
)
def test_topology_yaml_rule(tmp_path: Path, text: str, line: int | None, message: str) -> None:
    path = conf(tmp_path, text, "topology.yaml")
    with pytest.raises(TopologyError) as err:
        load_topology(path, format="slurm-yaml")
    assert message in str(err.value)
    if line is not None:
        assert err.value.line == line
    assert err.value.source == str(path)


TOPOGRAPH_RULES = [
    ("unknown-top-key", "switches: {}\nracks: []\n", 2, "unknown key 'racks' in the model"),
    ("no-switches", "blocks: []\n", 1, "has no 'switches'"),
    (
        "two-parents",
        "switches:\n  a: {switches: [c]}\n  b: {switches: [c, d]}\n",
        3,
        "switch 'c' has two parents",
    ),
    (
        "cycle",
        "switches:\n  r: {switches: [a]}\n  a: {switches: [b]}\n  b: {switches: [a]}\n",
        3,
        "switch cycle",
    ),
    (
        "node-under-two",
        "switches:\n  r: {switches: [a, b]}\nblocks:\n- switch: a\n  nodes: ['n[1-2]']\n"
        "- switch: b\n  nodes: [n2]\n",
        6,
        "node 'n2' is under two switches",
    ),
    (
        "empty-range",
        "switches:\n  r: {switches: [a]}\nblocks:\n- switch: a\n  nodes: ['']\n",
        5,
        "empty hostlist",
    ),
    (
        "dangling-capacity-block",
        "switches:\n- name: s\n  capacity_blocks: [cb9]\n",
        2,
        "dangling capacity block name",
    ),
    (
        "unknown-block-key",
        "switches: {r: {switches: [a]}}\nblocks:\n- switch: a\n  nodes: [n1]\n  rack: 3\n",
        5,
        "unknown key 'rack' in a block",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [c[1:] for c in TOPOGRAPH_RULES],
    ids=[c[0] for c in TOPOGRAPH_RULES],
)
def test_topograph_rule(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = conf(tmp_path, text, "model.yaml")
    with pytest.raises(TopologyError) as err:
        load_topology(path, format="topograph")
    assert message in str(err.value)
    assert err.value.line == line


def test_k8s_rules(tmp_path: Path) -> None:
    levels = ["x/spine", "x/leaf"]

    def node(name: object, **labels: str) -> dict[str, object]:
        return {"metadata": {"name": name, "labels": labels}}

    cases = [
        ({"kind": "List"}, "items", "expected the output of 'kubectl get nodes -o json'"),
        ({"items": [node(None)]}, "items[0]", "a node has no metadata.name"),
        (
            {"items": [node("a", **{"x/spine": "s", "x/leaf": "l"})] * 2},
            "items[1]",
            "node 'a' is listed twice",
        ),
        ({"items": [node("a")]}, None, "no node has all the labels"),
    ]
    for data, path, message in cases:
        file = tmp_path / "nodes.json"
        file.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(TopologyError) as err:
            load_topology(file, format="k8s", levels=levels)
        assert message in str(err.value)
        assert err.value.path == path
    with pytest.raises(TopologyError, match="level keys must be distinct"):
        load_topology(file, format="k8s", levels=["a", "a"])
    file.write_text("{not json", encoding="utf-8")
    with pytest.raises(TopologyError, match=r"nodes\.json:1: not valid JSON"):
        load_topology(file, format="k8s", levels=levels)


def test_json_rules(tmp_path: Path) -> None:
    file = tmp_path / "t.json"
    cases = [
        ({"switches": []}, "format", "not a topology file"),
        ({"format": "topoopt-topology", "switches": [], "colour": 1}, "(top)", "unknown key"),
        (
            {"format": "topoopt-topology", "switches": [{"nodes": ["a"]}]},
            "switches[0]",
            "a switch has no name",
        ),
        (
            {"format": "topoopt-topology", "switches": [{"name": "s", "nodes": "n[1-"}]},
            "switches[0].nodes",
            "missing bracket",
        ),
    ]
    for data, path, message in cases:
        file.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(TopologyError) as err:
            load_topology(file, format="json")
        assert message in str(err.value) and err.value.path == path


def test_free_rules(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="empty hostlist"):
        read_free("")
    with pytest.raises(TopologyError, match=r"<free nodes>: hostlist 'n\[1-': missing"):
        read_free("n[1-")
    bad = tmp_path / "free.txt"
    bad.write_text("n1\nn[2-\n", encoding="utf-8")
    with pytest.raises(TopologyError) as err:
        read_free(bad)
    assert err.value.line == 2
    with pytest.raises(TopologyError, match="unknown node state 'sleepy'"):
        parse_sinfo("n1 idle\nn2 sleepy\n")
    with pytest.raises(TopologyError, match="expected 'NODE STATE'"):
        parse_sinfo("n1 idle extra\n")
    with pytest.raises(TopologyError, match="cannot read the file"):
        read_free(tmp_path / "missing.txt")


def test_type_rules() -> None:
    leaf = Switch("s0", nodes=("a",))
    with pytest.raises(TopologyError, match="node 'a' is under two switches"):
        Topology((leaf, Switch("s1", nodes=("a",))))
    with pytest.raises(TopologyError, match="switch 's0' appears twice"):
        Topology((Switch("p", children=(leaf,)), Switch("q", children=(leaf,))))
    with pytest.raises(TopologyError, match="both child switches and nodes"):
        Switch("x", children=(leaf,), nodes=("b",))
    with pytest.raises(TopologyError, match="lists node 'b' twice"):
        Switch("x", nodes=("b", "b"))
    with pytest.raises(TopologyError, match=r"contains '\['"):
        Switch("x[1]")
    with pytest.raises(TopologyError, match="level_names has 2 names"):
        Topology((leaf,), level_names=("a", "b"))
    with pytest.raises(TopologyError, match="gpus: node 'zz' is not in the topology"):
        Topology((leaf,), gpus={"zz": 8})
    with pytest.raises(TopologyError, match="empty hostlist"):
        expand("  ")
