"""Shared pieces of SpiderFlow's cross-cluster families (``clusterselect``, later the partitioning
families): the cluster graph with its widest-path bandwidths (:mod:`.graph`, eq. 1) and the
intra-cluster GPU buddy allocator (:mod:`.buddy`, Appendix A.1).

Tian et al., "SpiderFlow: Topology-aware scheduling for decentralized GPU clusters". This package is
not a family; the families import it.
"""
