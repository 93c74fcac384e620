"""``topoopt simulate-cross``: replay a job trace over decentralized clusters under SpiderFlow's
policies (``docs/sim.md``, "Cross-cluster scheduling")."""

from __future__ import annotations

from typing import Any

import click

from topoopt.cli.options import ListOf, trace_options


@click.command("simulate-cross")
@click.option(
    "--multicluster",
    "multicluster",
    required=True,
    metavar="FILE|sim6|scale:N|testbed[:SEED]",
    help="A multi-cluster description file, or SpiderFlow's settings: sim6 (§5.5: 6 x 64 nodes "
    "x 8 GPUs), scale:N (Fig. 12: N clusters of 7 x 8 GPUs), testbed (Fig. 9: 8 servers of "
    "1-4 GPUs).",
)
@click.option(
    "--xpolicy",
    "policies",
    type=ListOf(click.STRING),
    default="spiderflow",
    show_default=True,
    help="opportunistic, spinsearch, spiderflow, dtfm (comma-separated: one run each).",
)
@trace_options
@click.option(
    "--load",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="With --trace: arrivals this many times as frequent; with --synthetic: the offered load.",
)
@click.option("--jobs-limit", type=click.IntRange(min=1), default=None, help="The first N jobs.")
@click.option(
    "--skip-bad",
    is_flag=True,
    help="Record malformed trace rows as rejected jobs instead of stopping.",
)
@click.option(
    "--model",
    default="newworkload",
    show_default=True,
    help="The model every job trains: newworkload (one of SpiderFlow's NewWorkload models drawn "
    "per job) or a model name (gpt2-1.3b, opt-13b, ...).",
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
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for jobs.jsonl, timeline.csv and summary.json (several runs: one sub-folder "
    "<xpolicy>+s<seed> each; a finished run is kept).",
)
def simulate_cross(
    multicluster: str,
    policies: tuple[str, ...],
    trace_file: str | None,
    trace_format: str | None,
    synthetic_jobs: int | None,
    load: float,
    jobs_limit: int | None,
    skip_bad: bool,
    model: str,
    seeds: tuple[int, ...],
    out_dir: str,
) -> None:
    """Replay a job trace over decentralized clusters under SpiderFlow's cross-cluster
    policies (FIFO; cluster selection, then the parallel configuration); write one record per
    job (jobs.jsonl), the GPUs over time and a summary to OUT.

    Errors (a bad description, trace or option) end with exit status 2 and one line.
    """
    from pathlib import Path

    from topoopt.core.errors import TopooptError
    from topoopt.sim.crosscluster.models import check_mix
    from topoopt.sim.crosscluster.policies import XPOLICIES
    from topoopt.sim.crosscluster.run import multicluster_from_spec, run_cross_simulation
    from topoopt.sim.traces import read_trace, synthetic

    for name in policies:
        XPOLICIES.get(name)  # unknown names fail before any run
    check_mix(model)
    if (trace_file is None) == (synthetic_jobs is None):
        raise TopooptError("give one of --trace FILE or --synthetic N")
    mc = multicluster_from_spec(multicluster)
    base = None
    if trace_file is not None:
        base = read_trace(trace_file, trace_format, skip_bad=skip_bad)
        if jobs_limit is not None:
            base = base.head(jobs_limit)
        base = base.with_load(load)
    runs = [(policy, seed) for policy in policies for seed in seeds]
    for policy, seed in runs:
        if base is None:
            assert synthetic_jobs is not None
            trace = synthetic(jobs=synthetic_jobs, cluster_gpus=mc.free_gpus, load=load, seed=seed)
            source = f"synthetic:{synthetic_jobs}:seed{seed}"
        else:
            trace, source = base, str(trace_file)
        folder = Path(out_dir) / f"{policy}+s{seed}" if len(runs) > 1 else Path(out_dir)
        out = run_cross_simulation(
            mc,
            trace,
            folder,
            policy=policy,
            seed=seed,
            model=model,
            config={
                "trace": source,
                "load": load,
                "jobs_limit": jobs_limit,
                "multicluster_spec": multicluster,
            },
        )
        click.echo(_line(out, str(folder)))


def _line(out: dict[str, Any], folder: str) -> str:
    """One line per run: what ran and its headline figures."""
    s, config = out["summary"], out["config"]
    return (
        f"{s['jobs']} jobs ({s['finished']} finished, {s['rejected']} rejected) on "
        f"{config['cluster']} under {config['xpolicy']}: mean queueing {_fmt(s['queue_s']['mean'])}"
        f" s, mean JCT {_fmt(s['jct_s']['mean'])} s, {_fmt(s['throughput']['jobs_per_hour'])} "
        f"jobs/h, mean decision {_fmt(s['decision_s']['mean'])} s; {folder}/summary.json"
    )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
