"""Kubernetes nodes (``kubectl get nodes -o json``) with topology labels as levels.

The label keys are given in order, top level first, as a Kueue ``Topology`` lists its
``levels`` (e.g. ``network.topology.nvidia.com/spine``, ``network.topology.nvidia.com/leaf``,
the keys topograph writes). A node's label values name its switch at each level. A last key
``kubernetes.io/hostname`` stands for the node itself and is dropped. The same value under
two different parents is two different domains (as in Kueue), so such switches are named by
their path, ``"<parent>/<value>"``; otherwise by the value alone.

GPUs per node come from ``status.capacity["nvidia.com/gpu"]`` (or another resource name).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any, Literal

from topoopt.topology._errors import TopologyError
from topoopt.topology._hostlist import check_name
from topoopt.topology._model import Switch, Topology
from topoopt.topology._slurm import _read_text

__all__ = ["parse_k8s_nodes", "parse_node_labels", "read_k8s_nodes", "read_node_labels"]

HOSTNAME = "kubernetes.io/hostname"


def _nodes(data: Any, src: str) -> list[tuple[str, dict[str, Any], dict[str, Any], str]]:
    """Every node of a ``kubectl get nodes -o json`` document: its name (checked, unique),
    labels, object and JSON path."""
    if isinstance(data, dict):
        items = data.get("items")
        if not isinstance(items, list):
            raise TopologyError(
                "expected the output of 'kubectl get nodes -o json' (an object with 'items')",
                source=src,
                path="items",
            )
        prefix = "items"
    elif isinstance(data, list):
        items, prefix = data, ""
    else:
        raise TopologyError("expected a node list", source=src)
    out = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        at = f"{prefix}[{i}]"
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise TopologyError("a node has no metadata.name", source=src, path=at)
        name = meta["name"]
        try:
            check_name(name, "node")
        except TopologyError as exc:
            raise TopologyError(exc.rule, source=src, path=f"{at}.metadata.name") from None
        if name in seen:
            raise TopologyError(
                f"node {name!r} is listed twice (also {prefix}[{seen[name]}])",
                source=src,
                path=at,
            )
        seen[name] = i
        labels = meta.get("labels") or {}
        if not isinstance(labels, dict):
            raise TopologyError("labels must be an object", source=src, path=f"{at}.metadata")
        out.append((name, labels, item, at))
    return out


def parse_node_labels(
    data: Any, source: str | PathLike[str] = "<kubectl get nodes -o json>"
) -> dict[str, dict[str, str]]:
    """Every node's labels in the parsed JSON of ``kubectl get nodes -o json``, by node name
    (label values as text).

    Examples
    --------
    >>> parse_node_labels({"items": [{"metadata": {"name": "a", "labels": {"rack": "r1"}}},
    ...                              {"metadata": {"name": "b"}}]})
    {'a': {'rack': 'r1'}, 'b': {}}
    """
    return {
        name: {str(k): str(v) for k, v in labels.items()}
        for name, labels, _, _ in _nodes(data, str(source))
    }


def read_node_labels(path: str | PathLike[str]) -> dict[str, dict[str, str]]:
    """:func:`parse_node_labels` of a saved ``kubectl get nodes -o json``."""
    return parse_node_labels(_json(path), path)


def _json(path: str | PathLike[str]) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TopologyError(f"not valid JSON: {exc.msg}", source=path, line=exc.lineno) from None


def parse_k8s_nodes(
    data: Any,
    levels: Sequence[str],
    source: str | PathLike[str] = "<kubectl get nodes -o json>",
    *,
    missing: Literal["skip", "error"] = "skip",
    gpu_resource: str = "nvidia.com/gpu",
    node_labels: Mapping[str, str] | None = None,
) -> Topology:
    """A :class:`Topology` from the parsed JSON of ``kubectl get nodes -o json``.

    Parameters
    ----------
    data
        The parsed JSON: a ``List``/``NodeList`` object with ``items``, or a list of nodes.
    levels
        Node label keys, top level first (a trailing ``kubernetes.io/hostname`` is dropped).
        The topology's level names are these keys; :meth:`Topology.level` also accepts the
        part after the last ``/`` when unambiguous (``"leaf"``).
    source
        File name for errors.
    missing
        A node without one of the labels (a CPU or control-plane node): ``"skip"`` leaves
        it out (default), ``"error"`` raises.
    gpu_resource
        Resource name of the GPU count in ``status.capacity``.
    node_labels
        Only the nodes carrying every one of these labels (a Kueue ``ResourceFlavor``'s
        ``nodeLabels``: the nodes of the flavor); the others are left out.

    Raises
    ------
    TopologyError
        Naming the JSON path, for: no levels, a repeated level key, input that is not a node
        list, a node without a name, two nodes with one name, a node missing a level label
        (with ``missing="error"``), a non-integer GPU count, no labelled node at all.

    Examples
    --------
    >>> node = lambda name, spine, leaf: {"metadata": {"name": name, "labels": {
    ...     "example.com/spine": spine, "example.com/leaf": leaf}}}
    >>> topo = parse_k8s_nodes(
    ...     {"kind": "List", "items": [node("a", "s1", "l1"), node("b", "s1", "l2")]},
    ...     ["example.com/spine", "example.com/leaf"],
    ... )
    >>> topo.levels, topo.switch_of("b", "leaf")
    (('example.com/spine', 'example.com/leaf'), 'l2')
    """
    src = str(source)
    keys = [str(k) for k in levels]
    if keys and keys[-1] == HOSTNAME:
        keys = keys[:-1]
    if not keys:
        raise TopologyError("give at least one topology label key as a level", source=src)
    if len(set(keys)) != len(keys):
        raise TopologyError(f"level keys must be distinct, got {keys}", source=src)
    paths: dict[tuple[str, ...], list[str]] = {}
    gpus: dict[str, int] = {}
    for name, labels, item, at in _nodes(data, src):
        if node_labels and any(labels.get(k) != v for k, v in node_labels.items()):
            continue
        values = [labels.get(k) for k in keys]
        if any(not isinstance(v, str) or not v for v in values):
            if missing == "error":
                absent = [
                    k for k, v in zip(keys, values, strict=True) if not isinstance(v, str) or not v
                ]
                raise TopologyError(
                    f"node {name!r} has no label {absent[0]!r}",
                    source=src,
                    path=f"{at}.metadata.labels",
                )
            continue
        paths.setdefault(tuple(str(v) for v in values), []).append(name)
        capacity = (item.get("status") or {}).get("capacity") or {}
        if gpu_resource in capacity:
            raw = capacity[gpu_resource]
            try:
                gpus[name] = int(str(raw))
            except ValueError:
                raise TopologyError(
                    f"node {name!r}: {gpu_resource} capacity {raw!r} is not an integer",
                    source=src,
                    path=f"{at}.status.capacity",
                ) from None
    if not paths:
        wanted = keys + [f"{k}={v}" for k, v in (node_labels or {}).items()]
        raise TopologyError(f"no node has all the labels {wanted}", source=src)
    # name each domain by its value, or by its path where a value repeats under two parents
    names: dict[tuple[str, ...], str] = {}
    for depth in range(len(keys)):
        prefixes = {p[: depth + 1] for p in paths}
        by_value: dict[str, set[tuple[str, ...]]] = {}
        for p in prefixes:
            by_value.setdefault(p[-1], set()).add(p)
        used = {names[q] for q in names if len(q) < depth + 1}
        for p in prefixes:
            if len(by_value[p[-1]]) == 1 and p[-1] not in used:
                names[p] = p[-1]
            else:
                names[p] = "/".join(p)

    def build(prefix: tuple[str, ...]) -> Switch:
        if len(prefix) == len(keys):
            return Switch(names[prefix], nodes=tuple(paths[prefix]))
        below = sorted({p[: len(prefix) + 1] for p in paths if p[: len(prefix)] == prefix})
        return Switch(names[prefix], children=tuple(build(q) for q in below))

    try:
        roots = tuple(build((v,)) for v in sorted({p[0] for p in paths}))
        return Topology(roots, level_names=tuple(keys), gpus=gpus)
    except TopologyError as exc:
        raise exc.at(src) from None


def read_k8s_nodes(
    path: str | PathLike[str],
    levels: Sequence[str],
    *,
    missing: Literal["skip", "error"] = "skip",
    gpu_resource: str = "nvidia.com/gpu",
    node_labels: Mapping[str, str] | None = None,
) -> Topology:
    """A :class:`Topology` from a saved ``kubectl get nodes -o json`` (see
    :func:`parse_k8s_nodes`)."""
    return parse_k8s_nodes(
        _json(path),
        levels,
        path,
        missing=missing,
        gpu_resource=gpu_resource,
        node_labels=node_labels,
    )
