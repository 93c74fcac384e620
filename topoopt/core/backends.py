"""The MIP backends topoopt knows and whether they are installed, answered without importing
them (so listing solvers or validating a call never imports Pyomo or a native library)."""

from __future__ import annotations

import importlib.util

from topoopt.core.errors import BackendUnavailableError

BACKEND_PACKAGES: dict[str, str] = {"highs": "highspy", "scip": "pyscipopt", "gurobi": "gurobipy"}
"""Each backend and the Python package it needs."""

DEFAULT_BACKEND = "highs"


def available_backends() -> list[str]:
    """Backends whose package is installed here (checked without importing it)."""
    return [b for b, pkg in BACKEND_PACKAGES.items() if importlib.util.find_spec(pkg) is not None]


def resolve_backend(backend: str | None) -> str:
    """Validate a backend name (``None`` means :data:`DEFAULT_BACKEND`).

    Raises
    ------
    BackendUnavailableError
        For an unknown name, or a backend whose package is not installed (naming the package).
    """
    name = DEFAULT_BACKEND if backend is None else backend
    if name not in BACKEND_PACKAGES:
        known = ", ".join(BACKEND_PACKAGES)
        raise BackendUnavailableError(f"backend: unknown MIP backend {name!r}; known: {known}")
    package = BACKEND_PACKAGES[name]
    if importlib.util.find_spec(package) is None:
        extra = " (pip install 'topoopt[gurobi]')" if name == "gurobi" else ""
        raise BackendUnavailableError(
            f"backend: {name!r} needs the Python package {package!r}, which is not installed{extra}"
        )
    return name
