"""The benchmark commands of the ``topoopt`` CLI: ``instances``, ``bench`` and ``report``.

They are registered on the main group in :mod:`topoopt.cli`. Exit status: 0 on success (a
benchmark whose runs failed still succeeded: failures are records), 2 for bad input (one line
per problem).
"""

from __future__ import annotations

import inspect
import json
import sys
import types
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import click
from rich.console import Console
from rich.table import Table

import topoopt
from topoopt.bench.analysis import DEFAULT_SHIFT
from topoopt.bench.executors import DaskExecutor, Executor, LocalExecutor
from topoopt.bench.progress import BenchProgress
from topoopt.bench.records import drop_duplicates, read_for_report, read_records, record_key
from topoopt.bench.runner import plan, run_benchmark, scan
from topoopt.bench.task import DEFAULT_GRACE, DEFAULT_TIME_LIMIT, Task
from topoopt.core.errors import InvalidOptionError, TopooptError
from topoopt.core.registry import (
    families,
    get_family,
)
from topoopt.core.text import natural_key, plain_text

EXIT_BAD_INPUT = 2


def _fail(message: str) -> None:
    """Stop with a bad-input error: :class:`~topoopt.cli.TopooptGroup` prints ``message`` as
    one escaped ``error:`` line and exits with status 2."""
    raise TopooptError(message)


def _warn(message: str) -> None:
    """Print ``message`` as one ``warning:`` line on stderr."""
    click.echo(f"warning: {message}", err=True)


def _csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _seeds(value: str) -> list[int]:
    try:
        return [int(item) for item in _csv(value)]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None


MAX_LIST_ITEMS = 10_000
"""Most items of one comma-separated generator option (e.g. ``--ks 8,16,32``)."""


class _ListOf(click.ParamType):
    """A comma-separated list of ``item`` values: ``8``, ``8,16`` or ``[8, 16]``."""

    def __init__(self, item: click.ParamType) -> None:
        self.item = item
        self.name = f"{item.name}[,{item.name}...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (list, tuple)):
            return tuple(value)
        text = str(value).strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        parts = [part.strip() for part in text.split(",")]
        if not all(parts):
            self.fail(
                f"expected comma-separated {self.item.name} values, got {value!r}", param, ctx
            )
        if len(parts) > MAX_LIST_ITEMS:
            self.fail(f"at most {MAX_LIST_ITEMS} items, got {len(parts)}", param, ctx)
        return tuple(self.item.convert(part, param, ctx) for part in parts)


class _JsonValue(click.ParamType):
    """An untyped generator option: a JSON value when the text is one, else the text."""

    name = "json"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from topoopt.cli import _json_or_text

        return _json_or_text(value) if isinstance(value, str) else value


_SCALAR_TYPES: dict[Any, click.ParamType] = {
    int: click.INT,
    float: click.FLOAT,
    str: click.STRING,
    bool: click.BOOL,
}


def _click_type(hint: Any) -> click.ParamType:
    """The click type that reads a generator option annotated ``hint`` from its text.

    ``int``, ``float``, ``str``, ``bool`` and ``X | None`` of them map to click's types; a
    ``Sequence``, ``list`` or ``tuple[X, ...]`` of them to a comma-separated list; anything
    else to a JSON value (the generator checks it).

    Examples
    --------
    >>> from collections.abc import Sequence
    >>> _click_type(int), _click_type(float | None).name, _click_type(Sequence[int]).name
    (INT, 'float', 'integer[,integer...]')
    """
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        items = [arg for arg in get_args(hint) if arg is not type(None)]
        return _click_type(items[0]) if len(items) == 1 else _JsonValue()
    if hint in _SCALAR_TYPES:
        return _SCALAR_TYPES[hint]
    args = get_args(hint)
    if origin in (list, Sequence) and len(args) == 1 and args[0] in _SCALAR_TYPES:
        return _ListOf(_SCALAR_TYPES[args[0]])
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in _SCALAR_TYPES:
        return _ListOf(_SCALAR_TYPES[args[0]])
    return _JsonValue()


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _generator_parameters(
    generator: Callable[..., Any],
) -> dict[str, tuple[click.ParamType, Any]]:
    """The command-line options of ``generator``: name -> (click type, default).

    Every keyword parameter but ``seed`` is an option, typed from its annotation
    (:func:`_click_type`). Keywords a suite fixes with :func:`functools.partial` (the cluster
    of ``protocol-h100``) are not options: the suite's name already chose them.
    """
    function: Any = generator
    fixed: set[str] = set()
    while isinstance(function, partial):
        fixed |= set(function.keywords)
        function = function.func
    try:
        hints = get_type_hints(function)
    except Exception:  # a plug-in's annotations that do not resolve: values stay JSON
        hints = {}
    out: dict[str, tuple[click.ParamType, Any]] = {}
    for name, param in inspect.signature(generator).parameters.items():
        if name == "seed" or name in fixed:
            continue
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            continue
        out[name] = (_click_type(hints.get(name, Any)), param.default)
    return out


