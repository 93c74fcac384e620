"""``topoopt simulate``: replay a job trace on a cluster under a policy (``docs/sim.md``)."""

from __future__ import annotations

from typing import Any

import click

from topoopt.cli.options import ListOf, trace_options


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
@trace_options
@click.option(
    "--load",
    "loads",
    type=ListOf(click.FloatRange(min=0, min_open=True)),
    default="1",
    show_default=True,
    help="Arrival-rate factor on the trace (2: arrivals twice as frequent); with --synthetic, "
    "the offered load (1: the whole cluster on average). Comma-separated: one run each.",
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
    "policies",
    type=ListOf(click.STRING),
    default="fifo",
    show_default=True,
    help="Queue policy: fifo, priority, spf, each with -backfill (EASY), first-fit, arnold. "
    "Comma-separated: one run each.",
)
@click.option(
    "--placement",
    "placements",
    type=ListOf(click.STRING),
    default="placement/best-fit",
    show_default=True,
    help="Placement solver for whole-node jobs (short names as in topoopt solve). "
    "Comma-separated: one run each.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Seconds per placement decision.",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1),
    default=None,
    help="Weight of the DP spread in the placement objective (Arnold eq. 2); default: the "
    "performance model's (arnold: 0.0743, ideal: 0.5).",
)
@click.option("--backend", default=None, help="MIP backend of the placement solver.")
@click.option("--performance", default="arnold", show_default=True, help="arnold or ideal.")
@click.option(
    "--predictor",
    default="exact",
    show_default=True,
    help="Running times the policies plan with: exact (the trace's), noisy, none (unknown).",
)
@click.option(
    "--jct-model",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="MODEL.json",
    help="A learned JCT predictor (topoopt learn jct) instead of --predictor: the reservation's "
    "predicted mode (and backfilling, spf) plan with its predictions.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Seconds between scheduling passes (0: after every event).",
)
@click.option(
    "--dispatch",
    default=None,
    metavar="SOLVER",
    help="A gpuselect solver (eha, auto, mip, ...) that picks the GPUs of jobs of 2 GPUs up to "
    "a node's among the free GPUs of --pool-hosts hosts (BandPilot's setting).",
)
@click.option("--host-type", default="H100", show_default=True, help="Hosts' GPU topology.")
@click.option(
    "--inter-gbps",
    type=click.FloatRange(min=0, min_open=True),
    default=50.0,
    show_default=True,
    help="Bandwidth between hosts (GB/s) of the dispatch's model.",
)
@click.option("--pool-hosts", type=click.IntRange(min=1), default=4, show_default=True)
@click.option(
    "--host-table",
    default=None,
    metavar="CSV",
    help="nccl-tests per-subset CSV of one host (data:NAME allowed): the dispatch searches with "
    "these measured bandwidths instead of --host-type's built-in topology.",
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
    "reserve_modes",
    type=ListOf(click.Choice(["predicted", "strict", "best-effort"])),
    default="predicted",
    show_default=True,
    help="predicted: others may use the zone when predicted to end before JOB arrives; strict: "
    "never; best-effort: whenever they do not fit elsewhere (reserve-and-pack).",
)
@click.option(
    "--seed",
    "seeds",
    type=ListOf(click.IntRange(min=0, max=2**63 - 1)),
    default="0",
    show_default=True,
    help="Seeds (comma-separated: one run each).",
)
@click.option(
    "--jobs",
    "-j",
    "parallel",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Runs at a time (worker processes) when there are several.",
)
@click.option(
    "--scheduler", default=None, help="Run the runs on this Dask scheduler (the dask extra)."
)
@click.option(
    "--run-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="With several runs: kill a run after this many seconds (it leaves error.json).",
)
@click.option(
    "--memory-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="MIB",
    help="With several runs: kill a run whose resident memory exceeds this many MiB.",
)
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
    loads: tuple[float, ...],
    jobs_limit: int | None,
    skip_bad: bool,
    policies: tuple[str, ...],
    placements: tuple[str, ...],
    time_limit: float,
    alpha: float | None,
    backend: str | None,
    performance: str,
    predictor: str,
    jct_model: str | None,
    interval: float,
    dispatch: str | None,
    host_type: str,
    inter_gbps: float,
    pool_hosts: int,
    host_table: str | None,
    reserve: str | None,
    reserve_modes: tuple[str, ...],
    seeds: tuple[int, ...],
    parallel: int,
    scheduler: str | None,
    run_timeout: float | None,
    memory_limit: float | None,
    out_dir: str,
) -> None:
    """Replay a job trace on a cluster under a queue policy and a placement solver; write one
    record per job (jobs.jsonl), the cluster over time and a summary to OUT.

    With several policies, placements, seeds, loads or reservation modes, every combination
    runs into OUT/<policy>+<placement>+s<seed>+l<load>/ (--jobs at a time); a finished run
    is kept, a failed one leaves error.json (the exit status is then still 0).
    """
    from topoopt.sim.sweep import RunSpec, plan_sweep, run_one, run_sweep

    level: int | str = int(pod_level) if pod_level.lstrip("-").isdigit() else pod_level
    base = RunSpec(
        out_dir=out_dir,
        cluster_file=cluster_file,
        cluster_shape=cluster_shape,
        pod_level=level,
        gpus_per_node=gpus_per_node,
        trace_file=trace_file,
        trace_format=trace_format,
        synthetic_jobs=synthetic_jobs,
        jobs_limit=jobs_limit,
        skip_bad=skip_bad,
        time_limit=time_limit,
        alpha=alpha,
        backend=backend,
        performance=performance,
        predictor=predictor,
        jct_model=jct_model,
        interval=interval,
        reserve=reserve,
        dispatch=dispatch,
        host_type=host_type,
        inter_gbps=inter_gbps,
        pool_hosts=pool_hosts,
        host_table=host_table,
    )
    specs = plan_sweep(
        base,
        policies=policies,
        placements=placements,
        seeds=seeds,
        loads=loads,
        reserve_modes=reserve_modes,
    )
    if len(specs) == 1:
        click.echo(_line(run_one(specs[0]), specs[0].out_dir))  # errors: exit 2
        return
    run_sweep(
        specs,
        jobs=parallel,
        scheduler=scheduler,
        run_timeout=run_timeout,
        memory_limit_mb=memory_limit,
        on_done=lambda spec, out: click.echo(_line(out, spec.out_dir)),
    )


def _line(out: dict[str, Any], folder: str) -> str:
    """One line per run: what ran and its headline figures, or its error."""
    if "error" in out:
        return f"{folder}: error: {out['error']}"
    summary, config = out["summary"], out["config"]
    jct = summary["jct_s"]
    return (
        f"{summary['jobs']} jobs ({summary['finished']} finished, {summary['rejected']} "
        f"rejected) on {config['cluster']} under {config['policy']} + {config['placement']}: "
        f"mean JCT {_fmt(jct['mean'])} s, p99 {_fmt(jct['p99'])} s, utilisation "
        f"{_fmt(summary['utilisation'])}, mean slowdown {_fmt(summary['slowdown']['mean'])}; "
        f"{folder}/summary.json"
    )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
