"""A toy problem family, 0/1 knapsack, built only on topoopt's public extension API.

It proves the family contract (``docs/extending.md`` walks through it): an instance type with
JSON conversion, the exact objective and the feasibility check, an enumeration oracle, a Pyomo
model written to the formulation protocol (``build`` / ``extract`` / ``warm_start``), a greedy
heuristic, tags and a report section. Nothing under ``topoopt/`` names it.

Instance: items with integer weights and values, and a capacity. Solution: the names of the
chosen items. Objective: their total value, maximised, subject to total weight <= capacity.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import topoopt
from topoopt.core import schema
from topoopt.core import validate as v
from topoopt.core.errors import InvalidOptionError, InvalidSolutionError
from topoopt.core.family import (
    FORMAT_VERSION,
    Family,
    Importer,
    ImportOption,
    Instance,
    ReportSection,
    Sense,
)
from topoopt.core.formulation import MipSolver as BaseMipSolver
from topoopt.core.safejson import FileAccess
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason


@dataclass(frozen=True)
class Item:
    """One item: its name, integer weight and value."""

    name: str
    weight: int
    value: int

    def __post_init__(self) -> None:
        v.as_str(self.name, "items[].name")
        object.__setattr__(self, "weight", v.as_int(self.weight, "items[].weight", minimum=0))
        object.__setattr__(self, "value", v.as_int(self.value, "items[].value", minimum=0))


@dataclass(frozen=True)
class KnapsackInstance(Instance):
    """Choose items of total weight at most ``capacity`` maximising their total value."""

    family: ClassVar[str] = "knapsack"

    name: str
    capacity: int
    items: tuple[Item, ...]
    labels: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        v.as_str(self.name, "name")
        object.__setattr__(self, "capacity", v.as_int(self.capacity, "capacity", minimum=0))
        object.__setattr__(self, "items", tuple(self.items))
        object.__setattr__(self, "labels", v.as_labels(dict(self.labels)))
        v.unique_names([item.name for item in self.items], "items")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "family": self.family,
            "format_version": FORMAT_VERSION,
            "name": self.name,
            "capacity": self.capacity,
            "items": [{"name": i.name, "weight": i.weight, "value": i.value} for i in self.items],
        }
        if self.labels:
            out["labels"] = dict(self.labels)
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, files: FileAccess | None = None
    ) -> KnapsackInstance:
        raw_items = v.as_list(v.field(data, "items"), "items")
        items = []
        for k, raw in enumerate(raw_items):
            path = v.join("items", k)
            raw = v.as_mapping(raw, path)
            items.append(
                Item(
                    name=v.as_str(v.field(raw, "name", path), v.join(path, "name")),
                    weight=v.as_int(v.field(raw, "weight", path), v.join(path, "weight")),
                    value=v.as_int(v.field(raw, "value", path), v.join(path, "value")),
                )
            )
        return cls(
            name=v.as_str(data.get("name", "unnamed"), "name"),
            capacity=v.as_int(v.field(data, "capacity"), "capacity", minimum=0),
            items=tuple(items),
            labels=v.as_labels(data.get("labels", {})),
        )


Choice = frozenset[str]
"""A solution: the names of the chosen items."""


def evaluate(instance: KnapsackInstance, choice: Choice) -> float:
    """Total value of the chosen items."""
    return float(sum(item.value for item in instance.items if item.name in choice))


def check(instance: KnapsackInstance, choice: Choice) -> list[str]:
    """Unknown items and an exceeded capacity."""
    names = {item.name for item in instance.items}
    problems = [f"unknown item {name!r}" for name in sorted(choice - names)]
    weight = sum(item.weight for item in instance.items if item.name in choice)
    if weight > instance.capacity:
        problems.append(f"weight {weight} exceeds the capacity {instance.capacity}")
    return problems


def to_dict(instance: KnapsackInstance, choice: Choice) -> dict[str, Any]:
    return {"items": sorted(choice)}


def from_dict(instance: KnapsackInstance, data: Mapping[str, Any]) -> Choice:
    items = data.get("items")
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise InvalidSolutionError("items: must be a list of item names")
    return frozenset(items)


def metrics(instance: KnapsackInstance, choice: Choice) -> dict[str, float]:
    weight = sum(item.weight for item in instance.items if item.name in choice)
    return {"weight": float(weight), "items": float(len(choice))}


def tags(instance: KnapsackInstance) -> dict[str, str]:
    """Size class (``small`` up to 8 items, else ``large``) and the instance's labels."""
    return {"size": "small" if len(instance.items) <= 8 else "large", **instance.labels}


def examples() -> list[KnapsackInstance]:
    """Small instances with known optima (the first is Pisinger's classic 4-item example)."""
    return [
        KnapsackInstance(
            "four-items",
            9,
            (Item("a", 2, 3), Item("b", 3, 4), Item("c", 4, 5), Item("d", 5, 6)),
        ),
        KnapsackInstance(
            "greedy-trap",
            10,
            (Item("small", 1, 2), Item("big", 10, 15), Item("mid", 5, 6)),
            {"kind": "trap"},
        ),
    ]


