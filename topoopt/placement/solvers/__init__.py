"""Solvers of the placement family: the oracle, the MIP solvers and the baselines (Arnold's,
and the production placers: Kueue TAS, Slurm topology/tree and topology/block, Volcano, KAI)."""

from topoopt.placement.solvers import (
    baselines,
    kai,
    kueue,
    mip,
    oracle,
    slurm,
    topo_aware,
    volcano,
)

__all__ = ["baselines", "kai", "kueue", "mip", "oracle", "slurm", "topo_aware", "volcano"]
