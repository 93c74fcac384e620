"""Fixtures of the benchmark tests: the misbehaving-solvers plugin and small suites."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import topoopt
from topoopt.core import registry
from topoopt.placement.generate import examples

PLUGIN = "bench.misbehaving"

# Importing the plugin registers its solvers; only the ``plugin`` fixture may do that (not
# ``--doctest-modules`` collection, or the conformance suite would see them).
collect_ignore = ["misbehaving.py"]


@pytest.fixture()
def plugin(monkeypatch: pytest.MonkeyPatch) -> str:
    """The plugin module name; its solvers are registered only for the test that asks.

    The registry is copied for the test and restored afterwards, and the module is dropped
    from ``sys.modules`` so that importing it registers its solvers in the copy.
    """
    registry.solver_names()  # load the built-ins into the original registry first
    monkeypatch.setattr(registry, "_SOLVERS", dict(registry._SOLVERS))
    monkeypatch.delitem(sys.modules, PLUGIN, raising=False)
    return PLUGIN


@pytest.fixture()
def suite(tmp_path: Path) -> Path:
    """A suite folder with two small placement instances."""
    folder = tmp_path / "tiny"
    for instance in examples()[:2]:
        topoopt.save(instance, folder / f"{instance.name}.json")
    return folder
