"""``topoopt instances import placement``: a placement instance from a real cluster's topology.

The switches of one level of the topology (Slurm ``topology.conf`` / ``topology.yaml``,
topograph, ``kubectl get nodes -o json``, topoopt JSON; :mod:`topoopt.topology`) become the
minipods, the level below their leaves, and the free nodes and the job's degrees complete the
instance (:func:`topoopt.placement.cluster.from_topology`; ``docs/scheduler.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topoopt.core.errors import InvalidOptionError
from topoopt.core.family import Importer, ImportOption
from topoopt.placement.instance import LevelObjective, PlacementInstance


def _level(value: str) -> int | str:
    """A ``--level``: a depth when it is an integer, else a level name."""
    try:
        return int(value)
    except ValueError:
        return value


def _layers(text: str) -> list[tuple[int, int | str]]:
    """A ``--slice-layers``: ``LEVEL:SIZE,...``, coarsest first (Kueue's
    ``podset-slice-required-topology-constraints``)."""
    out = []
    for item in text.split(","):
        level, _, size = item.strip().rpartition(":")
        try:
            out.append((int(size), _level(level)))
        except ValueError:
            raise InvalidOptionError(
                f"--slice-layers: each layer is LEVEL:SIZE (e.g. block:64,rack:16), got {item!r}"
            ) from None
        if not level:
            raise InvalidOptionError(f"--slice-layers: {item!r} names no level (LEVEL:SIZE)")
    return out


def _objective(text: str | None) -> LevelObjective:
    """A ``--levels``: ``top``, ``lex`` or ``weighted:W0,W1,...`` (one weight per level)."""
    if text is None:
        return LevelObjective()
    mode, _, weights = text.partition(":")
    if mode == "weighted":
        try:
            values = tuple(float(w) for w in weights.split(",") if w.strip())
        except ValueError:
            raise InvalidOptionError(
                f"--levels: weights must be numbers, got {weights!r}"
            ) from None
        return LevelObjective("weighted", values)
    if weights:
        raise InvalidOptionError(f"--levels: only 'weighted' takes weights, got {text!r}")
    return LevelObjective(mode)


def import_placement(
    name: str | None,
    *,
    topology_file: str,
    fmt: str | None,
    labels: str | None,
    level: str,
    leaf_level: str | None,
    free: str,
    mixed: bool,
    dp: int,
    tp: int,
    pp: int,
    alpha: float,
    gpus_per_node: int | None,
    levels: str | None = None,
    required_level: str | None = None,
    preferred_level: str | None = None,
    slice_size: int | None = None,
    slice_level: str | None = None,
    slice_layers: str | None = None,
    segment: int | None = None,
    switches: int | None = None,
    slurm_block: bool = False,
    kueue_topology: str | None = None,
    nodes: str | None = None,
) -> tuple[PlacementInstance, str]:
    """The placement instance of a job on a real cluster, and a one-line summary.

    Parameters are the options of :data:`IMPORTER`; ``name`` defaults to
    ``<topology file stem>-level<level>``.
    """
    from topoopt.placement.cluster import from_topology
    from topoopt.topology import (
        TopologyError,
        kueue_flavor_labels,
        kueue_levels,
        load_topology,
        read_free,
    )
    from topoopt.topology._slurm import _read_text

    keys = [key.strip() for key in labels.split(",") if key.strip()] if labels else None
    options: dict[str, Any] = {} if nodes is None else {"nodes": nodes}
    if kueue_topology is not None:  # the levels of a Kueue Topology object (and its flavor)
        text = _read_text(kueue_topology)
        keys = kueue_levels(text, kueue_topology)
        flavor = kueue_flavor_labels(text, kueue_topology)
        if flavor:
            options["node_labels"] = flavor
        fmt = fmt or "k8s"
    topology = load_topology(topology_file, fmt, levels=keys, **options)
    given = {
        "required_level": None if required_level is None else _level(required_level),
        "preferred_level": None if preferred_level is None else _level(preferred_level),
        "slice_size": slice_size,
        "slice_level": None if slice_level is None else _level(slice_level),
        "slice_layers": None if slice_layers is None else _layers(slice_layers),
        "segment": segment,
        "max_switches": switches,
        "block": True if slurm_block else None,
    }
    objective = _objective(levels)
    every_level = objective.multilevel or any(
        given[k] is not None
        for k in ("required_level", "preferred_level", "slice_level", "slice_layers")
    )
    if leaf_level is None and every_level:
        # a multi-level objective or a level constraint: keep every level below --level
        leaf_level = "-1"
        if not topology.balanced:
            deepest = topology.depth - 1
            short = next(
                s for s in topology.switches if s.is_leaf and topology.depth_of(s.name) != deepest
            )
            raise TopologyError(
                f"levels of uneven depth: leaf switch {short.name!r} is at depth "
                f"{topology.depth_of(short.name)}, the deepest at {deepest} (every level is "
                "kept for --levels and level constraints; give --leaf-level to choose one)",
                source=topology_file,
            )
    instance = from_topology(
        topology,
        level=_level(level),
        leaf_level=None if leaf_level is None else _level(leaf_level),
        free=read_free(free, mixed=mixed),
        dp=dp,
        tp=tp,
        pp=pp,
        alpha=alpha,
        gpus_per_node=gpus_per_node,
        name=name or f"{Path(topology_file).stem}-level{level}",
        objective=objective,
        constraints={k: v for k, v in given.items() if v is not None},
    )
    pods = ", ".join(f"{m.name} {m.free_nodes}" for m in instance.minipods)
    return instance, (
        f"job {instance.rows} x {instance.cols} nodes on {instance.n_minipods} minipods "
        f"(free nodes: {pods})"
    )


IMPORTER = Importer(
    build=import_placement,
    help="A placement instance from a cluster topology file, its free nodes and the job: the "
    "switches of --level are the minipods, the level below their leaves (see "
    "docs/scheduler.md). topoopt solve --hostfile then writes the node of every rank.",
    options=(
        ImportOption(
            "topology_file",
            "--topology",
            "Cluster topology file (Slurm topology.conf / topology.yaml, topograph model, "
            "kubectl get nodes -o json, topoopt JSON).",
            required=True,
            is_file=True,
        ),
        ImportOption(
            "fmt",
            "--format",
            "Format of --topology (default: guessed from its content).",
            choices=("slurm", "slurm-yaml", "topograph", "k8s", "volcano", "json"),
        ),
        ImportOption(
            "labels",
            "--labels",
            "With --format k8s: the topology label keys, top level first, comma-separated.",
        ),
        ImportOption(
            "level",
            "--level",
            "The level whose switches are the minipods: a depth (0 = top, -1 = leaves) or a "
            "level name.",
            required=True,
        ),
        ImportOption(
            "leaf_level",
            "--leaf-level",
            "The level below --level whose switches are the minipods' leaves (default: the "
            "next one down; with --levels lex/weighted or a level constraint, the deepest: "
            "every level is kept).",
        ),
        ImportOption(
            "free",
            "--free",
            "Free nodes: a hostlist expression (tux[0-3,8]), or @FILE (names, or the output of "
            "sinfo -N -h -o '%N %t').",
            required=True,
        ),
        ImportOption("mixed", "--mixed", "Count sinfo's mix nodes as free.", type=bool),
        ImportOption("dp", "--dp", "Data-parallel degree.", type=int, required=True),
        ImportOption("tp", "--tp", "Tensor-parallel degree.", type=int, required=True),
        ImportOption("pp", "--pp", "Pipeline-parallel degree.", type=int, required=True),
        ImportOption(
            "alpha",
            "--alpha",
            "Weight of the DP spread (Arnold eq. 2).",
            type=float,
            required=True,
        ),
        ImportOption(
            "gpus_per_node",
            "--gpus-per-node",
            "GPUs per node (default: the topology's, or 8).",
            type=int,
        ),
        ImportOption(
            "levels",
            "--levels",
            "How the levels' scores count (docs/levels.md): top (default, Arnold's minipod "
            "score), lex (lexicographic from the top) or weighted:W0,W1,... (one weight per "
            "level, top first).",
            metavar="top|lex|weighted:W,...",
        ),
        ImportOption(
            "required_level",
            "--required-level",
            "Kueue podset-required-topology: the whole job in one switch of this level.",
        ),
        ImportOption(
            "preferred_level",
            "--preferred-level",
            "Kueue podset-preferred-topology: one switch of this level if one can hold the "
            "job, else of the level above, ...",
        ),
        ImportOption(
            "slice_size",
            "--slice-size",
            "Kueue podset-slice-size: ranks per slice (consecutive ranks).",
            type=int,
        ),
        ImportOption(
            "slice_level",
            "--slice-level",
            "Kueue podset-slice-required-topology: each slice in one switch of this level "
            "(default: the leaves).",
        ),
        ImportOption(
            "slice_layers",
            "--slice-layers",
            "Kueue podset-slice-required-topology-constraints (multi-layer slices): "
            "LEVEL:SIZE,... from the coarsest layer, each slice of SIZE consecutive ranks "
            "in one switch of LEVEL (e.g. block:64,rack:16).",
            metavar="LEVEL:SIZE,...",
        ),
        ImportOption(
            "segment",
            "--segment",
            "Slurm --segment: ranks per segment, each segment inside one leaf (block).",
            type=int,
        ),
        ImportOption(
            "switches",
            "--switches",
            "Slurm --switches=count: at most this many leaf switches.",
            type=int,
        ),
        ImportOption(
            "kueue_topology",
            "--kueue-topology",
            "A Kueue Topology object (YAML): its levels' node labels, with --topology the "
            "nodes (kubectl get nodes -o json).",
            is_file=True,
        ),
        ImportOption(
            "nodes",
            "--nodes",
            "With Volcano HyperNodes: the cluster's nodes (kubectl get nodes -o json), for "
            "members selected by regexMatch or labelMatch.",
            is_file=True,
        ),
        ImportOption(
            "slurm_block",
            "--slurm-block",
            "Slurm topology/block: the job (each --segment) inside one block of the smallest "
            "BlockSizes size that holds it (a block topology placed down to its base blocks).",
            type=bool,
        ),
    ),
)
"""The placement family's importer (:attr:`topoopt.core.family.Family.importer`)."""
