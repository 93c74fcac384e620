"""Solvers of the parallelconfig family: the greedy baseline, the exact ILP and the enumeration
oracle."""

from topoopt.parallelconfig.solvers import greedy, mip, oracle

__all__ = ["greedy", "mip", "oracle"]
