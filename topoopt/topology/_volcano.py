"""Volcano ``HyperNode`` trees and Kueue ``Topology`` objects (YAML).

**Volcano** (``topology.volcano.sh/v1alpha1``, kind ``HyperNode``; volcano-sh/volcano
``staging/src/volcano.sh/apis/pkg/apis/topology/v1alpha1/hypernode_types.go``): each
HyperNode has ``spec.tier`` (1 = the lowest, holding nodes) and ``spec.members``, each
``{type: Node | HyperNode, selector: {exactMatch: {name}} | {regexMatch: {pattern}} |
{labelMatch: ...}}``. The file holds the HyperNodes as several YAML documents, a ``List``
with ``items`` or a YAML list. A HyperNode of tier ``t`` lists HyperNodes of tier ``t - 1``
(levels of even depth) or nodes; nodes are named by ``exactMatch`` or matched by
``regexMatch`` against the node names given (``nodes=``). The levels are named ``tier<t>``,
the highest first.

**Kueue** (``kueue.x-k8s.io``, kind ``Topology``): ``spec.levels`` lists the node label keys
top first (``- nodeLabel: cloud.provider.com/topology-block``); with the nodes
(``kubectl get nodes -o json``) they make the topology (:func:`read_kueue_topology`).

Every malformed input is a :class:`TopologyError` naming the file and the line.
"""

from __future__ import annotations

import re
from collections.abc import Collection
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
    nodes: Collection[str] | None = None,
    gpus_per_node: int | None = None,
) -> Topology:
    """A :class:`Topology` from Volcano ``HyperNode`` objects (see the module docstring).

    Raises
    ------
    TopologyError
        Naming the file and line: not a HyperNode, a missing field, a tier that is not a
        positive integer, a member type or selector not supported (``labelMatch``; a
        ``regexMatch`` without ``nodes=``), a HyperNode member of another tier than one
        below (levels of uneven depth), a HyperNode with both HyperNodes and nodes, tier-1
        HyperNodes at different depths, and the rules of every tree (a HyperNode defined
        twice, a dangling member, a cycle, a node or HyperNode under two parents).

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
        if isinstance(tier, bool) or not isinstance(tier, int) or tier < 1:
            raise TopologyError(
                f"HyperNode {name!r}: spec.tier must be a positive integer, got {tier!r}",
                source=src,
                line=line_of(spec, "tier") or line,
            )
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
                        f"HyperNode {name!r}: regexMatch {pattern!r} needs the node names (nodes=)",
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
                d.nodes.extend(n for n in known if regex.fullmatch(n))
            else:
                raise TopologyError(
                    f"HyperNode {name!r}: selector {sorted(selector)} is not supported for "
                    f"{kind} members (exactMatch{', regexMatch' if kind == 'Node' else ''})",
                    source=src,
                    line=at,
                )
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
    leaves = [d for d in defs if not d.children]
    for d in leaves:
        if tiers[d.name][0] != 1 and d.nodes:
            raise TopologyError(
                f"levels of uneven depth: HyperNode {d.name!r} holds nodes at tier "
                f"{tiers[d.name][0]}; nodes belong to tier 1",
                source=src,
                line=d.line,
            )
    depth = max(r.height() for r in roots)
    topo = Topology(
        roots,
        level_names=tuple(f"tier{t}" for t in range(top, top - depth, -1)),
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


def read_volcano_hypernodes(
    path: str | PathLike[str],
    *,
    nodes: Collection[str] | None = None,
    gpus_per_node: int | None = None,
) -> Topology:
    """:func:`parse_volcano_hypernodes` of a file."""
    return parse_volcano_hypernodes(
        _read_text(path), path, nodes=nodes, gpus_per_node=gpus_per_node
    )


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
    topologies = [d for d in docs if d.get("kind") == "Topology"]
    if len(topologies) != 1:
        raise TopologyError(
            f"expected one Kueue Topology object (kind: Topology), found {len(topologies)}",
            source=source,
            line=line_of(docs[0]) if docs else None,
        )
    topo = topologies[0]
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


def read_kueue_topology(
    topology_path: str | PathLike[str],
    nodes_path: str | PathLike[str],
    **options: Any,
) -> Topology:
    """The topology of a Kueue ``Topology`` object (its levels) and the cluster's nodes
    (``kubectl get nodes -o json``, :func:`~topoopt.topology.read_k8s_nodes`, which drops a
    last ``kubernetes.io/hostname`` level: the node itself)."""
    levels = kueue_levels(_read_text(topology_path), topology_path)
    return read_k8s_nodes(nodes_path, levels, **options)
