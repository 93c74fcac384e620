"""What ``topoopt plan`` writes: the rank order, hostfiles, ``ranks.txt``, ``plan.json`` and a
summary for people.

**Rank order** (Megatron-LM's with tensor parallelism 1: ranks of one pipeline stage are
consecutive, i.e. stage-major, data-parallel replica minor; ``rank = replica + d·stage`` when
every stage has ``d`` replicas). A *stage* of the plan is a stage ``s`` of a cluster's
configuration; the stages are numbered in the order the job's units first reach them
(replica 0's blocks in order, then replica 1's, ...), so along a replica's chain the stage
numbers grow. Stage ``g`` with ``d_c`` replicas gets the next ``d_c`` ranks, replica ``j`` on
the GPU ``grid[j][s]`` of its cluster's configuration. Clusters may choose different
``d_c``: the pipeline across clusters is then heterogeneous (stage ``g`` has ``d_c``
replicas); ``ranks.txt`` says where every rank runs and what it holds.

**Hostfiles** ``hostfile.<cluster>``: one line ``<node> slots=<N>`` per node of the cluster
that runs ranks, in the order of its first rank, ``N`` its ranks (the format of DeepSpeed and
of Open MPI's ``--hostfile``). With torchrun, ``--nnodes`` is the number of lines and
``--nproc-per-node`` a node's slots; a process finds its rank, GPU and stage in
``ranks.txt``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from topoopt.core.errors import TopooptError
from topoopt.core.result import clean
from topoopt.parallelconfig.instance import split_layers

if TYPE_CHECKING:
    from topoopt.partition.instance import PartitionInstance
    from topoopt.plan.pipeline import ClusterPlan, Plan

FORMAT = "topoopt-plan"
"""The ``"format"`` of ``plan.json``."""
VERSION = 1


@dataclass(frozen=True)
class Rank:
    """One rank: where it runs (cluster, node, local GPU index) and what it holds (plan stage,
    replica within the stage, the job's units of the stage)."""

    rank: int
    cluster: str
    node: str
    gpu: int
    stage: int
    replica: int
    units: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "cluster": self.cluster,
            "node": self.node,
            "gpu": self.gpu,
            "stage": self.stage,
            "replica": self.replica,
            "units": list(self.units),
        }


def rank_order(instance: PartitionInstance, clusters: Sequence[ClusterPlan]) -> list[Rank]:
    """The ranks of a plan (module docstring): ``instance`` the partition instance (its
    vertex order is the job's unit order), ``clusters`` what each cluster runs."""
    stage_of: dict[str, tuple[str, int]] = {}
    stage_units: dict[tuple[str, int], list[str]] = {}
    by_name = {c.cluster: c for c in clusters}
    for c in clusters:
        for s, (start, stop) in enumerate(split_layers(len(c.units), c.config.p)):
            stage_units[c.cluster, s] = list(c.units[start:stop])
            for unit in c.units[start:stop]:
                stage_of[unit] = (c.cluster, s)
    order: list[tuple[str, int]] = []
    seen: set[tuple[str, int]] = set()
    for vertex in instance.vertices:
        key = stage_of[vertex.name]
        if key not in seen:
            seen.add(key)
            order.append(key)
    ranks: list[Rank] = []
    for g, (cluster, s) in enumerate(order):
        plan = by_name[cluster]
        for j, row in enumerate(plan.config.grid):
            node, gpu = plan.gpus[row[s]]
            units = tuple(stage_units[cluster, s])
            ranks.append(Rank(len(ranks), cluster, node, gpu, g, j, units))
    return ranks


def hostfiles(ranks: Sequence[Rank]) -> dict[str, list[tuple[str, int]]]:
    """``cluster -> [(node, slots), ...]``, clusters and nodes in the order of their first
    rank."""
    out: dict[str, dict[str, int]] = {}
    for r in ranks:
        nodes = out.setdefault(r.cluster, {})
        nodes[r.node] = nodes.get(r.node, 0) + 1
    return {c: list(nodes.items()) for c, nodes in out.items()}


