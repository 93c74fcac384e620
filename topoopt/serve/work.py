"""What the service's worker processes run: one function per endpoint that touches an instance.

The worker processes are those of the benchmarks (:mod:`topoopt.bench.worker`, long-lived,
one request at a time); the service sends them ``{"call": "topoopt.serve.work:solve",
"args": {...}}`` and each function here answers with a plain JSON object:

* ``{"status": 200, "body": TEXT}``: the response body, already serialised exactly as the
  command line prints it (:func:`topoopt.cli.solve.result_json` for a solve);
* ``{"status": 400 | 413, "message": LINE}``: the input was refused (any
  :class:`~topoopt.core.errors.TopooptError`, the line ``topoopt solve`` would print after
  ``error:``; ``413`` when it says a size limit was broken, see
  :func:`topoopt.core.limits.broken_limit`).

Any other exception is a bug of topoopt or of a solver: the worker reports it, and the pool
answers ``500`` and replaces the process (its state is suspect). Instances from the network
read no file but data names and paths inside the ``allow_paths`` folders
(:meth:`~topoopt.core.safejson.FileAccess.remote`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["check", "evaluate", "message_line", "refusal", "solve", "warm"]


def message_line(exc: BaseException | str) -> str:
    """The one-line message of an error, as the command line prints it after ``error:``."""
    from topoopt.cli.output import MAX_MESSAGE_CHARS, printable

    return printable(exc, MAX_MESSAGE_CHARS)


def refusal(exc: BaseException) -> dict[str, Any]:
    """The answer to input that topoopt refused: ``413`` for a broken size limit, else
    ``400``, with the command line's message."""
    from topoopt.core.limits import broken_limit

    return {"status": 413 if broken_limit(exc) else 400, "message": message_line(exc)}


def _instance(args: Mapping[str, Any]) -> Any:
    from topoopt.core.io import instance_from_dict
    from topoopt.core.safejson import FileAccess, check_json

    data = args["instance"]
    check_json(data)
    return instance_from_dict(data, files=FileAccess.remote(args.get("allow_paths", ())))


def _guarded(work: Callable[[Mapping[str, Any]], dict[str, Any]]) -> Any:
    def run(args: Mapping[str, Any]) -> dict[str, Any]:
        from topoopt.core.errors import TopooptError

        try:
            return work(args)
        except TopooptError as exc:
            return refusal(exc)

    run.__doc__ = work.__doc__
    run.__name__ = work.__name__
    return run


@_guarded
def solve(args: Mapping[str, Any]) -> dict[str, Any]:
    """``POST /v1/solve``: load the instance, solve it, answer ``topoopt solve --json``'s line.

    ``args``: ``instance`` (a JSON object), ``solver``, ``backend``, ``time_limit``,
    ``seed``, ``options`` (solver options), ``allow_paths``.
    """
    import topoopt
    from topoopt.cli.solve import result_json

    instance = _instance(args)
    result = topoopt.solve(
        instance,
        args["solver"],
        backend=args.get("backend"),
        time_limit=args.get("time_limit"),
        seed=args.get("seed"),
        **dict(args.get("options") or {}),
    )
    return {
        "status": 200,
        "body": result_json(result),
        "solver": result.solver,
        "solve_s": result.total_s,
        "ok": result.is_ok,
    }


def _solution(args: Mapping[str, Any]) -> tuple[Any, Any, Any, list[str]]:
    """The instance, its family, the solution and its violated rules."""
    from topoopt.core.errors import InvalidSolutionError
    from topoopt.core.registry import get_family

    instance = _instance(args)
    family = get_family(instance.family)
    data = args["solution"]
    try:
        solution = family.solution_from_dict(instance, data)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        if isinstance(exc, InvalidSolutionError):
            raise
        # A solution of the wrong shape, caught by the family's converter on the way (not
        # every converter names the field): refused as bad input, never a 500.
        raise InvalidSolutionError(f"solution: not a {family.name} solution ({exc})") from None
    return instance, family, solution, [str(rule) for rule in family.check(instance, solution)]


@_guarded
def check(args: Mapping[str, Any]) -> dict[str, Any]:
    """``POST /v1/check``: the rules a solution (the ``solution`` member of a solve's answer)
    violates on the instance; ``feasible`` when none."""
    instance, family, _, violations = _solution(args)
    body = {
        "family": family.name,
        "instance": instance.name,
        "feasible": not violations,
        "violations": violations,
    }
    return {"status": 200, "body": json.dumps(body)}


@_guarded
def evaluate(args: Mapping[str, Any]) -> dict[str, Any]:
    """``POST /v1/evaluate``: the exact objective and the metrics of a feasible solution,
    computed by the family's ``evaluate()`` as for every solver's result; ``objective`` is
    ``null`` and ``violations`` lists the rules broken when the solution is infeasible."""
    from topoopt.core.result import json_number

    instance, family, solution, violations = _solution(args)
    body: dict[str, Any] = {
        "family": family.name,
        "instance": instance.name,
        "sense": family.sense.value,
        "feasible": not violations,
        "violations": violations,
        "objective": None,
        "metrics": {},
    }
    if not violations:
        body["objective"] = json_number(family.evaluate(instance, solution))
        metrics = family.metrics(instance, solution)
        body["metrics"] = {name: json_number(value) for name, value in metrics.items()}
    return {"status": 200, "body": json.dumps(body)}


def warm(args: Mapping[str, Any]) -> dict[str, Any]:
    """Import every family and solver module once, so that no request of a fresh worker
    process pays for it; answers the solver names it knows."""
    from topoopt.cli.output import printable  # noqa: F401  (what every answer uses)
    from topoopt.cli.solve import result_json  # noqa: F401
    from topoopt.core.registry import solver_names

    return {"status": 200, "solvers": len(solver_names())}
