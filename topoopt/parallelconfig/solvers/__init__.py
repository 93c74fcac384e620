"""Solvers of the parallelconfig family: the greedy baseline, the exact ILPs (the segment ILP
and the paper's) and the enumeration oracle."""

from topoopt.parallelconfig.solvers import greedy, mip, oracle

__all__ = ["greedy", "mip", "oracle"]
