"""``topoopt solve`` and ``topoopt solvers``: one solve of an instance file, and the registry."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import topoopt
from topoopt.cli.output import (
    EXIT_NO_SOLUTION,
    MAX_CELL_CHARS,
    WIDE_TABLE,
    allowed_paths,
    cell,
    error_line,
    exit_with,
    is_file,
    json_or_text,
    print_block,
    printable,
    printable_lines,
)
from topoopt.core.errors import TopooptError
from topoopt.core.registry import get_family
from topoopt.core.text import plain_text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def result_json(result: topoopt.Result) -> str:
    """What ``topoopt solve --json`` prints: ``Result.to_dict()`` as one line of ASCII JSON
    (the body of the HTTP service's ``POST /v1/solve`` too, :mod:`topoopt.serve`)."""
    return json.dumps(result.to_dict())


def parse_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``("unit=dp", "k=3")`` -> ``{"unit": "dp", "k": 3}`` (values parsed as JSON if they can be).

    Examples
    --------
    >>> parse_options(("unit=dp", "k=3", "x=[1,2]", "t=NaN"))
    {'unit': 'dp', 'k': 3, 'x': [1, 2], 't': 'NaN'}
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="'--option'")
        options[key] = json_or_text(raw)
    return options


@click.command()
@click.argument("instance_file", type=click.Path(dir_okay=False))
@click.option(
    "--solver",
    "-s",
    required=True,
    help="Solver: family/algo, or algo of the instance's family (placement/exact-mip or "
    "exact-mip); see topoopt solvers.",
)
@click.option("--backend", "-b", default=None, help="MIP backend: highs (default), scip, gurobi.")
@click.option(
    "--time-limit",
    "-t",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds (> 0).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**63 - 1),
    default=None,
    help="Random seed (default 0).",
)
@click.option(
    "--option",
    "-o",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Solver option, repeatable (e.g. -o unit=dp).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the Result as one JSON object.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Also print every metric and the solver's own message.",
)
@click.option(
    "--hostfile",
    type=click.Path(dir_okay=False),
    default=None,
    help="placement: the node of every node-level rank, one name per line in rank order (the "
    "SLURM_HOSTFILE of srun --distribution=arbitrary); gpuselect: one 'host "
    "CUDA_VISIBLE_DEVICES=i,j' line per host used.",
)
def solve(
    instance_file: str,
    solver: str,
    backend: str | None,
    time_limit: float | None,
    seed: int | None,
    options: tuple[str, ...],
    as_json: bool,
    verbose: bool,
    hostfile: str | None,
) -> None:
    """Solve INSTANCE_FILE with one solver and print the result: a status table, then what was
    decided, in the family's terms, with the objective explained (--verbose adds every metric
    and the solver's own message; --json prints the whole Result)."""
    instance = topoopt.load(instance_file, allow_paths=allowed_paths())
    result = topoopt.solve(
        instance,
        solver,
        backend=backend,
        time_limit=time_limit,
        seed=seed,
        **parse_options(options),
    )
    if as_json:
        click.echo(result_json(result))
    else:
        _print_result(instance, result, verbose=verbose)
    if hostfile is not None and result.is_ok:
        _write_hostfile(instance, result, hostfile)
    if not result.is_ok:
        reason = result.message or result.termination.value
        exit_with(
            error_line(f"no feasible solution ({result.termination}): {reason}"),
            EXIT_NO_SOLUTION,
        )


def _write_hostfile(instance: topoopt.Instance, result: topoopt.Result, path: str) -> None:
    """Write the family's launcher lines of the solution (``Family.launch_lines``), one per
    line: the node of every node-level rank (placement), ``host CUDA_VISIBLE_DEVICES=...``
    per host (gpuselect)."""
    family = get_family(result.family)
    if family.launch_lines is None:
        raise TopooptError(
            f"--hostfile: the {result.family} family's solutions have no rank order (families "
            f"that write a hostfile: {', '.join(_launching_families()) or 'none'})"
        )
    lines = family.launch_lines(instance, result.solution)
    try:
        Path(path).write_text("\n".join(lines) + "\n")
    except OSError as exc:
        raise TopooptError(f"--hostfile: cannot write {path}: {exc.strerror or exc}") from exc


