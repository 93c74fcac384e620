"""``gpuselect/auto``: what a scheduler calls in production.

* **Structured models** (table, bottleneck, topology; :mod:`topoopt.gpuselect.structure`):
  the exact structured oracle (:func:`~topoopt.gpuselect.solvers.oracle.fast_optimum`), a
  proven optimum in milliseconds on pools of thousands of GPUs.
* **Any other model** (a user callable, a learned surrogate — BandPilot's setting): the
  hybrid of EHA and PTS (§4.3.1), within the time limit.

The result's message starts with the choice (``exact: structured oracle`` or
``heuristic: hybrid``) and says why.
"""

from __future__ import annotations

import dataclasses

from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.models import StructuredBound
from topoopt.gpuselect.solution import from_masks
from topoopt.gpuselect.solvers.bandpilot import HybridSolver
from topoopt.gpuselect.solvers.oracle import fast_optimum


@register_solver
class AutoSolver(Solver):
    """Exact by the structured oracle when the model allows it, else BandPilot's hybrid.

    The message names the choice. Not declared ``exact``: on a callable model the answer is
    the hybrid's, unproven; on a structured model it is ``OPTIMAL``.

    Examples
    --------
    >>> import topoopt
    >>> from topoopt.gpuselect.generate import examples
    >>> res = topoopt.solve(examples()[0], "gpuselect/auto")
    >>> res.status.name, res.message.split(":")[0]
    ('OPTIMAL', 'exact')
    """

    name = "gpuselect/auto"
    family = "gpuselect"

    def _solve(self, instance: GpuSelectInstance, ctx: SolveContext) -> Attempt:
        if isinstance(instance.bound, StructuredBound):
            value, masks = fast_optimum(instance)
            return Attempt(
                from_masks(instance, masks),
                TerminationReason.OPTIMAL,
                proven_optimal=True,
                message=(
                    f"exact: structured oracle ({instance.bandwidth.kind} model), "
                    f"B* = {value:g} GB/s"
                ),
            )
        attempt = HybridSolver()._solve(instance, ctx)
        message = (
            f"heuristic: hybrid (EHA + PTS; a {instance.bandwidth.kind} model has no exact "
            f"fast path); {attempt.message}"
        )
        return dataclasses.replace(attempt, message=message)


__all__ = ["AutoSolver"]