def hostfile_text(nodes: Sequence[tuple[str, int]]) -> str:
    return "".join(f"{node} slots={slots}\n" for node, slots in nodes)


RANKS_HEADER = "# rank cluster node gpu stage replica units"


def ranks_text(ranks: Sequence[Rank]) -> str:
    """``ranks.txt``: a header line, then one line per rank."""
    lines = [RANKS_HEADER]
    lines += [
        f"{r.rank} {r.cluster} {r.node} {r.gpu} {r.stage} {r.replica} {','.join(r.units)}"
        for r in ranks
    ]
    return "\n".join(lines) + "\n"


SAFE = re.compile(r"[^A-Za-z0-9._-]")


def hostfile_names(clusters: Sequence[str]) -> dict[str, str]:
    """``hostfile.<cluster>`` for every cluster, characters other than letters, digits,
    ``.``, ``_`` and ``-`` replaced by ``_`` (an error if two clusters then collide)."""
    out: dict[str, str] = {}
    taken: dict[str, str] = {}
    for c in clusters:
        name = "hostfile." + SAFE.sub("_", c)
        if name in taken:
            raise TopooptError(
                f"clusters {taken[name]!r} and {c!r} would both write {name}: rename one"
            )
        taken[name] = c
        out[c] = name
    return out


def plan_dict(plan: Plan, *, times: bool = True) -> dict[str, Any]:
    """``plan.json`` (``times=False`` leaves out every ``seconds``, which vary from run to
    run)."""
    files = hostfile_names([c.cluster for c in plan.clusters])
    stages = []
    for report in plan.stages:
        item = report.to_dict()
        if not times:
            item.pop("seconds")
        stages.append(item)
    idle = sum(len(c.idle) for c in plan.clusters)
    clusters = []
    for c in plan.clusters:
        cost = c.cost
        clusters.append(
            {
                "cluster": c.cluster,
                "gpus": c.instance.n_gpus,
                "units": list(c.units),
                "d": cost.d,
                "p": cost.p,
                "t_cluster_s": clean(c.t_cluster_s),
                "t_comp_s": clean(cost.t_comp_s),
                "t_dp_s": clean(cost.t_dp_s),
                "t_pp_s": clean(cost.t_pp_s),
                "grid": [[_gpu_name(c.gpus[g]) for g in row] for row in c.config.grid],
                "idle": [_gpu_name(g) for g in c.idle],
                "hostfile": files[c.cluster],
            }
        )
    out: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "job": plan.job.name,
        "multicluster": plan.multicluster.name,
        "gpus": {"requested": plan.job.gpus, "ranks": len(plan.ranks), "idle": idle},
        "units": {
            "blocks": plan.job.blocks,
            "replicas": plan.job.replicas,
            "gpus_each": plan.job.unit_gpus,
        },
        "selection": dict(plan.selection),
        "stages": stages,
        "step_time": plan.step.to_dict(),
        "clusters": clusters,
        "ranks": [r.to_dict() for r in plan.ranks],
        "files": {"hostfiles": files, "ranks": "ranks.txt"},
    }
    if times:
        out["seconds"] = plan.seconds
        out["stage_seconds"] = plan.stage_seconds()
    return out


def _gpu_name(gpu: tuple[str, int]) -> str:
    return f"{gpu[0]}:{gpu[1]}"


