"""The service's interface as data: the JSON Schemas of requests and answers, and the table of
endpoints that both the server (:mod:`topoopt.serve.app`) and the OpenAPI document
(:mod:`topoopt.serve.openapi`) are built from.

A request body is checked against the same schema the OpenAPI document publishes
(:func:`topoopt.core.schema.validate`, errors as one line with the JSON path, e.g.
``solver: missing required field``); the ``instance`` inside is then checked by
``topoopt.load``'s rules in a worker, with paths relative to the instance, exactly as for an
instance file on the command line.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CHECK_REQUEST",
    "CHECK_RESPONSE",
    "ERROR",
    "ERROR_STATUSES",
    "EVALUATE_RESPONSE",
    "FAMILIES",
    "HEALTH",
    "RESULT",
    "SOLVERS",
    "SOLVE_REQUEST",
    "Endpoint",
]

MAX_SEED = 2**63 - 1
REFUSED_OPTIONS = ("backend_options", "log")
"""Solver options a request may not pass: they reach the MIP backend's own settings (which
can write files) and the worker's output."""

INSTANCE = {
    "type": "object",
    "description": "An instance, the JSON object of an instance file of any family "
    "(`family` says which; its schema: `GET /v1/schemas/{family}`). It may name no file: "
    "tables inline, by data name (`data:...`), or absolute paths in the folders the "
    "server allows (`--allow-path`).",
}

SOLUTION = {
    "type": "object",
    "description": "A solution of the instance's family: the `solution` member of a "
    "`POST /v1/solve` answer.",
}

_USER: dict[str, Any] = {"^x-": {}}

SOLVE_REQUEST: dict[str, Any] = {
    "title": "SolveRequest",
    "type": "object",
    "properties": {
        "instance": INSTANCE,
        "solver": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "A solver name: `family/algo`, or `algo` of the instance's family "
            "(`GET /v1/solvers`).",
        },
        "backend": {
            "type": ["string", "null"],
            "maxLength": 50,
            "description": "MIP backend of MIP solvers: `highs` (default), `scip`, `gurobi`.",
        },
        "time_limit": {
            "type": ["number", "null"],
            "description": "Seconds (> 0, at most the server's `--max-time-limit`); "
            "default: the server's `--time-limit`. The request is answered `504` when no "
            "answer came within `1.2 × time_limit + grace` seconds.",
        },
        "seed": {
            "type": ["integer", "null"],
            "minimum": 0,
            "maximum": MAX_SEED,
            "description": "Random seed (default 0).",
        },
        "options": {
            "type": "object",
            "description": "Solver options, as `topoopt solve -o KEY=VALUE` "
            "(`backend_options` and `log` are refused).",
        },
    },
    "required": ["instance", "solver"],
    "patternProperties": _USER,
    "additionalProperties": False,
}
"""``POST /v1/solve``."""

CHECK_REQUEST: dict[str, Any] = {
    "title": "SolutionRequest",
    "type": "object",
    "properties": {"instance": INSTANCE, "solution": SOLUTION},
    "required": ["instance", "solution"],
    "patternProperties": _USER,
    "additionalProperties": False,
}
"""``POST /v1/check`` and ``POST /v1/evaluate``."""

_NUMBER = {
    "description": 'A number; `"inf"` or `"-inf"` when infinite, `null` when absent.',
    "anyOf": [{"type": "number"}, {"enum": ["inf", "-inf"]}, {"type": "null"}],
}

RESULT: dict[str, Any] = {
    "title": "Result",
    "description": "Exactly what `topoopt solve --json` prints for the same input "
    "(`Result.to_dict()`), plus the family's metrics as further members.",
    "type": "object",
    "properties": {
        "status": {
            "enum": ["no_solution", "unknown", "infeasible", "feasible", "optimal"],
            "description": "How good the answer is (feasible and optimal are solutions).",
        },
        "termination": {"type": "string", "description": "Why the solver stopped."},
        "objective": _NUMBER,
        "bound": _NUMBER,
        "gap": _NUMBER,
        "solver": {"type": "string"},
        "backend": {"type": ["string", "null"]},
        "total_s": {"type": "number"},
        "build_s": {"type": "number"},
        "solve_s": {"type": "number"},
        "family": {"type": "string"},
        "instance": {"type": "string"},
        "sense": {"enum": ["minimize", "maximize"]},
        "seed": {"type": "integer"},
        "message": {"type": "string"},
        "violations": {"type": "array", "items": {"type": "string"}},
        "solution": {
            "type": ["object", "null"],
            "description": "The family's solution (null without one).",
        },
    },
    "required": ["status", "termination", "objective", "solver", "family", "solution"],
}

