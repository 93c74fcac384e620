"""The machinery of ``placement/exact-mip``: deciding target spreads ``(A, B)`` in score order.

The score (Arnold eq. 2–3) depends on a placement only through ``A``, the most minipods a
column (DP group) touches, and ``B``, the most a row (PP group) touches; feasibility is
monotone in both, so the optimum is the lowest-scoring feasible pair.
:class:`~topoopt.placement.solvers.mip.ExactMipSolver` walks the pairs in score order and
hands each to the first test below that decides it (``docs/placement.md``, "Exact MIP"):

=====  ==============================  ====================================================
step   module                          what it decides
=====  ==============================  ====================================================
1      :mod:`.targets`                 the pair walk (:func:`~.targets.iter_target_pairs`);
                                       closed forms for ``A = 1`` / ``B = 1``; the
                                       counting relaxation and its Lagrangian form
                                       (refute); block designs and guillotine cuts
                                       (:class:`~.targets.Constructions`, realise)
2      :mod:`.sides`                   one side at a time: the columns alone with ``A``
                                       minipods each, or the rows with ``B`` (refute), or
                                       packed on the largest minipods (realise); its
                                       two-piece case is :mod:`.two_pieces` (exact,
                                       combinatorial)
3      :mod:`.narrow`                  pairs with ``A = 2`` or ``B = 2`` on few minipods
                                       (exact, both ways)
4      :mod:`.typed`                   pairs with ``A, B >= 3``: one side explicit, the
                                       other aggregated by group type (exact, both ways)
5      :mod:`topoopt.placement.        the per-cell feasibility MIP for what is left
       formulations.exact`
=====  ==============================  ====================================================

Shared helpers: :mod:`.transport` turns integral group counts into integral cells (a maximum
flow), :mod:`._milp` hands the small integer programmes of steps 2–4 to HiGHS (or SCIP)
without Pyomo. Every step is exact in what it concludes, so the walk's first feasible pair is
the optimum (property tests against the oracle in ``tests/placement``).
"""
