"""Child process of ``placement/exact-mip``: one per-cell feasibility MIP, ended from outside.

``python -m topoopt.placement.solvers._isolated IN OUT`` reads a pickled
``(instance, max_dp_use, max_pp_use, wall_deadline, (backend, threads, seed, options))`` from
``IN``, builds :func:`topoopt.placement.formulations.exact.build_feasibility`, solves it until
``wall_deadline`` (``time.time()``) and writes the pickled ``(termination value, matrix or
None)`` to ``OUT``. A plain interpreter (not :mod:`multiprocessing`) so that the caller's
``__main__`` is never re-imported; the parent kills it at the deadline (see
:meth:`topoopt.placement.solvers.mip.ExactMipSolver._feasibility`).
"""

from __future__ import annotations

import pickle
import sys
import time


def main(argv: list[str]) -> None:
    """Run one feasibility MIP as described in the module docstring."""
    from topoopt.core.mip import solve_model
    from topoopt.core.status import TerminationReason
    from topoopt.placement.formulations import exact

    with open(argv[0], "rb") as f:
        instance, max_dp_use, max_pp_use, wall_deadline, settings = pickle.load(f)
    backend, threads, seed, options = settings
    model = exact.build_feasibility(instance, max_dp_use, max_pp_use)
    left = wall_deadline - time.time()
    answer: tuple[str, object] = (TerminationReason.TIME_LIMIT.value, None)
    if left > 0:
        out = solve_model(
            model,
            backend=backend,
            time_limit=left,
            rel_gap=0.0,
            threads=threads,
            seed=seed,
            backend_options=options or None,
        )
        matrix = exact.extract(model, instance).matrix if out.has_solution else None
        answer = (out.termination.value, matrix)
    with open(argv[1], "wb") as f:
        pickle.dump(answer, f)


if __name__ == "__main__":
    main(sys.argv[1:])
