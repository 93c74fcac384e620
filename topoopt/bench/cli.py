"""The benchmark commands of the ``topoopt`` CLI: ``instances``, ``bench`` and ``report``.

They are registered on the main group in :mod:`topoopt.cli`. Exit status: 0 on success (a
benchmark whose runs failed still succeeded: failures are records), 2 for bad input (one line
per problem).
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

import topoopt
from topoopt.bench.analysis import DEFAULT_SHIFT
from topoopt.bench.executors import DaskExecutor, Executor, LocalExecutor
from topoopt.bench.records import Record, read_many, record_key
from topoopt.bench.runner import plan, run_benchmark, scan
from topoopt.bench.task import DEFAULT_GRACE, DEFAULT_TIME_LIMIT, Task
from topoopt.core.errors import TopooptError
from topoopt.core.registry import families, get_family

EXIT_BAD_INPUT = 2


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _seeds(value: str) -> list[int]:
    try:
        return [int(item) for item in _csv(value)]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None


def _generator_options(args: list[str]) -> dict[str, Any]:
    """``["--count", "5", "--max-cells=9"]`` -> ``{"count": 5, "max_cells": 9}`` (JSON values).

    Examples
    --------
    >>> _generator_options(["--count", "5", "--max-cells=9", "--name", "x"])
    {'count': 5, 'max_cells': 9, 'name': 'x'}
    """
    options: dict[str, Any] = {}
    items = iter(args)
    for item in items:
        if not item.startswith("--") or len(item) < 3:
            raise click.BadParameter(f"expected --NAME VALUE, got {item!r}")
        name, sep, raw = item[2:].partition("=")
        if not sep:
            value = next(items, None)
            if value is None:
                raise click.BadParameter(f"option --{name} needs a value")
            raw = value
        try:
            options[name.replace("-", "_")] = json.loads(raw)
        except json.JSONDecodeError:
            options[name.replace("-", "_")] = raw
    return options


@click.group()
def instances() -> None:
    """Generate and check instance files."""


@instances.command("list")
@click.argument("family", required=False)
def list_suites(family: str | None) -> None:
    """List the suite generators (of FAMILY) and their options."""
    try:
        names = [family] if family else families()
        fams = [get_family(name) for name in names]
    except TopooptError as exc:
        _fail(str(exc))
        return
    table = Table(title="topoopt instance generators")
    for column in ("family", "suite", "options", "description"):
        table.add_column(column)
    for fam in fams:
        for suite, generator in sorted(fam.generators.items()):
            params = inspect.signature(generator).parameters.values()
            options = ", ".join(
                f"--{p.name.replace('_', '-')} {p.default!r}" for p in params if p.name != "seed"
            )
            function = getattr(generator, "func", generator)  # functools.partial
            doc = (inspect.getdoc(function) or "").split("\n\n")[0].replace("\n", " ")
            table.add_row(fam.name, suite, options, doc)
    Console(width=160).print(table)


@instances.command(
    "generate", context_settings={"ignore_unknown_options": True, "allow_extra_args": True}
)
@click.argument("family")
@click.option("--suite", required=True, help="Generator name (see `topoopt instances list`).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for the instance files (created).",
)
@click.pass_context
def generate(ctx: click.Context, family: str, suite: str, seed: int, out_dir: str) -> None:
    """Write the instances of a generated suite as OUT/<name>.json.

    Further --NAME VALUE options go to the generator (e.g. --count 50); see
    `topoopt instances list FAMILY`.
    """
    try:
        fam = get_family(family)
        if suite not in fam.generators:
            known = ", ".join(sorted(fam.generators)) or "none"
            raise TopooptError(f"suite: {family} has no generator {suite!r}; known: {known}")
        generator = fam.generators[suite]
        options = _generator_options(list(ctx.args))
        accepted = set(inspect.signature(generator).parameters) - {"seed"}
        unknown = sorted(set(options) - accepted)
        if unknown:
            known = ", ".join(f"--{n.replace('_', '-')}" for n in sorted(accepted)) or "none"
            raise TopooptError(
                f"unknown option(s) {', '.join(unknown)} for {suite}; known: {known}"
            )
        made = generator(seed=seed, **options)
    except (TopooptError, click.BadParameter) as exc:
        _fail(str(exc))
        return
    for instance in made:
        topoopt.save(instance, Path(out_dir) / f"{instance.name}.json")
    click.echo(f"wrote {len(made)} {family} instances ({suite}, seed {seed}) to {out_dir}")


@instances.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
def check(paths: tuple[str, ...]) -> None:
    """Validate instance files (folders: every *.json below); one line per problem."""
    try:
        valid, problems = scan(paths)
    except TopooptError as exc:
        _fail(str(exc))
        return
    for line in problems:
        click.echo(line)
    total = len(valid) + len(problems)
    if problems:
        click.echo(f"{len(problems)} problem(s) in {total} file(s)", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"{total} file(s) valid")


def _progress_callbacks(progress: Progress, bar: Any) -> tuple[Any, Any]:
    running: dict[tuple[object, ...], str] = {}
    errors = [0]

    def describe() -> None:
        now = " | ".join(list(running.values())[-2:]) or "waiting"
        failed = f" [red]{errors[0]} error(s)[/red]" if errors[0] else ""
        progress.update(bar, description=f"{now}{failed}")

    def on_start(task: Task) -> None:
        running[task.key] = task.label
        describe()

    def on_record(record: Record) -> None:
        running.pop(record_key(record), None)
        errors[0] += record["status"] == "error"
        progress.advance(bar)
        describe()

    return on_start, on_record


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
    out: str,
    no_progress: bool,
) -> None:
    """Run solvers on instance suites (folders) or files; one JSON record per run in OUT.

    Every run is a fresh process with a hard timeout: a hung, crashing or memory-exhausted
    solver becomes an error record and the benchmark goes on (error records are results: the
    exit status is 0). Rerunning with the same --out resumes.
    """
    context = click.get_current_context()
    plugins = (*((context.obj or {}).get("plugins", ())), *plugins)
    try:
        tasks = plan(
            paths,
            solvers=_csv(solver_list),
            backends=_csv(backends),
            seeds=_seeds(seeds),
            repeat=repeat,
            time_limit=time_limit,
            threads=threads,
            memory_limit_mb=memory_limit,
            grace=grace,
            plugins=plugins,
        )
        if executor == "dask" and not scheduler:
            raise TopooptError("--executor dask needs --scheduler ADDRESS")
        runner: Executor = DaskExecutor(scheduler) if executor == "dask" else LocalExecutor(jobs)
    except TopooptError as exc:
        _fail(str(exc))
        return
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=no_progress,
        console=Console(stderr=True),
    )
    try:
        with progress:
            bar = progress.add_task("starting", total=len(tasks))
            on_start, on_record = _progress_callbacks(progress, bar)
            summary = run_benchmark(
                tasks, out, executor=runner, on_start=on_start, on_record=on_record
            )
    except TopooptError as exc:
        _fail(str(exc))
        return
    finally:
        if isinstance(runner, DaskExecutor):
            runner.close()
    click.echo(
        f"{summary.ran} run(s) recorded in {out} ({summary.skipped} already there, "
        f"{summary.errors} error record(s))"
    )


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
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
@click.option("--title", default="topoopt solver comparison", show_default=True)
def report(results: tuple[str, ...], out_dir: str, shift: float, title: str) -> None:
    """Write a solver comparison report (Markdown, HTML, PNG plots) from RESULTS files."""
    from importlib.util import find_spec

    # The report extra, looked up without importing it, before any record is read.
    if any(find_spec(module) is None for module in ("matplotlib", "markdown_it")):
        _fail("topoopt report needs the report extra: pip install 'topoopt[report]'")
        return
    from topoopt.bench.report import write_report

    try:
        records = read_many(results)
        if not records:
            raise TopooptError("no records in " + ", ".join(results))
        written = write_report(records, out_dir, sources=list(results), shift=shift, title=title)
    except TopooptError as exc:
        _fail(str(exc))
        return
    click.echo(f"report of {len(records)} record(s): " + ", ".join(str(p) for p in written))
