"""``topoopt instances``: list the suite generators, generate suites, import an instance from
a real cluster, check instance files, print a family's JSON Schema.

Every family-specific part comes from the family's declaration
(:class:`~topoopt.core.family.Family`): its generators (options typed from their signatures,
:mod:`topoopt.cli.options`) and its importer (:class:`~topoopt.core.family.Importer`: options,
help and checks), so that a plug-in family gets ``generate`` and ``import`` without a change
here.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

import topoopt
from topoopt.bench.runner import scan
from topoopt.cli.options import flag, generator_options, generator_parameters, shown_default
from topoopt.cli.output import (
    EXIT_BAD_INPUT,
    MAX_CELL_CHARS,
    WIDE_TABLE,
    allowed_paths,
    print_block,
    printable,
)
from topoopt.core.errors import InvalidOptionError, TopooptError
from topoopt.core.family import Importer, ImportOption
from topoopt.core.registry import families, get_family
from topoopt.core.text import natural_key, plain_text


def _safe_file_name(name: str) -> str:
    """``name`` + ``.json`` if it is a plain file name (no folder part, no NUL, not ``..``)."""
    if not name or name in (".", "..") or "\x00" in name or Path(name).name != name or "\\" in name:
        raise TopooptError(f"instance name {name!r} cannot be a file name")
    return f"{name}.json"


@click.group()
def instances() -> None:
    """Generate and check instance files."""


@instances.command("list")
@click.argument("family", required=False)
def list_suites(family: str | None) -> None:
    """List the suite generators (of FAMILY) and their options."""
    from rich.text import Text

    names = [family] if family else families()
    rows: list[tuple[str, str, list[str], str]] = []
    for fam in (get_family(name) for name in names):
        for suite, generator in sorted(fam.generators.items(), key=lambda kv: natural_key(kv[0])):
            options = [
                printable(flag(name) + shown_default(default), MAX_CELL_CHARS)
                for name, (_, default) in generator_parameters(generator).items()
            ]
            function = getattr(generator, "func", generator)  # functools.partial
            doc = (inspect.getdoc(function) or "").split("\n\n")[0].replace("\n", " ")
            rows.append(
                (
                    printable(fam.name, MAX_CELL_CHARS),
                    printable(suite, MAX_CELL_CHARS),
                    options,
                    printable(plain_text(doc), None),
                )
            )
    console = Console()
    if console.width < WIDE_TABLE:
        for fam_name, suite, options, doc in rows:
            paragraphs = [doc] + (["options: " + ", ".join(options)] if options else [])
            print_block(console, f"{fam_name} {suite}", paragraphs)
        return
    table = Table(title="topoopt instance generators")
    table.add_column("family", no_wrap=True)
    table.add_column("suite", no_wrap=True)
    table.add_column("options", max_width=32, overflow="fold")
    table.add_column("description", ratio=1)
    for fam_name, suite, options, doc in rows:
        table.add_row(Text(fam_name), Text(suite), Text("\n".join(options) or "-"), Text(doc))
    console.print(table)


@instances.command(
    "generate", context_settings={"ignore_unknown_options": True, "allow_extra_args": True}
)
@click.argument("family")
@click.option("--suite", required=True, help="Generator name (see `topoopt instances list`).")
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**63 - 1),
    default=0,
    show_default=True,
    help="Random seed (non-negative).",
)
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
    `topoopt instances list FAMILY`. Values are read by the type of the generator's
    parameter (integers, numbers, text, comma-separated lists) and checked by the generator.
    """
    fam = get_family(family)
    if suite not in fam.generators:
        known = ", ".join(sorted(fam.generators)) or "none"
        raise TopooptError(f"suite: {family} has no generator {suite!r}; known: {known}")
    generator = fam.generators[suite]
    parameters = generator_parameters(generator)
    options = generator_options(list(ctx.args), parameters, suite)
    try:
        made = list(generator(seed=seed, **options))
    except InvalidOptionError as exc:
        # The generators' messages start with the parameter's name: show the option's flag.
        name, sep, rule = str(exc).partition(": ")
        shown = f"{flag(name)}: {rule}" if sep and name in parameters else str(exc)
        raise InvalidOptionError(f"{family} {suite}: {shown}") from exc
    except TopooptError:
        raise
    except (TypeError, ValueError) as exc:
        if not options:
            raise  # no option was given: a bug in the generator (an internal error)
        given = " ".join(f"{flag(n)} {v!r}" for n, v in options.items())
        raise InvalidOptionError(
            f"{family} {suite} refused the option(s) {given}: {type(exc).__name__}: {exc}"
        ) from exc
    folder = Path(out_dir)
    for instance in made:
        path = folder / _safe_file_name(instance.name)
        try:
            topoopt.save(instance, path)
        except OSError as exc:
            raise TopooptError(f"cannot write {path}: {exc.strerror or exc}") from exc
    click.echo(f"wrote {len(made)} {family} instances ({suite}, seed {seed}) to {out_dir}")


