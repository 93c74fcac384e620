"""Fuzzing the input path: mutated instance files of any family, and the one rule they obey.

The rule: whatever the bytes of an instance file, ``topoopt.load`` then a solver either
returns a result whose solution passes the family's ``check()`` (or a result without a
solution), or raises a :class:`~topoopt.core.errors.TopooptError` whose message is one line.
Any other exception, a multi-line message or a violated ``check()`` is a bug.

:func:`instance_files` is a hypothesis strategy of such files for a family: a valid instance
(one of the family's examples, or a generated one) as a JSON object, mutated at random paths
— keys deleted or added (near-miss typos among them), values replaced by wrong types, huge,
negative or non-finite numbers, long or odd strings, deep nesting — then written as bytes,
which may be mutated again (cut short, a byte flipped, UTF-16, ``NaN`` literals).
:func:`check_file` applies the rule to one file. The test suite runs a short fuzz of every
family by default and a long one (10,000 inputs per family) under ``-m slow``::

    python -m pytest -m slow tests/test_fuzz.py -s      # prints the outcome counts
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

import topoopt
from topoopt.core.errors import TopooptError
from topoopt.core.family import Family

SOLVE_TIME_LIMIT_S = 2.0
"""Time limit of each solve of a loaded fuzzed instance."""

ODD_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    -0.0,
    2**31,
    2**63 + 1,
    10**30,
    1e308,
    -1e308,
    1e-300,
    math.nan,
    math.inf,
    "",
    "x",
    "\ud800",
    "a\nb\x1b[31m",
    "$\\frac{$",
    "<script>alert(1)</script>",
    "../../../etc/passwd",
    "/dev/zero",
    [],
    {},
    [1, 2, 3],
    {"a": 1},
)
"""Replacement values: wrong types, boundary and huge numbers, odd strings (copied before
use: a mutation must never change this tuple's lists and objects)."""

_ODD = st.sampled_from(ODD_VALUES)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (tuple of keys and indexes) into a JSON value, the root included."""
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value[:20]):  # long arrays: the first items suffice
            out += _paths(child, (*prefix, index))
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def _mutated(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """``base`` (a copy) with one to three mutations at drawn paths."""
    doc = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        target: Any = _get(doc, path[:-1]) if path else None
        action = draw(
            st.sampled_from(("replace", "delete", "add_key", "typo_key", "deep", "long", "grow"))
        )
        if not path:  # the root itself
            doc = copy.deepcopy(draw(_ODD)) if action == "replace" else doc
            continue
        key = path[-1]
        if action == "replace":
            target[key] = copy.deepcopy(draw(_ODD | st.integers() | st.text(max_size=20)))
        elif action == "delete" and isinstance(target, dict):
            del target[key]
        elif action == "delete" and isinstance(target, list) and len(target) > 0:
            target.pop(key)
        elif action == "add_key" and isinstance(target, dict):
            target[draw(st.text(min_size=1, max_size=12))] = copy.deepcopy(draw(_ODD))
        elif action == "typo_key" and isinstance(target, dict) and isinstance(key, str) and key:
            cut = draw(st.integers(0, len(key) - 1))
            target[key[:cut] + key[cut + 1 :]] = target.pop(key)
        elif action == "deep":
            target[key] = _deep(draw(st.sampled_from((10, 70, 300))))
        elif action == "long":
            target[key] = "y" * 100_000 if draw(st.booleans()) else list(range(50_000))
        elif action == "grow" and isinstance(target[key], list) and target[key]:
            target[key] = target[key] * draw(st.sampled_from((2, 50)))
    return doc


def _to_bytes(doc: Any) -> bytes:
    return json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")


@st.composite
def _byte_mutated(draw: st.DrawFn, data: bytes) -> bytes:
    action = draw(st.sampled_from(("none", "none", "none", "cut", "flip", "utf16", "bom", "crlf")))
    if action == "cut" and data:
        return data[: draw(st.integers(0, len(data) - 1))]
    if action == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    if action == "utf16":
        return data.decode("utf-8", "surrogatepass").encode("utf-16", "surrogatepass")
    if action == "bom":
        return b"\xef\xbb\xbf" + data
    if action == "crlf":
        return data.replace(b",", b",\r\n")
    return data


def base_documents(family: Family[Any, Any]) -> list[dict[str, Any]]:
    """Valid instance objects of ``family``: its examples and one suite of each generator
    that runs without options (generators that need options are skipped)."""
    docs = [instance.to_dict() for instance in family.examples()]
    for generator in family.generators.values():
        try:
            docs += [instance.to_dict() for instance in list(generator(seed=0))[:3]]
        except (TopooptError, TypeError):
            continue
    return docs


def instance_files(family: Family[Any, Any]) -> st.SearchStrategy[bytes]:
    """Mutated instance files of ``family`` (see the module docstring)."""
    bases = base_documents(family)
    docs = st.sampled_from(bases).flatmap(_mutated)
    return docs.map(_to_bytes).flatmap(_byte_mutated)


def check_file(
    family: Family[Any, Any],
    data: bytes,
    folder: Path,
    solver_index: int,
    time_limit: float = SOLVE_TIME_LIMIT_S,
) -> str:
    """Apply the rule of the module docstring to the instance file ``data``.

    Returns the outcome, ``"error"`` (a clean topoopt error), ``"solved"`` or
    ``"no_solution"``; raises ``AssertionError`` for a broken rule (other exceptions
    propagate). A loaded instance is solved by its ``solver_index``-th supporting solver
    (modulo their number) under ``time_limit`` seconds.
    """
    path = folder / "fuzzed.json"
    path.write_bytes(data)
    try:
        instance = topoopt.load(path)
    except TopooptError as exc:
        _assert_one_line(exc)
        return "error"
    solvers = topoopt.solvers_for(instance)
    if not solvers:
        return "error"
    name = solvers[solver_index % len(solvers)].name
    try:
        result = topoopt.solve(instance, name, time_limit=time_limit)
    except TopooptError as exc:
        _assert_one_line(exc)
        return "error"
    if result.solution is None:
        return "no_solution"
    violations = family.check(instance, result.solution)
    assert result.is_ok and not violations, (name, result, violations)
    return "solved"


def _assert_one_line(exc: BaseException) -> None:
    message = str(exc)
    assert "\n" not in message and "\r" not in message, repr(message)


# --- benchmark results files ------------------------------------------------------------------


def _record(instance: str, seed: int) -> dict[str, Any]:
    """A valid benchmark record (the fields :mod:`topoopt.bench.schema` requires)."""
    return {
        "record_version": 1,
        "family": "placement",
        "suite": "s",
        "instance": instance,
        "instance_hash": "h",
        "solver": "placement/best-fit",
        "backend": None,
        "seed": seed,
        "repeat": 0,
        "sense": "minimize",
        "status": "feasible",
        "termination": "completed",
        "objective": 1.5,
        "total_s": 0.1,
        "size": {"nodes": 4},
        "tags": {"job": "2x2"},
    }


@st.composite
def results_files(draw: st.DrawFn) -> bytes:
    """A results file of a few valid records, its line endings LF or CRLF, then mutated like
    instance files: values replaced, cut short, a byte flipped, a line doubled."""
    count = draw(st.integers(0, 4))
    records: list[Any] = [_record(f"i{n}", n) for n in range(count)]
    mutate: bool = draw(st.booleans())
    if records and mutate:
        records[draw(st.integers(0, count - 1))] = draw(_mutated(_record("m", 9)))
    ending = draw(st.sampled_from((b"\n", b"\r\n")))
    lines = [_to_bytes(r) for r in records]
    duplicate: bool = draw(st.booleans())
    if lines and duplicate:
        lines.append(lines[draw(st.integers(0, len(lines) - 1))])  # a duplicate
    data = b"".join(line + ending for line in lines)
    return draw(_byte_mutated(data))


def check_results_file(data: bytes, folder: Path) -> str:
    """The rule for results files: reading gives records or a one-line topoopt error; a
    writer (a resumed benchmark) either refuses the file and leaves it unchanged, or appends
    a record after which the file reads back with every record read before, plus the new one.

    Returns ``"read"`` or ``"error"`` (the file was refused).
    """
    from topoopt.bench.records import RecordWriter, read_records

    path = folder / "results.jsonl"
    path.write_bytes(data)
    try:
        before = read_records(path)
    except TopooptError as exc:
        _assert_one_line(exc)
        try:
            RecordWriter(path).close()
        except TopooptError as exc2:
            _assert_one_line(exc2)
        assert path.read_bytes() == data, "a refused results file was modified"
        return "error"
    new = _record("appended", 0)
    with RecordWriter(path) as writer:
        writer.write(new)
    after = read_records(path)
    assert after == [*before, new], (before, after)
    return "read"
