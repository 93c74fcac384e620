"""The :class:`Result` every solver returns."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from topoopt.core.sense import Sense
from topoopt.core.status import SolutionStatus, TerminationReason

RESULT_JSON_KEYS = frozenset(
    {
        "status",
        "termination",
        "objective",
        "bound",
        "gap",
        "solver",
        "backend",
        "total_s",
        "solution",
    }
)
"""Keys every ``Result.to_dict()`` carries (the ``topoopt solve --json`` contract)."""


def relative_gap(objective: float | None, bound: float, sense: Sense) -> float:
    """Relative gap ``|objective - bound| / max(|objective|, 1e-9)``.

    ``inf`` when there is no objective or no finite bound; ``0`` when both are equal.

    Examples
    --------
    >>> relative_gap(2.0, 1.5, Sense.MINIMIZE)
    0.25
    >>> relative_gap(0.0, 0.0, Sense.MINIMIZE)
    0.0
    >>> relative_gap(3.0, -math.inf, Sense.MINIMIZE)
    inf
    """
    if objective is None or not math.isfinite(bound):
        return math.inf
    diff = objective - bound if sense is Sense.MINIMIZE else bound - objective
    if abs(diff) <= 1e-9:
        return 0.0
    return max(diff, 0.0) / max(abs(objective), 1e-9)


SIGNIFICANT_DIGITS = 15
"""Digits an objective, bound, gap or metric keeps (:func:`clean`): enough for every double
that was typed or computed from typed numbers, few enough to drop the last-bit noise of
floating-point sums (``0.37 * 2 + 0.63 * 1`` is ``1.37``, not ``1.3699999999999999``)."""

JSON_INFINITY = {"inf": math.inf, "-inf": -math.inf}
"""How JSON (``Result.to_dict``, ``topoopt solve --json``, benchmark records) writes an infinite
number, which JSON cannot: the strings ``"inf"`` and ``"-inf"`` (e.g. ``"bound": "-inf"`` when
a minimising solver proves no bound). ``null`` means "no value" (no objective without a
solution); a NaN is never written."""


def clean(x: float) -> float:
    """``x`` rounded to :data:`SIGNIFICANT_DIGITS` significant digits (infinities kept).

    Examples
    --------
    >>> clean(0.37 * 2 + 0.63 * 1), clean(1.7999999999999998), clean(-math.inf)
    (1.37, 1.8, -inf)
    """
    if not math.isfinite(x):
        return float(x)
    return float(f"{x:.{SIGNIFICANT_DIGITS}g}")


def json_number(x: float | None) -> float | str | None:
    """A number as JSON writes it here: finite numbers as numbers, ``±inf`` as ``"inf"`` /
    ``"-inf"`` (:data:`JSON_INFINITY`), ``None`` and NaN as ``null``.

    Examples
    --------
    >>> json_number(2.5), json_number(-math.inf), json_number(None)
    (2.5, '-inf', None)
    """
    if x is None or math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def number_from_json(value: object) -> float | None:
    """The inverse of :func:`json_number`: ``"inf"``/``"-inf"`` to ``±inf``, numbers to
    ``float``, ``null`` to ``None``.

    Examples
    --------
    >>> number_from_json("-inf"), number_from_json(3), number_from_json(None)
    (-inf, 3.0, None)
    """
    if value is None:
        return None
    if isinstance(value, str):
        return JSON_INFINITY[value]
    return float(value)  # type: ignore[arg-type]


SolutionT = TypeVar("SolutionT")


@dataclass(frozen=True)
class Result(Generic[SolutionT]):
    """Outcome of one solver run; ``Result[Placement]`` carries a ``Placement`` solution.

    Families with metrics subclass it with typed properties (``PlacementResult.dp_spread``)
    and name the subclass in :attr:`Family.result_type <topoopt.core.family.Family.result_type>`,
    so that ``topoopt.solve(placement_instance, ...)`` is typed as a ``PlacementResult``.

    Attributes
    ----------
    status
        How good :attr:`solution` is (:class:`SolutionStatus`).
    termination
        Why the solver stopped (:class:`TerminationReason`).
    objective
        The family's ``evaluate()`` of :attr:`solution`, never a number copied from a solver;
        ``None`` without a solution.
    bound
        Best proven bound on the optimum; ``-inf`` (minimising) or ``+inf`` (maximising) when the
        solver proves none.
    gap
        Relative gap between :attr:`objective` and :attr:`bound` (``inf`` when undefined).
    solution
        The family's solution object, or ``None``.
    metrics
        Family-specific figures of the solution (e.g. ``dp_spread``); a family's result type
        also offers them as typed properties (``result.dp_spread``).
    violations
        Rules of ``check()`` the returned solution breaks (then ``termination`` is ``ERROR``).
    """

    family: str
    instance: str
    solver: str
    backend: str | None
    sense: Sense
    status: SolutionStatus
    termination: TerminationReason
    objective: float | None
    bound: float
    gap: float
    solution: SolutionT | None
    seed: int | None
    build_s: float
    solve_s: float
    total_s: float
    message: str = ""
    metrics: Mapping[str, float] = field(default_factory=dict)
    violations: tuple[str, ...] = ()
    solution_dict: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)

    def metric(self, name: str) -> float:
        """The metric ``name`` of the solution (``nan`` when the run has no solution).

        Raises
        ------
        KeyError
            When the family has no metric of that name (listing the ones it has).
        """
        if name in self.metrics:
            return float(self.metrics[name])
        if self.solution is None:
            return math.nan
        raise KeyError(f"no metric {name!r}; this result has: {', '.join(self.metrics)}")

    @property
    def is_ok(self) -> bool:
        """True when a feasible (or optimal) solution was found."""
        return self.status >= SolutionStatus.FEASIBLE

    def to_dict(self) -> dict[str, Any]:
        """The result as one JSON-ready object (what ``topoopt solve --json`` prints).

        Keys: ``status`` (lower-case), ``termination``, ``objective``, ``bound``, ``gap``,
        ``solver``, ``backend``, ``total_s``, ``solution``, and beside them ``family``,
        ``instance``, ``sense``, ``seed``, ``build_s``, ``solve_s``, ``message``,
        ``violations`` and every metric (e.g. ``dp_spread``). An infinite bound, gap or metric is
        written ``"inf"`` or ``"-inf"`` (:data:`JSON_INFINITY`); ``null`` means no value (no
        objective without a solution).
        """
        out: dict[str, Any] = {
            "status": self.status.label,
            "termination": self.termination.value,
            "objective": json_number(self.objective),
            "bound": json_number(self.bound),
            "gap": json_number(self.gap),
            "solver": self.solver,
            "backend": self.backend,
            "total_s": self.total_s,
            "build_s": self.build_s,
            "solve_s": self.solve_s,
            "family": self.family,
            "instance": self.instance,
            "sense": self.sense.value,
            "seed": self.seed,
            "message": self.message,
            "violations": list(self.violations),
        }
        out.update({k: json_number(v) for k, v in self.metrics.items()})
        out["solution"] = None if self.solution_dict is None else dict(self.solution_dict)
        return out

    def __repr__(self) -> str:
        obj = "None" if self.objective is None else f"{self.objective:g}"
        return (
            f"Result({self.solver}, status={self.status.label}, termination={self.termination}, "
            f"objective={obj}, bound={self.bound:g}, gap={self.gap:g}, total_s={self.total_s:.3f})"
        )
