"""``placement/exact-mip`` solves large feasibility MIPs in a child process under a time limit."""

from __future__ import annotations

import math

import pytest

import topoopt
from topoopt.core.status import SolutionStatus, TerminationReason
from topoopt.placement import PlacementInstance, check
from topoopt.placement.exact_mip.sides import Sides
from topoopt.placement.exact_mip.targets import Constructions
from topoopt.placement.solvers import mip


@pytest.mark.parametrize(
    ("free", "rows", "cols"), [((7, 1), 4, 2), ((2, 1, 7), 5, 2), ((3, 4, 1), 4, 2)]
)
def test_child_process_answer_equals_the_oracle(monkeypatch, free, rows, cols):
    """Instances whose optimal pair only the feasibility MIP decides (without the guillotine
    construction, the one-sided packing and the narrow test, which decide these), solved in
    the child."""
    monkeypatch.setattr(mip, "ISOLATE_ASSIGNMENTS", 0)
    monkeypatch.setattr(mip, "decide_narrow", lambda *args: None)
    monkeypatch.setattr(Constructions, "guillotine", lambda *args: None)
    monkeypatch.setattr(mip, "realise_bands", lambda *args: None)
    monkeypatch.setattr(Sides, "construct", lambda *args: None)
    inst = PlacementInstance("iso", list(free), dp=rows, tp=8, pp=cols, alpha=0.4)
    oracle = topoopt.solve(inst, "placement/enumerate")
    result = topoopt.solve(inst, "placement/exact-mip", time_limit=60)
    assert "MIP: 1" in result.message
    assert result.status is SolutionStatus.OPTIMAL, result.message
    assert math.isclose(result.objective, oracle.objective, abs_tol=1e-9)


@pytest.mark.slow
def test_child_process_is_ended_at_the_deadline(monkeypatch):
    """A pair HiGHS cannot decide in time (its root cut loop can ignore the time limit): the
    child is killed and the walk gives up with the constructive incumbent and a bound (the
    narrow test, which refutes the pair in 0.2 s, and the one-sided packing are switched
    off)."""
    monkeypatch.setattr(mip, "decide_narrow", lambda *args: None)
    monkeypatch.setattr(Sides, "construct", lambda *args: None)
    monkeypatch.setattr(Sides, "refutes", lambda *args: False)
    inst = PlacementInstance("hard", [128, 128, 128, 210], dp=54, tp=8, pp=11, alpha=0.07)
    result = topoopt.solve(inst, "placement/exact-mip", time_limit=3)
    assert result.termination is TerminationReason.TIME_LIMIT
    assert check(inst, result.solution) == []
    assert result.bound < result.objective
