"""Problem families: the Instance base class and the per-family contract.

A *family* (``placement``, ``gpuselect``, ...) bundles what every solver of that family
shares: the instance type, the exact objective (``evaluate``), the feasibility check
(``check``), JSON conversion of solutions, and the objective sense. Solvers never
compute the reported objective themselves; :class:`~topoopt.core.solver.Solver`
recomputes it with the family's ``evaluate``.
"""

from __future__ import annotations

import importlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

FORMAT_VERSION = 1
"""Version of the instance JSON format this release reads and writes."""


class Sense(str, Enum):
    """Direction of a family's objective."""

    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"

    @property
    def worst(self) -> float:
        """The bound that proves nothing: ``-inf`` when minimising, ``+inf`` when maximising."""
        return -math.inf if self is Sense.MINIMIZE else math.inf


class Instance(ABC):
    """Base class of every family's instance (subclasses are frozen dataclasses).

    Subclasses validate their fields on construction and raise
    :class:`~topoopt.core.errors.InvalidInstanceError` naming the field and the rule.
    """

    family: ClassVar[str]
    name: str

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The instance as the JSON object of its family (``family``, ``format_version``, ...)."""

    @classmethod
    @abstractmethod
    def from_dict(cls, data: Mapping[str, Any], *, base_dir: Path | None = None) -> Instance:
        """Build and validate an instance from its JSON object.

        ``base_dir`` resolves relative file references (e.g. measurement tables).
        """


def _no_metrics(instance: Any, solution: Any) -> dict[str, float]:
    return {}


def _no_size(instance: Any) -> dict[str, int]:
    return {}


def _no_description(instance: Any, solution: Any) -> str:
    return repr(solution)


def _no_tags(instance: Any) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class ReportSection:
    """A family's own section of ``topoopt report``.

    Attributes
    ----------
    title
        Heading of the section.
    render
        ``"module:function"`` of ``function(records, ctx) -> list[Block]`` (see
        :mod:`topoopt.bench.sections`). A reference, not the function, so that importing a
        family never imports the report stack.
    """

    title: str
    render: str

    def load(self) -> Callable[..., Any]:
        """Import and return the render function."""
        module, _, attr = self.render.partition(":")
        return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Family:
    """What all solvers of one problem family share.

    Attributes
    ----------
    name
        Family name, the prefix of its solvers' names (``placement`` in ``placement/best-fit``).
    sense
        Whether ``evaluate`` is minimised or maximised.
    instance_type
        The family's :class:`Instance` subclass; ``topoopt.load`` dispatches on ``name``.
    evaluate
        ``evaluate(instance, solution) -> float``, the exact objective.
    check
        ``check(instance, solution) -> list[str]``, the violated rules (empty = feasible).
    solution_to_dict, solution_from_dict
        JSON conversion of solutions (``solution_from_dict(instance, data)``).
    metrics
        Extra figures of a solution reported beside the objective (e.g. ``dp_spread``).
    size
        Instance size figures for benchmark records (e.g. number of nodes).
    describe
        Human-readable rendering of a solution (what ``topoopt solve`` prints).
    examples
        Small instances the enumeration oracle solves quickly; the conformance suite runs every
        solver of the family on them.
    generators
        Named instance-suite generators: ``generators[suite](seed=..., **options)`` returns a
        list of instances (``topoopt instances generate``). Deterministic given the seed.
    solver_modules
        Modules whose import registers the family's solvers (imported when the family is
        registered). They must not import Pyomo at module level.
    oracle
        Registry name of the family's enumeration oracle, or ``None`` for a family too large
        to enumerate (the conformance suite then skips the oracle comparisons).
    tags
        ``tags(instance) -> {name: value}``: labels such as a setting, a cluster type or a
        size class, written into every benchmark record and used by the report to group rows.
    report_sections
        The family's own sections of ``topoopt report``.
    size_figure
        The :attr:`size` figure that the report plots time against (default: the first).
    """

    name: str
    sense: Sense
    instance_type: type[Instance]
    evaluate: Callable[[Any, Any], float]
    check: Callable[[Any, Any], list[str]]
    solution_to_dict: Callable[[Any, Any], dict[str, Any]]
    solution_from_dict: Callable[[Any, Mapping[str, Any]], Any]
    metrics: Callable[[Any, Any], dict[str, float]] = field(default=_no_metrics)
    size: Callable[[Any], dict[str, int]] = field(default=_no_size)
    describe: Callable[[Any, Any], str] = field(default=_no_description)
    examples: Callable[[], Sequence[Instance]] = field(default=list)
    generators: Mapping[str, Callable[..., Sequence[Instance]]] = field(default_factory=dict)
    solver_modules: tuple[str, ...] = ()
    oracle: str | None = None
    tags: Callable[[Any], dict[str, str]] = field(default=_no_tags)
    report_sections: tuple[ReportSection, ...] = ()
    size_figure: str | None = None

    def is_better(self, a: float, b: float, tol: float = 1e-9) -> bool:
        """Whether objective ``a`` is strictly better than ``b`` (beyond ``tol``)."""
        if self.sense is Sense.MINIMIZE:
            return a < b - tol
        return a > b + tol
