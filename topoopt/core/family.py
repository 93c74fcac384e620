"""Problem families: the Instance base class and the per-family contract.

A *family* (``placement``, ``gpuselect``, ...) bundles what every solver of that family
shares: the instance type, the exact objective (``evaluate``), the feasibility check
(``check``), JSON conversion of solutions, and the objective sense. Solvers never
compute the reported objective themselves; :class:`~topoopt.core.solver.Solver`
recomputes it with the family's ``evaluate``.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from topoopt.core.result import Result
from topoopt.core.safejson import FileAccess
from topoopt.core.sense import Sense

FORMAT_VERSION = 1
"""Version of the instance JSON format this release reads and writes."""


ResultT = TypeVar("ResultT", bound=Result[Any], covariant=True)
InstanceT = TypeVar("InstanceT", bound="Instance[Any]")
SolutionT = TypeVar("SolutionT")


class Instance(ABC, Generic[ResultT]):
    """Base class of every family's instance (subclasses are frozen dataclasses).

    The type parameter is the family's result type, so that type checkers know what
    ``topoopt.solve(instance, ...)`` returns:
    ``class PlacementInstance(Instance["PlacementResult"])`` (a string, resolved by type
    checkers only, so the instance module need not import the result module).

    Subclasses validate their fields on construction and raise
    :class:`~topoopt.core.errors.InvalidInstanceError` naming the field and the rule.
    """

    family: ClassVar[str]
    name: str

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The instance as the JSON object of its family (``family``, ``format_version``, ...)."""

    def json_header(self) -> dict[str, Any]:
        """The keys every instance's JSON object starts with: ``family``, ``format_version``,
        ``name`` and, when the instance has non-empty ``labels``, ``labels``."""
        out: dict[str, Any] = {
            "family": self.family,
            "format_version": FORMAT_VERSION,
            "name": self.name,
        }
        labels = getattr(self, "labels", None)
        if labels:
            out["labels"] = dict(labels)
        return out

    @classmethod
    @abstractmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, files: FileAccess | None = None
    ) -> Instance[Any]:
        """Build and validate an instance from its JSON object.

        ``files`` reads the files the instance names (e.g. measurement tables): relative to
        the instance file's folder, nothing outside it unless the caller allowed it.
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
        return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class ImportOption:
    """One option of a family's :class:`Importer` (``topoopt instances import FAMILY``).

    Attributes
    ----------
    name
        The keyword parameter of :attr:`Importer.build` that receives the value.
    flag
        The command-line flag (``--topology``).
    help
        Its help text.
    type
        ``str``, ``int``, ``float`` or ``bool`` (a flag without a value).
    required
        Whether the command refuses to run without it.
    multiple
        Repeatable: the importer receives a tuple of every value given (empty when none).
    choices
        The values accepted, when there is a fixed set.
    metavar
        How the help shows the value (``HOSTLIST[=TYPE]``).
    is_file
        The value names a file (shown as ``FILE``; checked to be no folder).
    """

    name: str
    flag: str
    help: str
    type: type = str
    required: bool = False
    multiple: bool = False
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    is_file: bool = False


@dataclass(frozen=True)
class Importer:
    """How a family builds an instance from a real cluster's files (``topoopt instances import``).

    Attributes
    ----------
    build
        ``build(name, **options) -> (instance, summary)``: the instance (``name`` is the
        ``--name`` given, or ``None`` for the importer's default) and one line saying what was
        read. It checks what the declarations cannot (options that need each other) and
        raises :class:`~topoopt.core.errors.TopooptError` naming the flag and the rule.
    options
        The options, in the order ``--help`` lists them; the command line adds ``--name`` and
        ``--out``.
    help
        The command's help text (its first line is the summary ``topoopt instances import
        --help`` lists).
    """

    build: Callable[..., tuple[Instance[Any], str]]
    options: tuple[ImportOption, ...]
    help: str


@dataclass(frozen=True)
class Family(Generic[InstanceT, SolutionT]):
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
    slow_examples
        Instances on which the family's solvers need far longer than a second (large,
        generated); the conformance suite solves each with a 1 s limit and checks the limit is
        honoured (:func:`topoopt.testing.check_time_limit_respected`). Several when no one
        instance suits every solver (an enumeration oracle refuses a large one). Default none.
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
    result_type
        The :class:`~topoopt.core.result.Result` subclass solvers of the family return
        (typed metric properties, e.g. ``PlacementResult.dp_spread``).
    schema
        The JSON Schema of the family's instance file (:mod:`topoopt.core.schema`), enforced
        by ``topoopt.load`` and printed by ``topoopt instances schema``; ``None`` for none.
    launch_lines
        ``launch_lines(instance, solution) -> list[str]``: what a launcher reads, written by
        ``topoopt solve --hostfile`` one line each (placement: the node of every rank; gpuselect:
        ``host CUDA_VISIBLE_DEVICES=...`` per host); ``None`` (default) for families without one.
    limits
        The family's size limits ``{name: (default, what it bounds)}`` (declared in
        :mod:`topoopt.core.limits` when the family is registered); its constructors check
        them with :func:`topoopt.core.limits.check` before allocating anything.
    importer
        How ``topoopt instances import FAMILY`` builds an instance from a real cluster's files
        (:class:`Importer`); ``None`` (default) for families without one.
    """

    name: str
    sense: Sense
    instance_type: type[InstanceT]
    evaluate: Callable[[InstanceT, SolutionT], float]
    check: Callable[[InstanceT, SolutionT], list[str]]
    solution_to_dict: Callable[[InstanceT, SolutionT], dict[str, Any]]
    solution_from_dict: Callable[[InstanceT, Mapping[str, Any]], SolutionT]
    metrics: Callable[[InstanceT, SolutionT], dict[str, float]] = field(default=_no_metrics)
    size: Callable[[InstanceT], dict[str, int]] = field(default=_no_size)
    describe: Callable[[InstanceT, SolutionT], str] = field(default=_no_description)
    examples: Callable[[], Sequence[InstanceT]] = field(default=list)
    slow_examples: Callable[[], Sequence[InstanceT]] = field(default=list)
    generators: Mapping[str, Callable[..., Sequence[InstanceT]]] = field(default_factory=dict)
    solver_modules: tuple[str, ...] = ()
    oracle: str | None = None
    tags: Callable[[InstanceT], dict[str, str]] = field(default=_no_tags)
    report_sections: tuple[ReportSection, ...] = ()
    size_figure: str | None = None
    result_type: type[Result[Any]] = Result
    schema: Mapping[str, Any] | None = None
    limits: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    launch_lines: Callable[[InstanceT, SolutionT], list[str]] | None = None
    importer: Importer | None = None

    def is_better(self, a: float, b: float, tol: float = 1e-9) -> bool:
        """Whether objective ``a`` is strictly better than ``b`` (beyond ``tol``)."""
        if self.sense is Sense.MINIMIZE:
            return a < b - tol
        return a > b + tol
