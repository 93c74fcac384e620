"""Pyomo formulations of the partition family (imported by the MIP solver when it runs)."""
