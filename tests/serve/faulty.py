"""Test-only solvers for the service, loaded as a plug-in of a test server (``--plugin
serve.faulty``): the misbehaving solvers of the benchmark tests (``placement/test-sleep``
hangs, ``test-raise`` raises, ``test-exit`` ends its process, ``test-memory`` allocates
until stopped) and ``placement/test-slow``, which sleeps ``seconds`` and then solves like
best-fit. Never imported by the test process itself (the conformance suite must not see
these solvers).
"""

from __future__ import annotations

import time
from typing import Any

import bench.misbehaving  # noqa: F401  (registers the misbehaving solvers)

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.placement import PlacementInstance
from topoopt.placement.solvers.baselines import BestFitSolver


@register_solver
class Slow(Solver):
    """Sleeps ``seconds``, then solves like best-fit."""

    name = "placement/test-slow"
    family = "placement"

    def _solve(
        self, instance: PlacementInstance, ctx: SolveContext, *, seconds: float = 1.0, **_: Any
    ) -> Attempt:
        time.sleep(seconds)
        return BestFitSolver()._solve(instance, ctx)
