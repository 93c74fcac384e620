"""Solvers of the placement family: the oracle, the MIP solvers and the baselines."""

from topoopt.placement.solvers import baselines, mip, oracle, topo_aware

__all__ = ["baselines", "mip", "oracle", "topo_aware"]
