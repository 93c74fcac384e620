"""Pyomo formulations of the clusterselect family (imported by the MIP solver when it runs)."""