CHECK_RESPONSE: dict[str, Any] = {
    "title": "CheckResult",
    "type": "object",
    "properties": {
        "family": {"type": "string"},
        "instance": {"type": "string"},
        "feasible": {"type": "boolean"},
        "violations": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The rules the solution breaks (empty when feasible).",
        },
    },
    "required": ["family", "instance", "feasible", "violations"],
}

EVALUATE_RESPONSE: dict[str, Any] = {
    "title": "Evaluation",
    "type": "object",
    "properties": {
        **CHECK_RESPONSE["properties"],
        "sense": {"enum": ["minimize", "maximize"]},
        "objective": {
            **_NUMBER,
            "description": "The family's exact objective (null when infeasible).",
        },
        "metrics": {"type": "object", "additionalProperties": _NUMBER},
    },
    "required": ["family", "instance", "feasible", "violations", "objective", "metrics"],
}

ERROR: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "properties": {
        "status": {"type": "integer", "description": "The HTTP status, repeated."},
        "error": {
            "enum": [
                "bad_input",
                "unauthorized",
                "not_found",
                "method_not_allowed",
                "too_large",
                "internal",
                "overloaded",
                "shutting_down",
                "timeout",
            ]
        },
        "message": {
            "type": "string",
            "description": "One line; for bad input the line `topoopt solve` prints after "
            "`error:` (the JSON path of an instance's field is relative to the instance).",
        },
    },
    "required": ["status", "error", "message"],
}

SOLVER_INFO: dict[str, Any] = {
    "title": "SolverInfo",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "family": {"type": "string"},
        "exact": {"type": "boolean"},
        "gives_bound": {"type": "boolean"},
        "stochastic": {"type": "boolean"},
        "uses_backend": {"type": "boolean"},
        "backends": {"type": "array", "items": {"type": "string"}},
        "options": {"type": "object", "description": "Options and their defaults."},
        "description": {"type": "string"},
    },
}

SOLVERS: dict[str, Any] = {
    "title": "Solvers",
    "description": "What `topoopt solvers [FAMILY] --json` prints.",
    "type": "array",
    "items": SOLVER_INFO,
}

FAMILIES: dict[str, Any] = {
    "title": "Families",
    "type": "object",
    "properties": {
        "families": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "sense": {"enum": ["minimize", "maximize"]},
                    "solvers": {"type": "array", "items": {"type": "string"}},
                    "schema": {"type": "string", "description": "Where its schema is."},
                },
            },
        }
    },
}

HEALTH: dict[str, Any] = {
    "title": "Health",
    "type": "object",
    "properties": {
        "status": {"enum": ["ok", "ready", "starting", "draining"]},
        "workers": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "idle": {"type": "integer"},
                "busy": {"type": "integer"},
                "starting": {"type": "integer"},
                "queued": {"type": "integer"},
            },
        },
    },
}

ERROR_STATUSES: dict[int, str] = {
    400: "Bad input: the request or the instance breaks a rule (one line naming the field).",
    401: "A token is configured and the request has no valid `Authorization: Bearer` header.",
    404: "No such resource.",
    413: "The request is over a size limit of docs/input.md (bytes, or a family's limit).",
    500: "The solver raised or its worker process died; the worker was replaced.",
    503: "Every worker is busy and the queue is full, or the server shuts down "
    "(see `Retry-After`).",
    504: "No answer within the hard deadline (`1.2 × time_limit + grace`); the worker was "
    "killed and replaced.",
}


Handler = Callable[..., Awaitable[Any]]
"""A handler: an ``async`` method of :class:`topoopt.serve.app.Service` taking the request."""


@dataclass(frozen=True)
class Endpoint:
    """One endpoint: what the server routes and what the OpenAPI document says of it.

    Attributes
    ----------
    method, path
        ``"POST"``, ``"/v1/solve"`` (a ``{name}`` in the path is a parameter).
    handler
        The Starlette handler; its docstring's first paragraph is the summary, the rest the
        description.
    request
        The JSON Schema of the body (``None``: no body).
    response
        The JSON Schema of a ``200`` answer (``None``: not JSON).
    errors
        The error statuses it may answer (each with an :data:`ERROR` body).
    query
        Query parameters ``{name: description}``.
    media_type
        Of the ``200`` answer.
    auth
        Whether the token is required when one is configured.
    """

    method: str
    path: str
    handler: Handler
    request: Mapping[str, Any] | None = None
    response: Mapping[str, Any] | None = None
    errors: tuple[int, ...] = ()
    query: Mapping[str, str] = field(default_factory=dict)
    media_type: str = "application/json"
    auth: bool = True
    tag: str = "solve"
