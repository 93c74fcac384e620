"""Solvers of the ocs family: the enumeration oracle, the MILP, Algorithm 1 as written and a
local search after it (hill climbing), Algorithms 2 and 3 (greedy), the no-TDM baseline."""

from topoopt.ocs.solvers import baselines, greedy, hill_climb, mip, oracle

__all__ = ["baselines", "greedy", "hill_climb", "mip", "oracle"]
