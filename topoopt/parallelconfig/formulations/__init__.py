"""Pyomo formulations of the parallelconfig family (``docs/parallelconfig.md`` writes them out).

:mod:`topoopt.parallelconfig.formulations.grid_mip` is the ILP of ``parallelconfig/mip``; it is
imported when that solver runs, never by this package (so ``import topoopt`` stays free of
Pyomo).
"""
