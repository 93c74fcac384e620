"""Pyomo formulations of the gpuselect family (``docs/gpuselect.md`` writes them out)."""

from topoopt.gpuselect.formulations import profile_mip

__all__ = ["profile_mip"]
