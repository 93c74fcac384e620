"""Volcano ``HyperNode`` trees and Kueue ``Topology`` objects (YAML).

**Volcano** (``topology.volcano.sh/v1alpha1``, kind ``HyperNode``; volcano-sh/volcano
``staging/src/volcano.sh/apis/pkg/apis/topology/v1alpha1/hypernode_types.go``): each
HyperNode has ``spec.tier`` (an integer >= 0; the lowest tier of the file holds the nodes),
an optional ``spec.tierName`` and ``spec.members``, each ``{type: Node | HyperNode,
selector: {exactMatch: {name}} | {regexMatch: {pattern}} | {labelMatch: <LabelSelector>}}``.
The file holds the HyperNodes as several YAML documents, a ``List`` with ``items`` or a YAML
list. A HyperNode of tier ``t`` lists HyperNodes of tier ``t - 1`` (levels of even depth) or
nodes. Node members are resolved as Volcano's ``GetMembers`` does
(``pkg/util/hypernode/member_selector.go``): ``exactMatch`` names the node; ``regexMatch``
takes every node whose name the pattern *matches anywhere* (Go's ``Regexp.MatchString``,
unanchored: write ``^...$`` for whole names; Python's ``re`` reads the pattern, which agrees
with Go's RE2 on the usual classes, groups and repetitions); ``labelMatch`` is a Kubernetes
``LabelSelector`` (``matchLabels`` and ``matchExpressions`` with ``In``, ``NotIn``,
``Exists``, ``DoesNotExist``, all of them required), and one with neither selects no node.
Both need the cluster's nodes (``nodes=``: their names, or their labels by name, e.g. from
``kubectl get nodes -o json`` by :func:`~topoopt.topology.read_node_labels`). A level is
named by the ``tierName`` its HyperNodes share, else ``tier<t>``; the highest first.

**Kueue** (``kueue.x-k8s.io``, kind ``Topology``): ``spec.levels`` lists the node label keys
top first (``- nodeLabel: cloud.provider.com/topology-block``); with the nodes
(``kubectl get nodes -o json``) they make the topology (:func:`read_kueue_topology`).

Every malformed input is a :class:`TopologyError` naming the file and the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from os import PathLike
from typing import Any

import yaml

from topoopt.topology._build import SwitchDef, build_forest
from topoopt.topology._errors import TopologyError
from topoopt.topology._k8s import read_k8s_nodes
from topoopt.topology._model import Topology
from topoopt.topology._slurm import _read_text
from topoopt.topology._yaml import _Loader, line_of

__all__ = [
    "kueue_flavor_labels",
    "kueue_levels",
    "parse_volcano_hypernodes",
    "read_kueue_topology",
    "read_volcano_hypernodes",
]


def _documents(text: str, source: str | PathLike[str]) -> list[Any]:
    """Every YAML document of ``text`` (line-numbered), a ``List``'s ``items`` expanded."""
    try:
        docs = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except TopologyError as exc:
        raise exc.at(source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise TopologyError(
            f"not valid YAML: {getattr(exc, 'problem', None) or exc}", source=source, line=line
        ) from None
    out: list[Any] = []
    for doc in docs:
        if isinstance(doc, list):
            out.extend(doc)
        elif isinstance(doc, dict) and doc.get("kind") == "List":
            out.extend(doc.get("items") or [])
        else:
            out.append(doc)
    return out


def _get(obj: Any, key: str, what: str, src: str | PathLike[str], line: int | None) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise TopologyError(f"{what}: missing {key!r}", source=src, line=line)
    return obj[key]


def parse_volcano_hypernodes(
    text: str,
    source: str | PathLike[str] = "<hypernodes.yaml>",
    *,
    nodes: Collection[str] | Mapping[str, Mapping[str, str]] | None = None,
    gpus_per_node: int | None = None,
) -> Topology:
    """A :class:`Topology` from Volcano ``HyperNode`` objects (see the module docstring).

    Parameters
    ----------
    nodes
        The cluster's nodes, for ``regexMatch`` (their names) and ``labelMatch`` (a mapping
        of each node's name to its labels) members.

    Raises
    ------
    TopologyError
        Naming the file and line: not a HyperNode, a missing field, a tier that is not a
        non-negative integer, a member type or selector not supported, a ``regexMatch``
        without ``nodes=`` or a bad pattern, a ``labelMatch`` without node labels or with a
        malformed requirement (an unknown operator, ``In``/``NotIn`` without values,
        ``Exists``/``DoesNotExist`` with values), a HyperNode member of another tier than
        one below (levels of uneven depth), a HyperNode with both HyperNodes and nodes,
        nodes above the lowest tier, and the rules of every tree (a HyperNode defined twice,
        a dangling member, a cycle, a node or HyperNode under two parents).

    Examples
    --------
    >>> text = '''
    ... apiVersion: topology.volcano.sh/v1alpha1
    ... kind: HyperNode
    ... metadata: {name: s0}
    ... spec:
    ...   tier: 1
    ...   members:
    ...   - {type: Node, selector: {exactMatch: {name: node-0}}}
    ...   - {type: Node, selector: {exactMatch: {name: node-1}}}
    ... ---
    ... apiVersion: topology.volcano.sh/v1alpha1
    ... kind: HyperNode
    ... metadata: {name: s1}
    ... spec:
    ...   tier: 2
    ...   members:
    ...   - {type: HyperNode, selector: {exactMatch: {name: s0}}}
    ... '''
    >>> topo = parse_volcano_hypernodes(text)
    >>> topo.levels, topo.path("node-1")
    (('tier2', 'tier1'), ('s1', 's0'))
    """
    src = source
    defs: list[SwitchDef] = []
    tiers: dict[str, tuple[int, int | None]] = {}
    wanted: list[tuple[str, str, int | None]] = []  # (parent, child, line)
    known = sorted(nodes) if nodes is not None else None
    labels = nodes if isinstance(nodes, Mapping) else None
    tier_names: dict[int, set[str]] = {}
    for doc in _documents(text, src):
        line = line_of(doc)
        if not isinstance(doc, dict) or doc.get("kind") != "HyperNode":
            raise TopologyError(
                "expected a HyperNode object (kind: HyperNode)", source=src, line=line
            )
        name = str(_get(_get(doc, "metadata", "HyperNode", src, line), "name", "metadata", src,
                        line))  # fmt: skip
        spec = _get(doc, "spec", f"HyperNode {name!r}", src, line)
        tier = spec.get("tier") if isinstance(spec, dict) else None
        if isinstance(tier, bool) or not isinstance(tier, int) or tier < 0:
            raise TopologyError(
                f"HyperNode {name!r}: spec.tier must be a non-negative integer, got {tier!r}",
                source=src,
                line=line_of(spec, "tier") or line,
            )
        tier_names.setdefault(tier, set()).add(str(spec.get("tierName") or ""))
        d = SwitchDef(name, line)
        members = spec.get("members") or []
        for k, member in enumerate(members):
            at = line_of(members, k)
            kind = member.get("type") if isinstance(member, dict) else None
            selector = member.get("selector") if isinstance(member, dict) else None
            if kind not in ("Node", "HyperNode") or not isinstance(selector, dict):
                raise TopologyError(
                    f"HyperNode {name!r}: a member needs type Node or HyperNode and a selector",
                    source=src,
                    line=at,
                )
            if "exactMatch" in selector:
                member_name = str(_get(selector["exactMatch"], "name", "exactMatch", src, at))
                if kind == "HyperNode":
                    d.children.append(member_name)
                    wanted.append((name, member_name, at))
                else:
                    d.nodes.append(member_name)
            elif "regexMatch" in selector and kind == "Node":
                pattern = str(_get(selector["regexMatch"], "pattern", "regexMatch", src, at))
                if known is None:
                    raise TopologyError(
                        f"HyperNode {name!r}: regexMatch {pattern!r} needs the node names "
                        "(kubectl get nodes -o json: --nodes on the command line, nodes= in code)",
                        source=src,
                        line=at,
                    )
                try:
                    regex = re.compile(pattern)
                except re.error as exc:
                    raise TopologyError(
                        f"HyperNode {name!r}: bad regexMatch {pattern!r}: {exc}", source=src,
                        line=at,
                    ) from None  # fmt: skip
                d.nodes.extend(n for n in known if regex.search(n))
            elif "labelMatch" in selector and kind == "Node":
                if labels is None:
                    raise TopologyError(
                        f"HyperNode {name!r}: labelMatch needs the nodes' labels (kubectl get "
                        "nodes -o json: --nodes on the command line, nodes= in code)",
                        source=src,
                        line=at,
                    )
                try:
                    matches = label_selector(selector["labelMatch"])
                except ValueError as exc:
                    raise TopologyError(
                        f"HyperNode {name!r}: labelMatch: {exc}", source=src, line=at
                    ) from None
                d.nodes.extend(n for n in sorted(labels) if matches(labels[n]))
            else:
                supported = "exactMatch, regexMatch, labelMatch" if kind == "Node" else "exactMatch"
                raise TopologyError(
                    f"HyperNode {name!r}: selector {sorted(selector)} is not supported for "
                    f"{kind} members ({supported})",
                    source=src,
                    line=at,
                )
        # the members are a set: a node selected twice (by name and by pattern) is one member
        d.nodes[:] = dict.fromkeys(d.nodes)
        d.children[:] = dict.fromkeys(d.children)
        if d.children and d.nodes:
            raise TopologyError(
                f"HyperNode {name!r} lists both HyperNodes and nodes", source=src, line=line
            )
        tiers[name] = (tier, line)
        defs.append(d)
    if not defs:
        raise TopologyError("no HyperNode objects in the file", source=src)
    for parent, child, at in wanted:
        if child in tiers and tiers[child][0] != tiers[parent][0] - 1:
            raise TopologyError(
                f"levels of uneven depth: HyperNode {parent!r} (tier {tiers[parent][0]}) lists "
                f"{child!r} of tier {tiers[child][0]}; a member HyperNode is one tier below",
                source=src,
                line=at,
            )
    roots = build_forest(defs, src, what="HyperNode")
    top = max(t for t, _ in tiers.values())
    lowest = min(t for t, _ in tiers.values())
    leaves = [d for d in defs if not d.children]
    for d in leaves:
        if tiers[d.name][0] != lowest and d.nodes:
            raise TopologyError(
                f"levels of uneven depth: HyperNode {d.name!r} holds nodes at tier "
                f"{tiers[d.name][0]}; nodes belong to the lowest tier, {lowest}",
                source=src,
                line=d.line,
            )
    depth = max(r.height() for r in roots)

    def level_name(t: int) -> str:
        named = tier_names.get(t, set())
        return next(iter(named)) if len(named) == 1 and "" not in named else f"tier{t}"

    topo = Topology(
        roots,
        level_names=tuple(level_name(t) for t in range(top, top - depth, -1)),
        default_gpus=gpus_per_node,
    )
    if not topo.balanced:
        short = next(s for s in topo.switches if s.is_leaf and topo.depth_of(s.name) != depth - 1)
        raise TopologyError(
            f"levels of uneven depth: HyperNode {short.name!r} is a leaf at depth "
            f"{topo.depth_of(short.name)}, the others at {depth - 1}",
            source=src,
            line=tiers[short.name][1],
        )
    return topo


_OPERATORS: dict[str, Callable[[Mapping[str, str], str, frozenset[str]], bool]] = {
    "In": lambda labels, key, values: key in labels and labels[key] in values,
    "NotIn": lambda labels, key, values: key not in labels or labels[key] not in values,
    "Exists": lambda labels, key, values: key in labels,
    "DoesNotExist": lambda labels, key, values: key not in labels,
}
"""The operators of a Kubernetes ``LabelSelectorRequirement`` (``NotIn`` holds for a node
without the key, as in ``k8s.io/apimachinery/pkg/labels``)."""


def label_selector(selector: Any) -> Callable[[Mapping[str, str]], bool]:
    """Whether a node's labels match a Kubernetes ``LabelSelector`` (``matchLabels`` and
    ``matchExpressions``, all required); one with neither matches no node, as Volcano's
    ``GetMembers`` reads a HyperNode's ``labelMatch``.

    Raises
    ------
    ValueError
        Naming the malformed part (the rules of ``metav1.LabelSelectorAsSelector``).

    Examples
    --------
    >>> rack1 = label_selector({"matchLabels": {"rack": "r1"},
    ...     "matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100"]}]})
    >>> rack1({"rack": "r1", "gpu": "h100"}), rack1({"rack": "r1"}), label_selector({})({})
    (True, False, False)
    """
    if not isinstance(selector, dict):
        raise ValueError(f"must be an object, got {selector!r}")
    unknown = sorted(set(selector) - {"matchLabels", "matchExpressions"})
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} (matchLabels, matchExpressions)")
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(expressions, list):
        raise ValueError("matchLabels must be an object and matchExpressions a list")
    required = [
        (_OPERATORS["In"], str(key), frozenset({str(value)})) for key, value in match_labels.items()
    ]
    for i, expression in enumerate(expressions):
        where = f"matchExpressions[{i}]"
        if not isinstance(expression, dict) or "key" not in expression:
            raise ValueError(f"{where}: needs a key and an operator")
        operator, values = expression.get("operator"), expression.get("values") or []
        if operator not in _OPERATORS:
            raise ValueError(f"{where}: operator {operator!r} is not one of {list(_OPERATORS)}")
        if not isinstance(values, list):
            raise ValueError(f"{where}: values must be a list")
        if operator in ("In", "NotIn") and not values:
            raise ValueError(f"{where}: operator {operator} needs values")
        if operator in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"{where}: operator {operator} takes no values")
        required.append(
            (_OPERATORS[operator], str(expression["key"]), frozenset(str(v) for v in values))
        )
    if not required:
        return lambda labels: False
    return lambda labels: all(holds(labels, key, values) for holds, key, values in required)


