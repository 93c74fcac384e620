"""Shared test fixtures: hypothesis profiles and the location of ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

if "PYTEST_XDIST_WORKER" in os.environ:
    # one OpenMP thread per xdist worker (scikit-learn's boosting, the BLAS): with one worker per
    # core, more threads only contend; the learn tests ran about 1.5x slower without this
    os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the project; tests needing it skip with a reason when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"measurement data not found at {SHARED_DATA} (needs ../shared/data)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def host_topologies() -> None:
    """Skip unless the data folders hold the Appendix E matrices read from data (4090, V100,
    A6000): the paper's simulated clusters and ``large_pool`` are built on them."""
    from topoopt.gpuselect.topologies import APPENDIX_E_TYPES, builtin_topology

    missing = [t for t in APPENDIX_E_TYPES if builtin_topology(t) is None]
    if missing:
        pytest.skip(f"no topology matrix for host types {missing} (needs ../shared/data)")
