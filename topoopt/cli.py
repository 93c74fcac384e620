"""The ``topoopt`` command line: ``solve`` and ``solvers`` (benchmark commands live in
:mod:`topoopt.bench.cli`).

Exit status: 0 for a feasible or optimal result, 1 when a solve ends without a feasible
solution, 2 for bad input (with a one-line reason on stderr).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

import topoopt
from topoopt.bench.cli import bench, instances, report
from topoopt.core.errors import TopooptError
from topoopt.core.registry import get_family

F = TypeVar("F", bound=Callable[..., Any])

EXIT_NO_SOLUTION = 1
EXIT_BAD_INPUT = 2


def parse_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``("unit=dp", "k=3")`` -> ``{"unit": "dp", "k": 3}`` (values parsed as JSON if they can be).

    Examples
    --------
    >>> parse_options(("unit=dp", "k=3", "x=[1,2]"))
    {'unit': 'dp', 'k': 3, 'x': [1, 2]}
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--option")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    """Print ``error: message`` on stderr and exit with ``code``."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


@click.group()
@click.version_option(topoopt.__version__, prog_name="topoopt")
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="MODULE",
    help="Module to import first (it may register families and solvers, see "
    "docs/extending.md); repeatable. bench also imports it in every worker.",
)
@click.pass_context
def main(ctx: click.Context, plugins: tuple[str, ...]) -> None:
    """Topology-aware placement of distributed training jobs: solvers, benchmarks, reports."""
    from topoopt.core.registry import import_plugins

    try:
        import_plugins(plugins)
    except TopooptError as exc:
        fail(str(exc))
    ctx.obj = {"plugins": plugins}


@main.command()
@click.argument("instance_file", type=click.Path(dir_okay=False))
@click.option("--solver", "-s", required=True, help="Registered solver, e.g. placement/exact-mip.")
@click.option("--backend", "-b", default=None, help="MIP backend: highs (default), scip, gurobi.")
@click.option("--time-limit", "-t", type=float, default=None, help="Seconds.")
@click.option("--seed", type=int, default=None, help="Random seed (default 0).")
@click.option(
    "--option",
    "-o",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Solver option, repeatable (e.g. -o unit=dp).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the Result as one JSON object.")
def solve(
    instance_file: str,
    solver: str,
    backend: str | None,
    time_limit: float | None,
    seed: int | None,
    options: tuple[str, ...],
    as_json: bool,
) -> None:
    """Solve INSTANCE_FILE with one solver and print the result."""
    try:
        instance = topoopt.load(instance_file)
        result = topoopt.solve(
            instance,
            solver,
            backend=backend,
            time_limit=time_limit,
            seed=seed,
            **parse_options(options),
        )
    except TopooptError as exc:
        fail(str(exc))
        return
    if as_json:
        click.echo(json.dumps(result.to_dict()))
    else:
        _print_result(instance, result)
    if not result.is_ok:
        reason = result.message or result.termination.value
        click.echo(f"error: no feasible solution ({result.termination}): {reason}", err=True)
        sys.exit(EXIT_NO_SOLUTION)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def _print_result(instance: topoopt.Instance, result: topoopt.Result) -> None:
    console = Console()
    table = Table(title=f"{result.solver} on {result.instance}", show_header=False)
    rows = [
        ("status", result.status.label),
        ("termination", result.termination.value),
        ("objective", _fmt(result.objective)),
        ("bound", _fmt(result.bound)),
        ("gap", _fmt(result.gap)),
        ("backend", result.backend or "-"),
        (
            "time (s)",
            f"{result.total_s:.3f} (build {result.build_s:.3f}, solve {result.solve_s:.3f})",
        ),
    ]
    rows += [(name, _fmt(value)) for name, value in result.metrics.items()]
    if result.message:
        rows.append(("message", result.message))
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    if result.solution is not None:
        click.echo(get_family(result.family).describe(instance, result.solution))


@main.command()
@click.argument("target", required=False, metavar="[FAMILY|INSTANCE_FILE]")
@click.option("--json", "as_json", is_flag=True, help="Print the registry as JSON.")
def solvers(target: str | None, as_json: bool) -> None:
    """List registered solvers with their capabilities: all, those of FAMILY, or those that
    support the instance in INSTANCE_FILE."""
    try:
        if target is not None and target not in topoopt.families() and Path(target).is_file():
            infos = topoopt.solvers_for(topoopt.load(target))
        else:
            infos = topoopt.solvers_for(target)
    except TopooptError as exc:
        fail(str(exc))
        return
    if as_json:
        click.echo(json.dumps([info.__dict__ for info in infos], default=str))
        return
    table = Table(title="topoopt solvers")
    for column in ("name", "exact", "bound", "stochastic", "backends", "options", "description"):
        table.add_column(column)
    for info in infos:
        table.add_row(
            info.name,
            "yes" if info.exact else "no",
            "yes" if info.gives_bound else "no",
            "yes" if info.stochastic else "no",
            ",".join(info.backends) if info.uses_backend else "-",
            ", ".join(f"{k}={v!r}" for k, v in info.options.items()) or "-",
            info.description,
        )
    Console(width=200).print(table)


main.add_command(instances)
main.add_command(bench)
main.add_command(report)

if __name__ == "__main__":
    main()
