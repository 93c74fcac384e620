"""``partition/heuristic-ilp``: SpiderFlow's two-level Heuristic-ILP (§4.2 "two-level
parallelization automation", Table 2).

1. **Inter-cluster level, a heuristic**: ``partition/greedy-lowcut`` assigns the job's vertices
   (blocks of layers) to clusters, minimising eq. 9.
2. **Intra-cluster level, an ILP per cluster**: every cluster ``c`` hosting vertices gets its
   parallelconfig sub-problem (:func:`topoopt.partition.intra.cluster_instance`: ``r_c`` GPUs
   taken by the buddy allocator, one layer per vertex) and ``parallelconfig/mip`` chooses ``(d,
   p)`` and the GPU of every (replica, stage), minimising ``T_c = T_comp + α·T_dp + β·T_pp``.

The result is greedy-lowcut's assignment with a configuration per cluster
(:attr:`~topoopt.partition.solution.Assignment.configs`); its objective is eq. 9, the same as
every partition solver's (so it is comparable in Table 2), and the metrics add ``T_c`` and the
step-time estimate (``docs/partition.md``, "Heuristic-ILP").

The call's backend, threads, gap, seed, backend options and log go to every sub-MIP. With a
time limit, greedy-lowcut may use all of it; each sub-MIP then gets the time left divided by
the clusters still to configure. A sub-problem the MIP refuses (since issue #25 the segment
ILP refuses none; a plug-in solver registered in its place may) is configured by
``parallelconfig/greedy`` instead, as the message says. When the time runs out before every
cluster is configured, the assignment is returned without configurations (``time_limit``).
No bound (a heuristic): the eq. 9 part is greedy-lowcut's.

The solver needs the intra-cluster data
(:attr:`~topoopt.partition.instance.PartitionInstance.has_intra`); on an instance without it,
``solve`` raises
:class:`~topoopt.core.errors.UnsupportedInstanceError` naming the first missing field.
"""

from __future__ import annotations

import math
from typing import Any

from topoopt.core.errors import TopooptError
from topoopt.core.registry import get_solver, register_solver
from topoopt.core.result import Result
from topoopt.core.solver import Attempt, SolveContext, Solver
from topoopt.core.status import TerminationReason
from topoopt.parallelconfig.instance import ParallelConfigInstance
from topoopt.parallelconfig.solution import ParallelConfig
from topoopt.parallelconfig.solvers.mip import check_options
from topoopt.partition import intra
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solvers.moves import too_large

HEURISTIC = "partition/greedy-lowcut"
"""The inter-cluster heuristic."""
ILP = "parallelconfig/mip"
"""The intra-cluster ILP."""
FALLBACK = "parallelconfig/greedy"
"""What configures a sub-problem the ILP refuses."""


@register_solver
class HeuristicIlpSolver(Solver):
    """SpiderFlow's Heuristic-ILP: greedy low-cut between clusters, the (d, p) ILP inside each.

    Options ``method`` and ``symmetry`` go to ``parallelconfig/mip`` (``"split"`` or
    ``"joint"``; symmetry breaking on or off).

    Examples
    --------
    >>> import topoopt
    >>> from topoopt.partition.generate import examples
    >>> result = topoopt.solve(examples()[0], "partition/heuristic-ilp")
    >>> result.objective, sorted(result.solution.config_dict())
    (0.0, ['c0'])
    """

    name = "partition/heuristic-ilp"
    family = "partition"
    uses_backend = True

    @classmethod
    def unsupported_reason(cls, instance: PartitionInstance) -> str | None:
        """Refuses instances without complete intra-cluster data (naming the first missing
        field) and those greedy-lowcut refuses."""
        missing = instance.intra_missing
        if missing is not None:
            return (
                "it needs the intra-cluster data (nodes and bandwidths per cluster, compute_s "
                f"and param_bytes per vertex, training; see docs/partition.md): {missing}"
            )
        return too_large(instance)

    def _solve(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        *,
        method: str = "split",
        symmetry: bool = True,
    ) -> Attempt:
        check_options(method, symmetry)
        greedy = get_solver(HEURISTIC).solve(instance, time_limit=_limit(ctx), seed=ctx.seed)
        if greedy.solution is None:
            return Attempt(None, greedy.termination, message=f"greedy-lowcut: {greedy.message}")
        assignment = greedy.solution.with_configs({})
        subs = intra.sub_instances(instance, assignment)
        configs: dict[str, ParallelConfig] = {}
        notes = []
        timed_out = greedy.termination is TerminationReason.TIME_LIMIT
        for k, (cluster, sub) in enumerate(subs.items()):
            if ctx.expired():
                timed_out = True
                break
            result = self._configure(sub, ctx, _limit(ctx, len(subs) - k), method, symmetry)
            if result.solution is None:
                if result.termination is not TerminationReason.TIME_LIMIT:
                    raise TopooptError(
                        f"{result.solver} found no configuration of cluster {cluster!r} "
                        f"({result.termination}): {result.message}"
                    )
                timed_out = True
                notes.append(f"{cluster}: no configuration in time")
                break
            configs[cluster] = result.solution
            timed_out = timed_out or result.termination is TerminationReason.TIME_LIMIT
            notes.append(_note(cluster, result))
        message = "; ".join([f"greedy-lowcut: {greedy.message}", *notes])
        if len(configs) < len(subs):
            done = f"time limit: {len(configs)} of {len(subs)} clusters configured, none kept"
            return Attempt(assignment, TerminationReason.TIME_LIMIT, message=f"{message}; {done}")
        reason = TerminationReason.TIME_LIMIT if timed_out else TerminationReason.COMPLETED
        return Attempt(assignment.with_configs(configs), reason, message=message)

    def _configure(
        self,
        sub: ParallelConfigInstance,
        ctx: SolveContext,
        time_limit: float | None,
        method: str,
        symmetry: bool,
    ) -> Result[Any]:
        """``sub`` solved by the ILP with this call's settings (or by the fallback when the ILP
        refuses it)."""
        ilp = get_solver(ILP)
        if ilp.unsupported_reason(sub) is not None:
            return get_solver(FALLBACK).solve(sub, time_limit=time_limit, seed=ctx.seed)
        result = ilp.solve(
            sub,
            backend=ctx.backend,
            time_limit=time_limit,
            seed=ctx.seed,
            threads=ctx.threads,
            rel_gap=ctx.rel_gap,
            backend_options=ctx.backend_options,
            log=ctx.log,
            method=method,
            symmetry=symmetry,
        )
        if result.solution is not None and not result.is_ok:
            raise TopooptError(f"{ILP} returned an infeasible configuration: {result.message}")
        return result


def _limit(ctx: SolveContext, parts: int = 1) -> float | None:
    """The time left divided by ``parts`` (at least 1 ms), ``None`` without a limit."""
    left = ctx.time_left()
    return None if math.isinf(left) else max(left / parts, 1e-3)


def _note(cluster: str, result: Result[Any]) -> str:
    """One cluster's part of the message: its (d, p), T_c and how it was found."""
    config = result.solution
    assert config is not None
    how = result.status.label if result.solver == ILP else f"{result.solver}, {result.status}"
    if result.termination is TerminationReason.TIME_LIMIT:
        how += ", its time share ran out"
    return f"{cluster}: (d, p) = ({config.d}, {config.p}), T_c = {result.objective:.6g} s, {how}"


__all__ = ["HeuristicIlpSolver"]
