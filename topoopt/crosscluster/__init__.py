"""Shared pieces of SpiderFlow's cross-cluster families (``clusterselect``, ``partition``): the
cluster graph with its widest-path bandwidths (:mod:`.graph`, eq. 1), the intra-cluster GPU
buddy allocator (:mod:`.buddy`, Appendix A.1), multi-cluster descriptions (:mod:`.multicluster`:
the WAN graph and each cluster's nodes) and SpiderFlow's evaluation settings (:mod:`.settings`).

Tian et al., "SpiderFlow: Topology-aware scheduling for decentralized GPU clusters". This package is
not a family; the families import it.
"""
