"""``partition/mip``: the exact MIP of :mod:`topoopt.partition.formulations.cut_mip`, with the
lower bounds of :mod:`topoopt.partition.bounds`.

Assignment binaries, one separation variable per edge and bandwidth level (the eq. 9 cost is a
sum over the levels of the widest-path ultrametric) and twin-cluster symmetry breaking; solved
through the common MIP driver on HiGHS, SCIP or Gurobi, warm started from
``partition/greedy-lowcut`` (under a time limit on 64 to 127 vertices, from its iterated search
``partition/ils``). **From 128 vertices on under a time limit no MIP runs**
(:data:`SEARCH_VERTICES`): the iterated search from greedy-lowcut's assignment runs first
(:data:`FIRST_SEARCH_SHARE`), the lower bounds take their share of the time, and the search
takes the rest. Options: ``symmetry`` (default
``True``) keeps the twin constraints; ``bounds`` (default ``True``) first proves the lower bounds of
:func:`topoopt.partition.bounds.lower_bounds` with a share of the time (:data:`BOUND_SHARE`);
``columns`` adds the column-generation bound of :mod:`topoopt.partition.colgen` to them
(``True``), leaves it out (``False``) or, by default (``None``), runs it after the
spreading-metric LP when that goes first on a job of
:data:`~topoopt.partition.bounds.COLUMNS_AUTO_VERTICES` to
:data:`~topoopt.partition.bounds.COLUMNS_AUTO_MAX_VERTICES` vertices under a time limit. Its exact
pricing is the branch and bound on min cuts of :mod:`topoopt.partition.cut_pricing`, one group
at a time (it holds the GIL; with the MIP pricer of ``colgen.price_exactly`` the rounds would
solve ``threads`` pricing problems at once).
The result's bound is the best of those and the backend's, and the message says which one it
is; a bound that reaches the incumbent proves it optimal without the MIP.

**Time limit.** HiGHS 1.16 can stay for minutes in its root node without looking at its time
limit (measured: 34 s for a 30 s limit at 128 units, more than 10 minutes for 30 s at 512).
Under a time limit, an instance with at least :data:`ISOLATE_ASSIGNMENTS` assignment variables
is therefore bounded and solved in a child interpreter (:mod:`._isolated`) that reports each
bound as it is proven and is killed at the deadline; the warm start (found in the calling
process) is returned when the child has no answer by then.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from topoopt.core.formulation import MipSolver
from topoopt.core.registry import get_solver, register_solver
from topoopt.core.solver import Attempt, SolveContext
from topoopt.core.status import TerminationReason
from topoopt.partition.instance import PartitionInstance
from topoopt.partition.solution import Assignment, evaluate

START_TIME_S = 10.0
"""Time limit of the greedy low-cut run that warm starts the MIP (and at most a fifth of the
call's remaining time, ``MipSolver.start_share``)."""
ITERATED_START_S = 60.0
"""Most time of the ``partition/ils`` run (its default restarts) that warm starts the MIP
(within the start's share of the time, ``MipSolver.start_share``) on instances of
:data:`ITERATED_START_VERTICES` to :data:`SEARCH_VERTICES` (excluded) vertices under a time
limit: there the MIP seldom improves its warm start. In 30 s its cuts were never above the
genetic search's (which warm started the MIP before) on six Table 2 files at 128 units, and
0.2-7.4 % below them on five; at 512 units 0-9.4 % below greedy-lowcut's, where the genetic
search was 8-24 % above it (``docs/partition.md``, "Iterated V-cycles")."""
ITERATED_START_VERTICES = 64
"""Smallest instance whose MIP is warm started by the iterated search (smaller ones are
solved by the MIP itself, from greedy-lowcut's assignment)."""
SEARCH_VERTICES = 128
"""Under a time limit, on instances of at least this many vertices the time the lower bounds
leave goes to the iterated search (:func:`~topoopt.partition.solvers.ils.improve`, from
greedy-lowcut's assignment, before and after the bounds) instead of the MIP, whose LP
relaxation is 0 there: on the Table 2 files at 128 and 512 units neither HiGHS nor SCIP
answered or improved the warm start in 150-900 s (``docs/partition.md``), while the search
lowered greedy-lowcut's cut by 0-12.5 % in 30 s on twelve Table 2 instances. Without a time
limit the MIP runs as on smaller instances."""
FIRST_SEARCH_SHARE = 0.25
"""Under a time limit from :data:`SEARCH_VERTICES` vertices on, the most of the time that the
iterated search's default run (:data:`~topoopt.partition.solvers.ils.RESTARTS` restarts) may
take before the lower bounds; it then goes on after them with the time they leave. Before
the bounds took their share first and the search had only what was left: with a 30 s limit
on 192- and 256-vertex jobs that was 3 s, and the cut stayed at what the search reaches in
3 s (``docs/partition.md``, "The search before the bounds")."""
BOUND_SHARE = 0.5
"""Share of the time left after the warm start that the lower bounds may take."""
SPREADING_SHARE = 0.9
"""The same share when the spreading-metric LP goes first within it
(:func:`~topoopt.partition.bounds.spreading_first`: it fits, and the share covers one level's
expected time): it is the strongest bound there (1-3 s for all levels at 128 units, about
2 minutes at 512), and in the MIP's 150 s at 128 units neither backend proved more than
0.001 nor improved greedy-lowcut's cut (``docs/partition.md``)."""
ISOLATE_ASSIGNMENTS = 512
"""Under a time limit, instances with at least this many assignment variables (vertices ×
clusters) are solved in a child process killed at the deadline."""
CHILD_STOP_S = 0.3
"""Seconds kept for killing the child process and reading its answer."""
CHILD_MIN_S = 0.5
"""A child process is started only with at least this much time left."""
PARENT_EIGENVALUE_VERTICES = 1024
"""Up to this many vertices the eigenvalue bound (B5) is also computed before the child
starts (under 0.1 s): the child's imports take about a second, so a short limit would
otherwise end without a bound."""
RETURNING = "; returning the warm start"
"""How a message of the child's parent ends when the child gave no answer."""
PROOF_TOLERANCE = 1e-6
"""A bound within this (relative) distance of the incumbent proves it optimal: the margin
:data:`~topoopt.partition.colgen.BOUND_MARGIN` every column-generation bound takes off for
floating point, and within which its branch and price closes a node (with a smaller
tolerance a finished branch and price could never prove its incumbent). HiGHS' own default
relative gap is 1e-4."""

Report = Callable[[dict[str, Any]], None]


@register_solver
class PartitionMipSolver(MipSolver):
    """Exact MIP: vertex-to-cluster binaries, per-level cut separation, twin symmetry, and
    lower bounds from coarsenings, the isoperimetric profile and the spreading metric."""

    name = "partition/mip"
    family = "partition"
    exact = True
    gives_bound = True
    formulation = "topoopt.partition.formulations.cut_mip"

    def start(self, instance: PartitionInstance, **opts: object) -> Assignment | None:
        """``partition/greedy-lowcut``'s assignment (at most :data:`START_TIME_S`), or ``None``
        when it finds none or refuses the instance."""
        return self.start_within(instance, None, **opts)

    def start_within(
        self, instance: PartitionInstance, time_limit: float | None, **opts: object
    ) -> Assignment | None:
        """:meth:`start` within ``time_limit`` too (a fifth of the call's remaining time)."""
        greedy = get_solver("partition/greedy-lowcut")
        if greedy.unsupported_reason(instance) is not None:
            return None
        limit = START_TIME_S if time_limit is None else min(START_TIME_S, time_limit)
        return greedy.solve(instance, time_limit=limit).solution

    def best_start(
        self, instance: PartitionInstance, time_limit: float | None, seed: int
    ) -> Assignment | None:
        """:meth:`start_within`, or — under a time limit, on instances of
        :data:`ITERATED_START_VERTICES` to :data:`SEARCH_VERTICES` (excluded) vertices —
        ``partition/ils``'s default run (seeded with the call's seed; it starts from
        greedy-lowcut's assignment and never returns a higher cut) within ``time_limit`` (at
        most :data:`ITERATED_START_S`). From :data:`SEARCH_VERTICES` on the search comes before
        and after the bounds (:meth:`bounds_then_search`)."""
        iterated = get_solver("partition/ils")
        if (
            time_limit is None
            or not ITERATED_START_VERTICES <= instance.n_vertices < SEARCH_VERTICES
            or iterated.unsupported_reason(instance) is not None
        ):
            return self.start_within(instance, time_limit)
        limit = min(ITERATED_START_S, time_limit)
        return iterated.solve(instance, time_limit=limit, seed=seed).solution

    def _solve(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        *,
        symmetry: bool = True,
        bounds: bool = True,
        columns: bool | None = None,
    ) -> Attempt:
        t0 = time.perf_counter()
        left = ctx.time_left()
        share = None if math.isinf(left) else max(left * self.start_share, 1e-3)
        start = self.best_start(instance, share, ctx.seed)
        searched = ctx.time_limit is not None and instance.n_vertices >= SEARCH_VERTICES
        iterated = get_solver("partition/ils")
        if searched and start is not None and iterated.unsupported_reason(instance) is None:
            return self.bounds_then_search(instance, ctx, start, symmetry, bounds, t0, columns)
        size = instance.n_vertices * instance.n_clusters
        if ctx.time_limit is not None and size >= ISOLATE_ASSIGNMENTS:
            return self._isolated(instance, ctx, start, symmetry, bounds, t0, columns=columns)
        return self.stages(
            instance, ctx, start, symmetry=symmetry, bounds=bounds, started=t0, columns=columns
        )

    # ------------------------------------------------------------------ the work itself

    def bounds_only(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        start: Assignment | None,
        symmetry: bool,
        started: float,
        columns: bool | None,
    ) -> Attempt:
        """The lower bounds with all of ``ctx``'s time, ``start`` the answer (in a child
        process on large instances under a time limit, :data:`ISOLATE_ASSIGNMENTS`)."""
        size = instance.n_vertices * instance.n_clusters
        if ctx.time_limit is not None and size >= ISOLATE_ASSIGNMENTS:
            return self._isolated(
                instance, ctx, start, symmetry, True, started, mip=False, columns=columns
            )
        return self.stages(
            instance,
            ctx,
            start,
            symmetry=symmetry,
            bounds=True,
            started=started,
            mip=False,
            columns=columns,
        )

    def bounds_then_search(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        start: Assignment,
        symmetry: bool,
        bounds: bool,
        started: float,
        columns: bool | None,
    ) -> Attempt:
        """Under a time limit, from :data:`SEARCH_VERTICES` vertices on: the iterated search
        from ``start`` for its default run (at most :data:`FIRST_SEARCH_SHARE` of the time),
        the lower bounds (if ``bounds``) with their share of what is left (as before the
        MIP), warm started from the search's assignment, then the search again from it with
        the time left (:data:`SEARCH_VERTICES`)."""
        from topoopt.partition.bounds import spreading_first
        from topoopt.partition.solvers.ils import RESTARTS, improve

        assert ctx.time_limit is not None
        rng = ctx.rng  # one stream for the search before and after the bounds
        before = dataclasses.replace(
            ctx, time_limit=ctx.time_limit - (1 - FIRST_SEARCH_SHARE) * ctx.time_left()
        )
        part, restarts = improve(
            instance, start.indices(instance), before, restarts=RESTARTS, rng=rng
        )
        searched = Assignment.from_indices(instance, part.tolist())
        bound, said = 0.0, "no bound above 0 proven"
        if bounds:
            left = ctx.time_left()
            first = spreading_first(instance, SPREADING_SHARE * left)
            share = SPREADING_SHARE if first else BOUND_SHARE
            bounded = self.bounds_only(
                instance,
                dataclasses.replace(ctx, time_limit=ctx.time_limit - (1 - share) * left),
                searched,
                symmetry,
                started,
                columns,
            )
            if bounded.proven_optimal:
                return bounded
            if bounded.bound is not None and math.isfinite(bounded.bound):
                bound = max(0.0, bounded.bound)
            said = bounded.message.removesuffix(RETURNING)
            if bounded.solution is not None:  # the bounds' answer: they may meet a better one
                searched = _cheaper(instance, bounded.solution, searched)
        best, more = improve(instance, searched.indices(instance), ctx, restarts=10**9, rng=rng)
        restarts += more
        solution = Assignment.from_indices(instance, best.tolist())
        cut = evaluate(instance, solution)
        proven = ctx.rel_gap == 0 and _closes(bound, cut)
        return Attempt(
            solution=solution,
            termination=TerminationReason.OPTIMAL if proven else TerminationReason.TIME_LIMIT,
            proven_optimal=proven,
            bound=bound,
            solve_s=time.perf_counter() - started,
            message=f"{said}; the iterated search before the bounds and for the time left "
            f"(partition/ils, {restarts} restarts): cut {cut:.6g}, greedy-lowcut's "
            f"{evaluate(instance, start):.6g}"
            f" (no MIP from {SEARCH_VERTICES} vertices under a time limit)",
        )

    def stages(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        start: Assignment | None,
        *,
        symmetry: bool,
        bounds: bool,
        started: float,
        report: Report | None = None,
        mip: bool = True,
        columns: bool | None = None,
    ) -> Attempt:
        """Lower bounds (if ``bounds``; with the column generation if ``columns``), then the
        MIP warm started from ``start`` (if ``mip``; otherwise ``start`` is the answer), within
        the time left in ``ctx``; ``report`` receives each proven bound and the final answer as
        plain data (the child process writes them to its parent)."""
        from topoopt.partition.bounds import lower_bounds, spreading_first

        incumbent = None if start is None else evaluate(instance, start)
        best, method = 0.0, ""
        if bounds:
            left = ctx.time_left()
            share = (
                SPREADING_SHARE
                if spreading_first(instance, SPREADING_SHARE * left)
                else BOUND_SHARE
            )
            share = share if mip else 1.0
            deadline = None if math.isinf(left) else time.perf_counter() + share * left
            where = None if start is None else start.indices(instance)
            sub = self._sub_solver(ctx, symmetry)
            workers = ctx.threads or 1  # the column generation's pricing threads
            for found in lower_bounds(
                instance, where, sub, deadline, columns=columns, workers=workers
            ):
                best, method = found.value, found.method
                if report is not None:
                    report({"bound": best, "method": method, "where": found.where})
                if found.where is not None:  # an assignment the bounds met: kept if better
                    start = _cheaper(
                        instance, Assignment.from_indices(instance, found.where), start
                    )
                    incumbent = evaluate(instance, start)
                if incumbent is not None and _closes(best, incumbent):
                    break
        if incumbent is not None and method and _closes(best, incumbent):
            attempt = Attempt(
                solution=start,
                termination=TerminationReason.OPTIMAL,
                proven_optimal=True,
                bound=best,
                build_s=0.0,
                solve_s=time.perf_counter() - started,
                message=f"the warm start is optimal: the {method} bound reaches it",
            )
        elif mip:
            attempt = self._mip(instance, ctx, start, symmetry, best, method, started)
        else:
            stopped = ctx.time_limit is not None and ctx.expired()
            attempt = Attempt(
                solution=start,
                termination=TerminationReason.TIME_LIMIT
                if stopped
                else TerminationReason.COMPLETED,
                bound=best if method else 0.0,
                solve_s=time.perf_counter() - started,
                message=f"bound from the {method}" if method else "no bound above 0 proven",
            )
        if report is not None:
            report({"result": _plain(instance, attempt)})
        return attempt

    def _sub_solver(self, ctx: SolveContext, symmetry: bool) -> Callable[..., float]:
        """Proves a lower bound of a sub-instance (this MIP without bounds, in this process)."""

        def solve(sub: PartitionInstance, limit: float) -> float:
            from topoopt.partition.bounds import SUB_LIMIT_S

            limit = min(limit, SUB_LIMIT_S)
            if limit <= 0:
                return 0.0
            subctx = dataclasses.replace(ctx, time_limit=limit, started=time.perf_counter())
            t0 = time.perf_counter()
            start = self.start_within(sub, max(limit * self.start_share, 1e-3))
            attempt = self.stages(sub, subctx, start, symmetry=symmetry, bounds=False, started=t0)
            if attempt.termination is TerminationReason.INFEASIBLE or attempt.bound is None:
                return 0.0
            return max(0.0, float(attempt.bound)) if math.isfinite(attempt.bound) else 0.0

        return solve

    def _mip(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        start: Assignment | None,
        symmetry: bool,
        best: float,
        method: str,
        started: float,
    ) -> Attempt:
        """The MIP with the time left; its bound combined with ``best`` (from ``method``)."""
        run = self.run_from(instance, ctx, start, symmetry=symmetry)
        outcome, solution, build_s = run.outcome, run.solution, run.build_s
        message = outcome.message
        bound = outcome.bound
        if outcome.termination is TerminationReason.INFEASIBLE:
            bound = None
        elif bound is None and not method:
            bound = 0.0  # traffic and costs are >= 0: every cut is
        elif method and (bound is None or best > bound):
            backend = "none" if bound is None else f"{bound:.6g}"
            message = f"{message}; bound {best:.6g} from the {method} (the backend's: {backend})"
            bound = best
        elif bound is not None:
            message = f"{message}; bound {bound:.6g} from the backend"
        proven = outcome.termination is TerminationReason.OPTIMAL and ctx.rel_gap == 0
        termination = outcome.termination
        if (
            not proven
            and solution is not None
            and bound is not None
            and ctx.rel_gap == 0
            and _closes(bound, evaluate(instance, solution))
        ):
            proven, termination = True, TerminationReason.OPTIMAL
        return Attempt(
            solution=solution,
            termination=termination,
            proven_optimal=proven,
            bound=bound,
            build_s=build_s,
            solve_s=time.perf_counter() - started - build_s,
            message=message,
        )

    # ------------------------------------------------------------------ the child process

    def _isolated(
        self,
        instance: PartitionInstance,
        ctx: SolveContext,
        start: Assignment | None,
        symmetry: bool,
        bounds: bool,
        started: float,
        *,
        mip: bool = True,
        columns: bool | None = None,
    ) -> Attempt:
        """:meth:`stages` in a child interpreter killed at the deadline (module docstring)."""
        lines: list[dict[str, Any]] = []
        if bounds and instance.n_vertices <= PARENT_EIGENVALUE_VERTICES:
            # milliseconds here, where the child may not reach its first bound in a short limit
            from topoopt.partition.spectral import eigenvalue_bound

            method = "projected eigenvalue bound"
            lines.append({"bound": eigenvalue_bound(instance), "method": method})
        left = ctx.time_left() - CHILD_STOP_S
        if left >= CHILD_MIN_S:
            where = None if start is None else start.indices(instance)
            settings = (
                ctx.backend,
                ctx.threads,
                ctx.seed,
                ctx.rel_gap,
                dict(ctx.backend_options or {}),
                ctx.log is True,
            )
            job = (instance, where, time.time() + left, settings, symmetry, bounds, mip, columns)
            with tempfile.TemporaryDirectory(prefix="topoopt-partition-") as tmp:
                given, taken = Path(tmp, "in.pickle"), Path(tmp, "out.jsonl")
                given.write_bytes(pickle.dumps(job))
                child = subprocess.Popen(
                    [sys.executable, "-m", "topoopt.partition.solvers._isolated", given, taken],
                    stdin=subprocess.DEVNULL,
                    stdout=None if ctx.log is True else subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                try:
                    child.wait(timeout=max(ctx.time_left() - CHILD_STOP_S, 0.0))
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
                lines += _read_lines(taken)
        results = [line["result"] for line in lines if "result" in line]
        if results:
            return _attempt(instance, results[-1])
        best = [line for line in lines if "bound" in line]
        met = [line["where"] for line in best if line.get("where") is not None]
        if met:  # the last assignment the child's bounds met is its best
            start = _cheaper(instance, Assignment.from_indices(instance, met[-1]), start)
        message = "stopped at the time limit" + (" before the MIP answered" if mip else "")
        bound = 0.0  # traffic and costs are >= 0: every cut is
        if best:
            bound = float(best[-1]["bound"])
            message = f"{message}; bound {bound:.6g} from the {best[-1]['method']}"
        proven = False
        if start is not None and bound is not None:
            proven = _closes(bound, evaluate(instance, start)) and ctx.rel_gap == 0
        if start is not None:
            message += RETURNING
        return Attempt(
            solution=start,
            termination=TerminationReason.OPTIMAL if proven else TerminationReason.TIME_LIMIT,
            proven_optimal=proven,
            bound=bound,
            build_s=0.0,
            solve_s=time.perf_counter() - started,
            message=message,
        )


def _cheaper(instance: PartitionInstance, found: Assignment, kept: Assignment | None) -> Assignment:
    """``found`` if its cut is below ``kept``'s (or nothing is kept), else ``kept``."""
    if kept is not None and evaluate(instance, found) >= evaluate(instance, kept):
        return kept
    return found


def _closes(bound: float, objective: float) -> bool:
    """Whether ``bound`` proves ``objective`` optimal (within :data:`PROOF_TOLERANCE`)."""
    return bound >= objective - PROOF_TOLERANCE * max(1.0, abs(objective))


def _plain(instance: PartitionInstance, attempt: Attempt) -> dict[str, Any]:
    """``attempt`` as JSON-able data (the solution as cluster indices)."""
    return {
        "where": None if attempt.solution is None else attempt.solution.indices(instance),
        "termination": attempt.termination.value,
        "proven_optimal": attempt.proven_optimal,
        "bound": attempt.bound,
        "build_s": attempt.build_s,
        "solve_s": attempt.solve_s,
        "message": attempt.message,
    }


def _attempt(instance: PartitionInstance, data: dict[str, Any]) -> Attempt:
    """The inverse of :func:`_plain`."""
    where = data["where"]
    return Attempt(
        solution=None if where is None else Assignment.from_indices(instance, where),
        termination=TerminationReason(data["termination"]),
        proven_optimal=bool(data["proven_optimal"]),
        bound=None if data["bound"] is None else float(data["bound"]),
        build_s=float(data["build_s"]),
        solve_s=float(data["solve_s"]),
        message=str(data["message"]),
    )


def _read_lines(path: Path) -> list[dict[str, Any]]:
    """The complete JSON lines the child wrote (a line cut by the kill is dropped)."""
    try:
        text = path.read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
