"""Pyomo formulations of the gpuselect family (``docs/gpuselect.md`` writes them out).

:mod:`topoopt.gpuselect.formulations.profile_mip` is the exact MIP of ``gpuselect/mip``; it is
imported when that solver runs, never by this package (so ``import topoopt`` stays free of
Pyomo).
"""
