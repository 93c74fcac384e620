"""Solvers of the gpuselect family: BandPilot's EHA/PTS/hybrid, the Appendix D baselines,
the exact MIP, the enumeration oracle and ``gpuselect/auto`` (oracle or hybrid)."""

from topoopt.gpuselect.solvers import auto, bandpilot, baselines, mip, oracle

__all__ = ["auto", "bandpilot", "baselines", "mip", "oracle"]
