"""The ``topoopt`` command line: one module per command group.

=====================================  =============================================
module                                 commands
=====================================  =============================================
:mod:`topoopt.cli.solve`               ``solve``, ``solvers``
:mod:`topoopt.cli.instances`           ``instances list|generate|import|check|schema``
:mod:`topoopt.cli.bench`               ``bench``, ``report``
:mod:`topoopt.cli.simulate`            ``simulate``
:mod:`topoopt.cli.xsim`                ``simulate-cross``
:mod:`topoopt.cli.learn`               ``learn bandwidth|suggest|jct``
:mod:`topoopt.cli.plan`                ``plan``
:mod:`topoopt.cli.serve`               ``serve`` (the HTTP service, :mod:`topoopt.serve`)
:mod:`topoopt.cli.output`              what they share: exit statuses, one-line errors,
                                       safe table text, the root command's options
=====================================  =============================================

The root group :class:`TopooptGroup` imports a command's module when the command is first used
(:attr:`TopooptGroup.lazy_commands`), so that ``topoopt solve`` never imports the benchmark
stack, and it is the one place that turns what went wrong into an exit status and one line on
stderr (see ``docs/cli.md``):

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
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from typing import Any, NoReturn

import click

import topoopt
from topoopt.cli.output import (
    DEBUG_ENV,
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    MAX_MESSAGE_CHARS,
    error_line,
    exit_with,
    printable,
    safe_streams,
)
from topoopt.core.errors import TopooptError

__all__ = ["TopooptGroup", "main"]


def _debug_wanted(ctx: click.Context | None) -> bool:
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        return True
    root = ctx.find_root() if ctx is not None else None
    return bool(root is not None and root.params.get("debug"))


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
        "solve": "topoopt.cli.solve:solve",
        "solvers": "topoopt.cli.solve:solvers",
        "instances": "topoopt.cli.instances:instances",
        "bench": "topoopt.cli.bench:bench",
        "report": "topoopt.cli.bench:report",
        "simulate": "topoopt.cli.simulate:simulate",
        "simulate-cross": "topoopt.cli.xsim:simulate_cross",
        "learn": "topoopt.cli.learn:learn",
        "plan": "topoopt.cli.plan:plan",
        "serve": "topoopt.cli.serve:serve",
    }
    """The commands, each imported when first used (``"module:attribute"``), so that
    ``topoopt solve`` never imports the benchmark stack. A new command group is a module of
    this package and one line here."""

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
        exit_with(line, code)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run as a program: like :meth:`click.Group.main`, with one-line usage errors.

        Called with ``standalone_mode=False`` it behaves exactly as click's.
        """
        if not kwargs.get("standalone_mode", True):
            return super().main(*args, **kwargs)
        kwargs["standalone_mode"] = False
        safe_streams()
        try:
            rv = super().main(*args, **kwargs)
        except _NO_ARGS_IS_HELP as exc:
            exc.show()  # ``topoopt`` or ``topoopt instances`` alone: the help text
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            hint = ""
            if isinstance(exc, click.UsageError) and exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            exit_with(error_line(exc.format_message()) + hint, EXIT_BAD_INPUT)
        except click.Abort:
            exit_with("interrupted", EXIT_INTERRUPTED)
        sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else EXIT_OK)


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
