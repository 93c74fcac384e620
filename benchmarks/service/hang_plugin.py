"""A solver that hangs, for the service's load test only (``--plugin hang_plugin``).

``placement/bench-hang`` ignores its time limit and never returns; the server kills its worker
at the request's hard deadline and answers ``504``. It lives here, not in topoopt: the library
registers no misbehaving solver.
"""

from __future__ import annotations

import time
from typing import Any

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver


@register_solver
class Hang(Solver):
    """Never returns."""

    name = "placement/bench-hang"
    family = "placement"

    def _solve(self, instance: Any, ctx: SolveContext, **options: Any) -> Attempt:
        while True:
            time.sleep(1)
