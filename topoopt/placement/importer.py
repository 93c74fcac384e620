"""``topoopt instances import placement``: a placement instance from a real cluster's topology.

The switches of one level of the topology (Slurm ``topology.conf`` / ``topology.yaml``,
topograph, ``kubectl get nodes -o json``, topoopt JSON; :mod:`topoopt.topology`) become the
minipods, the level below their leaves, and the free nodes and the job's degrees complete the
instance (:func:`topoopt.placement.cluster.from_topology`; ``docs/scheduler.md``).
"""

from __future__ import annotations

from pathlib import Path

from topoopt.core.family import Importer, ImportOption
from topoopt.placement.instance import PlacementInstance


def _level(value: str) -> int | str:
    """A ``--level``: a depth when it is an integer, else a level name."""
    try:
        return int(value)
    except ValueError:
        return value


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
) -> tuple[PlacementInstance, str]:
    """The placement instance of a job on a real cluster, and a one-line summary.

    Parameters are the options of :data:`IMPORTER`; ``name`` defaults to
    ``<topology file stem>-level<level>``.
    """
    from topoopt.placement.cluster import from_topology
    from topoopt.topology import load_topology, read_free

    keys = [key.strip() for key in labels.split(",") if key.strip()] if labels else None
    topology = load_topology(topology_file, fmt, levels=keys)
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
            choices=("slurm", "slurm-yaml", "topograph", "k8s", "json"),
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
            "next one down; placement/hierarchical places on them).",
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
    ),
)
"""The placement family's importer (:attr:`topoopt.core.family.Family.importer`)."""