def write_plan(plan: Plan, out: str | Path) -> list[Path]:
    """Write ``plan.json``, ``hostfile.<cluster>`` per cluster running ranks and
    ``ranks.txt`` into the folder ``out`` (created if needed); the paths written."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise TopooptError(f"--out {folder}: exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    files = hostfile_names([c.cluster for c in plan.clusters])
    written = []
    path = folder / "plan.json"
    path.write_text(json.dumps(plan_dict(plan), indent=1) + "\n", encoding="utf-8")
    written.append(path)
    for cluster, nodes in hostfiles(plan.ranks).items():
        path = folder / files[cluster]
        path.write_text(hostfile_text(nodes), encoding="utf-8")
        written.append(path)
    path = folder / "ranks.txt"
    path.write_text(ranks_text(plan.ranks), encoding="utf-8")
    written.append(path)
    return written


def _seconds(s: float) -> str:
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def summary(plan: Plan, *, times: bool = True) -> str:
    """A few lines: what runs where, each stage (per-cluster stages in one line), the step
    time and its limit."""
    job, step = plan.job, plan.step
    idle = sum(len(c.idle) for c in plan.clusters)
    spread = ", ".join(f"{c}: {n}" for c, n in list(plan.selection.items())[:8])
    spread += ", ..." if len(plan.selection) > 8 else ""
    lines = [
        f"job {job.name!r}: {job.gpus} GPUs over {len(plan.selection)} of "
        f"{len(plan.multicluster.clusters)} clusters of {plan.multicluster.name!r} ({spread}); "
        f"{len(plan.ranks)} ranks" + (f", {idle} GPUs idle (released)" if idle else "")
    ]
    rows = []
    for stage in ("clusterselect", "partition", "parallelconfig", "gpus"):
        reports = [r for r in plan.stages if r.stage == stage]
        statuses: dict[str, int] = {}
        for r in reports:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        status = ", ".join(f"{n} {s}" if len(reports) > 1 else s for s, n in statuses.items())
        if len(reports) == 1:
            objective, bound = _num(reports[0].objective), _num(reports[0].bound)
        else:
            objective = "max " + _num(max(r.objective or 0.0 for r in reports))
            bound = "max " + _num(max(r.bound for r in reports))
        checked = sum(r.checked for r in reports)
        check = "passed" if checked == len(reports) else f"{len(reports) - checked} failed"
        row = [stage, reports[0].solver, status, objective, bound, f"check {check}"]
        if times:
            row.append(_seconds(sum(r.seconds for r in reports)))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    configs = ", ".join(f"{c.cluster} (d, p) = ({c.cost.d}, {c.cost.p})" for c in plan.clusters[:8])
    lines.append(f"  {configs}{', ...' if len(plan.clusters) > 8 else ''}")
    wan = step.terms["wan_pp_s"] + step.terms["wan_dp_s"]
    lines.append(
        f"step time {step.step_s:.6g} s = T_c {step.clusters[step.slowest]:.6g} s (slowest "
        f"cluster {step.slowest}) + WAN {wan:.6g} s (pipeline {step.terms['wan_pp_s']:.6g}, "
        f"all-reduce {step.terms['wan_dp_s']:.6g})"
    )
    lines.append(
        f"limited by {step.describe_limit()}: {step.terms[step.limit]:.6g} s "
        f"({100 * step.limit_share:.0f} %, stage {step.limit_stage})"
    )
    if times:
        lines.append(f"planned in {_seconds(plan.seconds)}")
    return "\n".join(lines)


def parse_hostfile(text: str) -> list[tuple[str, int]]:
    """The ``(node, slots)`` lines of a hostfile (for tests and tools)."""
    out = []
    for line in text.splitlines():
        node, _, slots = line.partition(" slots=")
        out.append((node, int(slots)))
    return out


def parse_ranks(text: str) -> list[Rank]:
    """The ranks of a ``ranks.txt``."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        rank, cluster, node, gpu, stage, replica, units = line.split(" ")
        out.append(
            Rank(
                int(rank),
                cluster,
                node,
                int(gpu),
                int(stage),
                int(replica),
                tuple(units.split(",")),
            )
        )
    return out


__all__ = [
    "FORMAT",
    "RANKS_HEADER",
    "Rank",
    "hostfile_names",
    "hostfile_text",
    "hostfiles",
    "parse_hostfile",
    "parse_ranks",
    "plan_dict",
    "rank_order",
    "ranks_text",
    "summary",
    "write_plan",
]
