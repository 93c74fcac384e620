"""Real cluster topologies: one tree type and readers for the files schedulers produce.

:class:`Topology` is a forest of :class:`Switch` es (or Slurm blocks) down to named nodes,
with optional link speeds, level names and GPUs per node. Readers:

* :func:`read_slurm_conf` — Slurm ``topology.conf`` (topology/tree and topology/block);
* :func:`read_slurm_yaml` — Slurm ``topology.yaml`` (tree and block, ``cluster_default``);
* :func:`read_topograph` — NVIDIA topograph cluster models;
* :func:`read_k8s_nodes` — ``kubectl get nodes -o json`` with topology labels as levels;
* :func:`read_kueue_topology` — a Kueue ``Topology`` object (its levels) and the nodes;
* :func:`read_volcano_hypernodes` — Volcano ``HyperNode`` trees (tiers as levels; node
  members by name, pattern or labels, :func:`read_node_labels`);
* :func:`read_free` — free nodes from a hostlist, a file of names or ``sinfo`` output;
* :func:`load_topology` — any of the above, the format guessed from the content.

Writers: :func:`write_topology` (topoopt JSON or topology.conf). Every malformed input raises
:class:`TopologyError` naming the file, the line (or JSON path) and the rule.
:meth:`Topology.free_groups` lists the switches of a level with their free nodes grouped by
the next level down — the shape of a placement instance's minipods.

Hostlist expressions are parsed by ClusterShell (:func:`expand`, :func:`fold`).
"""

from __future__ import annotations

from topoopt.topology._errors import TopologyError
from topoopt.topology._free import parse_sinfo, read_free
from topoopt.topology._hostlist import expand, fold
from topoopt.topology._json import topology_from_dict, topology_to_dict
from topoopt.topology._k8s import (
    parse_k8s_nodes,
    parse_node_labels,
    read_k8s_nodes,
    read_node_labels,
)
from topoopt.topology._load import FORMATS, guess_format, load_topology, write_topology
from topoopt.topology._model import FreeGroup, Switch, Topology
from topoopt.topology._slurm import (
    parse_slurm_conf,
    parse_slurm_yaml,
    read_slurm_conf,
    read_slurm_yaml,
    write_slurm_conf,
)
from topoopt.topology._topograph import parse_topograph, read_topograph
from topoopt.topology._volcano import (
    kueue_flavor_labels,
    kueue_levels,
    label_selector,
    parse_volcano_hypernodes,
    read_kueue_topology,
    read_volcano_hypernodes,
)

__all__ = [
    "FORMATS",
    "FreeGroup",
    "Switch",
    "Topology",
    "TopologyError",
    "expand",
    "fold",
    "guess_format",
    "kueue_flavor_labels",
    "kueue_levels",
    "label_selector",
    "load_topology",
    "parse_k8s_nodes",
    "parse_node_labels",
    "parse_sinfo",
    "parse_slurm_conf",
    "parse_slurm_yaml",
    "parse_topograph",
    "parse_volcano_hypernodes",
    "read_free",
    "read_k8s_nodes",
    "read_kueue_topology",
    "read_node_labels",
    "read_slurm_conf",
    "read_slurm_yaml",
    "read_topograph",
    "read_volcano_hypernodes",
    "topology_from_dict",
    "topology_to_dict",
    "write_slurm_conf",
    "write_topology",
]
