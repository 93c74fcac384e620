"""``topoopt plan``: a job over a multi-cluster description, stage by stage (SpiderFlow §3).

1. **clusterselect** — which clusters, and how many of the job's units each hosts
   (SpinSearch by default, §4.1), on the clusters' free GPUs counted in whole units;
2. **partition** — which unit goes to which chosen cluster (eq. 9; SpiderFlow's two-level
   Heuristic-ILP by default, §4.2), each chosen cluster's capacity its selected GPUs;
3. **parallelconfig** — each cluster's ``(d, p)`` and the GPU of every (replica, stage) on
   the GPUs the buddy allocator takes there (the intra-cluster ILP by default);
4. **gpus** — those GPUs named: node and local index of the cluster's free GPUs (the buddy
   allocator of Appendix A.1, over the nodes in the cluster's order, which is its topology's
   when the cluster was read from a topology file).

Each stage's answer is checked by its family's ``check()``; a stage that finds nothing raises
:class:`~topoopt.plan.stages.PlanError` naming the stage and why. Then the rank order and
hostfiles (:mod:`topoopt.plan.output`) and SpiderFlow's step-time estimate
(:mod:`topoopt.plan.steptime`). ``docs/plan.md`` has the details and a worked example.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from topoopt.clusterselect.instance import ClusterSelectInstance
from topoopt.core.backends import resolve_backend
from topoopt.core.errors import InvalidInstanceError, TopooptError
from topoopt.core.registry import get_family, get_solver, resolve_solver
from topoopt.core.result import clean
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.crosscluster.graph import Link
from topoopt.crosscluster.multicluster import MultiCluster, Site
from topoopt.parallelconfig import solution as pc
from topoopt.parallelconfig.bounds import lower_bound
from topoopt.parallelconfig.instance import Node, ParallelConfigInstance
from topoopt.parallelconfig.solution import Breakdown, ParallelConfig
from topoopt.partition import intra
from topoopt.partition.instance import Cluster, PartitionInstance, Training, Vertex
from topoopt.partition.solution import Assignment
from topoopt.plan.job import Job, JobEdge, load_job
from topoopt.plan.stages import PlanError, StageReport, require

if TYPE_CHECKING:
    from topoopt.plan.output import Rank
    from topoopt.plan.steptime import StepTime

SELECT = "clusterselect/spinsearch"
"""Default solver of the clusterselect stage (SpinSearch, SpiderFlow §4.1)."""
PARTITION = "partition/heuristic-ilp"
"""Default solver of the partition stage (SpiderFlow's two-level Heuristic-ILP, §4.2)."""
CONFIG = "parallelconfig/mip"
"""Default solver of the parallelconfig stage (the intra-cluster ILP, §4.2)."""
BUDDY = "crosscluster/buddy"
"""Name of the gpus stage's method (SpiderFlow's buddy allocator, Appendix A.1)."""


@dataclass(frozen=True)
class ClusterPlan:
    """What one cluster runs.

    Attributes
    ----------
    cluster
        Its name.
    units
        The job's units it hosts (vertices of the partition graph), in job order.
    instance
        Its parallelconfig sub-problem (``partition.intra``): the GPUs the buddy allocator
        took, one layer per unit, ``(d, p)`` free.
    config
        Its configuration: ``config.grid[j][s]`` is the sub-problem GPU of replica ``j``,
        stage ``s``.
    gpus
        Every sub-problem GPU (``"node/k"``, the ``k``-th GPU taken on the node) with the node
        and local GPU index it is, in the order taken.
    cost
        The configuration's cost breakdown (``T_comp``, ``T_dp``, ``T_pp``).
    """

    cluster: str
    units: tuple[str, ...]
    instance: ParallelConfigInstance
    config: ParallelConfig
    gpus: Mapping[str, tuple[str, int]]
    cost: Breakdown

    @property
    def t_cluster_s(self) -> float:
        """``T_c = T_comp + α·T_dp + β·T_pp`` (s per iteration)."""
        return self.cost.objective

    @property
    def used(self) -> frozenset[str]:
        """Sub-problem GPUs that run a rank."""
        return frozenset(g for row in self.config.grid for g in row)

    @property
    def idle(self) -> tuple[tuple[str, int], ...]:
        """Taken GPUs that run no rank (``d·p < r_c``; released by the plan)."""
        used = self.used
        return tuple(real for gpu, real in self.gpus.items() if gpu not in used)


@dataclass(frozen=True)
class Plan:
    """A job's plan over a multi-cluster description (module docstring).

    Attributes
    ----------
    job, multicluster
        The inputs.
    stages
        Every stage's report, in order (``parallelconfig`` and ``gpus`` once per cluster).
    selection
        GPUs each chosen cluster gives the job (clusterselect's counts, in units × unit GPUs).
    partition
        The partition instance (units over the chosen clusters).
    assignment
        The units' clusters and each cluster's configuration (passes the partition family's
        ``check()``).
    clusters
        What each cluster runs, in the multi-cluster's order.
    ranks
        The rank order (:func:`topoopt.plan.output.rank_order`).
    step
        SpiderFlow's step-time estimate and what limits it.
    seconds
        Wall-clock time of the whole plan.
    """

    job: Job
    multicluster: MultiCluster
    stages: tuple[StageReport, ...]
    selection: Mapping[str, int]
    partition: PartitionInstance
    assignment: Assignment
    clusters: tuple[ClusterPlan, ...]
    ranks: tuple[Rank, ...]
    step: StepTime
    seconds: float

    def stage_seconds(self) -> dict[str, float]:
        """Seconds per stage (per-cluster stages summed)."""
        out: dict[str, float] = {}
        for report in self.stages:
            out[report.stage] = out.get(report.stage, 0.0) + report.seconds
        return out

    def to_dict(self, *, times: bool = True) -> dict[str, Any]:
        """``plan.json`` (:func:`topoopt.plan.output.plan_dict`)."""
        from topoopt.plan.output import plan_dict

        return plan_dict(self, times=times)

    def write(self, out: str | Path) -> list[Path]:
        """Write ``plan.json``, the hostfiles and ``ranks.txt`` into the folder ``out``
        (:func:`topoopt.plan.output.write_plan`)."""
        from topoopt.plan.output import write_plan

        return write_plan(self, out)

    def summary(self, *, times: bool = True) -> str:
        """A few lines for people (:func:`topoopt.plan.output.summary`)."""
        from topoopt.plan.output import summary

        return summary(self, times=times)


class _Clock:
    """The plan's time limit shared by its stages."""

    def __init__(self, limit: float | None) -> None:
        if limit is not None and not (isinstance(limit, (int, float)) and limit > 0):
            raise TopooptError(f"time_limit: must be a positive number, got {limit!r}")
        self.limit = limit
        self.deadline = math.inf if limit is None else time.perf_counter() + limit

    def share(self, stage: str, parts: int = 1) -> float | None:
        """The time left divided by ``parts`` (``None`` without a limit); raises when none
        is left."""
        if self.limit is None:
            return None
        left = self.deadline - time.perf_counter()
        if left <= 0:
            raise PlanError(stage, f"the time limit of {self.limit:g} s ran out before this stage")
        return max(left / parts, 1e-3)


def _solve(stage: str, solver: str, instance: Any, limit: float | None, **kw: Any) -> Any:
    """``solver`` on ``instance``; an error the solver raises becomes a
    :class:`PlanError` of ``stage``."""
    try:
        return get_solver(solver, instance.family).solve(instance, time_limit=limit, **kw)
    except PlanError:
        raise
    except TopooptError as exc:
        raise PlanError(stage, f"{solver}: {exc}") from None


# ----------------------------------------------------------------------------- stage 1


def _selection_instance(job: Job, mc: MultiCluster) -> ClusterSelectInstance:
    """The clusterselect instance of the job's units (``unit_gpus`` GPUs each) on the
    clusters' free GPUs in whole units: with units of one GPU, ``mc.clusterselect``."""
    u = job.unit_gpus
    if u == 1:
        return mc.clusterselect(job.gpus, job.source)
    return ClusterSelectInstance(
        f"{mc.name}-{job.n_units}x{u}",
        clusters=[(c.name, c.free_gpus // u) for c in mc.clusters],
        links=mc.links,
        demand=job.n_units,
        source=job.source,
    )


def _check_fits(job: Job, mc: MultiCluster, job_source: str, mc_source: str) -> None:
    """A :class:`PlanError` of clusterselect naming the job's file and field when no set of
    clusters holds the job."""
    free = mc.free_gpus
    shown = ", ".join(f"{c.name}: {c.free_gpus}" for c in mc.clusters[:8])
    shown += ", ..." if len(mc.clusters) > 8 else ""
    if job.gpus > free:
        raise PlanError(
            "clusterselect",
            f"no set of clusters holds the job: {job_source}: gpus: {job.gpus} GPUs requested, "
            f"but {mc_source} has {free} free ({shown})",
        )
    u = job.unit_gpus
    whole = sum(c.free_gpus // u for c in mc.clusters)
    if whole < job.n_units:
        raise PlanError(
            "clusterselect",
            f"no set of clusters holds the job: {job_source}: blocks: {job.n_units} units of "
            f"{u} GPUs (blocks × replicas = {job.blocks} × {job.replicas}), but the clusters of "
            f"{mc_source} hold {whole} whole units ({shown} free GPUs): more blocks make "
            "smaller units",
        )


def _select(
    job: Job, mc: MultiCluster, solver: str, clock: _Clock, kw: Mapping[str, Any]
) -> tuple[dict[str, int], StageReport]:
    started = time.perf_counter()
    instance = _selection_instance(job, mc)
    result = _solve("clusterselect", solver, instance, clock.share("clusterselect"), **kw)
    require("clusterselect", "selection", result)
    violations = get_family("clusterselect").check(instance, result.solution)
    if violations:
        raise PlanError("clusterselect", f"{solver}'s selection breaks: {'; '.join(violations)}")
    take = result.solution.as_dict()
    selection = {c.name: take[c.name] * job.unit_gpus for c in mc.clusters if take.get(c.name)}
    details = {
        "selection": selection,
        "units": {c: n // job.unit_gpus for c, n in selection.items()},
        "clusters": len(selection),
        "bottleneck_gbps": _finite(result.metrics.get("bottleneck_gbps")),
    }
    seconds = time.perf_counter() - started
    return selection, StageReport.of("clusterselect", result, violations, seconds, details=details)


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


# ----------------------------------------------------------------------------- stage 2


def _free_nodes(site: Site) -> tuple[Node, ...]:
    """The cluster's nodes with free GPUs, in its order, each with its free GPU count."""
    return tuple(Node(n.name, len(n.free)) for n in site.nodes if n.free)


def _check_names(mc: MultiCluster, source: str) -> None:
    """Names the outputs cannot hold: whitespace in a cluster or node name (``ranks.txt``
    and hostfiles separate fields by spaces), ``/`` in a node name (a sub-problem GPU is
    ``node/k``)."""
    for i, c in enumerate(mc.clusters):
        if any(ch.isspace() for ch in c.name):
            raise InvalidInstanceError(
                f"{source}: clusters[{i}].name", f"{c.name!r}: a plan cannot name it (whitespace)"
            )
        for j, n in enumerate(c.nodes):
            if any(ch.isspace() for ch in n.name) or "/" in n.name:
                raise InvalidInstanceError(
                    f"{source}: clusters[{i}].nodes[{j}].name",
                    f"{n.name!r}: a plan cannot name it (whitespace or '/')",
                )


def partition_instance(
    job: Job, mc: MultiCluster, selection: Mapping[str, int]
) -> PartitionInstance:
    """The partition instance of the job's units over the chosen clusters: capacities the
    selected GPUs, nodes the clusters' free GPUs, one link per pair of chosen clusters with
    the widest-path bandwidth of the whole WAN graph (eq. 1: so eq. 9's weights are the whole
    graph's, paths through clusters not chosen included)."""
    chosen = [c for c in mc.clusters if selection.get(c.name)]
    clusters = [
        Cluster(c.name, selection[c.name], _free_nodes(c), c.intra_node_gbps, c.inter_node_gbps)
        for c in chosen
    ]
    index = mc.graph.index
    links = []
    for i, a in enumerate(chosen):
        widest = mc.graph.widest_from(a.name)  # one traversal of the maximum spanning tree
        links += [Link(a.name, b.name, widest[index[b.name]]) for b in chosen[i + 1 :]]
    vertices = [Vertex(u.name, u.gpus, u.compute_s, u.param_bytes) for u in job.units()]
    edges = [(e.u, e.v, e.traffic) for e in job.edges()]
    training = Training(job.activation_bytes, job.replica_micro_batches, job.alpha, job.beta)
    return PartitionInstance(
        f"{job.name}@{mc.name}",
        clusters,
        links,
        vertices,
        edges,
        labels={"job": job.name, "multicluster": mc.name},
        training=training,
    )


def _partition(
    job: Job,
    mc: MultiCluster,
    selection: Mapping[str, int],
    solver: str,
    clock: _Clock,
    kw: Mapping[str, Any],
) -> tuple[PartitionInstance, Assignment, StageReport]:
    started = time.perf_counter()
    try:
        instance = partition_instance(job, mc, selection)
    except InvalidInstanceError as exc:
        raise PlanError("partition", f"no partition instance: {exc}") from None
    result = _solve("partition", solver, instance, clock.share("partition"), **kw)
    require("partition", "assignment", result)
    violations = get_family("partition").check(instance, result.solution)
    if violations:
        raise PlanError("partition", f"{solver}'s assignment breaks: {'; '.join(violations)}")
    where = result.solution.as_dict()
    hosted = {
        c.name: [u.name for u in instance.vertices if where[u.name] == c.name]
        for c in instance.clusters
    }
    details = {
        "cut_edges": result.metrics.get("cut_edges"),
        "cut_traffic": result.metrics.get("cut_traffic"),
        "units": {c: units for c, units in hosted.items() if units},
    }
    seconds = time.perf_counter() - started
    report = StageReport.of("partition", result, violations, seconds, details=details)
    return instance, result.solution.with_configs({}), report


# ----------------------------------------------------------------------------- stage 3


def filling_pairs(sub: ParallelConfigInstance) -> list[tuple[int, int]]:
    """The ``(d, p)`` with ``d·p`` equal to the sub-problem's GPUs, ``p`` at most its layers
    and ``d`` at most its micro-batches, by increasing ``d``.

    Examples
    --------
    >>> from topoopt.parallelconfig.instance import TrainingModel
    >>> sub = ParallelConfigInstance("s", [("n0", 8), ("n1", 4)], 200, 8,
    ...                              TrainingModel([(0.01, 1e8)] * 6, 1e7, 8))
    >>> filling_pairs(sub)
    [(2, 6), (3, 4), (4, 3), (6, 2)]
    """
    r, layers, m = sub.n_gpus, sub.model.n_layers, sub.model.micro_batches
    return [(d, r // d) for d in range(1, min(r, m) + 1) if r % d == 0 and r // d <= layers]


def _fixed(sub: ParallelConfigInstance, d: int, p: int) -> ParallelConfigInstance:
    return ParallelConfigInstance(
        f"{sub.name}@{d}x{p}",
        sub.nodes,
        sub.intra_node_gbps,
        sub.inter_node_gbps,
        sub.model,
        alpha=sub.alpha,
        beta=sub.beta,
        parallelism=(d, p),
        labels=sub.labels,
    )


def _configure(
    cluster: str,
    sub: ParallelConfigInstance,
    fill: bool,
    solver: str,
    limit: float | None,
    kw: Mapping[str, Any],
) -> tuple[ParallelConfig, StageReport]:
    """The configuration of one cluster: the solver on its sub-problem, or with ``fill`` on
    the ``(d, p)`` that use all its GPUs (:func:`filling_pairs`), each with ``(d, p)`` fixed,
    by increasing a-priori lower bound (``parallelconfig.bounds.lower_bound``), until the
    bound reaches the cheapest configuration found; the cheapest is kept. The stage's bound is
    the smallest over the pairs of the solver's bound (pairs solved) or the a-priori bound
    (pairs pruned); it is optimal when every pair solved was."""
    started = time.perf_counter()
    check = get_family("parallelconfig").check
    if not fill:
        result = _solve("parallelconfig", solver, sub, limit, **kw)
        require("parallelconfig", "configuration", result, cluster)
        violations = check(sub, result.solution)
        seconds = time.perf_counter() - started
        details = _config_details(sub, result.solution)
        report = StageReport.of(
            "parallelconfig", result, violations, seconds, cluster=cluster, details=details
        )
        return result.solution, report
    pairs = filling_pairs(sub)
    if not pairs:
        raise PlanError(
            "parallelconfig",
            f"cluster {cluster!r}: no (d, p) uses all its {sub.n_gpus} GPUs with p <= "
            f"{sub.model.n_layers} units and d <= {sub.model.micro_batches} micro-batches "
            "(set use_all_gpus to false to allow idle GPUs)",
        )
    deadline = None if limit is None else time.perf_counter() + limit
    # parallelconfig's a-priori bound of every pair: solved by increasing bound, a pair whose
    # bound reaches the best cost so far cannot beat it and is pruned (its bound stands).
    ranked = sorted((lower_bound(sub, d, p).objective, d, p) for d, p in pairs)
    best: Any = None
    bound = math.inf
    statuses = []
    notes = []
    pruned = 0
    timed_out = False
    for k, (floor, d, p) in enumerate(ranked):
        if best is not None and floor >= best.objective - 1e-12 * max(1.0, abs(best.objective)):
            bound = min(bound, floor)
            pruned += 1
            continue
        share = (
            None
            if deadline is None
            else max((deadline - time.perf_counter()) / (len(ranked) - k), 1e-3)
        )
        result = _solve("parallelconfig", solver, _fixed(sub, d, p), share, **kw)
        timed_out = timed_out or result.termination is TerminationReason.TIME_LIMIT
        bound = min(bound, result.bound)
        if result.solution is None or not result.is_ok:
            if result.termination is not TerminationReason.TIME_LIMIT:
                require(
                    "parallelconfig", f"configuration with (d, p) = ({d}, {p})", result, cluster
                )
            statuses.append(SolutionStatus.NO_SOLUTION)
            notes.append(f"({d}, {p}): none in time")
            continue
        statuses.append(result.status)
        notes.append(f"({d}, {p}): {result.objective:.6g} s {result.status.label}")
        if best is None or result.objective < best.objective - 1e-12:
            best = result
    if pruned:
        notes.append(f"{pruned} pruned by their bounds")
    if best is None:
        raise PlanError(
            "parallelconfig",
            f"cluster {cluster!r}: {solver} found no configuration in time ({'; '.join(notes)})",
        )
    config = best.solution
    violations = check(sub, config)
    status = (
        SolutionStatus.OPTIMAL
        if min(statuses) == SolutionStatus.OPTIMAL
        else SolutionStatus.FEASIBLE
    )
    seconds = time.perf_counter() - started
    report = StageReport.computed(
        "parallelconfig",
        solver,
        pc.evaluate(sub, config),
        bound,
        seconds,
        violations,
        cluster=cluster,
        status=status,
        termination=TerminationReason.TIME_LIMIT if timed_out else TerminationReason.COMPLETED,
        message=f"every GPU runs a rank: (d, p) with d*p = {sub.n_gpus}: " + "; ".join(notes),
        details=_config_details(sub, config),
    )
    return config, report


def _shape(sub: ParallelConfigInstance) -> tuple[Any, ...]:
    """What a sub-problem's configurations and costs depend on: everything but the names
    (its nodes' GPU counts in order, bandwidths, model, weights, fixed ``(d, p)``)."""
    return (
        tuple(n.gpus for n in sub.nodes),
        sub.intra_node_gbps,
        sub.inter_node_gbps,
        sub.model,
        sub.alpha,
        sub.beta,
        sub.parallelism,
    )


def _reuse(
    cluster: str,
    sub: ParallelConfigInstance,
    first: ParallelConfigInstance,
    config: ParallelConfig,
    report: StageReport,
) -> tuple[ParallelConfig, StageReport]:
    """The configuration of a sub-problem of the same shape as ``first`` (:func:`_shape`):
    ``first``'s, its GPUs renamed node by node (the same cost, so the same bound holds),
    checked again."""
    started = time.perf_counter()
    names = {a.name: b.name for a, b in zip(first.nodes, sub.nodes, strict=True)}
    grid = []
    for row in config.grid:
        cells = []
        for gpu in row:
            node, _, k = gpu.rpartition("/")
            cells.append(f"{names[node]}/{k}")
        grid.append(cells)
    mapped = ParallelConfig.of(grid)
    violations = get_family("parallelconfig").check(sub, mapped)
    again = dataclasses.replace(
        report,
        cluster=cluster,
        seconds=time.perf_counter() - started,
        violations=tuple(violations),
        message=f"the same sub-problem as cluster {report.cluster} but for the node names: its "
        f"configuration, renamed ({report.message})",
        details=_config_details(sub, mapped),
    )
    return mapped, again


def _config_details(sub: ParallelConfigInstance, config: ParallelConfig) -> dict[str, Any]:
    cost = pc.cost(sub, config)
    return {
        "gpus": sub.n_gpus,
        "d": cost.d,
        "p": cost.p,
        "t_comp_s": clean(cost.t_comp_s),
        "t_dp_s": clean(cost.t_dp_s),
        "t_pp_s": clean(cost.t_pp_s),
    }


# ----------------------------------------------------------------------------- stage 4


def fewest_nodes(site: Site, gpus: int) -> int:
    """The fewest of the cluster's nodes whose free GPUs add up to ``gpus``."""
    total = 0
    for k, free in enumerate(sorted((len(n.free) for n in site.nodes), reverse=True), 1):
        total += free
        if total >= gpus:
            return k
    return len(site.nodes)


def check_gpus(site: Site, gpus: int, taken: Mapping[str, tuple[str, int]]) -> list[str]:
    """The rules the GPUs taken in ``site`` break: ``gpus`` of them, each a free GPU of a
    node of the cluster, none twice."""
    problems = []
    if len(taken) != gpus:
        problems.append(f"takes {len(taken)} GPUs, not {gpus}")
    free = {n.name: set(n.free) for n in site.nodes}
    seen: set[tuple[str, int]] = set()
    for name, (node, index) in taken.items():
        if node not in free:
            problems.append(f"{name}: unknown node {node!r}")
        elif index not in free[node]:
            problems.append(f"{name}: GPU {index} of node {node!r} is not free")
        if (node, index) in seen:
            problems.append(f"{name}: GPU {index} of node {node!r} taken twice")
        seen.add((node, index))
    return problems


def _gpus(
    cluster: Cluster, site: Site, sub: ParallelConfigInstance
) -> tuple[dict[str, tuple[str, int]], StageReport]:
    """The sub-problem's GPUs named: the buddy allocator's run on the cluster's free GPUs
    (``partition.intra.allocate``: the same run the sub-problem was built from), its
    ``k``-th GPU on a node the node's ``k``-th free GPU."""
    started = time.perf_counter()
    r = sub.n_gpus
    names = intra.allocate(cluster, r)
    per_node: dict[str, list[int]] = {}
    for name in names:
        node, _, index = name.rpartition("/")
        per_node.setdefault(node, []).append(int(index))
    taken: dict[str, tuple[str, int]] = {}
    for node, ks in per_node.items():
        free = site.node(node).free
        for j, i in enumerate(ks):
            taken[f"{node}/{j}"] = (node, free[i])
    violations = check_gpus(site, r, taken)
    if [(n.name, n.gpus) for n in sub.nodes] != [(n, len(ks)) for n, ks in per_node.items()]:
        violations.append("the GPUs taken differ from the sub-problem's nodes")
    nodes = len(per_node)
    report = StageReport.computed(
        "gpus",
        BUDDY,
        float(nodes),
        float(fewest_nodes(site, r)),
        time.perf_counter() - started,
        violations,
        cluster=site.name,
        message=f"{r} GPUs on {nodes} node(s); objective: nodes spanned, bound: the fewest "
        "nodes whose free GPUs hold them",
        details={"nodes": {n: [site.node(n).free[k] for k in ks] for n, ks in per_node.items()}},
    )
    return taken, report


# ----------------------------------------------------------------------------- the plan


def make_plan(
    job: Job | Mapping[str, Any] | str | Path,
    multicluster: MultiCluster | str | Path,
    *,
    select_solver: str = SELECT,
    partition_solver: str = PARTITION,
    config_solver: str = CONFIG,
    time_limit: float | None = None,
    backend: str | None = None,
    seed: int | None = None,
    job_source: str | None = None,
    multicluster_source: str | None = None,
) -> Plan:
    """Plan ``job`` over ``multicluster`` (module docstring).

    Parameters
    ----------
    job
        A :class:`~topoopt.plan.job.Job`, its JSON object or a job file.
    multicluster
        A :class:`~topoopt.crosscluster.multicluster.MultiCluster` or its file.
    select_solver, partition_solver, config_solver
        The solvers of the clusterselect, partition and parallelconfig stages (registry
        names; defaults :data:`SELECT`, :data:`PARTITION`, :data:`CONFIG`).
    time_limit
        Seconds for the whole plan (each stage gets the time left; each cluster's
        configuration its share), or ``None``.
    backend, seed
        MIP backend and seed of every solver.
    job_source, multicluster_source
        How errors name the inputs (default: the file names, or ``job`` and
        ``multicluster``).

    Raises
    ------
    PlanError
        When a stage finds nothing, naming the stage and why.
    InvalidInstanceError
        For bad input, naming the file and the field.

    Examples
    --------
    >>> from topoopt.crosscluster.settings import uniform
    >>> mc = uniform("demo", clusters=3, nodes=2, gpus_per_node=4)
    >>> job = Job("j", 12, [(0.004, 1.5e8)] * 12, 1.6e7, 8, blocks=6)
    >>> plan = make_plan(job, mc)
    >>> plan.selection, len(plan.ranks)
    ({'c0': 8, 'c1': 4}, 12)
    """
    started = time.perf_counter()
    if job_source is None:
        job_source = str(job) if isinstance(job, (str, Path)) else "job"
    if multicluster_source is None:
        multicluster_source = (
            str(multicluster) if isinstance(multicluster, (str, Path)) else "multicluster"
        )
    job = load_job(job)
    mc = multicluster if isinstance(multicluster, MultiCluster) else MultiCluster.load(multicluster)
    if backend is not None:
        resolve_backend(backend)  # an unknown or missing backend fails before any stage
    solvers = {
        "clusterselect": resolve_solver(select_solver, "clusterselect"),
        "partition": resolve_solver(partition_solver, "partition"),
        "parallelconfig": resolve_solver(config_solver, "parallelconfig"),
    }
    if job.source is not None and job.source not in mc.graph.index:
        names = ", ".join(c.name for c in mc.clusters[:8])
        more = ", ..." if len(mc.clusters) > 8 else ""
        raise InvalidInstanceError(
            f"{job_source}: source",
            f"unknown cluster {job.source!r}: {multicluster_source} has {names}{more}",
        )
    _check_names(mc, multicluster_source)
    clock = _Clock(time_limit)
    kw: dict[str, Any] = {"backend": backend, "seed": seed}
    _check_fits(job, mc, job_source, multicluster_source)

    selection, select_report = _select(job, mc, solvers["clusterselect"], clock, kw)
    instance, assignment, partition_report = _partition(
        job, mc, selection, solvers["partition"], clock, kw
    )
    subs = intra.sub_instances(instance, assignment)
    configs: dict[str, ParallelConfig] = {}
    config_reports = []
    solved: dict[Any, tuple[ParallelConfigInstance, ParallelConfig, StageReport]] = {}
    for k, (cluster, sub) in enumerate(subs.items()):
        limit = clock.share("parallelconfig", len(subs) - k)
        key = _shape(sub)
        if key in solved:
            config, report = _reuse(cluster, sub, *solved[key])
        else:
            config, report = _configure(
                cluster, sub, job.use_all_gpus, solvers["parallelconfig"], limit, kw
            )
            solved[key] = (sub, config, report)
        configs[cluster] = config
        config_reports.append(report)
    failed = [r for r in config_reports if not r.checked]
    if failed:
        why = "; ".join(failed[0].violations)
        raise PlanError(
            "parallelconfig", f"cluster {failed[0].cluster!r}: the configuration breaks: {why}"
        )
    assignment = assignment.with_configs(configs)
    violations = get_family("partition").check(instance, assignment)
    if violations:
        raise PlanError(
            "parallelconfig",
            f"the configurations break the partition's rules: {'; '.join(violations)}",
        )

    gpu_reports = []
    plans = []
    by_name = {c.name: c for c in instance.clusters}
    where = assignment.as_dict()
    for cluster, sub in subs.items():
        taken, report = _gpus(by_name[cluster], mc.cluster(cluster), sub)
        if not report.checked:
            raise PlanError("gpus", f"cluster {cluster!r}: {'; '.join(report.violations)}")
        gpu_reports.append(report)
        units = tuple(u.name for u in instance.vertices if where[u.name] == cluster)
        plans.append(
            ClusterPlan(
                cluster, units, sub, configs[cluster], taken, pc.cost(sub, configs[cluster])
            )
        )

    from topoopt.plan.output import rank_order
    from topoopt.plan.steptime import step_time

    edges: list[JobEdge] = job.edges()
    ranks = rank_order(instance, plans)
    step = step_time(instance, assignment, plans, edges)
    reports = (select_report, partition_report, *config_reports, *gpu_reports)
    return Plan(
        job,
        mc,
        reports,
        selection,
        instance,
        assignment,
        tuple(plans),
        tuple(ranks),
        step,
        time.perf_counter() - started,
    )


__all__ = [
    "BUDDY",
    "CONFIG",
    "PARTITION",
    "SELECT",
    "ClusterPlan",
    "Plan",
    "check_gpus",
    "filling_pairs",
    "make_plan",
    "partition_instance",
]
