"""One entry point for every topology format: :func:`load_topology` and :func:`write_topology`."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Literal

from topoopt.topology._errors import TopologyError
from topoopt.topology._json import FORMAT, read_json_topology, topology_to_dict
from topoopt.topology._k8s import read_k8s_nodes, read_node_labels
from topoopt.topology._model import Topology
from topoopt.topology._slurm import _read_text, read_slurm_conf, read_slurm_yaml, write_slurm_conf
from topoopt.topology._topograph import read_topograph
from topoopt.topology._volcano import read_volcano_hypernodes

__all__ = ["FORMATS", "guess_format", "load_topology", "write_topology"]

Format = Literal["slurm", "slurm-yaml", "topograph", "k8s", "volcano", "json"]
#: The format names :func:`load_topology` accepts.
FORMATS: tuple[str, ...] = ("slurm", "slurm-yaml", "topograph", "k8s", "volcano", "json")
READER_OPTIONS: dict[str, set[str]] = {
    "k8s": {"missing", "gpu_resource", "node_labels"},
    "volcano": {"nodes"},
}
"""The ``**options`` of :func:`load_topology` each format's reader takes."""
_HYPERNODE = re.compile(r"^\s*kind:\s*HyperNode\s*$", re.M)
_CONF_LINE = re.compile(r"^\s*(switchname|blockname|blocksizes|ringname)\s*=", re.I | re.M)


def guess_format(path: str | PathLike[str]) -> str:
    """The format of a topology file, from its content (the extension is not used).

    The rule, in order:

    1. text starting with ``{`` or ``[`` that parses as JSON: ``"json"`` when it has
       ``"format": "topoopt-topology"``, ``"k8s"`` when it has ``items`` (or is a list of
       objects with ``metadata``);
    2. a line starting with ``SwitchName=``, ``BlockName=`` or ``BlockSizes=`` (any case):
       ``"slurm"`` (topology.conf);
    3. a line ``kind: HyperNode``: ``"volcano"`` (Volcano HyperNodes);
    4. otherwise YAML: a list whose items have a ``topology`` key: ``"slurm-yaml"``; a
       mapping with ``switches``: ``"topograph"``.

    Raises
    ------
    TopologyError
        When none of the rules matches.
    """
    text = _read_text(path)
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            if data.get("format") == FORMAT:
                return "json"
            if "items" in data:
                return "k8s"
        if (
            isinstance(data, list)
            and data
            and all(isinstance(d, dict) and "metadata" in d for d in data)
        ):
            return "k8s"
    if _CONF_LINE.search(text):
        return "slurm"
    if _HYPERNODE.search(text):
        return "volcano"
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if (
        isinstance(data, list)
        and data
        and all(isinstance(d, dict) and "topology" in d for d in data)
    ):
        return "slurm-yaml"
    if isinstance(data, dict) and "switches" in data:
        return "topograph"
    raise TopologyError(
        "cannot tell the topology format (not a topology.conf, topology.yaml, topograph "
        "model, kubectl node list or topoopt topology JSON); give format=",
        source=path,
    )


def load_topology(
    path: str | PathLike[str],
    format: str | None = None,
    *,
    levels: Sequence[str] | None = None,
    topology: str | None = None,
    gpus_per_node: int | None = None,
    **options: Any,
) -> Topology:
    """Read a cluster topology from a file in any supported format.

    Parameters
    ----------
    path
        The file.
    format
        ``"slurm"`` (topology.conf), ``"slurm-yaml"`` (topology.yaml), ``"topograph"``
        (cluster model), ``"k8s"`` (``kubectl get nodes -o json``), ``"volcano"`` (HyperNode
        objects) or ``"json"`` (topoopt's own, :func:`write_topology`); ``None``: guessed
        from the content by :func:`guess_format`.
    levels
        For ``"k8s"``: the topology label keys, top level first (required).
    topology
        For ``"slurm-yaml"``: which topology of the file (default: the cluster default).
    gpus_per_node
        GPUs of a node the file does not count them for (every format but ``k8s`` and
        ``json``, which may carry them).
    **options
        Passed to the reader: ``missing=``, ``gpu_resource=``, ``node_labels=`` for
        ``k8s``; ``nodes=`` for
        ``volcano`` (the cluster's nodes for ``regexMatch`` and ``labelMatch`` members: a
        ``kubectl get nodes -o json`` file, read by :func:`read_node_labels`, or what
        :func:`read_volcano_hypernodes` takes).

    Raises
    ------
    TopologyError
        For an unknown format, a missing option, an unreadable file, and every rule of the
        format's reader, naming the file and line (or JSON path).

    Examples
    --------
    >>> topo = load_topology("tests/topology/data/slurm/topology-guide-ex1.conf")
    >>> topo.depth, topo.levels, len(topo.nodes)
    (3, ('0', '1', '2'), 8)
    """
    fmt = format or guess_format(path)
    if fmt not in FORMATS:
        raise TopologyError(f"unknown topology format {fmt!r}; use one of {list(FORMATS)}")
    unknown = sorted(set(options) - READER_OPTIONS.get(fmt, set()))
    if unknown:
        raise TopologyError(f"unknown option(s) for format {fmt!r}: {unknown}")
    if fmt == "k8s":
        if not levels:
            raise TopologyError(
                "the k8s format needs levels= (node label keys, top level first)", source=path
            )
        topo = read_k8s_nodes(path, levels, **options)
    elif fmt == "volcano":
        nodes = options.get("nodes")
        if isinstance(nodes, (str, PathLike)):
            nodes = read_node_labels(nodes)
        topo = read_volcano_hypernodes(path, nodes=nodes)
    elif fmt == "slurm":
        topo = read_slurm_conf(path)
    elif fmt == "slurm-yaml":
        topo = read_slurm_yaml(path, topology=topology)
    elif fmt == "topograph":
        topo = read_topograph(path)
    else:
        topo = read_json_topology(path)
    if gpus_per_node is not None and topo.default_gpus is None:
        from dataclasses import replace

        topo = replace(topo, default_gpus=gpus_per_node)
    return topo


def write_topology(
    topology: Topology, path: str | PathLike[str] | None = None, format: str = "json"
) -> str:
    """Write a topology as topoopt JSON (``"json"``) or Slurm topology.conf (``"slurm"``).

    Returns the text; writes it to ``path`` when given.

    Examples
    --------
    >>> from topoopt.topology import Switch, Topology
    >>> print(write_topology(Topology((Switch("s0", nodes=("a1", "a2")),)), format="slurm"))
    SwitchName=s0 Nodes=a[1-2]
    <BLANKLINE>
    """
    if format == "json":
        text = json.dumps(topology_to_dict(topology), indent=2) + "\n"
    elif format == "slurm":
        text = write_slurm_conf(topology)
    else:
        raise TopologyError(f"cannot write format {format!r}; use 'json' or 'slurm'")
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
