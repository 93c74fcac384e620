"""Readers for every level (issue #30): Volcano HyperNodes, Kueue Topology objects, topograph
level names, and the placement importer keeping every level; bad input names the file and
line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import topoopt
from topoopt.topology import (
    TopologyError,
    kueue_flavor_labels,
    label_selector,
    load_topology,
    parse_volcano_hypernodes,
    read_kueue_topology,
    read_topograph,
    read_volcano_hypernodes,
)

DATA = Path(__file__).parent / "data"
NODES = [f"node-{i}" for i in range(5)]


def test_volcano_hypernodes_keep_every_tier() -> None:
    topo = read_volcano_hypernodes(DATA / "volcano/hypernodes.yaml", nodes=NODES)
    assert topo.levels == ("tier3", "tier2", "tier1")
    assert topo.path("node-3") == ("top", "spine0", "rack1")
    assert topo.nodes_under("spine1") == ("node-4",)
    with pytest.raises(TopologyError, match=r"hypernodes\.yaml:25: .*regexMatch.*needs the node"):
        read_volcano_hypernodes(DATA / "volcano/hypernodes.yaml")


def _hypernode(name: str, tier: int, *members: tuple[str, str]) -> str:
    lines = [
        "---",
        "apiVersion: topology.volcano.sh/v1alpha1",
        "kind: HyperNode",
        f"metadata: {{name: {name}}}",
        "spec:",
        f"  tier: {tier}",
        "  members:",
    ]
    lines += [f"  - {{type: {t}, selector: {{exactMatch: {{name: {m}}}}}}}" for t, m in members]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "words", "line"),
    [
        (  # a node under two parents
            _hypernode("r0", 1, ("Node", "n0")) + _hypernode("r1", 1, ("Node", "n0")),
            "node 'n0' is in two HyperNodes: 'r0'",
            None,
        ),
        (  # a HyperNode under two parents (not parallel: different members)
            _hypernode("r0", 1, ("Node", "n0"))
            + _hypernode("r1", 1, ("Node", "n1"))
            + _hypernode("s0", 2, ("HyperNode", "r0"))
            + _hypernode("s1", 2, ("HyperNode", "r0"), ("HyperNode", "r1")),
            "two parents",
            None,
        ),
        (  # levels of uneven depth: tier 3 lists a tier-1 HyperNode
            _hypernode("r0", 1, ("Node", "n0"))
            + _hypernode("r1", 1, ("Node", "n1"))
            + _hypernode("s0", 2, ("HyperNode", "r0"))
            + _hypernode("t", 3, ("HyperNode", "s0"), ("HyperNode", "r1")),
            "levels of uneven depth: HyperNode 't' \\(tier 3\\) lists 'r1' of tier 1",
            33,
        ),
        (  # a cycle cannot keep tiers one apart: it shows as uneven depth
            _hypernode("a", 1, ("HyperNode", "b")) + _hypernode("b", 2, ("HyperNode", "a")),
            "levels of uneven depth",
            8,
        ),
        (_hypernode("r0", -1, ("Node", "n0")), "spec.tier must be a non-negative integer", 6),
        ("kind: Node\nmetadata: {name: x}\n", "expected a HyperNode", 1),
        (
            _hypernode("r0", 1).replace(
                "members:",
                "members:\n  - {type: Node, selector: {labelMatch: {matchLabels: {a: b}}}}",
            ),
            "labelMatch needs the nodes' labels",
            8,
        ),
        (  # nodes above the lowest tier
            _hypernode("r0", 1, ("Node", "n0"))
            + _hypernode("r1", 1, ("Node", "n1"))
            + _hypernode("s0", 2, ("HyperNode", "r0"))
            + _hypernode("s1", 2, ("Node", "n2"))
            + _hypernode("t", 3, ("HyperNode", "s0"), ("HyperNode", "s1")),
            "holds nodes at tier 2; nodes belong to the lowest tier, 1",
            None,
        ),
    ],
)
def test_bad_hypernodes_name_the_file_and_line(text: str, words: str, line: int | None) -> None:
    with pytest.raises(TopologyError, match=words) as info:
        parse_volcano_hypernodes(text, "hn.yaml")
    assert info.value.source == "hn.yaml"
    if line is not None:
        assert info.value.line == line, info.value


def test_volcano_nodes_by_label_with_the_kubectl_nodes() -> None:
    """labelMatch (matchLabels, matchExpressions) against ``kubectl get nodes -o json``; tiers
    from 0, levels named by their tierName."""
    topo = load_topology(DATA / "volcano/labels.yaml", nodes=str(DATA / "k8s/nodes.json"))
    assert topo.levels == ("spine", "leaf")
    assert topo.nodes_under("leaf-s2") == ("Node201", "Node202", "Node205")
    assert topo.nodes_under("leaf-cb3") == ("Node304", "Node305", "Node306")
    assert "control-plane-1" not in topo
    with pytest.raises(TopologyError, match=r"labels\.yaml:11: .*labelMatch needs the nodes"):
        load_topology(DATA / "volcano/labels.yaml")
    with pytest.raises(TopologyError, match="unknown option"):
        load_topology(DATA / "slurm/man-tree.conf", nodes=str(DATA / "k8s/nodes.json"))
    with pytest.raises(TopologyError, match=r"unknown option\(s\) for format 'k8s': \['nodes'\]"):
        load_topology(DATA / "k8s/nodes.json", levels=["a"], nodes=str(DATA / "k8s/nodes.json"))


def test_volcano_docs_leaf_example_selects_a_node_twice() -> None:
    """Volcano's own leaf HyperNode example names node-0 and matches node-[01]: one member
    set, as GetMembers builds it (was: 'node-0 is in two HyperNodes')."""
    text = _hypernode("s0", 1, ("Node", "node-0")).replace(
        "members:", "members:\n  - {type: Node, selector: {regexMatch: {pattern: 'node-[01]'}}}"
    )
    topo = parse_volcano_hypernodes(text, nodes=["node-0", "node-1", "node-2"])
    assert sorted(topo.nodes_under("s0")) == ["node-0", "node-1"]


def test_volcano_regex_matches_anywhere_in_the_name_as_go_does() -> None:
    """Volcano's GetMembers calls Go's Regexp.MatchString: the pattern may match a part of the
    name; ``^...$`` anchors it."""
    text = _hypernode("r0", 1).replace(
        "members:", "members:\n  - {type: Node, selector: {regexMatch: {pattern: 'ode-1'}}}"
    )
    names = ["node-1", "node-10", "xnode-1", "node-2"]
    assert parse_volcano_hypernodes(text, nodes=names).nodes_under("r0") == (
        "node-1", "node-10", "xnode-1")  # fmt: skip
    anchored = text.replace("'ode-1'", "'^node-1$'")
    assert parse_volcano_hypernodes(anchored, nodes=names).nodes_under("r0") == ("node-1",)


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({"matchLabels": {"rack": "r1"}}, {"rack": "r1"}, True),
        ({"matchLabels": {"rack": "r1"}}, {"rack": "r2"}, False),
        (
            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1", "r2"]}]},
            {"rack": "r2"},
            True,
        ),
        (
            {"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r1"]}]},
            {},
            True,
        ),  # fmt: skip  (NotIn holds without the key, as in Kubernetes)
        (
            {"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r1"]}]},
            {"rack": "r1"},
            False,
        ),
        ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, {"gpu": ""}, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, {"gpu": "a"}, False),
        (
            {
                "matchLabels": {"rack": "r1"},
                "matchExpressions": [{"key": "gpu", "operator": "Exists"}],
            },
            {"rack": "r1"},
            False,
        ),
        ({}, {"rack": "r1"}, False),  # an empty labelMatch selects nothing (Volcano)
    ],
)
def test_label_selectors_follow_kubernetes(selector: dict, labels: dict, expected: bool) -> None:
    assert label_selector(selector)(labels) is expected


@pytest.mark.parametrize(
    ("selector", "words"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]},
            "operator 'Equals' is not one of",
        ),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "operator In needs values"),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "operator Exists takes no values",
        ),
        ({"matchLabel": {"a": "b"}}, "unknown key"),
        ({"matchExpressions": [{"operator": "Exists"}]}, "needs a key"),
    ],
)
def test_bad_label_selectors_name_the_rule(selector: dict, words: str) -> None:
    import yaml

    member = yaml.safe_dump({"type": "Node", "selector": {"labelMatch": selector}},
                            default_flow_style=True).strip()  # fmt: skip
    text = _hypernode("r0", 1).replace("members:", f"members:\n  - {member}")
    with pytest.raises(TopologyError, match=words) as info:
        parse_volcano_hypernodes(text, "hn.yaml", nodes={"n0": {"a": "x"}})
    assert info.value.line == 8


def test_volcano_is_guessed_and_loaded(tmp_path: Path) -> None:
    path = DATA / "volcano/hypernodes.yaml"
    text = path.read_text().replace("regexMatch:\n        pattern: node-[23]",
                                    "exactMatch:\n        name: node-2")  # fmt: skip
    exact = tmp_path / "exact.yaml"
    exact.write_text(text)
    topo = load_topology(exact)  # guessed: volcano
    assert topo.levels == ("tier3", "tier2", "tier1") and "node-3" not in topo


def test_kueue_topology_levels_with_the_nodes() -> None:
    topo = read_kueue_topology(DATA / "kueue/topology.yaml", DATA / "k8s/nodes.json")
    assert topo.levels == ("network.topology.nvidia.com/spine", "network.topology.nvidia.com/leaf")
    assert topo.level("leaf") == 1
    with pytest.raises(TopologyError, match=r"hypernodes\.yaml:2: expected one Kueue Topology"):
        read_kueue_topology(DATA / "volcano/hypernodes.yaml", DATA / "k8s/nodes.json")


def test_kueue_flavor_keeps_the_nodes_of_its_node_labels() -> None:
    """A ResourceFlavor naming the Topology restricts TAS to the nodes with its nodeLabels."""
    topo = read_kueue_topology(DATA / "kueue/flavor.yaml", DATA / "k8s/nodes.json")
    assert sorted(topo.nodes) == ["Node304", "Node305", "Node306"]
    two = (DATA / "kueue/flavor.yaml").read_text() + (
        "---\nkind: ResourceFlavor\nmetadata: {name: other}\n"
        "spec: {nodeLabels: {a: b}, topologyName: default}\n"
    )
    with pytest.raises(TopologyError, match=r"ResourceFlavors \['other', 'tas-flavor'\] use"):
        kueue_flavor_labels(two, "two.yaml")
    elsewhere = (DATA / "kueue/flavor.yaml").read_text().replace("topologyName: default", "")
    assert kueue_flavor_labels(elsewhere) is None
    odd = (
        "kind: Topology\nmetadata: x\nspec: {levels: [{nodeLabel: a}]}\n---\nkind: ResourceFlavor\n"
    )
    assert kueue_flavor_labels(odd + "metadata: 1\nspec: {topologyName: x}\n") is None
    with pytest.raises(TopologyError, match="nodeLabels must be an object"):
        kueue_flavor_labels(odd + "spec: {nodeLabels: [a], topologyName: null}\n", "f.yaml")


def test_topograph_levels_are_named_by_their_labels() -> None:
    topo = read_topograph(DATA / "topograph/dual-level.yaml")
    assert topo.levels == ("topology.kubernetes.io/region", "topology.kubernetes.io/zone",
                           "level2")  # fmt: skip
    assert topo.level("zone") == 1


def _import(tmp_path: Path, *args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from topoopt.cli import main

    result = CliRunner().invoke(main, ["instances", "import", "placement", *args,
                                       "--out", str(tmp_path / "i.json")])  # fmt: skip
    return result.exit_code, result.output


def test_import_keeps_every_level_for_a_multilevel_objective(tmp_path: Path) -> None:
    code, out = _import(tmp_path, "--topology", str(DATA / "topograph/dual-level.yaml"),
                        "--level", "0", "--free", "node[0001-0018,0037-0090]", "--dp", "16",
                        "--tp", "8", "--pp", "2", "--alpha", "0.5", "--levels", "lex")  # fmt: skip
    assert code == 0, out
    inst = topoopt.load(tmp_path / "i.json")
    assert inst.levels == ("topology.kubernetes.io/region", "topology.kubernetes.io/zone",
                           "level2")  # fmt: skip
    assert inst.objective.mode == "lex"
    # with a Kueue Topology object and the nodes
    code, out = _import(tmp_path, "--topology", str(DATA / "k8s/nodes.json"),
                        "--kueue-topology", str(DATA / "kueue/topology.yaml"), "--level", "0",
                        "--free", "@" + str(_free_file(tmp_path)), "--dp", "2", "--tp", "8",
                        "--pp", "2", "--alpha", "0.5", "--levels", "lex")  # fmt: skip
    assert code == 0, out
    assert topoopt.load(tmp_path / "i.json").n_levels == 2
    # with the ResourceFlavor of the topology: its nodes only
    code, out = _import(tmp_path, "--topology", str(DATA / "k8s/nodes.json"),
                        "--kueue-topology", str(DATA / "kueue/flavor.yaml"), "--level", "0",
                        "--free", "Node[304-306]", "--dp", "1", "--tp", "8",
                        "--pp", "2", "--alpha", "0.5")  # fmt: skip
    assert code == 0, out
    assert [m.free_nodes for m in topoopt.load(tmp_path / "i.json").minipods] == [3]
    # Volcano HyperNodes selecting nodes by label, with the nodes
    code, out = _import(tmp_path, "--topology", str(DATA / "volcano/labels.yaml"),
                        "--nodes", str(DATA / "k8s/nodes.json"), "--level", "0",
                        "--free", "@" + str(_free_file(tmp_path)), "--dp", "2", "--tp", "8",
                        "--pp", "2", "--alpha", "0.5", "--levels", "lex")  # fmt: skip
    assert code == 0, out
    assert topoopt.load(tmp_path / "i.json").levels == ("spine", "leaf")


def _free_file(tmp_path: Path) -> Path:
    data = json.loads((DATA / "k8s/nodes.json").read_text())
    names = [
        n["metadata"]["name"]
        for n in data["items"]
        if "network.topology.nvidia.com/leaf" in n["metadata"].get("labels", {})
    ]
    path = tmp_path / "free.txt"
    path.write_text("\n".join(names) + "\n")
    return path


def test_import_refuses_uneven_levels_naming_the_file(tmp_path: Path) -> None:
    conf = tmp_path / "uneven.conf"
    conf.write_text("SwitchName=l0 Nodes=n[0-1]\nSwitchName=l1 Nodes=n[2-3]\n"
                    "SwitchName=s0 Switches=l0\nSwitchName=top Switches=s0,l1\n")  # fmt: skip
    code, out = _import(tmp_path, "--topology", str(conf), "--level", "0", "--free", "n[0-3]",
                        "--dp", "2", "--tp", "8", "--pp", "1", "--alpha", "0.5",
                        "--levels", "lex")  # fmt: skip
    assert code == 2, out
    assert "uneven.conf" in out and "levels of uneven depth" in out and "'l1'" in out
    assert load_topology(conf).balanced is False


def test_import_takes_kueue_multi_layer_slices(tmp_path: Path) -> None:
    """``--slice-layers LEVEL:SIZE,...`` is Kueue's multi-layer slice annotation: the
    instance keeps the layers (levels by name) and bad layers name the option or field."""
    common = ["--topology", str(DATA / "topograph/dual-level.yaml"), "--level", "0",
              "--free", "node[0001-0018,0037-0090]", "--dp", "16", "--tp", "8", "--pp", "2",
              "--alpha", "0.5"]  # fmt: skip
    code, out = _import(tmp_path, *common, "--slice-layers", "zone:16,level2:2")
    assert code == 0, out
    inst = topoopt.load(tmp_path / "i.json")
    assert inst.constraints.slice_layers == (
        (16, "topology.kubernetes.io/zone"),
        (2, "level2"),
    )
    code, out = _import(tmp_path, *common, "--slice-layers", "zone")
    assert code != 0 and "--slice-layers" in out
    code, out = _import(tmp_path, *common, "--slice-layers", "level2:2,zone:16")
    assert code != 0 and "constraints.slice_layers[1].level" in out