def read_volcano_hypernodes(
    path: str | PathLike[str],
    *,
    nodes: Collection[str] | Mapping[str, Mapping[str, str]] | None = None,
    gpus_per_node: int | None = None,
) -> Topology:
    """:func:`parse_volcano_hypernodes` of a file."""
    return parse_volcano_hypernodes(
        _read_text(path), path, nodes=nodes, gpus_per_node=gpus_per_node
    )


def _kueue_topology(docs: list[dict[str, Any]], source: str | PathLike[str]) -> dict[str, Any]:
    """The one Kueue ``Topology`` object among the file's documents."""
    topologies = [d for d in docs if d.get("kind") == "Topology"]
    if len(topologies) != 1:
        raise TopologyError(
            f"expected one Kueue Topology object (kind: Topology), found {len(topologies)}",
            source=source,
            line=line_of(docs[0]) if docs else None,
        )
    return topologies[0]


def _metadata_name(doc: dict[str, Any]) -> Any:
    """A Kubernetes object's ``metadata.name`` (``None`` when absent)."""
    metadata = doc.get("metadata")
    return metadata.get("name") if isinstance(metadata, dict) else None


def kueue_levels(text: str, source: str | PathLike[str] = "<topology.yaml>") -> list[str]:
    """The node label keys of a Kueue ``Topology`` object, top level first.

    Examples
    --------
    >>> levels = kueue_levels('''
    ... apiVersion: kueue.x-k8s.io/v1beta1
    ... kind: Topology
    ... metadata: {name: default}
    ... spec:
    ...   levels:
    ...   - nodeLabel: cloud.provider.com/topology-block
    ...   - nodeLabel: cloud.provider.com/topology-rack
    ...   - nodeLabel: kubernetes.io/hostname
    ... ''')
    >>> [key.rsplit("/", 1)[-1] for key in levels]
    ['topology-block', 'topology-rack', 'hostname']
    """
    docs = [d for d in _documents(text, source) if isinstance(d, dict)]
    topo = _kueue_topology(docs, source)
    spec = _get(topo, "spec", "Topology", source, line_of(topo))
    levels = _get(spec, "levels", "Topology spec", source, line_of(spec))
    if not isinstance(levels, list) or not levels:
        raise TopologyError("Topology spec.levels must list levels", source=source,
                            line=line_of(spec, "levels"))  # fmt: skip
    out = []
    for k, level in enumerate(levels):
        key = level.get("nodeLabel") if isinstance(level, dict) else None
        if not isinstance(key, str) or not key:
            raise TopologyError(
                "each level needs a nodeLabel", source=source, line=line_of(levels, k)
            )
        out.append(key)
    return out


