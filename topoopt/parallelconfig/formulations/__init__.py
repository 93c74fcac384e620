"""Pyomo formulations of the parallelconfig family (``docs/parallelconfig.md`` writes them out).

:mod:`topoopt.parallelconfig.formulations.segment_mip` is the segment ILP of
``parallelconfig/mip``, :mod:`topoopt.parallelconfig.formulations.grid_mip` the paper's ILP of
``parallelconfig/paper-mip``; each is imported when its solver runs, never by this package (so
``import topoopt`` stays free of Pyomo).
"""
