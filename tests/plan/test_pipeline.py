"""``topoopt plan``'s pipeline: every plan of small generated multi-clusters and jobs passes each
stage's ``check()``, its hostfiles hold exactly its ranks on free GPUs, ``ranks.txt`` is a
bijection onto them; bad input is one error naming the stage, or the file and the field."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from topoopt.core.errors import InvalidInstanceError
from topoopt.core.registry import get_family
from topoopt.crosscluster.graph import Link
from topoopt.crosscluster.multicluster import MultiCluster, Site, SiteNode
from topoopt.crosscluster.settings import uniform
from topoopt.parallelconfig import solution as pc
from topoopt.partition import intra
from topoopt.plan import Job, Plan, PlanError, make_plan
from topoopt.plan.output import hostfiles, parse_hostfile, parse_ranks, rank_order
from topoopt.plan.pipeline import _selection_instance, check_gpus, filling_pairs

BANDWIDTHS = (1.0, 5.0, 10.0, 40.0)


@st.composite
def multiclusters(draw: st.DrawFn) -> MultiCluster:
    """1-4 clusters of 1-3 nodes of 1, 2 or 4 GPUs, some busy, on a random connected graph."""
    n = draw(st.integers(1, 4))
    sites = []
    for c in range(n):
        nodes = []
        for k in range(draw(st.integers(1, 3))):
            gpus = draw(st.sampled_from([1, 2, 4]))
            free = draw(st.lists(st.integers(0, gpus - 1), unique=True, max_size=gpus))
            if draw(st.booleans()):
                free = list(range(gpus))
            nodes.append(SiteNode(f"c{c}-n{k}", gpus, tuple(free)))
        intra = draw(st.sampled_from([32.0, 200.0]))
        sites.append(Site(f"c{c}", tuple(nodes), intra, draw(st.sampled_from([8.0, 100.0]))))
    links = [
        Link(f"c{draw(st.integers(0, c - 1))}", f"c{c}", draw(st.sampled_from(BANDWIDTHS)))
        for c in range(1, n)
    ]
    pairs = {frozenset((link.a, link.b)) for link in links}
    for a in range(n):
        for b in range(a + 1, n):
            if frozenset((f"c{a}", f"c{b}")) not in pairs and draw(st.booleans()):
                links.append(Link(f"c{a}", f"c{b}", draw(st.sampled_from(BANDWIDTHS))))
    return MultiCluster("mc", tuple(sites), tuple(links))


@st.composite
def jobs(draw: st.DrawFn, most: int) -> Job:
    """A job of 1-3 replicas of 1-4 blocks of 1-2 GPUs (the replicas dropped first, then the
    GPUs of a unit, then blocks, while it needs more than ``most`` GPUs), with enough layers,
    micro-batches and (for use_all_gpus) enough of them per replica."""
    replicas = draw(st.integers(1, 3))
    blocks = draw(st.integers(1, 4))
    unit_gpus = draw(st.integers(1, 2))
    while replicas * blocks * unit_gpus > max(most, 1):
        if replicas > 1:
            replicas -= 1
        elif unit_gpus > 1:
            unit_gpus -= 1
        else:
            blocks -= 1
    n_layers = blocks + draw(st.integers(0, 3))
    layers = [
        (draw(st.sampled_from([0.002, 0.004, 0.01])), draw(st.sampled_from([0.0, 1e8, 4e8])))
        for _ in range(n_layers)
    ]
    use_all = draw(st.booleans())
    per_replica = draw(st.integers(unit_gpus if use_all else 1, unit_gpus + 4))
    return Job(
        "job",
        replicas * blocks * unit_gpus,
        layers,
        draw(st.sampled_from([0.0, 1e7, 6.4e7])),
        per_replica * replicas,
        blocks=blocks,
        replicas=replicas,
        alpha=draw(st.sampled_from([0.5, 1.0])),
        use_all_gpus=use_all,
    )


def fits(job: Job, mc: MultiCluster) -> bool:
    return sum(c.free_gpus // job.unit_gpus for c in mc.clusters) >= job.n_units


def check_plan(plan: Plan) -> None:
    """Every stage's ``check()`` passes (as reported and recomputed), the hostfiles hold the
    ranks, the ranks are a bijection onto free GPUs, and the written files say the same."""
    job, mc = plan.job, plan.multicluster
    assert all(report.checked for report in plan.stages), [r.violations for r in plan.stages]
    assert [r.stage for r in plan.stages[:2]] == ["clusterselect", "partition"]
    # clusterselect: the selection, in units, passes its family's check
    select = _selection_instance(job, mc)
    from topoopt.clusterselect.solution import Selection

    units = {c: n // job.unit_gpus for c, n in plan.selection.items()}
    assert get_family("clusterselect").check(select, Selection.of(units)) == []
    assert sum(plan.selection.values()) == job.gpus
    # partition (with the configurations: partition.intra checks each against its
    # sub-problem) and parallelconfig
    assert get_family("partition").check(plan.partition, plan.assignment) == []
    for c in plan.clusters:
        assert pc.check(c.instance, c.config) == []
        assert c.instance == intra.cluster_instance(plan.partition, plan.assignment, c.cluster)
        assert check_gpus(mc.cluster(c.cluster), c.instance.n_gpus, c.gpus) == []
        if job.use_all_gpus:
            assert c.config.d * c.config.p == c.instance.n_gpus and not c.idle
    assert {c.cluster: c.instance.n_gpus for c in plan.clusters} == dict(plan.selection)
    # ranks: 0..n-1, each on a distinct free GPU; with use_all_gpus exactly the job's GPUs
    ranks = plan.ranks
    assert [r.rank for r in ranks] == list(range(len(ranks)))
    places = [(r.cluster, r.node, r.gpu) for r in ranks]
    assert len(set(places)) == len(places)
    for cluster, node, gpu in places:
        assert gpu in mc.cluster(cluster).node(node).free
    idle = [(c.cluster, *g) for c in plan.clusters for g in c.idle]
    assert not set(idle) & set(places)
    assert len(places) + len(idle) == job.gpus
    if job.use_all_gpus:
        assert len(ranks) == job.gpus
    assert len(ranks) == sum(c.config.d * c.config.p for c in plan.clusters)
    # every unit is held by the ranks of one stage, d_c of them
    held: dict[str, set[int]] = {}
    for r in ranks:
        for u in r.units:
            held.setdefault(u, set()).add(r.stage)
    assert sorted(held) == sorted(u.name for u in job.units())
    assert all(len(stages) == 1 for stages in held.values())
    # the step time is the partition family's two-level estimate (H5)
    metrics = get_family("partition").metrics(plan.partition, plan.assignment)
    assert math.isclose(plan.step.step_s, metrics["step_time_s"], rel_tol=1e-9, abs_tol=1e-12)
    # the files
    with tempfile.TemporaryDirectory() as folder:
        plan.write(folder)
        slots = {}
        for cluster, nodes in hostfiles(ranks).items():
            name = Path(folder) / f"hostfile.{cluster}"
            assert parse_hostfile(name.read_text()) == nodes
            slots.update({(cluster, node): k for node, k in nodes})
        assert sum(slots.values()) == len(ranks)
        written = parse_ranks((Path(folder) / "ranks.txt").read_text())
        assert tuple(written) == ranks
        for (cluster, node), k in slots.items():
            assert k == sum(1 for r in ranks if (r.cluster, r.node) == (cluster, node))


@given(st.data())
def test_every_plan_passes_every_check(data: st.DataObject) -> None:
    mc = data.draw(multiclusters())
    job = data.draw(jobs(mc.free_gpus + data.draw(st.integers(0, 2))))
    event(f"replicas {job.replicas}, use_all_gpus {job.use_all_gpus}")
    event(f"unit GPUs {job.unit_gpus}")
    if job.gpus > mc.free_gpus or not fits(job, mc):
        event("does not fit")
        with pytest.raises(PlanError) as caught:
            make_plan(job, mc, job_source="job.json", multicluster_source="mc.json")
        assert caught.value.stage == "clusterselect"
        assert "job.json: " in str(caught.value) and "mc.json" in str(caught.value)
        return
    check_plan(make_plan(job, mc))


@given(st.data())
def test_other_solvers_give_checked_plans(data: st.DataObject) -> None:
    mc = data.draw(multiclusters())
    job = data.draw(jobs(mc.free_gpus))
    if not fits(job, mc):
        return
    select = data.draw(st.sampled_from(["clusterselect/spinsearch", "clusterselect/mip"]))
    part = data.draw(st.sampled_from(["partition/greedy-lowcut", "partition/mip"]))
    config = data.draw(st.sampled_from(["parallelconfig/greedy", "parallelconfig/enumerate"]))
    if config == "parallelconfig/enumerate" and job.gpus > 24:
        config = "parallelconfig/greedy"
    plan = make_plan(job, mc, select_solver=select, partition_solver=part, config_solver=config)
    assert [r.solver for r in plan.stages[:3]] == [select, part, config]
    check_plan(plan)


def test_the_default_configurations_are_heuristic_ilps_when_gpus_may_idle() -> None:
    """With ``use_all_gpus`` false the parallelconfig stage solves the same sub-problems with
    the same ILP as partition/heuristic-ilp, so it finds the same configurations."""
    from topoopt.partition.solution import Assignment

    mc = uniform("u", clusters=3, nodes=2, gpus_per_node=4)
    job = Job("j", 16, [(0.004, 1.5e8)] * 16, 1.6e7, 16, blocks=8, use_all_gpus=False)
    plan = make_plan(job, mc)
    check_plan(plan)
    import topoopt

    again = topoopt.solve(plan.partition, "partition/heuristic-ilp")
    assert isinstance(again.solution, Assignment)
    assert again.solution.as_dict() == plan.assignment.as_dict()
    assert again.solution.config_dict() == plan.assignment.config_dict()


def test_spiderflow_scale_job_of_256_gpus() -> None:
    from topoopt.crosscluster.settings import spiderflow_scale

    job = Job("big", 256, [(0.004, 1.5e8)] * 32, 1.6e7, 64)
    plan = make_plan(job, spiderflow_scale(16))
    check_plan(plan)
    assert len(plan.selection) == 5 and len(plan.ranks) == 256
    # c0 .. c3 are alike (7 nodes of 8 GPUs, 7 alike units): one solve, three renamed copies
    configs = [r for r in plan.stages if r.stage == "parallelconfig"]
    assert [r.message.startswith("the same sub-problem as cluster c0") for r in configs] == [
        False,
        True,
        True,
        True,
        False,
    ]
    assert len({r.objective for r in configs[:4]}) == 1
    assert plan.step.limit == "wan_pp_s" and plan.step.limit_stage == "partition"


def test_replicas_across_clusters_put_the_all_reduce_on_the_wan() -> None:
    """Two replicas of a two-block chain on two clusters of 4 GPUs: the partition keeps each
    replica's chain (activation traffic 2.56 GB) inside a cluster and cuts the gradient
    rings (0.15 GB each): WAN_dp = 2 · 8 · 0.15 / 5 = 0.48 s."""
    mc = uniform("u", clusters=2, nodes=1, gpus_per_node=4)
    job = Job("j", 8, [(0.004, 1.5e8)] * 2, 1e8, 64, blocks=2, replicas=2)
    plan = make_plan(job, mc)
    check_plan(plan)
    assert plan.assignment.as_dict() == {"b0r0": "c0", "b1r0": "c0", "b0r1": "c1", "b1r1": "c1"}
    assert plan.step.terms["wan_pp_s"] == 0
    assert math.isclose(plan.step.terms["wan_dp_s"], 2 * 8 * 0.15 / 5)


def test_filling_pairs() -> None:
    from topoopt.parallelconfig.instance import ParallelConfigInstance, TrainingModel

    sub = ParallelConfigInstance("s", [("n", 12)], 200, 8, TrainingModel([(0.01, 1e8)] * 3, 1e7, 4))
    assert filling_pairs(sub) == [(4, 3)]


def test_rank_order_is_stage_major_along_the_chain() -> None:
    mc = uniform("u", clusters=1, nodes=2, gpus_per_node=4)
    job = Job("j", 8, [(0.004, 1e8)] * 4, 1e6, 8, blocks=4)
    plan = make_plan(job, mc)
    stages = [r.stage for r in plan.ranks]
    assert stages == sorted(stages)
    assert rank_order(plan.partition, plan.clusters) == list(plan.ranks)
    first = {r.stage: r.units for r in plan.ranks}
    order = [u for s in sorted(first) for u in first[s]]
    assert order == ["b0", "b1", "b2", "b3"]


# ----------------------------------------------------------------------------- errors


def test_a_job_no_set_of_clusters_holds() -> None:
    mc = uniform("u", clusters=2, nodes=1, gpus_per_node=4)
    job = Job("j", 12, [(0.004, 1e8)] * 12, 1e6, 12)
    with pytest.raises(PlanError) as caught:
        make_plan(job, mc, job_source="job.json", multicluster_source="mc.json")
    assert str(caught.value) == (
        "clusterselect: no set of clusters holds the job: job.json: gpus: 12 GPUs requested, "
        "but mc.json has 8 free (c0: 4, c1: 4)"
    )


def test_units_that_do_not_pack() -> None:
    """7 free GPUs hold 6 GPUs, but not 3 units of 2 when they are split 3 + 4... they do;
    3 + 3 + 1 do not."""
    sites = tuple(
        Site(name, (SiteNode(f"{name}-n0", 4, tuple(range(k))),), 200, 8)
        for name, k in (("a", 3), ("b", 3), ("c", 1))
    )
    mc = MultiCluster("m", sites, (Link("a", "b", 5), Link("b", "c", 5)))
    job = Job("j", 6, [(0.004, 1e8)] * 3, 1e6, 4, blocks=3)
    with pytest.raises(PlanError) as caught:
        make_plan(job, mc)
    assert caught.value.stage == "clusterselect"
    assert "job: blocks: 3 units of 2 GPUs" in str(caught.value)
    assert "hold 2 whole units" in str(caught.value)


def test_unknown_source_names_the_field() -> None:
    mc = uniform("u", clusters=2, nodes=1, gpus_per_node=4)
    job = Job("j", 4, [(0.004, 1e8)] * 4, 1e6, 4, source="zz")
    with pytest.raises(InvalidInstanceError, match=r"^job.json: source: unknown cluster 'zz'"):
        make_plan(job, mc, job_source="job.json")


def test_a_stage_that_finds_nothing_names_itself() -> None:
    """Mast's single-cluster baseline places nothing when no cluster holds the job."""
    mc = uniform("u", clusters=2, nodes=1, gpus_per_node=4)
    job = Job("j", 6, [(0.004, 1e8)] * 6, 1e6, 6)
    with pytest.raises(PlanError) as caught:
        make_plan(job, mc, select_solver="clusterselect/single-cluster")
    assert caught.value.stage == "clusterselect"
    assert str(caught.value).startswith(
        "clusterselect: clusterselect/single-cluster found no selection"
    )