def _launching_families() -> list[str]:
    """The families whose solutions give launcher lines (``Family.launch_lines``)."""
    return [name for name in topoopt.families() if get_family(name).launch_lines is not None]


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def _print_result(instance: topoopt.Instance, result: topoopt.Result, *, verbose: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    title = cell(f"{result.solver} on {result.instance}")
    table = Table(title=title, show_header=False)
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
    if verbose:
        rows += [(name, _fmt(value)) for name, value in result.metrics.items()]
    if result.message and (verbose or result.solution is None):
        rows.append(("message", result.message))
    for key, value in rows:
        table.add_row(cell(key), cell(value))
    console.print(table)
    if result.solution is not None:
        click.echo(printable_lines(get_family(result.family).describe(instance, result.solution)))


@click.command()
@click.argument("target", required=False, metavar="[FAMILY|INSTANCE_FILE|SOLVER]")
@click.option("--json", "as_json", is_flag=True, help="Print the registry as JSON.")
def solvers(target: str | None, as_json: bool) -> None:
    """List registered solvers with their capabilities: all, those of FAMILY, those that
    support the instance in INSTANCE_FILE, or those a SOLVER name means (a full name
    family/algo, or algo: that solver in every family that has it)."""
    if target is None or target in topoopt.families():
        infos = topoopt.solvers_for(target)
    elif is_file(target):
        infos = topoopt.solvers_for(topoopt.load(target, allow_paths=allowed_paths()))
    else:
        names = _solver_target(target)
        infos = [info for info in topoopt.solvers_for() if info.name in names]
    from rich.console import Console

    if as_json:
        click.echo(solvers_json(infos))
        return
    console = Console()
    if console.width >= WIDE_TABLE:
        console.print(_solver_table(infos))
    else:
        for info in infos:
            _print_solver_block(console, info)


def solvers_json(infos: list[topoopt.SolverInfo]) -> str:
    """What ``topoopt solvers --json`` prints (and ``GET /v1/solvers`` answers): one JSON
    array of the solvers' capabilities."""
    return json.dumps([info.__dict__ for info in infos], default=str)


def _solver_target(target: str) -> list[str]:
    """The solvers ``topoopt solvers TARGET`` lists when TARGET is neither a family nor a
    file: what the name means as a solver name (every family's, when short)."""
    from topoopt.core.errors import UnknownSolverError
    from topoopt.core.registry import matching_solvers, suggest_solvers

    try:
        return matching_solvers(target)
    except UnknownSolverError:
        close = difflib.get_close_matches(target, topoopt.families(), n=3) + suggest_solvers(target)
        hint = f"did you mean {', '.join(close)}?" if close else "see 'topoopt solvers'"
        raise UnknownSolverError(
            f"{target!r} is no family, instance file or solver; {hint}"
        ) from None


def _backends_text(info: topoopt.SolverInfo) -> str:
    if not info.uses_backend:
        return "-"
    return ",".join(info.backends) or "none installed"


def _options_text(info: topoopt.SolverInfo) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in info.options.items()) or "-"


def _solver_table(infos: list[topoopt.SolverInfo]) -> Table:
    """The wide layout: one row per solver, the description wrapping in its column."""
    from rich.table import Table

    table = Table(title="topoopt solvers")
    table.add_column("name", no_wrap=True)
    for column in ("exact", "bound", "stochastic"):
        table.add_column(column, no_wrap=True)
    table.add_column("backends")
    table.add_column("options", max_width=32)
    table.add_column("description", ratio=1)
    for info in infos:
        table.add_row(
            cell(info.name),
            "yes" if info.exact else "no",
            "yes" if info.gives_bound else "no",
            "yes" if info.stochastic else "no",
            cell(_backends_text(info)),
            cell(_options_text(info)),
            cell(plain_text(info.description)),
        )
    return table


def _print_solver_block(console: Console, info: topoopt.SolverInfo) -> None:
    """A solver in the narrow layout: its name and capabilities, then the description and the
    options."""
    kind = ["exact" if info.exact else "heuristic"]
    if info.gives_bound:
        kind.append("proves bounds")
    if info.stochastic:
        kind.append("stochastic")
    if info.uses_backend:
        kind.append(f"MIP backends: {_backends_text(info)}")
    paragraphs = [printable(plain_text(info.description), MAX_CELL_CHARS)]
    if info.options:
        paragraphs.append("options: " + printable(_options_text(info), MAX_CELL_CHARS))
    print_block(console, printable(info.name, MAX_CELL_CHARS), paragraphs, ", ".join(kind))
