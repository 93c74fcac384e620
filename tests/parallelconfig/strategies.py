"""Hypothesis strategies that build parallelconfig instances directly, so failures shrink.

* :func:`instances` — 1 to 4 nodes of 1 to 4 GPUs (at most ``max_gpus`` in all), 1 to 6 layers,
  every figure drawn from a few values (ties between configurations and assignments are common),
  the network sometimes faster than the node, an optional fixed ``(d, p)``.
* :func:`seeded_instances` — :func:`topoopt.parallelconfig.generate.random_instance` with a
  drawn seed, so the generator's own distribution is covered too.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from topoopt.parallelconfig import ParallelConfigInstance, TrainingModel
from topoopt.parallelconfig.generate import random_instance

GBPS = (50.0, 100.0, 400.0, 800.0)
COMPUTE_S = (0.001, 0.002, 0.005)
PARAM_BYTES = (0.0, 1e8, 2e8, 5e8)
ACTIVATION_BYTES = (0.0, 1e7, 5e7, 2e8)
WEIGHTS = (0.0, 0.5, 1.0, 2.0)


@st.composite
def instances(
    draw: st.DrawFn,
    max_gpus: int = 8,
    max_nodes: int = 4,
    fixed: bool | None = None,
    node_gpus: int = 4,
) -> ParallelConfigInstance:
    """A small instance (module docstring); ``fixed=None`` draws whether ``(d, p)`` is fixed;
    nodes of at most ``node_gpus`` GPUs."""
    n = draw(st.integers(1, max_nodes))
    nodes = []
    left = max_gpus
    for i in range(n):
        if left == 0:
            break
        g = draw(st.integers(1, min(node_gpus, left)))
        nodes.append((f"n{i}", g))
        left -= g
    layers = draw(
        st.lists(
            st.tuples(st.sampled_from(COMPUTE_S), st.sampled_from(PARAM_BYTES)),
            min_size=1,
            max_size=max(6, max_gpus // 2),
        )
    )
    model = TrainingModel(layers, draw(st.sampled_from(ACTIVATION_BYTES)), draw(st.integers(1, 8)))
    intra, inter = draw(st.sampled_from(GBPS)), draw(st.sampled_from(GBPS))
    alpha, beta = draw(st.sampled_from(WEIGHTS)), draw(st.sampled_from(WEIGHTS))
    instance = ParallelConfigInstance("drawn", nodes, intra, inter, model, alpha, beta)
    if fixed if fixed is not None else draw(st.booleans()):
        d, p = draw(st.sampled_from(list(instance.configurations())))
        instance = ParallelConfigInstance(
            "drawn", nodes, intra, inter, model, alpha, beta, parallelism=(d, p)
        )
    return instance


@st.composite
def seeded_instances(draw: st.DrawFn, max_gpus: int = 8) -> ParallelConfigInstance:
    """:func:`random_instance` with a drawn seed."""
    seed = draw(st.integers(0, 2**32 - 1))
    return random_instance(np.random.default_rng(seed), f"seed-{seed}", max_gpus=max_gpus)


def any_instances(max_gpus: int = 8) -> st.SearchStrategy[ParallelConfigInstance]:
    """Either kind."""
    return st.one_of(instances(max_gpus=max_gpus), seeded_instances(max_gpus=max_gpus))