def _generator_options(
    args: list[str],
    parameters: dict[str, tuple[click.ParamType, Any]] | None = None,
    suite: str = "the generator",
) -> dict[str, Any]:
    """``["--count", "5", "--max-cells=9"]`` -> ``{"count": 5, "max_cells": 9}``.

    Each value is converted by the click type of its parameter (``parameters``, see
    :func:`_generator_parameters`; without them values are parsed as JSON when they can be).

    Raises
    ------
    click.UsageError
        For an option ``suite`` does not have, a missing value or a value of the wrong type
        (naming the option).

    Examples
    --------
    >>> _generator_options(["--count", "5", "--max-cells=9", "--name", "x"])
    {'count': 5, 'max_cells': 9, 'name': 'x'}
    >>> _generator_options(["--count", "1.5"], {"count": (click.INT, 20)})
    Traceback (most recent call last):
    ...
    click.exceptions.BadParameter: '1.5' is not a valid integer.
    """
    raw_values: dict[str, str] = {}
    items = iter(args)
    for item in items:
        if not item.startswith("--") or len(item) < 3:
            raise click.UsageError(f"expected --NAME VALUE, got {item!r}")
        name, sep, raw = item[2:].partition("=")
        if not sep:
            value = next(items, None)
            if value is None:
                raise click.UsageError(f"option --{name} needs a value")
            raw = value
        raw_values[name.replace("-", "_")] = raw
    if parameters is None:
        return {name: _JsonValue().convert(raw, None, None) for name, raw in raw_values.items()}
    unknown = sorted(set(raw_values) - set(parameters))
    if unknown:
        known = ", ".join(_flag(n) for n in sorted(parameters)) or "none"
        given = ", ".join(_flag(n) for n in unknown)
        raise click.UsageError(f"unknown option(s) {given} for {suite}; known: {known}")
    options: dict[str, Any] = {}
    for name, raw in raw_values.items():
        param_type = parameters[name][0]
        option = click.Option([_flag(name)], type=param_type)
        options[name] = param_type.convert(raw, option, None)
    return options


