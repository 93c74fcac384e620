"""Register the toy family in a copy of topoopt's registry, restored afterwards, so the rest
of the test suite never sees it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from topoopt.core import registry
from toy.knapsack import register


@contextmanager
def isolated_registry() -> Iterator[None]:
    """Copy the registry (with the installed families loaded), register knapsack, restore."""
    registry.families()
    saved = registry._FAMILIES, registry._SOLVERS
    registry._FAMILIES, registry._SOLVERS = dict(saved[0]), dict(saved[1])
    try:
        register()
        yield
    finally:
        registry._FAMILIES, registry._SOLVERS = saved
