"""Solvers of the ocs family: the enumeration oracle, Algorithm 1 (hill climbing), Algorithms 2
and 3 (greedy), the no-TDM baseline."""

from topoopt.ocs.solvers import baselines, greedy, hill_climb, mip, oracle

__all__ = ["baselines", "greedy", "hill_climb", "mip", "oracle"]
