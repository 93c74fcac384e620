"""Checked by mypy (see ``[tool.mypy] files``), never run: what type checkers see of results.

``topoopt.solve`` on a family's instance is typed as that family's result type, so an IDE
and mypy know the solution type and the metric properties.
"""

from __future__ import annotations

from typing import assert_type

import topoopt
from topoopt.gpuselect import GpuSelectInstance, GpuSelectResult, Selection
from topoopt.placement import Placement, PlacementInstance, PlacementResult


def placement(instance: PlacementInstance) -> None:
    result = topoopt.solve(instance, "placement/best-fit")
    assert_type(result, PlacementResult)
    assert_type(result.dp_spread, float)
    assert_type(result.solution, Placement | None)


def gpuselect(instance: GpuSelectInstance) -> None:
    result = topoopt.solve(instance, "gpuselect/hybrid")
    assert_type(result, GpuSelectResult)
    assert_type(result.bandwidth, float)
    assert_type(result.solution, Selection | None)


def from_a_file(path: str) -> None:
    assert_type(topoopt.solve(path, "placement/best-fit"), topoopt.Result)
