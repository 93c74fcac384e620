"""``topoopt bench`` and ``topoopt report``: the benchmark runner and the comparison report
(:mod:`topoopt.bench`) on the command line.

Exit status: 0 on success (a benchmark whose runs failed still succeeded: failures are
records), 2 for bad input (one line per problem).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from topoopt.bench.analysis import DEFAULT_SHIFT
from topoopt.bench.executors import DaskExecutor, Executor, LocalExecutor
from topoopt.bench.progress import BenchProgress
from topoopt.bench.records import drop_duplicates, read_for_report, read_records, record_key
from topoopt.bench.runner import plan, run_benchmark
from topoopt.bench.task import DEFAULT_GRACE, DEFAULT_TIME_LIMIT, Task
from topoopt.cli.options import csv_items, seed_list
from topoopt.cli.output import allowed_paths, fail, root_plugins, warn
from topoopt.core.errors import TopooptError


def _pending(tasks: Sequence[Task], out: str) -> int:
    """How many of ``tasks`` have no record in ``out`` yet (what resuming will run).

    A results file that cannot be read counts as empty here: :func:`run_benchmark` reports
    what is wrong with it.
    """
    try:
        recorded = {record_key(record) for record in read_records(out)}
    except TopooptError:
        return len(tasks)
    return sum(task.key not in recorded for task in tasks)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--solvers",
    "-s",
    "solver_list",
    default="all",
    show_default=True,
    help="Comma-separated solver names (with or without the family prefix), or all.",
)
@click.option(
    "--backends",
    "-b",
    default="highs",
    show_default=True,
    help="Comma-separated MIP backends for solvers that use one.",
)
@click.option(
    "--time-limit",
    "-t",
    type=float,
    default=DEFAULT_TIME_LIMIT,
    show_default=True,
    help="Solver time limit (s); the worker is killed at 1.2 x this + --grace.",
)
@click.option(
    "--repeat", "-r", type=int, default=1, show_default=True, help="Runs per setting and seed."
)
@click.option("--seeds", default="0", show_default=True, help="Comma-separated seeds.")
@click.option(
    "--jobs", "-j", type=int, default=1, show_default=True, help="Runs at a time (local executor)."
)
@click.option("--threads", type=int, default=None, help="Threads of MIP backends.")
@click.option(
    "--memory-limit",
    type=float,
    default=None,
    help="Kill a run whose resident memory exceeds this many MiB.",
)
@click.option(
    "--grace",
    type=float,
    default=DEFAULT_GRACE,
    show_default=True,
    help="Seconds of the hard timeout beyond 1.2 x the time limit.",
)
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="MODULE",
    help="Module to import before solving (registers extra solvers); repeatable.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="Where runs execute.",
)
@click.option("--scheduler", default=None, help="Dask scheduler address (--executor dask).")
@click.option(
    "--isolation",
    type=click.Choice(["worker", "process"]),
    default="worker",
    show_default=True,
    help="worker: long-lived worker processes, each running many runs of one solver "
    "(replaced after a killed, crashed or failed run); process: a fresh process per run.",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False),
    help="JSONL results file (appended to; runs already in it are skipped).",
)
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def bench(
    paths: tuple[str, ...],
    solver_list: str,
    backends: str,
    time_limit: float,
    repeat: int,
    seeds: str,
    jobs: int,
    threads: int | None,
    memory_limit: float | None,
    grace: float,
    plugins: tuple[str, ...],
    executor: str,
    scheduler: str | None,
    isolation: str,
    out: str,
    no_progress: bool,
) -> None:
    """Run solvers on instance suites (folders) or files; one JSON record per run in OUT.

    Every run executes in a worker process with a hard timeout (see --isolation): a hung,
    crashing or memory-exhausted solver becomes an error record and the benchmark goes on
    (error records are results: the exit status is 0). Rerunning with the same --out resumes.
    """
    plugins = (*root_plugins(), *plugins)
    try:
        tasks = plan(
            paths,
            solvers=csv_items(solver_list),
            backends=csv_items(backends),
            seeds=seed_list(seeds),
            repeat=repeat,
            time_limit=time_limit,
            threads=threads,
            memory_limit_mb=memory_limit,
            grace=grace,
            plugins=plugins,
            allow_paths=allowed_paths(),
        )
        if executor == "dask" and not scheduler:
            raise TopooptError("--executor dask needs --scheduler ADDRESS")
        runner: Executor = (
            DaskExecutor(scheduler, isolation=isolation)
            if executor == "dask"
            else LocalExecutor(jobs, isolation=isolation)
        )
    except TopooptError as exc:
        fail(str(exc))
    progress = BenchProgress(_pending(tasks, out), enabled=not no_progress)
    try:
        with progress:
            summary = run_benchmark(
                tasks,
                out,
                executor=runner,
                on_start=progress.on_start,
                on_record=progress.on_record,
            )
    except TopooptError as exc:
        fail(str(exc))
    finally:
        if isinstance(runner, DaskExecutor):
            runner.close()
    if summary.repaired:
        warn(f"{out}: cut off a torn last line ({summary.repaired} bytes) of an interrupted run")
    if summary.duplicates:
        warn(
            f"{out} holds {summary.duplicates} duplicate record(s) (a run recorded twice); "
            "each run is skipped once, the report counts the first copy"
        )
    click.echo(
        f"{summary.ran} run(s) recorded in {out} ({summary.skipped} already there, "
        f"{summary.errors} error record(s))"
    )


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for report.md, report.html and the PNG figures.",
)
@click.option(
    "--shift",
    type=float,
    default=DEFAULT_SHIFT,
    show_default=True,
    help="Shift (s) of the shifted geometric mean of time.",
)
@click.option("--title", default=None, help="Report title.")
@click.option(
    "--baseline",
    default=None,
    metavar="POLICY+PLACEMENT",
    help="Simulation runs: the setting the others are paired with (default: the first run's).",
)
def report(
    results: tuple[str, ...], out_dir: str, shift: float, title: str | None, baseline: str | None
) -> None:
    """Write a report (Markdown, HTML, PNG plots): a solver comparison from RESULTS files of
    topoopt bench, or a simulation report from run folders of topoopt simulate."""
    from importlib.util import find_spec

    # The report extra, looked up without importing it, before any record is read.
    if any(find_spec(module) is None for module in ("matplotlib", "markdown_it")):
        fail("topoopt report needs the report extra: pip install 'topoopt[report]'")
    folders = [path for path in results if Path(path).is_dir()]
    if folders:
        if len(folders) != len(results):
            fail("give results files of topoopt bench or run folders of topoopt simulate, not both")
        from topoopt.sim.report import write_sim_report

        try:
            paths = write_sim_report(
                folders, out_dir, title=title or "topoopt simulation report", baseline=baseline
            )
        except OSError as exc:
            fail(f"{exc.filename or out_dir}: cannot write the report: {exc.strerror or exc}")
        click.echo("simulation report: " + ", ".join(str(p) for p in paths))
        return
    if baseline is not None:
        fail("--baseline is for simulation run folders")
    title = title or "topoopt solver comparison"
    from topoopt.bench.report import write_report

    try:
        found, warnings = read_for_report(results)
        for warning in warnings:
            warn(warning)
        records, duplicates = drop_duplicates(found)
        if duplicates:
            warn(
                f"dropped {duplicates} duplicate record(s) (a run recorded twice in "
                f"{', '.join(results)}); the first copy counts"
            )
        written = write_report(
            records,
            out_dir,
            sources=list(results),
            shift=shift,
            title=title,
            duplicates=duplicates,
        )
    except TopooptError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{exc.filename or out_dir}: cannot write the report: {exc.strerror or exc}")
    click.echo(f"report of {len(records)} record(s): " + ", ".join(str(p) for p in written))
