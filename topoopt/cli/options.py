"""Command-line options read from a function's signature: the generator options of
``topoopt instances generate`` (typed from the generator's annotations) and comma-separated
lists."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

import click

from topoopt.cli.output import json_or_text

F = TypeVar("F", bound=Callable[..., Any])
"""A click command function (what an option decorator returns)."""


def csv_items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def seed_list(value: str) -> list[int]:
    try:
        return [int(item) for item in csv_items(value)]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None


MAX_LIST_ITEMS = 10_000
"""Most items of one comma-separated generator option (e.g. ``--ks 8,16,32``)."""


class ListOf(click.ParamType):
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


class JsonValue(click.ParamType):
    """An untyped generator option: a JSON value when the text is one, else the text."""

    name = "json"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return json_or_text(value) if isinstance(value, str) else value


_SCALAR_TYPES: dict[Any, click.ParamType] = {
    int: click.INT,
    float: click.FLOAT,
    str: click.STRING,
    bool: click.BOOL,
}


def click_type(hint: Any) -> click.ParamType:
    """The click type that reads a generator option annotated ``hint`` from its text.

    ``int``, ``float``, ``str``, ``bool`` and ``X | None`` of them map to click's types; a
    ``Sequence``, ``list`` or ``tuple[X, ...]`` of them to a comma-separated list; anything
    else to a JSON value (the generator checks it).

    Examples
    --------
    >>> from collections.abc import Sequence
    >>> click_type(int), click_type(float | None).name, click_type(Sequence[int]).name
    (INT, 'float', 'integer[,integer...]')
    """
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        items = [arg for arg in get_args(hint) if arg is not type(None)]
        return click_type(items[0]) if len(items) == 1 else JsonValue()
    if hint in _SCALAR_TYPES:
        return _SCALAR_TYPES[hint]
    args = get_args(hint)
    if origin in (list, Sequence) and len(args) == 1 and args[0] in _SCALAR_TYPES:
        return ListOf(_SCALAR_TYPES[args[0]])
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in _SCALAR_TYPES:
        return ListOf(_SCALAR_TYPES[args[0]])
    return JsonValue()


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def generator_parameters(
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
        out[name] = (click_type(hints.get(name, Any)), param.default)
    return out


def generator_options(
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
    >>> generator_options(["--count", "5", "--max-cells=9", "--name", "x"])
    {'count': 5, 'max_cells': 9, 'name': 'x'}
    >>> generator_options(["--count", "1.5"], {"count": (click.INT, 20)})
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
        return {name: JsonValue().convert(raw, None, None) for name, raw in raw_values.items()}
    unknown = sorted(set(raw_values) - set(parameters))
    if unknown:
        known = ", ".join(flag(n) for n in sorted(parameters)) or "none"
        given = ", ".join(flag(n) for n in unknown)
        raise click.UsageError(f"unknown option(s) {given} for {suite}; known: {known}")
    options: dict[str, Any] = {}
    for name, raw in raw_values.items():
        param_type = parameters[name][0]
        option = click.Option([flag(name)], type=param_type)
        options[name] = param_type.convert(raw, option, None)
    return options


def shown_default(value: Any) -> str:
    """How ``instances list`` shows an option's default: ``" 2"``, ``" 8,16"``, or nothing."""
    if value is None or value is inspect.Parameter.empty:
        return ""
    if isinstance(value, (list, tuple)):
        return " " + ",".join(str(item) for item in value)
    return f" {value!r}"


def trace_options(command: F) -> F:
    """``--trace FILE``, ``--trace-format`` and ``--synthetic N``: the job stream of
    ``topoopt simulate`` and ``topoopt simulate-cross``."""
    options = (
        click.option("--trace", "trace_file", type=click.Path(dir_okay=False), default=None),
        click.option(
            "--trace-format",
            default=None,
            help="philly, alibaba, helios, jsonl, csv (default: guessed from the file).",
        ),
        click.option(
            "--synthetic",
            "synthetic_jobs",
            type=click.IntRange(min=1),
            default=None,
            help="Instead of --trace: this many synthetic jobs (Poisson arrivals at --load).",
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command
