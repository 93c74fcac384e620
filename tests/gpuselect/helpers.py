"""Plain references for the gpuselect tests (obviously right, slow)."""

from __future__ import annotations

import itertools

from topoopt.gpuselect import GpuSelectInstance, Selection, evaluate


def plain_brute_force(instance: GpuSelectInstance) -> float:
    """max B(S) over every k-subset, by itertools.combinations and the scalar evaluate()."""
    gpus = [(h.name, i) for h in instance.hosts for i in h.available]
    return max(
        evaluate(instance, Selection(combo)) for combo in itertools.combinations(gpus, instance.k)
    )