def _shown_default(value: Any) -> str:
    """How ``instances list`` shows an option's default: ``" 2"``, ``" 8,16"``, or nothing."""
    if value is None or value is inspect.Parameter.empty:
        return ""
    if isinstance(value, (list, tuple)):
        return " " + ",".join(str(item) for item in value)
    return f" {value!r}"


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

    from topoopt.cli import MAX_CELL_CHARS, WIDE_TABLE, print_block, printable

    names = [family] if family else families()
    rows: list[tuple[str, str, list[str], str]] = []
    for fam in (get_family(name) for name in names):
        for suite, generator in sorted(fam.generators.items(), key=lambda kv: natural_key(kv[0])):
            options = [
                printable(_flag(name) + _shown_default(default), MAX_CELL_CHARS)
                for name, (_, default) in _generator_parameters(generator).items()
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
    parameters = _generator_parameters(generator)
    options = _generator_options(list(ctx.args), parameters, suite)
    try:
        made = list(generator(seed=seed, **options))
    except InvalidOptionError as exc:
        # The generators' messages start with the parameter's name: show the option's flag.
        name, sep, rule = str(exc).partition(": ")
        shown = f"{_flag(name)}: {rule}" if sep and name in parameters else str(exc)
        raise InvalidOptionError(f"{family} {suite}: {shown}") from exc
    except TopooptError:
        raise
    except (TypeError, ValueError) as exc:
        if not options:
            raise  # no option was given: a bug in the generator (an internal error)
        given = " ".join(f"{_flag(n)} {v!r}" for n, v in options.items())
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


def _level(value: str) -> int | str:
    """A ``--level``: a depth when it is an integer, else a level name."""
    try:
        return int(value)
    except ValueError:
        return value


_PLACEMENT_REQUIRED = ("topology_file", "level", "free", "dp", "tp", "pp", "alpha")
_GPUSELECT_OPTIONS = {
    "hosts": "--hosts",
    "scontrol": "--scontrol",
    "host_type": "--type",
    "topo_files": "--topo-file",
    "tables": "--table",
    "cross": "--cross",
    "idle": "--idle",
    "k": "--k",
    "inter_gbps": "--inter-gbps",
    "gpus_per_nic": "--gpus-per-nic",
    "gpus": "--gpus",
}
_PLACEMENT_OPTIONS = {
    "topology_file": "--topology",
    "fmt": "--format",
    "labels": "--labels",
    "level": "--level",
    "leaf_level": "--leaf-level",
    "free": "--free",
    "mixed": "--mixed",
    "dp": "--dp",
    "tp": "--tp",
    "pp": "--pp",
    "alpha": "--alpha",
    "gpus_per_node": "--gpus-per-node",
}


@instances.command("import")
@click.argument("family", type=click.Choice(["placement", "gpuselect"]))
@click.option(
    "--topology",
    "topology_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="placement: cluster topology file (Slurm topology.conf / topology.yaml, topograph "
    "model, kubectl get nodes -o json, topoopt JSON).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["slurm", "slurm-yaml", "topograph", "k8s", "json"]),
    default=None,
    help="placement: format of --topology (default: guessed from its content).",
)
@click.option(
    "--labels",
    default=None,
    help="placement, --format k8s: the topology label keys, top level first, comma-separated.",
)
@click.option(
    "--level",
    default=None,
    help="placement: the level whose switches are the minipods: a depth (0 = top, -1 = "
    "leaves) or a level name.",
)
@click.option(
    "--leaf-level",
    default=None,
    help="placement: the level below --level whose switches are the minipods' leaves "
    "(default: the next one down; placement/hierarchical places on them).",
)
@click.option(
    "--free",
    default=None,
    help="placement: free nodes: a hostlist expression (tux[0-3,8]), or @FILE (names, or the "
    "output of sinfo -N -h -o '%N %t').",
)
@click.option("--mixed", is_flag=True, help="placement: count sinfo's mix nodes as free.")
@click.option("--dp", type=int, default=None, help="placement: data-parallel degree.")
@click.option("--tp", type=int, default=None, help="placement: tensor-parallel degree.")
@click.option("--pp", type=int, default=None, help="placement: pipeline-parallel degree.")
@click.option(
    "--alpha", type=float, default=None, help="placement: weight of the DP spread (Arnold eq. 2)."
)
@click.option(
    "--gpus-per-node",
    type=int,
    default=None,
    help="placement: GPUs per node (default: the topology's, or 8).",
)
@click.option(
    "--hosts",
    "hosts",
    multiple=True,
    metavar="HOSTLIST[=TYPE]",
    help="gpuselect: the hosts (node[01-04]), optionally with their type; repeatable.",
)
@click.option(
    "--scontrol",
    default=None,
    type=click.Path(dir_okay=False),
    help="gpuselect: output of scontrol show node -d (-o or not): the GPU nodes, their GRES "
    "type and count, and the GPUs jobs hold; --hosts then only selects nodes, --idle "
    "overrides.",
)
@click.option(
    "--type",
    "host_type",
    default=None,
    help="gpuselect: type of the hosts --hosts gives none (with --scontrol: of every node).",
)
@click.option(
    "--topo-file",
    "topo_files",
    multiple=True,
    metavar="TYPE_OR_HOSTLIST=FILE",
    help="gpuselect: nvidia-smi topo -m output of a host type, or of hosts (then their type, "
    "when not given, is named after the file); repeatable.",
)
@click.option(
    "--table",
    "tables",
    multiple=True,
    metavar="TYPE=CSV",
    help="gpuselect: nccl-tests per-subset CSV of a host type (data:NAME allowed); repeatable, "
    "several tables of one type are averaged.",
)
@click.option(
    "--cross",
    default=None,
    metavar="CSV",
    help="gpuselect, with --table: cross-host CSV keyed by per-host GPU counts.",
)
@click.option(
    "--idle",
    default=None,
    help="gpuselect: idle GPUs, HOSTS:GPUS items (node[01-04]:0-7,node05:0,3; HOSTS alone: "
    "all its GPUs), or @FILE; default: every GPU.",
)
@click.option("--k", "k", type=int, default=None, help="gpuselect: GPUs requested.")
@click.option(
    "--inter-gbps",
    type=float,
    default=None,
    help="gpuselect: inter-host link bandwidth in GB/s (required for several hosts unless "
    "--cross).",
)
@click.option(
    "--gpus-per-nic", type=int, default=None, help="gpuselect: GPUs one NIC serves at full rate."
)
@click.option(
    "--gpus",
    type=int,
    default=None,
    help="gpuselect: GPUs per host (default: the topology's or the table's, else 8).",
)
@click.option(
    "--name",
    default=None,
    help="Instance name (default: placement <topology file stem>-level<LEVEL>; gpuselect "
    "pool-k<K>).",
)
@click.option(
    "--out", required=True, type=click.Path(dir_okay=False), help="Instance file to write."
)
def import_instance(family: str, name: str | None, out: str, **options: Any) -> None:
    """Build a FAMILY instance from a real cluster (see docs/scheduler.md).

    placement: the topology file, its free nodes and the job (the switches of --level are
    the minipods, the level below their leaves). gpuselect: the hosts, their idle GPUs, the
    request --k and nccl-tests tables (--table) or nvidia-smi topo -m files (--topo-file);
    topoopt solve --hostfile then writes CUDA_VISIBLE_DEVICES per host.
    """
    own, other = (
        (_PLACEMENT_OPTIONS, _GPUSELECT_OPTIONS)
        if family == "placement"
        else (_GPUSELECT_OPTIONS, _PLACEMENT_OPTIONS)
    )
    stray = [flag for key, flag in other.items() if options[key] not in (None, False, ())]
    if stray:
        raise click.UsageError(f"{stray[0]} is not an option of {family} imports")
    if family == "placement":
        for key in _PLACEMENT_REQUIRED:
            if options[key] is None:
                raise click.MissingParameter(
                    param_type="option", param_hint=f"'{_PLACEMENT_OPTIONS[key]}'"
                )
        instance, summary = _import_placement(name, **{k: options[k] for k in own})
    else:
        for key in ("hosts", "k") if options["scontrol"] is None else ("k",):
            if options[key] in (None, ()):
                raise click.MissingParameter(
                    param_type="option", param_hint=f"'{_GPUSELECT_OPTIONS[key]}'"
                )
        instance, summary = _import_gpuselect(name, **{k: options[k] for k in own})
    try:
        topoopt.save(instance, out)
    except OSError as exc:
        raise TopooptError(f"cannot write {out}: {exc.strerror or exc}") from exc
    click.echo(f"wrote {out}: {family} instance {instance.name!r}, {summary}")


def _import_placement(
    name: str | None,
    *,
    topology_file: str,
    fmt: str | None,
    labels: str | None,
    level: str,
    leaf_level: str | None,
    free: str,
    mixed: bool,
    dp: int,
    tp: int,
    pp: int,
    alpha: float,
    gpus_per_node: int | None,
) -> tuple[topoopt.Instance, str]:
    from topoopt.placement.cluster import from_topology
    from topoopt.topology import load_topology, read_free

    levels = _csv(labels) if labels else None
    topology = load_topology(topology_file, fmt, levels=levels)
    nodes = read_free(free, mixed=mixed)
    instance = from_topology(
        topology,
        level=_level(level),
        leaf_level=None if leaf_level is None else _level(leaf_level),
        free=nodes,
        dp=dp,
        tp=tp,
        pp=pp,
        alpha=alpha,
        gpus_per_node=gpus_per_node,
        name=name or f"{Path(topology_file).stem}-level{level}",
    )
    pods = ", ".join(f"{m.name} {m.free_nodes}" for m in instance.minipods)
    return instance, (
        f"job {instance.rows} x {instance.cols} nodes on {instance.n_minipods} minipods "
        f"(free nodes: {pods})"
    )


def _pairs(values: Sequence[str], flag: str, what: str) -> list[tuple[str, str]]:
    """``KEY=VALUE`` options as pairs (a missing ``=`` is a usage error naming ``flag``)."""
    out = []
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key or not rest:
            raise click.BadParameter(f"{value!r}: write {what}", param_hint=f"'{flag}'")
        out.append((key, rest))
    return out


def _import_gpuselect(
    name: str | None,
    *,
    hosts: tuple[str, ...],
    scontrol: str | None,
    host_type: str | None,
    topo_files: tuple[str, ...],
    tables: tuple[str, ...],
    cross: str | None,
    idle: str | None,
    k: int,
    inter_gbps: float | None,
    gpus_per_nic: int | None,
    gpus: int | None,
) -> tuple[topoopt.Instance, str]:
    from topoopt.core.errors import InvalidInstanceError
    from topoopt.gpuselect.loaders import read_text
    from topoopt.gpuselect.pool import from_cluster, parse_scontrol_nodes

    pool: dict[str, str | None] = {}
    for value in hosts:
        hostlist, sep, kind = value.partition("=")
        if not hostlist or (sep and not kind) or (sep and scontrol):
            raise click.BadParameter(
                f"{value!r}: write HOSTLIST"
                + ("" if scontrol else " or HOSTLIST=TYPE")
                + (" (--scontrol gives the types)" if scontrol else ""),
                param_hint="'--hosts'",
            )
        pool[hostlist] = kind or host_type
    per_host: dict[str, int] | None = None
    free: Any = idle
    if scontrol is not None:
        nodes = parse_scontrol_nodes(
            read_text(Path(scontrol), "--scontrol"), scontrol, host_type=host_type
        )
        chosen = list(nodes.types)
        if pool:
            from topoopt.topology import expand

            wanted = {n for hostlist in pool for n in expand(hostlist)}
            unknown = sorted(wanted - set(chosen))
            if unknown:
                raise TopooptError(
                    f"--hosts: node {unknown[0]!r} has no GPU in {scontrol} "
                    f"({len(chosen)} GPU nodes)"
                )
            chosen = [n for n in chosen if n in wanted]
        pool = {n: nodes.types[n] for n in chosen}
        per_host = {n: nodes.gpus[n] for n in chosen}
        if idle is None:
            free = {n: nodes.idle[n] for n in chosen}
    by_type: dict[str, list[str]] = {}
    for kind, path in _pairs(tables, "--table", "TYPE=CSV"):
        by_type.setdefault(kind, []).append(path)
    fields = {"k": "--k", "cross": "--cross", "host_type": "--type", "gpus": "--gpus"}
    fields.update({"hosts": "--hosts", "idle": "--idle", "tables": "--table"})
    fields.update({"topologies": "--topo-file", "inter_gbps": "--inter-gbps"})
    try:
        instance = from_cluster(
            pool,
            k=k,
            idle=free,
            gpus=gpus if per_host is None or gpus is not None else per_host,
            tables={t: p[0] if len(p) == 1 else p for t, p in by_type.items()} or None,
            cross=cross,
            topologies=dict(_pairs(topo_files, "--topo-file", "TYPE_OR_HOSTLIST=FILE")) or None,
            inter_gbps=inter_gbps,
            gpus_per_nic=gpus_per_nic,
            name=name or f"pool-k{k}",
        )
    except InvalidInstanceError as exc:
        head, dot, rest = exc.field.partition(".")
        if head in fields:
            raise InvalidInstanceError(
                fields[head] + (f" {rest}" if dot else ""), exc.rule
            ) from None
        raise
    idle_gpus = sum(h.n_available for h in instance.hosts)
    types = sorted({h.type for h in instance.hosts})
    return instance, (
        f"k={instance.k} of {idle_gpus} idle GPUs on {len(instance.hosts)} hosts "
        f"(types {', '.join(types)}; {instance.bandwidth.kind} model)"
    )


@instances.command("schema")
@click.argument("family")
def schema(family: str) -> None:
    """Print the JSON Schema (draft 2020-12) of FAMILY's instance file, the one topoopt.load
    enforces (see docs/input.md)."""
    published = get_family(family).schema
    if published is None:
        raise TopooptError(f"family {family!r} publishes no JSON Schema")
    click.echo(json.dumps(published, indent=2))


@instances.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
def check(paths: tuple[str, ...]) -> None:
    """Validate instance files (folders: every *.json below); one line per problem."""
    from topoopt.cli import allowed_paths, printable

    valid, problems = scan(paths, allow_paths=allowed_paths())
    for line in problems:
        click.echo(printable(line))
    total = len(valid) + len(problems)
    if problems:
        click.echo(f"{len(problems)} problem(s) in {total} file(s)", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"{total} file(s) valid")


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
    from topoopt.cli import allowed_paths

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
        _fail(str(exc))
        return
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
        _fail(str(exc))
        return
    finally:
        if isinstance(runner, DaskExecutor):
            runner.close()
    if summary.repaired:
        _warn(f"{out}: cut off a torn last line ({summary.repaired} bytes) of an interrupted run")
    if summary.duplicates:
        _warn(
            f"{out} holds {summary.duplicates} duplicate record(s) (a run recorded twice); "
            "each run is skipped once, the report counts the first copy"
        )
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
        found, warnings = read_for_report(results)
        for warning in warnings:
            _warn(warning)
        records, duplicates = drop_duplicates(found)
        if duplicates:
            _warn(
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
        _fail(str(exc))
        return
    except OSError as exc:
        _fail(f"{exc.filename or out_dir}: cannot write the report: {exc.strerror or exc}")
        return
    click.echo(f"report of {len(records)} record(s): " + ", ".join(str(p) for p in written))
