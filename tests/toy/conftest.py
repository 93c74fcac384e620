"""Fixtures of the toy-family tests: an isolated registry holding the knapsack family."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toy.registry import isolated_registry

# Importing the plug-in module registers the family globally; only tests may (in isolation).
collect_ignore = ["plugin.py"]


@pytest.fixture()
def knapsack() -> Iterator[None]:
    """The knapsack family registered for one test, in a copy of the registry."""
    with isolated_registry():
        yield
