"""Test-only placement solvers that misbehave, loaded as a benchmark plugin.

The runner imports this module in the test process (for planning) and in every worker
process (``plugins=["bench.misbehaving"]``), so the solvers exist where they run. It is never
imported at collection time: the conformance suite must not see these solvers.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from typing import Any

from topoopt.core.errors import UnsupportedInstanceError
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.placement import Placement, PlacementInstance
from topoopt.placement.solvers.baselines import BestFitSolver

MODULE = "bench.misbehaving"


@register_solver
class SleepForever(Solver):
    """Ignores its time limit and never returns."""

    name = "placement/test-sleep"
    family = "placement"

    def _solve(self, instance: PlacementInstance, ctx: SolveContext, **options: Any) -> Attempt:
        while True:
            time.sleep(1)


@register_solver
class Raises(Solver):
    """Raises an exception."""

    name = "placement/test-raise"
    family = "placement"

    def _solve(self, instance: PlacementInstance, ctx: SolveContext, **options: Any) -> Attempt:
        raise RuntimeError("solver bug: index out of range")


@register_solver
class ExitsProcess(Solver):
    """Ends the process without a word (like a native crash)."""

    name = "placement/test-exit"
    family = "placement"

    def _solve(self, instance: PlacementInstance, ctx: SolveContext, **options: Any) -> Attempt:
        print("about to exit", flush=True)
        os._exit(7)


@register_solver
class Infeasible(Solver):
    """Puts every node into the first minipod, whatever its capacity."""

    name = "placement/test-infeasible"
    family = "placement"

    def _solve(self, instance: PlacementInstance, ctx: SolveContext, **options: Any) -> Attempt:
        rows = [[0] * instance.cols for _ in range(instance.rows)]
        return Attempt(Placement.from_rows(rows), TerminationReason.COMPLETED)


@register_solver
class MemoryHog(Solver):
    """Allocates memory until stopped."""

    name = "placement/test-memory"
    family = "placement"

    def _solve(self, instance: PlacementInstance, ctx: SolveContext, **options: Any) -> Attempt:
        blocks = []
        while True:
            blocks.append(b"\x01" * (32 * 2**20))  # written, so resident
            time.sleep(0.01)


@register_solver
class BySeed(Solver):
    """Misbehaves as its seed says (``seed % 10``), else solves like best-fit; its message
    names the process that ran it, so tests can tell which worker process that was.

    0 solves, 1 hangs, 2 ends the process, 3 allocates memory until stopped, 4 raises,
    5 allocates 256 MiB, frees it and solves, 6 solves and leaves a thread running, 7 refuses
    the instance (topoopt's ``UnsupportedInstanceError``).
    """

    name = "placement/test-by-seed"
    family = "placement"

    def _solve(self, instance: PlacementInstance, ctx: SolveContext, **options: Any) -> Attempt:
        mode = ctx.seed % 10
        if mode == 1:
            SleepForever()._solve(instance, ctx)
        elif mode == 2:
            ExitsProcess()._solve(instance, ctx)
        elif mode == 3:
            MemoryHog()._solve(instance, ctx)
        elif mode == 4:
            Raises()._solve(instance, ctx)
        elif mode == 5:
            block = b"\x01" * (256 * 2**20)
            del block
        elif mode == 6:
            threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
        elif mode == 7:
            raise UnsupportedInstanceError(f"{self.name} does not support seed {ctx.seed}")
        attempt = BestFitSolver()._solve(instance, ctx)
        return replace(attempt, message=f"pid {os.getpid()}")
