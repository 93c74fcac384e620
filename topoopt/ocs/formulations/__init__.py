"""Pyomo formulations of the ocs family (imported when a MIP is built)."""
