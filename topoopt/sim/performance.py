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
A job a gpuselect solver dispatches (BandPilot's setting, :class:`~topoopt.sim.placer.Placer`)
spends ``c_comm = 0.3`` of its reference time in collectives at the best bandwidth its pool of
hosts offered (an assumption), and the chosen GPUs' bandwidth ``B`` stretches that share:
``1 + c_comm (B_best / B - 1)`` (BandPilot Appendix A: ``T_comm = N / beta``). Other
single-node jobs run at their reference time. ``ideal``: every placement runs at the
reference time. A model also gives the DP weight ``alpha`` of the placement objective that
matches it (Arnold §5.2), which the simulator's placements use unless told otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from topoopt.sim.jobs import Job, Shape
from topoopt.sim.registry import Registry

if TYPE_CHECKING:
    from topoopt.sim.placer import Decision

AR_DEGRADATION = 0.17
"""Largest loss of collective bus bandwidth across minipods (Arnold §4, Fig. 4b)."""
SR_DEGRADATION = 0.70
"""Largest loss of send-receive bandwidth across minipods (Arnold §4, Fig. 4c)."""


class PerformanceModel(Protocol):
    """What the simulator asks a performance model."""

    def slowdown(self, job: Job, shape: Shape, decision: Decision) -> float:
        """The factor (>= 1) on ``job``'s reference running time where ``decision`` puts it:
        its widest DP and PP groups' minipods (``decision.dp_minipods``, ``pp_minipods``) and,
        for a gpuselect dispatch, the chosen GPUs' bandwidth over the best
        (``decision.bandwidth_ratio``)."""
        ...

    def alpha(self) -> float:
        """The weight of the DP spread in the placement objective (Arnold eq. 2) that matches
        the model: ``j_dp / (j_dp + j_pp)`` (§5.2, "Balancing the trade-off"), ``j`` the gain
        of aligning that group (moving it from two minipods to one)."""
        ...


@dataclass(frozen=True)
class IdealModel:
    """Every placement runs at the reference time (a schedule-only simulation)."""

    def slowdown(self, job: Job, shape: Shape, decision: Decision) -> float:
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
    >>> from topoopt.sim.placer import Decision
    >>> model, job = ArnoldModel(), Job("a", 0, 96, 100.0)
    >>> across = Decision(("n0",), {0: 8}, "placement/best-fit", 1.0, 1, 2, 0.0)
    >>> round(model.slowdown(job, Shape(96, 12, True, 6, 8, 2), across), 4)
    1.0232
    """

    c_dp: float = 0.02
    c_pp: float = 0.043
    c_comm: float = 0.3
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

    def slowdown(self, job: Job, shape: Shape, decision: Decision) -> float:
        """``1 + c_dp (1 / bw_dp(A) - 1) + c_pp (1 / bw_pp(B) - 1)`` on whole nodes;
        ``1 + c_comm (1 / ratio - 1)`` for a gpuselect dispatch; 1 on one node otherwise."""
        if decision.bandwidth_ratio is not None:
            return 1.0 + self.c_comm * (1.0 / decision.bandwidth_ratio - 1.0)
        if not shape.exclusive:
            return 1.0
        dp = self.c_dp * (1.0 / self.bandwidth(decision.dp_minipods, self.dp_degradation) - 1.0)
        pp = self.c_pp * (1.0 / self.bandwidth(decision.pp_minipods, self.pp_degradation) - 1.0)
        return 1.0 + dp + pp


PERFORMANCE_MODELS: Registry[PerformanceModel] = Registry(
    "performance model", "topoopt.sim.performance", ()
)
PERFORMANCE_MODELS.register("arnold", ArnoldModel())
PERFORMANCE_MODELS.register("ideal", IdealModel())
