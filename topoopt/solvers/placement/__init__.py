"""Solvers of the placement family: the oracle, the MIP solvers and the baselines."""

from topoopt.solvers.placement import mip, oracle  # noqa: F401  (registration)