def random_suite(*, seed: int = 0, count: int = 6, items: int = 8) -> list[KnapsackInstance]:
    """``count`` random instances of ``items`` items (deterministic given ``seed``)."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(count):
        chosen = [Item(f"i{k}", rng.randint(1, 20), rng.randint(1, 30)) for k in range(items)]
        capacity = sum(item.weight for item in chosen) // 2
        out.append(KnapsackInstance(f"random-{seed}-{i}", capacity, tuple(chosen)))
    return out


def slow_examples() -> list[KnapsackInstance]:
    """The family's slow instances (``Family.slow_examples``): a knapsack of 40 items, whose
    2^40 subsets no enumeration finishes."""
    return random_suite(seed=7, count=1, items=40)


def import_items(name: str | None, *, items: str, capacity: int) -> tuple[KnapsackInstance, str]:
    """A knapsack from a CSV file of ``name,weight,value`` lines (the importer of the family,
    ``topoopt instances import knapsack``)."""
    rows = [line.split(",") for line in Path(items).read_text().splitlines() if line.strip()]
    if any(len(row) != 3 for row in rows):
        raise InvalidOptionError(f"--items: {items}: every line must be name,weight,value")
    chosen = tuple(Item(row[0].strip(), int(row[1]), int(row[2])) for row in rows)
    instance = KnapsackInstance(name or Path(items).stem, capacity, chosen)
    return instance, f"{len(chosen)} items, capacity {capacity}"


IMPORTER = Importer(
    build=import_items,
    help="A knapsack from a CSV file of items and a capacity.",
    options=(
        ImportOption(
            "items", "--items", "CSV file: name,weight,value per line.", required=True, is_file=True
        ),
        ImportOption(
            "capacity", "--capacity", "Capacity of the knapsack.", type=int, required=True
        ),
    ),
)


def value_section(records: Sequence[dict[str, Any]], ctx: Any) -> list[Any]:
    """Report section: the mean value each solver reaches, per size class."""
    from topoopt.bench.analysis import has_solution, mean_by, solver_labels
    from topoopt.bench.document import Table

    solved = [r for r in records if has_solution(r)]
    means = mean_by(solved, lambda r: r["tags"]["size"], lambda r: r["objective"])
    sizes = sorted({size for size, _ in means})
    rows = tuple(
        (label, *(f"{means[s, label][0]:.4g}" if (s, label) in means else "-" for s in sizes))
        for label in solver_labels(records)
    )
    return [Table(("solver", *sizes), rows, "Mean total value per size class.")]


SCHEMA = schema.instance_schema(
    "knapsack",
    "toy 0/1 knapsack instance",
    {
        "capacity": schema.integer(0, description="Largest total weight."),
        "items": schema.array(
            schema.obj(
                {"name": schema.NAME, "weight": schema.integer(0), "value": schema.integer(0)},
                ["name", "weight", "value"],
            ),
            max_items=10_000,
        ),
    },
    ["capacity", "items"],
)
"""The JSON Schema of the instance file, enforced by ``topoopt.load``."""


FAMILY = Family(
    name="knapsack",
    sense=Sense.MAXIMIZE,
    instance_type=KnapsackInstance,
    evaluate=evaluate,
    check=check,
    solution_to_dict=to_dict,
    solution_from_dict=from_dict,
    metrics=metrics,
    size=lambda instance: {"items": len(instance.items)},
    examples=examples,
    slow_examples=slow_examples,
    generators={"random": random_suite},
    oracle="knapsack/enumerate",
    tags=tags,
    report_sections=(ReportSection("Knapsack: value per size class", f"{__name__}:value_section"),),
    schema=SCHEMA,
    importer=IMPORTER,
)


class EnumerateSolver(Solver):
    """Brute force over every subset of items (the oracle)."""

    name = "knapsack/enumerate"
    family = "knapsack"
    exact = True
    gives_bound = True

    def _solve(self, instance: KnapsackInstance, ctx: SolveContext) -> Attempt:
        best: Choice = frozenset()
        for size in range(len(instance.items) + 1):
            for subset in itertools.combinations(instance.items, size):
                choice = frozenset(item.name for item in subset)
                if not check(instance, choice) and evaluate(instance, choice) > evaluate(
                    instance, best
                ):
                    best = choice
        return Attempt(best, TerminationReason.OPTIMAL, proven_optimal=True)


def greedy(instance: KnapsackInstance) -> Choice:
    """Items by value per weight, each taken while it fits."""
    ranked = sorted(instance.items, key=lambda i: (-i.value / max(i.weight, 1e-9), i.name))
    room, chosen = instance.capacity, set()
    for item in ranked:
        if item.weight <= room:
            chosen.add(item.name)
            room -= item.weight
    return frozenset(chosen)


class GreedySolver(Solver):
    """Items by value per weight, each taken while it fits."""

    name = "knapsack/greedy"
    family = "knapsack"

    def _solve(self, instance: KnapsackInstance, ctx: SolveContext) -> Attempt:
        return Attempt(greedy(instance), TerminationReason.COMPLETED)


class MipSolver(BaseMipSolver):
    """The binary program of :mod:`toy.knapsack_model`, warm started from the greedy choice."""

    name = "knapsack/mip"
    family = "knapsack"
    exact = True
    gives_bound = True
    formulation = "toy.knapsack_model"

    def start(self, instance: KnapsackInstance, **opts: Any) -> Choice:
        return greedy(instance)


SOLVERS: tuple[type[Solver], ...] = (EnumerateSolver, GreedySolver, MipSolver)


def register() -> None:
    """Register the family and its solvers through the public extension API."""
    topoopt.register_family(FAMILY)
    for solver in SOLVERS:
        topoopt.register_solver(solver)
