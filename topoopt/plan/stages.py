"""What every stage of ``topoopt plan`` reports: its solver, status, objective, bound, time and
the result of its family's ``check()``.

A stage that finds nothing raises :class:`PlanError`, whose message names the stage and why
(``partition: partition/mip found no assignment (infeasible): ...``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from topoopt.core.errors import TopooptError
from topoopt.core.result import Result, clean, json_number, relative_gap
from topoopt.core.sense import Sense
from topoopt.core.status import SolutionStatus, TerminationReason

STAGES = ("clusterselect", "partition", "parallelconfig", "gpus")
"""The stages of a plan, in order."""


class PlanError(TopooptError):
    """A stage of the plan found nothing (or its answer broke its family's rules).

    Attributes
    ----------
    stage
        The stage (one of :data:`STAGES`, or ``"input"``).
    reason
        Why, in one line.
    """

    def __init__(self, stage: str, reason: str) -> None:
        self.stage = stage
        self.reason = reason
        super().__init__(f"{stage}: {reason}")


@dataclass(frozen=True)
class StageReport:
    """One stage's outcome (for ``parallelconfig`` and ``gpus``: one cluster's).

    Attributes
    ----------
    stage
        ``clusterselect``, ``partition``, ``parallelconfig`` or ``gpus``.
    cluster
        The cluster of a per-cluster stage, else ``None``.
    solver
        The solver's registry name (``crosscluster/buddy`` for the buddy allocator).
    status, termination
        :class:`~topoopt.core.status.SolutionStatus` label and termination reason.
    objective, bound, gap
        The family's objective of the answer (minimised), the best proven bound (``-inf``:
        none) and their relative gap.
    seconds
        Wall-clock time of the stage, the ``check()`` included.
    violations
        What the family's ``check()`` found wrong (empty: it passed).
    message
        The solver's message.
    details
        The stage's answer in brief (JSON-ready).
    """

    stage: str
    cluster: str | None
    solver: str
    status: str
    termination: str
    objective: float | None
    bound: float
    gap: float
    seconds: float
    violations: tuple[str, ...] = ()
    message: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def checked(self) -> bool:
        """Whether the family's ``check()`` passed."""
        return not self.violations

    @property
    def label(self) -> str:
        return self.stage if self.cluster is None else f"{self.stage}[{self.cluster}]"

    @classmethod
    def of(
        cls,
        stage: str,
        result: Result[Any],
        violations: Sequence[str],
        seconds: float,
        *,
        cluster: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> StageReport:
        """The report of a solver's ``result``."""
        return cls(
            stage,
            cluster,
            result.solver,
            result.status.label,
            result.termination.value,
            None if result.objective is None else clean(result.objective),
            clean(result.bound),
            clean(result.gap),
            seconds,
            tuple(violations),
            result.message,
            dict(details or {}),
        )

    @classmethod
    def computed(
        cls,
        stage: str,
        solver: str,
        objective: float,
        bound: float,
        seconds: float,
        violations: Sequence[str],
        *,
        cluster: str | None = None,
        status: SolutionStatus | None = None,
        termination: TerminationReason = TerminationReason.COMPLETED,
        message: str = "",
        details: Mapping[str, Any] | None = None,
    ) -> StageReport:
        """The report of a stage that is not a registered solver's run (the buddy
        allocator), or that combines several runs; ``status`` defaults to optimal when the
        objective meets the bound, else feasible."""
        gap = relative_gap(objective, bound, Sense.MINIMIZE)
        if status is None:
            status = SolutionStatus.OPTIMAL if gap == 0 else SolutionStatus.FEASIBLE
        return cls(
            stage,
            cluster,
            solver,
            status.label,
            termination.value,
            clean(objective),
            clean(bound),
            clean(gap),
            seconds,
            tuple(violations),
            message,
            dict(details or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": self.stage}
        if self.cluster is not None:
            out["cluster"] = self.cluster
        out.update(
            {
                "solver": self.solver,
                "status": self.status,
                "termination": self.termination,
                "objective": json_number(self.objective),
                "bound": json_number(self.bound),
                "gap": json_number(self.gap),
                "seconds": self.seconds,
                "check": "passed" if self.checked else list(self.violations),
                "message": self.message,
                **self.details,
            }
        )
        return out


def require(stage: str, what: str, result: Result[Any], cluster: str | None = None) -> None:
    """Raise :class:`PlanError` when ``result`` has no feasible answer (naming the stage, the
    solver, its termination and message)."""
    if result.solution is not None and result.is_ok:
        return
    where = f"cluster {cluster!r}: " if cluster is not None else ""
    why = f"{result.termination.value}, {result.status.label}"
    tail = f": {result.message}" if result.message else ""
    if result.violations:
        tail += f" (violations: {'; '.join(result.violations[:3])})"
    raise PlanError(stage, f"{where}{result.solver} found no {what} ({why}){tail}")


__all__ = ["STAGES", "PlanError", "StageReport", "require"]
