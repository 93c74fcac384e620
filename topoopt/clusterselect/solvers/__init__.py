"""Solvers of the clusterselect family: SpinSearch, the opportunistic and single-cluster
baselines, the exact MIP and the enumeration oracle."""

from topoopt.clusterselect.solvers import baselines, mip, oracle, spinsearch

__all__ = ["baselines", "mip", "oracle", "spinsearch"]
