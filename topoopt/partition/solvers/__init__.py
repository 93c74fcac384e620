"""Solvers of the partition family: the exact MIP, SpiderFlow's greedy low-cut heuristic, the
genetic and METIS baselines, the two-level Heuristic-ILP and the enumeration oracle."""

from topoopt.partition.solvers import genetic, greedy, heuristic_ilp, metis, mip, oracle

__all__ = ["genetic", "greedy", "heuristic_ilp", "metis", "mip", "oracle"]
