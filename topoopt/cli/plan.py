"""``topoopt plan``: a job over a multi-cluster description, from the clusters it spans to the
rank of every GPU (``docs/plan.md``)."""

from __future__ import annotations

import json

import click

SELECT = "clusterselect/spinsearch"
PARTITION = "partition/heuristic-ilp"
CONFIG = "parallelconfig/mip"
"""The default solvers, written here so that ``topoopt --help`` does not import the
pipeline (the tests check they equal :mod:`topoopt.plan.pipeline`'s)."""


@click.command()
@click.argument("job_file", metavar="JOB", type=click.Path(dir_okay=False))
@click.argument("multicluster_file", metavar="MULTICLUSTER", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for plan.json, hostfile.<cluster> and ranks.txt (created if needed).",
)
@click.option(
    "--select-solver",
    default=SELECT,
    show_default=True,
    help="clusterselect solver: which clusters, how many GPUs each.",
)
@click.option(
    "--partition-solver",
    default=PARTITION,
    show_default=True,
    help="partition solver: which of the job's units go to which cluster.",
)
@click.option(
    "--config-solver",
    default=CONFIG,
    show_default=True,
    help="parallelconfig solver: (d, p) and the GPU of every cell inside each cluster.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds for the whole plan (each stage gets the time left).",
)
@click.option("--backend", default=None, help="MIP backend: highs (default), scip, gurobi.")
@click.option("--seed", type=int, default=None, help="Seed of every solver (default 0).")
@click.option("--json", "as_json", is_flag=True, help="Print plan.json instead of the summary.")
def plan(
    job_file: str,
    multicluster_file: str,
    out_dir: str,
    select_solver: str,
    partition_solver: str,
    config_solver: str,
    time_limit: float | None,
    backend: str | None,
    seed: int | None,
    as_json: bool,
) -> None:
    """Plan the training job JOB over the clusters of MULTICLUSTER: clusterselect, partition,
    parallelconfig and GPUs per cluster; write plan.json, one hostfile per cluster and
    ranks.txt into --out. A stage that finds nothing is an error naming the stage (exit 2)."""
    from topoopt.crosscluster.multicluster import MultiCluster
    from topoopt.plan.job import Job
    from topoopt.plan.pipeline import make_plan

    job = Job.load(job_file)
    mc = MultiCluster.load(multicluster_file)
    result = make_plan(
        job,
        mc,
        select_solver=select_solver,
        partition_solver=partition_solver,
        config_solver=config_solver,
        time_limit=time_limit,
        backend=backend,
        seed=seed,
        job_source=job_file,
        multicluster_source=multicluster_file,
    )
    written = result.write(out_dir)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=1))
        return
    click.echo(result.summary())
    click.echo("wrote " + ", ".join(str(p) for p in written))