_CLICK_TYPES: dict[type, click.ParamType] = {
    str: click.STRING,
    int: click.INT,
    float: click.FLOAT,
}


def _click_option(option: ImportOption) -> click.Option:
    """The click option of one :class:`~topoopt.core.family.ImportOption`."""
    if option.type is bool:
        return click.Option([option.flag, option.name], is_flag=True, help=option.help)
    if option.choices is not None:
        param_type: click.ParamType = click.Choice(list(option.choices))
    elif option.is_file:
        param_type = click.Path(dir_okay=False)
    else:
        param_type = _CLICK_TYPES[option.type]
    return click.Option(
        [option.flag, option.name],
        type=param_type,
        required=option.required,
        multiple=option.multiple,
        metavar=option.metavar,
        help=option.help,
    )


def _import_command(family: str, importer: Importer) -> click.Command:
    """``topoopt instances import FAMILY``, built from the family's importer."""

    def run(name: str | None, out: str, **options: Any) -> None:
        instance, summary = importer.build(name, **options)
        try:
            topoopt.save(instance, out)
        except OSError as exc:
            raise TopooptError(f"cannot write {out}: {exc.strerror or exc}") from exc
        click.echo(f"wrote {out}: {family} instance {instance.name!r}, {summary}")

    params: list[click.Parameter] = [_click_option(option) for option in importer.options]
    params += [
        click.Option(["--name"], default=None, help="Instance name (default: the importer's)."),
        click.Option(
            ["--out"],
            required=True,
            type=click.Path(dir_okay=False),
            help="Instance file to write.",
        ),
    ]
    return click.Command(family, callback=run, params=params, help=importer.help)


class _ImportGroup(click.Group):
    """One sub-command per family that declares an importer, built when it is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The families with an importer."""
        return [name for name in families() if get_family(name).importer is not None]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """``topoopt instances import FAMILY``; ``None`` (click: no such command) for a family
        without an importer."""
        if cmd_name not in families():
            return None
        importer = get_family(cmd_name).importer
        return None if importer is None else _import_command(cmd_name, importer)


@instances.group("import", cls=_ImportGroup)
def import_instance() -> None:
    """Build an instance from a real cluster (see docs/scheduler.md): one sub-command per
    family that has an importer; `topoopt instances import FAMILY --help` lists its options."""


@instances.command("schema")
@click.argument("family")
def schema(family: str) -> None:
    """Print the JSON Schema (draft 2020-12) of FAMILY's instance file, the one topoopt.load
    enforces (see docs/input.md)."""
    click.echo(schema_json(family))


def schema_json(family: str) -> str:
    """What ``topoopt instances schema FAMILY`` prints (and ``GET /v1/schemas/FAMILY``
    answers): the JSON Schema of the family's instance file.

    Raises
    ------
    TopooptError
        For an unknown family, or one that publishes no schema.
    """
    published = get_family(family).schema
    if published is None:
        raise TopooptError(f"family {family!r} publishes no JSON Schema")
    return json.dumps(published, indent=2)


@instances.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
def check(paths: tuple[str, ...]) -> None:
    """Validate instance files (folders: every *.json below); one line per problem."""
    valid, problems = scan(paths, allow_paths=allowed_paths())
    for line in problems:
        click.echo(printable(line))
    total = len(valid) + len(problems)
    if problems:
        click.echo(f"{len(problems)} problem(s) in {total} file(s)", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"{total} file(s) valid")
