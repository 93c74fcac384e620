"""Child process of ``partition/mip``: lower bounds and the MIP of one instance, ended from
outside.

``python -m topoopt.partition.solvers._isolated IN OUT`` reads a pickled ``(instance, where,
wall_deadline, (backend, threads, seed, rel_gap, backend_options, log), symmetry, bounds,
mip, columns)``
from ``IN`` (``where``: the warm start's cluster per vertex, or ``None``), runs
:meth:`PartitionMipSolver.stages <topoopt.partition.solvers.mip.PartitionMipSolver.stages>`
until ``wall_deadline`` (``time.time()``) and appends one JSON line to ``OUT`` per proven bound
(``{"bound": ..., "method": ...}``) and one with the answer (``{"result": {...}}``), each
flushed at once: the parent kills the process at the deadline and keeps what was written. A
plain interpreter (not :mod:`multiprocessing`) so that the caller's ``__main__`` is never
re-imported.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from typing import Any


def main(argv: list[str]) -> None:
    """Run the job described in the module docstring."""
    from topoopt.core.solver import SolveContext
    from topoopt.partition.solution import Assignment
    from topoopt.partition.solvers.mip import PartitionMipSolver

    started = time.perf_counter()
    with open(argv[0], "rb") as f:
        instance, where, wall_deadline, settings, symmetry, bounds, mip, columns = pickle.load(f)
    backend, threads, seed, rel_gap, options, log = settings
    ctx = SolveContext(
        backend=backend,
        time_limit=max(wall_deadline - time.time(), 1e-3),
        seed=seed,
        threads=threads,
        rel_gap=rel_gap,
        backend_options=options or None,
        log=log,
    )
    start = None if where is None else Assignment.from_indices(instance, where)
    with open(argv[1], "a") as out:

        def report(line: dict[str, Any]) -> None:
            out.write(json.dumps(line) + "\n")
            out.flush()
            os.fsync(out.fileno())

        PartitionMipSolver().stages(
            instance,
            ctx,
            start,
            symmetry=symmetry,
            bounds=bounds,
            started=started,
            report=report,
            mip=mip,
            columns=columns,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
