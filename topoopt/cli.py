"""The ``topoopt`` command line: ``solve`` and ``solvers`` (benchmark commands live in
:mod:`topoopt.bench.cli`).

Every command runs through :class:`TopooptGroup`, the one place that turns what went wrong
into an exit status and one line on stderr (see ``docs/cli.md``):

=====  =====================================================================================
exit   meaning and stderr
=====  =====================================================================================
0      success
1      ``topoopt solve`` ended without a feasible solution: ``error: no feasible solution ...``
2      bad input of any kind (a file, an option, a solver name, an instance, any
       :class:`~topoopt.core.errors.TopooptError`, a click usage error): ``error: <reason>``
3      an unexpected exception, i.e. a bug: ``internal error: <Type>: <message>``; the
       traceback only with ``topoopt --debug`` or ``TOPOOPT_DEBUG=1``
130    interrupted (Ctrl-C): ``interrupted``
=====  =====================================================================================

Every such message is one line: control characters are escaped (:func:`printable`) and long
messages are shortened. Output is safe for any Unicode text: text from the input is escaped
the same way in tables, and characters the terminal's encoding cannot show are written as
backslash escapes instead of failing.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import json
import os
import re
import sys
import textwrap
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

import topoopt
from topoopt.core.errors import TopooptError
from topoopt.core.registry import get_family
from topoopt.core.safejson import parse_json
from topoopt.core.text import plain_text, printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK = 0
EXIT_NO_SOLUTION = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

DEBUG_ENV = "TOPOOPT_DEBUG"
"""Environment variable: when set (and not ``0`` or empty), internal errors print their
traceback, as ``topoopt --debug`` does."""

MAX_MESSAGE_CHARS = 1000
"""Longest error message printed; a longer one is cut and says how much was left out."""
MAX_CELL_CHARS = 200
"""Longest text from the input shown in one table cell."""


def printable_lines(text: str) -> str:
    """Multi-line ``text`` (a solution's rendering) with every line made :func:`printable`."""
    return "\n".join(printable(line, limit=None) for line in text.split("\n"))


def _cell(value: object) -> Text:
    """A table cell from input text: escaped, shortened, never parsed as rich markup."""
    from rich.text import Text

    return Text(printable(value, limit=MAX_CELL_CHARS))


def error_line(message: object) -> str:
    """The stderr line of an error: ``error: <message>``, made :func:`printable`."""
    return f"error: {printable(message, MAX_MESSAGE_CHARS)}"


def _echo_err(line: str) -> None:
    click.echo(line, err=True)


def _exit(line: str, code: int) -> NoReturn:
    _echo_err(line)
    sys.exit(code)


def _debug_wanted(ctx: click.Context | None) -> bool:
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        return True
    root = ctx.find_root() if ctx is not None else None
    return bool(root is not None and root.params.get("debug"))


def _safe_streams() -> None:
    """Make stdout and stderr write unencodable characters as backslash escapes.

    With ``PYTHONIOENCODING=ascii`` or a ``C`` locale, a name such as ``"é"`` or a lone
    surrogate would otherwise raise :class:`UnicodeEncodeError` while a table is printed.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        # A closed or detached stream has nothing to protect.
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="backslashreplace")


_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())
"""click >= 8.2 raises this usage error to show a group's help when called without a command."""


class TopooptGroup(click.Group):
    """The root command group: one place maps every outcome to an exit status and one line.

    :meth:`invoke` (which runs every command's callback and parses the sub-commands'
    arguments) turns a :class:`~topoopt.core.errors.TopooptError` into ``error: ...`` and
    exit 2, :class:`KeyboardInterrupt` into ``interrupted`` and exit 130, and any other
    exception into ``internal error: ...`` and exit 3 (with the traceback under ``--debug``
    or ``TOPOOPT_DEBUG=1``). :meth:`main` prints click's own usage errors (unknown option,
    bad value, missing argument) as one ``error:`` line with exit 2 instead of click's
    multi-line usage block. ``sys.exit`` from a command passes through unchanged.
    """

    lazy_commands: dict[str, str] = {
        "instances": "topoopt.bench.cli:instances",
        "bench": "topoopt.bench.cli:bench",
        "report": "topoopt.bench.cli:report",
    }
    """Sub-commands imported when first used (``"module:attribute"``), so that
    ``topoopt solve`` never imports the benchmark stack."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands, the lazily imported ones included."""
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, importing it on first use when it is a lazy one."""
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            module, _, attr = self.lazy_commands[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command line; map exceptions to exit statuses (see the class)."""
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # click's own control flow and usage errors: handled by main
        except TopooptError as exc:
            self._report(ctx, exc, error_line(exc), EXIT_BAD_INPUT)
        except KeyboardInterrupt as exc:
            self._report(ctx, exc, "interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:
            raise  # the reader went away (``topoopt solvers | head``): click exits quietly
        except Exception as exc:
            hint = (
                "" if _debug_wanted(ctx) else f" (rerun with --debug or {DEBUG_ENV}=1 for details)"
            )
            line = (
                f"internal error: {type(exc).__name__}: {printable(exc, MAX_MESSAGE_CHARS)}{hint}"
            )
            self._report(ctx, exc, line, EXIT_INTERNAL)

    @staticmethod
    def _report(ctx: click.Context, exc: BaseException, line: str, code: int) -> NoReturn:
        if _debug_wanted(ctx):
            traceback.print_exception(exc, file=sys.stderr)
            sys.stderr.flush()
        _exit(line, code)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run as a program: like :meth:`click.Group.main`, with one-line usage errors.

        Called with ``standalone_mode=False`` it behaves exactly as click's.
        """
        if not kwargs.get("standalone_mode", True):
            return super().main(*args, **kwargs)
        kwargs["standalone_mode"] = False
        _safe_streams()
        try:
            rv = super().main(*args, **kwargs)
        except _NO_ARGS_IS_HELP as exc:
            exc.show()  # ``topoopt`` or ``topoopt instances`` alone: the help text
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            hint = ""
            if isinstance(exc, click.UsageError) and exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            _exit(error_line(exc.format_message()) + hint, EXIT_BAD_INPUT)
        except click.Abort:
            _exit("interrupted", EXIT_INTERRUPTED)
        sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else EXIT_OK)


def _json_or_text(raw: str) -> Any:
    """``raw`` parsed as a JSON value, or ``raw`` itself when it is not one.

    A value the JSON rules of :func:`topoopt.core.safejson.parse_json` refuse (``NaN``,
    ``1e999``, too long an integer, too deep a nesting) is passed on as text, for the receiver
    to refuse with a named error.
    """
    try:
        return parse_json(raw, "option")
    except TopooptError:
        return raw


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
        options[key] = _json_or_text(raw)
    return options


@click.group(cls=TopooptGroup)
@click.version_option(topoopt.__version__, prog_name="topoopt")
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="MODULE",
    help="Module to import first (it may register families and solvers, see "
    "docs/extending.md); repeatable. bench also imports it in every worker.",
)
@click.option(
    "--allow-path",
    "allow_paths",
    multiple=True,
    metavar="FOLDER",
    type=click.Path(file_okay=False),
    help="Folder whose files instances may name besides their own folder (measurement "
    "tables, topology text; see docs/input.md); repeatable.",
)
@click.option(
    "--debug",
    is_flag=True,
    help=f"Print the traceback of an internal error (also: {DEBUG_ENV}=1).",
)
@click.pass_context
def main(
    ctx: click.Context, plugins: tuple[str, ...], allow_paths: tuple[str, ...], debug: bool
) -> None:
    """Topology-aware placement of distributed training jobs: solvers, benchmarks, reports.

    Exit status: 0 success, 1 solve found no feasible solution, 2 bad input, 3 internal
    error, 130 interrupted; every error is one line on stderr.
    """
    from topoopt.core.registry import import_plugins

    import_plugins(plugins)
    ctx.obj = {"plugins": plugins, "allow_paths": allow_paths, "debug": debug}


def allowed_paths() -> tuple[str, ...]:
    """The ``--allow-path`` folders of the running command (none outside a command)."""
    context = click.get_current_context(silent=True)
    obj = (context.find_root().obj if context is not None else None) or {}
    return tuple(obj.get("allow_paths", ()))


@main.command()
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
        click.echo(json.dumps(result.to_dict()))
    else:
        _print_result(instance, result, verbose=verbose)
    if hostfile is not None and result.is_ok:
        _write_hostfile(instance, result, hostfile)
    if not result.is_ok:
        reason = result.message or result.termination.value
        _exit(
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
            f"--hostfile: the {result.family} family's solutions have no rank order (only "
            "placement and gpuselect write a hostfile)"
        )
    lines = family.launch_lines(instance, result.solution)
    try:
        Path(path).write_text("\n".join(lines) + "\n")
    except OSError as exc:
        raise TopooptError(f"--hostfile: cannot write {path}: {exc.strerror or exc}") from exc


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def _print_result(instance: topoopt.Instance, result: topoopt.Result, *, verbose: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    title = _cell(f"{result.solver} on {result.instance}")
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
        table.add_row(_cell(key), _cell(value))
    console.print(table)
    if result.solution is not None:
        click.echo(printable_lines(get_family(result.family).describe(instance, result.solution)))


@main.command()
@click.argument("target", required=False, metavar="[FAMILY|INSTANCE_FILE|SOLVER]")
@click.option("--json", "as_json", is_flag=True, help="Print the registry as JSON.")
def solvers(target: str | None, as_json: bool) -> None:
    """List registered solvers with their capabilities: all, those of FAMILY, those that
    support the instance in INSTANCE_FILE, or those a SOLVER name means (a full name
    family/algo, or algo: that solver in every family that has it)."""
    if target is None or target in topoopt.families():
        infos = topoopt.solvers_for(target)
    elif _is_file(target):
        infos = topoopt.solvers_for(topoopt.load(target, allow_paths=allowed_paths()))
    else:
        names = _solver_target(target)
        infos = [info for info in topoopt.solvers_for() if info.name in names]
    from rich.console import Console

    if as_json:
        click.echo(json.dumps([info.__dict__ for info in infos], default=str))
        return
    console = Console()
    if console.width >= WIDE_TABLE:
        console.print(_solver_table(infos))
    else:
        for info in infos:
            _print_solver_block(console, info)


WIDE_TABLE = 120
"""Narrowest console (columns) on which ``topoopt solvers`` and ``topoopt instances list``
print a table; narrower consoles (an 80-column terminal, a pipe) get one block per entry."""


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
            _cell(info.name),
            "yes" if info.exact else "no",
            "yes" if info.gives_bound else "no",
            "yes" if info.stochastic else "no",
            _cell(_backends_text(info)),
            _cell(_options_text(info)),
            _cell(plain_text(info.description)),
        )
    return table


class _ListWrapper(textwrap.TextWrapper):
    """Wraps at spaces and after the commas of a list (``--ks 1,2,...,32``), never inside a
    hyphenated word."""

    wordsep_simple_re = re.compile(r"(\s+|(?<=,)(?=\S))")

    def __init__(self, width: int, **kwargs: Any) -> None:
        super().__init__(width, break_on_hyphens=False, **kwargs)


def print_block(console: Console, head: str, paragraphs: list[str], detail: str = "") -> None:
    """One entry of a narrow listing (``topoopt solvers``, ``topoopt instances list``): the
    ``head`` in bold and ``detail`` on one line, then each paragraph indented, wrapped to the
    console's width (text made :func:`printable` by the caller)."""
    from rich.text import Text

    width = max(console.width, 40)
    first = Text(head, style="bold")
    if detail:
        first.append(f"  {detail}")
    lines = [first]
    wrapper = _ListWrapper(width, initial_indent="    ", subsequent_indent="      ")
    for paragraph in paragraphs:
        lines += [Text(line) for line in wrapper.wrap(paragraph)]
    for line in lines:
        console.print(line, soft_wrap=len(line) <= width)


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


def _is_file(target: str) -> bool:
    """Whether ``target`` names a file (``False`` for names no file can have, e.g. with NUL)."""
    try:
        return Path(target).is_file()
    except (OSError, ValueError):
        return False


if __name__ == "__main__":
    main()
