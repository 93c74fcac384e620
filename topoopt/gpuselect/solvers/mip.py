"""``gpuselect/mip``: the exact MIP of :mod:`topoopt.gpuselect.formulations.profile_mip`.

The formulation is imported when the solver runs, so importing this module does not import
Pyomo. The MIP needs a structured bandwidth model (table, bottleneck, topology;
:mod:`topoopt.gpuselect.structure`): :meth:`ProfileMipSolver.unsupported_reason` says so for
any other model (e.g. a user callable), so ``topoopt.solve`` refuses such an instance with
:class:`~topoopt.core.errors.UnsupportedInstanceError` and ``topoopt.solvers_for(instance)``
leaves the solver out.
"""

from __future__ import annotations

from topoopt.core.errors import InvalidOptionError
from topoopt.core.formulation import MipSolver
from topoopt.core.registry import register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.models import StructuredBound
from topoopt.gpuselect.solution import Selection, from_masks
from topoopt.gpuselect.solvers.oracle import fast_optimum


@register_solver
class ProfileMipSolver(MipSolver):
    """Exact MIP for table, bottleneck and topology models (one-hot per host, epigraph min).

    Options: ``choice`` = ``"count"`` (default; each host picks a count, its best subset of
    that size) or ``"subset"`` (each host picks any subset of its idle GPUs);
    ``oracle_start`` (default true): warm start from the structured oracle's optimum.
    """

    name = "gpuselect/mip"
    family = "gpuselect"
    exact = True
    gives_bound = True
    formulation = "topoopt.gpuselect.formulations.profile_mip"
    backend_defaults = {"highs": {"mip_allow_restart": False}}
    """HiGHS 1.15.1 with restarts after root presolve returned "optimal" with objective 0 on
    about 1 in 1,200 random small topology instances (``choice="subset"``) whose optimum is
    positive; without restarts it solved all of them (the objective-collapse class of HiGHS
    issue #2900). The Solver template flags such an answer (its bound contradicts
    ``evaluate()``); this default avoids it."""

    @classmethod
    def unsupported_reason(cls, instance: GpuSelectInstance) -> str | None:
        """Why the MIP cannot model ``instance``'s bandwidth, or ``None``.

        The formulation linearises ``B(S) = min(min_h intra_h, inter(counts))``; a model
        without that structure (a user callable, a learned surrogate) has no MIP.
        """
        if isinstance(instance.bound, StructuredBound):
            return None
        return (
            f"the MIP needs a structured bandwidth model (table, bottleneck or topology), "
            f"not {instance.bandwidth.kind!r}; use gpuselect/enumerate (exact) or a heuristic"
        )

    _oracle_start = True

    def start(self, instance: GpuSelectInstance, **opts: object) -> Selection | None:
        """The structured oracle's optimum (:func:`~topoopt.gpuselect.solvers.oracle.fast_optimum`)
        as the MIP start (unless ``oracle_start=False``): the backend then mostly has to prove
        it; the answer is still the MIP's, its bound the backend's, and the Solver template
        checks both against ``evaluate()``."""
        if not self._oracle_start:
            return None
        return from_masks(instance, fast_optimum(instance)[1])

    def _solve(
        self,
        instance: GpuSelectInstance,
        ctx: SolveContext,
        *,
        choice: str = "count",
        oracle_start: bool = True,
    ) -> Attempt:
        if not isinstance(oracle_start, bool):
            raise InvalidOptionError(f"oracle_start: must be true or false, got {oracle_start!r}")
        self._oracle_start = oracle_start
        return self.attempt(ctx, self.run(instance, ctx, choice=choice))
