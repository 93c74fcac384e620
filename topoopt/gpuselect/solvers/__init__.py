"""Solvers of the gpuselect family: BandPilot's EHA/PTS/hybrid, the Appendix D baselines,
the exact MIP and the enumeration oracle."""

from topoopt.gpuselect.solvers import bandpilot, baselines, mip, oracle

__all__ = ["bandpilot", "baselines", "mip", "oracle"]