def kueue_flavor_labels(
    text: str, source: str | PathLike[str] = "<topology.yaml>"
) -> dict[str, str] | None:
    """The ``spec.nodeLabels`` of the Kueue ``ResourceFlavor`` in ``text`` whose
    ``spec.topologyName`` is the ``Topology`` object's name: TAS places a workload of that
    flavor on the nodes carrying those labels only. ``None`` when no flavor of the file names
    the topology (every labelled node then counts).

    Raises
    ------
    TopologyError
        When several flavors name the topology with different node labels (each is its own
        set of nodes: give the file of one), or ``nodeLabels`` is not an object.

    Examples
    --------
    >>> kueue_flavor_labels('''
    ... kind: Topology
    ... metadata: {name: default}
    ... spec: {levels: [{nodeLabel: rack}]}
    ... ---
    ... kind: ResourceFlavor
    ... metadata: {name: tas-flavor}
    ... spec: {nodeLabels: {node-group: tas}, topologyName: default}
    ... ''')
    {'node-group': 'tas'}
    """
    docs = [d for d in _documents(text, source) if isinstance(d, dict)]
    name = _metadata_name(_kueue_topology(docs, source))
    found: dict[tuple[tuple[str, str], ...], str] = {}
    for doc in docs:
        spec = doc.get("spec") if doc.get("kind") == "ResourceFlavor" else None
        if not isinstance(spec, dict) or spec.get("topologyName") != name:
            continue
        labels = spec.get("nodeLabels") or {}
        if not isinstance(labels, dict):
            raise TopologyError(
                "ResourceFlavor spec.nodeLabels must be an object",
                source=source,
                line=line_of(spec, "nodeLabels"),
            )
        key = tuple(sorted((str(k), str(v)) for k, v in labels.items()))
        found.setdefault(key, str(_metadata_name(doc)))
    if len(found) > 1:
        raise TopologyError(
            f"ResourceFlavors {sorted(found.values())} use Topology {name!r} with different "
            "nodeLabels: each is its own set of nodes; give a file with one of them",
            source=source,
        )
    return dict(next(iter(found))) if found else None


def read_kueue_topology(
    topology_path: str | PathLike[str],
    nodes_path: str | PathLike[str],
    **options: Any,
) -> Topology:
    """The topology of a Kueue ``Topology`` object (its levels) and the cluster's nodes
    (``kubectl get nodes -o json``, :func:`~topoopt.topology.read_k8s_nodes`, which drops a
    last ``kubernetes.io/hostname`` level: the node itself); when the file also holds the
    ``ResourceFlavor`` of that topology, only the nodes with its ``nodeLabels``
    (:func:`kueue_flavor_labels`)."""
    text = _read_text(topology_path)
    levels = kueue_levels(text, topology_path)
    flavor = kueue_flavor_labels(text, topology_path)
    return read_k8s_nodes(nodes_path, levels, node_labels=flavor, **options)
