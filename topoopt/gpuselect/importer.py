"""``topoopt instances import gpuselect``: a gpuselect instance from a real cluster's hosts.

The hosts (a Slurm hostlist with their GPU type, or ``scontrol show node -d`` output), their
bandwidth (nccl-tests tables per type, ``nvidia-smi topo -m`` files, or the paper's built-in
matrices), the idle GPUs and the request ``k`` (:func:`topoopt.gpuselect.pool.from_cluster`;
``docs/gpuselect.md``, ``docs/scheduler.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from topoopt.core.errors import InvalidInstanceError, InvalidOptionError
from topoopt.core.family import Importer, ImportOption
from topoopt.gpuselect.instance import GpuSelectInstance

FLAGS = {
    "k": "--k",
    "cross": "--cross",
    "host_type": "--type",
    "gpus": "--gpus",
    "hosts": "--hosts",
    "idle": "--idle",
    "tables": "--table",
    "topologies": "--topo-file",
    "inter_gbps": "--inter-gbps",
}
"""The flag of each field of :func:`~topoopt.gpuselect.pool.from_cluster` whose errors name it."""


def _pairs(values: Sequence[str], flag: str, what: str) -> list[tuple[str, str]]:
    """``KEY=VALUE`` options as pairs (a missing ``=`` is an error naming ``flag``)."""
    out = []
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key or not rest:
            raise InvalidOptionError(f"{flag}: {value!r}: write {what}")
        out.append((key, rest))
    return out


def import_gpuselect(
    name: str | None,
    *,
    hosts: tuple[str, ...],
    scontrol: str | None,
    host_type: str | None,
    topo_files: tuple[str, ...],
    tables: tuple[str, ...],
    cross: str | None,
    idle: str | None,
    k: int,
    inter_gbps: float | None,
    gpus_per_nic: int | None,
    gpus: int | None,
) -> tuple[GpuSelectInstance, str]:
    """The gpuselect instance of a request on a real cluster, and a one-line summary.

    Parameters are the options of :data:`IMPORTER`; ``name`` defaults to ``pool-k<k>``.
    Errors of the instance name the option they come from (``--idle: ...``).
    """
    from topoopt.gpuselect.loaders import read_text
    from topoopt.gpuselect.pool import from_cluster, parse_scontrol_nodes

    if not hosts and scontrol is None:
        raise InvalidOptionError("--hosts: required unless --scontrol gives the nodes")
    pool: dict[str, str | None] = {}
    for value in hosts:
        hostlist, sep, kind = value.partition("=")
        if not hostlist or (sep and not kind) or (sep and scontrol):
            hint = " (--scontrol gives the types)" if scontrol else ""
            form = "HOSTLIST" if scontrol else "HOSTLIST or HOSTLIST=TYPE"
            raise InvalidOptionError(f"--hosts: {value!r}: write {form}{hint}")
        pool[hostlist] = kind or host_type
    per_host: dict[str, int] | None = None
    free: Any = idle
    if scontrol is not None:
        nodes = parse_scontrol_nodes(
            read_text(Path(scontrol), "--scontrol"), scontrol, host_type=host_type
        )
        chosen = list(nodes.types)
        if pool:
            from topoopt.topology import expand

            wanted = {n for hostlist in pool for n in expand(hostlist)}
            unknown = sorted(wanted - set(chosen))
            if unknown:
                raise InvalidOptionError(
                    f"--hosts: node {unknown[0]!r} has no GPU in {scontrol} "
                    f"({len(chosen)} GPU nodes)"
                )
            chosen = [n for n in chosen if n in wanted]
        pool = {n: nodes.types[n] for n in chosen}
        per_host = {n: nodes.gpus[n] for n in chosen}
        if idle is None:
            free = {n: nodes.idle[n] for n in chosen}
    by_type: dict[str, list[str]] = {}
    for kind, path in _pairs(tables, "--table", "TYPE=CSV"):
        by_type.setdefault(kind, []).append(path)
    try:
        instance = from_cluster(
            pool,
            k=k,
            idle=free,
            gpus=gpus if per_host is None or gpus is not None else per_host,
            tables={t: p[0] if len(p) == 1 else p for t, p in by_type.items()} or None,
            cross=cross,
            topologies=dict(_pairs(topo_files, "--topo-file", "TYPE_OR_HOSTLIST=FILE")) or None,
            inter_gbps=inter_gbps,
            gpus_per_nic=gpus_per_nic,
            name=name or f"pool-k{k}",
        )
    except InvalidInstanceError as exc:
        head, dot, rest = exc.field.partition(".")
        if head in FLAGS:
            raise InvalidInstanceError(
                FLAGS[head] + (f" {rest}" if dot else ""), exc.rule
            ) from None
        raise
    idle_gpus = sum(h.n_available for h in instance.hosts)
    types = sorted({h.type for h in instance.hosts})
    return instance, (
        f"k={instance.k} of {idle_gpus} idle GPUs on {len(instance.hosts)} hosts "
        f"(types {', '.join(types)}; {instance.bandwidth.kind} model)"
    )


IMPORTER = Importer(
    build=import_gpuselect,
    help="A gpuselect instance from a cluster's hosts: the hosts, their idle GPUs, the request "
    "--k and nccl-tests tables (--table) or nvidia-smi topo -m files (--topo-file) (see "
    "docs/scheduler.md). topoopt solve --hostfile then writes CUDA_VISIBLE_DEVICES per host.",
    options=(
        ImportOption(
            "hosts",
            "--hosts",
            "The hosts (node[01-04]), optionally with their type; repeatable; required unless "
            "--scontrol.",
            multiple=True,
            metavar="HOSTLIST[=TYPE]",
        ),
        ImportOption(
            "scontrol",
            "--scontrol",
            "Output of scontrol show node -d (-o or not): the GPU nodes, their GRES type and "
            "count, and the GPUs jobs hold; --hosts then only selects nodes, --idle overrides.",
            is_file=True,
        ),
        ImportOption(
            "host_type",
            "--type",
            "Type of the hosts --hosts gives none (with --scontrol: of every node).",
        ),
        ImportOption(
            "topo_files",
            "--topo-file",
            "nvidia-smi topo -m output of a host type, or of hosts (then their type, when not "
            "given, is named after the file); repeatable.",
            multiple=True,
            metavar="TYPE_OR_HOSTLIST=FILE",
        ),
        ImportOption(
            "tables",
            "--table",
            "nccl-tests per-subset CSV of a host type (data:NAME allowed); repeatable, several "
            "tables of one type are averaged.",
            multiple=True,
            metavar="TYPE=CSV",
        ),
        ImportOption(
            "cross",
            "--cross",
            "With --table: cross-host CSV keyed by per-host GPU counts.",
            metavar="CSV",
        ),
        ImportOption(
            "idle",
            "--idle",
            "Idle GPUs, HOSTS:GPUS items (node[01-04]:0-7,node05:0,3; HOSTS alone: all its "
            "GPUs), or @FILE; default: every GPU.",
        ),
        ImportOption("k", "--k", "GPUs requested.", type=int, required=True),
        ImportOption(
            "inter_gbps",
            "--inter-gbps",
            "Inter-host link bandwidth in GB/s (required for several hosts unless --cross).",
            type=float,
        ),
        ImportOption(
            "gpus_per_nic", "--gpus-per-nic", "GPUs one NIC serves at full rate.", type=int
        ),
        ImportOption(
            "gpus",
            "--gpus",
            "GPUs per host (default: the topology's or the table's, else 8).",
            type=int,
        ),
    ),
)
"""The gpuselect family's importer (:attr:`topoopt.core.family.Family.importer`)."""
