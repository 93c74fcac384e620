"""``topoopt simulate``: replay a job trace on a cluster under a policy (``docs/sim.md``)."""

from __future__ import annotations

import click


@click.command()
@click.option(
    "--cluster",
    "cluster_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Cluster topology file (Slurm topology.conf / topology.yaml, topograph, kubectl get "
    "nodes -o json, topoopt JSON).",
)
@click.option(
    "--pod-level",
    default="0",
    show_default=True,
    help="With --cluster: the level whose switches are the minipods (depth or name).",
)
@click.option(
    "--cluster-shape",
    default=None,
    metavar="FANOUTxNODES[:GPUS]",
    help="A generated cluster instead of --cluster: 16x2x32:8 is 16 minipods of 2 leaf "
    "switches of 32 nodes of 8 GPUs.",
)
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False), default=None)
@click.option(
    "--trace-format",
    default=None,
    help="philly, alibaba, helios, jsonl, csv (default: guessed from the file).",
)
@click.option(
    "--synthetic",
    "synthetic_jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Instead of --trace: this many synthetic jobs (Poisson arrivals at --load).",
)
@click.option(
    "--load",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Arrival-rate factor on the trace (2: arrivals twice as frequent); with --synthetic, "
    "the offered load (1: the whole cluster on average).",
)
@click.option(
    "--jobs-limit", type=click.IntRange(min=1), default=None, help="Only the first N jobs."
)
@click.option(
    "--skip-bad",
    is_flag=True,
    help="Record malformed trace rows and jobs larger than the cluster as rejected instead of "
    "stopping at the first.",
)
@click.option(
    "--policy",
    default="fifo",
    show_default=True,
    help="Queue policy: fifo, priority, spf, and each with -backfill (EASY).",
)
@click.option(
    "--placement",
    default="placement/best-fit",
    show_default=True,
    help="Placement solver for whole-node jobs (short names as in topoopt solve).",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Seconds per placement decision.",
)
@click.option("--alpha", type=click.FloatRange(0, 1), default=0.5, show_default=True)
@click.option("--backend", default=None, help="MIP backend of the placement solver.")
@click.option("--performance", default="arnold", show_default=True, help="arnold or ideal.")
@click.option("--predictor", default="exact", show_default=True, help="exact or noisy.")
@click.option(
    "--interval",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Seconds between scheduling passes (0: after every event).",
)
@click.option(
    "--reserve",
    default=None,
    metavar="JOB@SECONDS",
    help="Arnold's reservation: plan and reserve the nodes of JOB when announced at SECONDS "
    "(use with --policy arnold or first-fit).",
)
@click.option(
    "--reserve-mode",
    type=click.Choice(["predicted", "strict", "best-effort"]),
    default="predicted",
    show_default=True,
    help="predicted: others may use the zone when predicted to end before JOB arrives; strict: "
    "never; best-effort: whenever they do not fit elsewhere (reserve-and-pack).",
)
@click.option("--seed", type=click.IntRange(min=0, max=2**63 - 1), default=0, show_default=True)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for jobs.jsonl, timeline.csv and summary.json (a finished run is kept).",
)
def simulate(
    cluster_file: str | None,
    pod_level: str,
    cluster_shape: str | None,
    gpus_per_node: int,
    trace_file: str | None,
    trace_format: str | None,
    synthetic_jobs: int | None,
    load: float,
    jobs_limit: int | None,
    skip_bad: bool,
    policy: str,
    placement: str,
    time_limit: float,
    alpha: float,
    backend: str | None,
    performance: str,
    predictor: str,
    interval: float,
    reserve: str | None,
    reserve_mode: str,
    seed: int,
    out_dir: str,
) -> None:
    """Replay a job trace on a cluster under a queue policy and a placement solver; write one
    record per job (jobs.jsonl), the cluster over time and a summary to OUT."""
    from topoopt.core.errors import TopooptError
    from topoopt.sim import Cluster, parse_shape, read_trace, run_simulation, synthetic
    from topoopt.sim.reservation import Reservation
    from topoopt.topology import load_topology

    if (cluster_file is None) == (cluster_shape is None):
        raise TopooptError("give one of --cluster FILE or --cluster-shape SHAPE")
    if (trace_file is None) == (synthetic_jobs is None):
        raise TopooptError("give one of --trace FILE or --synthetic N")
    if cluster_file is not None:
        level: int | str = int(pod_level) if pod_level.lstrip("-").isdigit() else pod_level
        cluster = Cluster(load_topology(cluster_file), level, gpus_per_node)
    else:
        cluster = parse_shape(str(cluster_shape))
    if synthetic_jobs is not None:
        trace = synthetic(
            jobs=synthetic_jobs, cluster_gpus=cluster.total_gpus, load=load, seed=seed
        )
        source = {"trace": f"synthetic:{synthetic_jobs}", "load": load}
    else:
        trace = read_trace(str(trace_file), trace_format, skip_bad=skip_bad)
        if jobs_limit is not None:
            trace = trace.head(jobs_limit)
        trace = trace.with_load(load)
        source = {"trace": str(trace_file), "load": load}
    out = run_simulation(
        cluster,
        trace,
        out_dir,
        policy=policy,
        placement=placement,
        time_limit=time_limit,
        alpha=alpha,
        backend=backend,
        performance=performance,
        predictor=predictor,
        interval=interval,
        seed=seed,
        skip_unfit=skip_bad,
        reservation=None if reserve is None else Reservation.parse(reserve, reserve_mode),
        config={**source, "jobs_limit": jobs_limit},
    )
    summary = out["summary"]
    jct = summary["jct_s"]
    click.echo(
        f"{summary['jobs']} jobs ({summary['finished']} finished, {summary['rejected']} "
        f"rejected) on {cluster.describe()} under {policy} + {out['config']['placement']}: "
        f"mean JCT {_fmt(jct['mean'])} s, p99 {_fmt(jct['p99'])} s, utilisation "
        f"{_fmt(summary['utilisation'])}, mean slowdown {_fmt(summary['slowdown']['mean'])}; "
        f"{out_dir}/summary.json"
    )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
