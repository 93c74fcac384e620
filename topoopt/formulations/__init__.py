"""Pyomo formulations, one subpackage per family, one module per formulation."""
