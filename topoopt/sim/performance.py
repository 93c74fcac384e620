"""Performance models: how a placement changes a job's running time.

A trace gives each job's running time under the *reference placement* (every communication
group inside one minipod); a model returns the factor (``slowdown >= 1`` for a worse
placement) the simulator multiplies it by. Models are plug-ins (:data:`PERFORMANCE_MODELS`,
entry-point group ``topoopt.sim.performance``).

``arnold`` (default) follows Arnold §4 and Appendix C (``docs/sim.md``, "Performance model"):
a step spends the shares ``c_dp`` and ``c_pp`` of its reference time in DP collectives and
PP send-receive; a group spanning ``k`` minipods communicates at ``bw(k) = 1 - d (1 - 1/k)``
of its in-minipod bus bandwidth, where ``d`` is the largest degradation §4 measured (17 % for
collectives, Fig. 4b; 70 % for send-receive, Fig. 4c) and ``1 - 1/k`` interpolates from no
loss at one minipod towards it (an assumption: the paper gives the end points, not the
curve). The widest group sets the pace (eq. 2's max), so

    slowdown = 1 + c_dp (1 / bw_dp(A) - 1) + c_pp (1 / bw_pp(B) - 1),

``A``, ``B`` the most minipods a DP / PP group touches. ``c_pp = 0.043`` reproduces the 2.3 %
gain of PP-aligned placement for the dense model of Fig. 5a (96 GPUs on two minipods:
``1 + c_pp (1 / 0.65 - 1) = 1.023``); ``c_dp = 0.02`` is an assumption (§4: aligning the DP
groups of that model gave no measurable gain, so its DP communication is mostly hidden).
Single-node jobs run at their reference time. ``ideal``: every placement runs at the
reference time. A model also gives the DP weight ``alpha`` of the placement objective that
matches it (Arnold §5.2), which the simulator's placements use unless told otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from topoopt.sim.jobs import Job, Shape
from topoopt.sim.registry import Registry

AR_DEGRADATION = 0.17
"""Largest loss of collective bus bandwidth across minipods (Arnold §4, Fig. 4b)."""
SR_DEGRADATION = 0.70
"""Largest loss of send-receive bandwidth across minipods (Arnold §4, Fig. 4c)."""


class PerformanceModel(Protocol):
    """What the simulator asks a performance model."""

    def slowdown(self, job: Job, shape: Shape, dp_minipods: int, pp_minipods: int) -> float:
        """The factor on ``job``'s reference running time when its widest DP group touches
        ``dp_minipods`` minipods and its widest PP group ``pp_minipods`` (both >= 1)."""
        ...

    def alpha(self) -> float:
        """The weight of the DP spread in the placement objective (Arnold eq. 2) that matches
        the model: ``j_dp / (j_dp + j_pp)`` (§5.2, "Balancing the trade-off"), ``j`` the gain
        of aligning that group (moving it from two minipods to one)."""
        ...


@dataclass(frozen=True)
class IdealModel:
    """Every placement runs at the reference time (a schedule-only simulation)."""

    def slowdown(self, job: Job, shape: Shape, dp_minipods: int, pp_minipods: int) -> float:
        """Always 1."""
        return 1.0

    def alpha(self) -> float:
        """0.5: no group matters more than the other."""
        return 0.5


@dataclass(frozen=True)
class ArnoldModel:
    """Arnold's bandwidth loss across minipods (module docstring).

    Examples
    --------
    >>> from topoopt.sim.jobs import Shape
    >>> model, job = ArnoldModel(), Job("a", 0, 96, 100.0)
    >>> round(model.slowdown(job, Shape(96, 12, True, 6, 8, 2), 1, 2), 4)
    1.0232
    """

    c_dp: float = 0.02
    c_pp: float = 0.043
    dp_degradation: float = AR_DEGRADATION
    pp_degradation: float = SR_DEGRADATION

    @staticmethod
    def bandwidth(minipods: int, degradation: float) -> float:
        """``bw(k) = 1 - d (1 - 1/k)``: the share of in-minipod bandwidth at ``k`` minipods."""
        return 1.0 - degradation * (1.0 - 1.0 / max(1, minipods))

    def alpha(self) -> float:
        """``j_dp / (j_dp + j_pp)`` with ``j = c (1 / bw(2) - 1)``: 0.0743 with the defaults
        (the PP groups' send-receive loses far more across minipods)."""
        j_dp = self.c_dp * (1.0 / self.bandwidth(2, self.dp_degradation) - 1.0)
        j_pp = self.c_pp * (1.0 / self.bandwidth(2, self.pp_degradation) - 1.0)
        return 0.5 if j_dp + j_pp == 0 else j_dp / (j_dp + j_pp)

    def slowdown(self, job: Job, shape: Shape, dp_minipods: int, pp_minipods: int) -> float:
        """``1 + c_dp (1 / bw_dp(A) - 1) + c_pp (1 / bw_pp(B) - 1)``."""
        if not shape.exclusive:
            return 1.0
        dp = self.c_dp * (1.0 / self.bandwidth(dp_minipods, self.dp_degradation) - 1.0)
        pp = self.c_pp * (1.0 / self.bandwidth(pp_minipods, self.pp_degradation) - 1.0)
        return 1.0 + dp + pp


PERFORMANCE_MODELS: Registry[PerformanceModel] = Registry(
    "performance model", "topoopt.sim.performance", ()
)
PERFORMANCE_MODELS.register("arnold", ArnoldModel())
PERFORMANCE_MODELS.register("ideal", IdealModel())
