"""Helpers for a family's bad-input tests: edit a valid instance's JSON, then check that the
API and the CLI name the same field and rule (the CLI on one line of stderr, exit code 2).

Use it from a test module::

    from topoopt.testing.input_errors import assert_cli_exits_2, assert_load_names, edited, setter

    CASES = [("negative", setter("clusters", 1, "capacity_gpus", value=-1),
              "clusters[1].capacity_gpus", ">= 0")]

    @pytest.mark.parametrize(("change", "field", "words"), [c[1:] for c in CASES])
    def test_load_names_the_field(change, field, words):
        assert_load_names(edited(base(), change), field, words)
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import topoopt
from topoopt.core.errors import InvalidInstanceError

Change = Callable[[dict[str, Any]], Any]
"""An in-place edit of an instance's JSON object."""


def setter(*path: Any, value: Any) -> Change:
    """The change setting the item at ``path`` (keys and list indices) to ``value``.

    Examples
    --------
    >>> data = {"links": [{"a": "x"}]}
    >>> setter("links", 0, "a", value="y")(data)
    >>> data
    {'links': [{'a': 'y'}]}
    """

    def change(data: dict[str, Any]) -> None:
        target: Any = data
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return change


def both(*changes: Change) -> Change:
    """The change applying ``changes`` in order."""

    def change(data: dict[str, Any]) -> None:
        for each in changes:
            each(data)

    return change


def edited(base: Mapping[str, Any], change: Change) -> dict[str, Any]:
    """A deep copy of ``base`` with ``change`` applied."""
    data = copy.deepcopy(dict(base))
    change(data)
    return data


def assert_load_names(data: Mapping[str, Any], field: str, words: str) -> InvalidInstanceError:
    """``topoopt.load(data)`` fails with an error on ``field`` whose message starts with
    ``"<field>: "`` and contains ``words``; returns the error."""
    try:
        topoopt.load(dict(data))
    except InvalidInstanceError as error:
        assert error.field == field, (error.field, str(error))
        assert str(error).startswith(f"{field}: "), str(error)
        assert words in str(error), str(error)
        return error
    raise AssertionError(f"loaded without an error; expected one on {field!r}")


def assert_cli_exits_2(
    directory: Path, data: Mapping[str, Any], solver: str, field: str, words: str
) -> None:
    """``topoopt solve FILE -s solver`` on ``data`` written to a file in ``directory`` exits with
    code 2 and one line on stderr, ``error: <field>: ...`` containing ``words``."""
    from click.testing import CliRunner

    from topoopt.cli import main

    path = Path(directory) / "bad.json"
    path.write_text(json.dumps(data))
    out = CliRunner().invoke(main, ["solve", str(path), "-s", solver])
    assert out.exit_code == 2, (out.exit_code, out.stdout, out.stderr)
    assert out.stderr.endswith("\n") and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"error: {field}: "), out.stderr
    assert words in out.stderr, out.stderr


__all__ = ["Change", "assert_cli_exits_2", "assert_load_names", "both", "edited", "setter"]
