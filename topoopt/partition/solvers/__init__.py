"""Solvers of the partition family: the exact MIP, SpiderFlow's greedy low-cut heuristic and
its iterated search, the genetic and METIS baselines, the lower-bound certificate, the
two-level Heuristic-ILP and the enumeration oracle."""

from topoopt.partition.solvers import (
    bound,
    genetic,
    greedy,
    heuristic_ilp,
    ils,
    metis,
    mip,
    oracle,
)

__all__ = ["bound", "genetic", "greedy", "heuristic_ilp", "ils", "metis", "mip", "oracle"]