def test_names_a_plan_cannot_write() -> None:
    site = Site("a", (SiteNode("n 0", 2, (0, 1)),), 200, 8)
    mc = MultiCluster("m", (site,), ())
    with pytest.raises(InvalidInstanceError, match=r"^mc.json: clusters\[0\].nodes\[0\].name: "):
        make_plan(Job("j", 2, [(0.01, 1e8)], 1e6, 2), mc, multicluster_source="mc.json")


def test_time_limit() -> None:
    mc = uniform("u", clusters=2, nodes=1, gpus_per_node=4)
    job = Job("j", 8, [(0.004, 1e8)] * 8, 1e6, 8)
    plan = make_plan(job, mc, time_limit=30)
    check_plan(plan)
    with pytest.raises(Exception, match="time_limit: must be a positive number"):
        make_plan(job, mc, time_limit=0)


@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.integers(1, 6),
    st.integers(1, 8),
    st.sampled_from([0.0, 1e7, 1e8]),
    st.sampled_from(["parallelconfig/mip", "parallelconfig/enumerate"]),
)
def test_using_every_gpu_finds_the_best_filling_configuration(
    nodes: list[int], layers: int, micro: int, activation: float, solver: str
) -> None:
    """The search over the ``(d, p)`` with ``d·p = r`` by increasing bound, pruned by the
    incumbent, finds what solving every such pair finds; its bound holds."""
    from topoopt.core.registry import get_solver
    from topoopt.parallelconfig.instance import ParallelConfigInstance, TrainingModel
    from topoopt.plan.pipeline import _configure, _fixed

    model = TrainingModel(
        [(0.01 * (1 + i % 3), 1e8 * (i % 2 + 1)) for i in range(layers)], activation, micro
    )
    sub = ParallelConfigInstance("s", [(f"n{i}", g) for i, g in enumerate(nodes)], 200, 20, model)
    pairs = filling_pairs(sub)
    if not pairs:
        with pytest.raises(PlanError, match="no \\(d, p\\) uses all its"):
            _configure("c", sub, True, solver, None, {})
        return
    config, report = _configure("c", sub, True, solver, None, {})
    best = min(
        get_solver("parallelconfig/enumerate").solve(_fixed(sub, d, p)).objective or 0.0
        for d, p in pairs
    )
    assert report.objective == pytest.approx(best, rel=1e-9)
    assert report.bound <= best + 1e-12 and report.status == "optimal"
    assert config.d * config.p == sub.n_gpus and pc.check(sub, config) == []


def test_partition_links_are_widest_paths_of_the_whole_graph() -> None:
    """``a`` and ``b`` are joined through ``x`` (no free GPU, not chosen): the partition
    instance links them at the widest-path bandwidth, min(10, 40) = 10 Gb/s."""
    free = {"a": (0, 1, 2, 3), "x": (), "b": (0, 1, 2, 3)}
    sites = tuple(Site(n, (SiteNode(f"{n}-n0", 4, f),), 200, 8) for n, f in free.items())
    mc = MultiCluster("m", sites, (Link("a", "x", 10), Link("x", "b", 40), Link("a", "b", 1)))
    plan = make_plan(Job("j", 8, [(0.01, 1e8)] * 4, 1e6, 8), mc)
    check_plan(plan)
    assert dict(plan.selection) == {"a": 4, "b": 4}
    assert [(lk.a, lk.b, lk.bandwidth_gbps) for lk in plan.partition.graph.links] == [
        ("a", "b", 10.0)
    ]
