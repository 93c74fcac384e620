"""Selections of GPUs, their bandwidth (the objective) and their feasibility check.

The root of the family's trust chain: :func:`evaluate` is the bound model's reference
evaluation :meth:`~topoopt.gpuselect.models.BoundModel.value` (never a batch shortcut) and
:func:`check` the rules of BandPilot eq. 1 (``S ⊆ A``, ``|S| = k``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from topoopt.core.errors import InvalidSolutionError
from topoopt.gpuselect.instance import GpuSelectInstance
from topoopt.gpuselect.masks import indices_of
from topoopt.gpuselect.models.learned import LearnedModel


@dataclass(frozen=True)
class Selection:
    """The chosen GPUs as ``(host name, local index)`` pairs."""

    gpus: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, pairs: Iterable[Sequence[Any]]) -> Selection:
        """Build from any iterable of ``(host, index)`` pairs."""
        return cls(tuple((str(h), int(i)) for h, i in pairs))


def from_masks(instance: GpuSelectInstance, masks: Sequence[int] | np.ndarray) -> Selection:
    """The selection given by one mask per host (host order, then index order)."""
    return Selection(
        tuple(
            (h.name, i)
            for h, m in zip(instance.hosts, masks, strict=True)
            for i in indices_of(int(m))
        )
    )


def to_masks(instance: GpuSelectInstance, selection: Selection) -> list[int]:
    """One mask per host (assumes :func:`check` passed)."""
    masks = [0] * instance.n_hosts
    index = {h.name: j for j, h in enumerate(instance.hosts)}
    for host, i in selection.gpus:
        masks[index[host]] |= 1 << i
    return masks


def check(instance: GpuSelectInstance, selection: Selection) -> list[str]:
    """The rules ``selection`` breaks: exactly ``k`` distinct GPUs, each idle on a known host.

    Examples
    --------
    >>> from topoopt.gpuselect.generate import examples
    >>> inst = examples()[0]
    >>> check(inst, Selection.of([("n0", 0), ("n0", 0), ("zz", 1)]))[:2]
    ['selects 3 GPUs, the request is k=8', 'GPU (n0, 0) is selected twice']
    """
    problems = []
    if len(selection.gpus) != instance.k:
        problems.append(f"selects {len(selection.gpus)} GPUs, the request is k={instance.k}")
    seen: set[tuple[str, int]] = set()
    hosts = {h.name: h for h in instance.hosts}
    for pair in selection.gpus:
        host, idx = pair
        if pair in seen:
            problems.append(f"GPU ({host}, {idx}) is selected twice")
        seen.add(pair)
        if host not in hosts:
            problems.append(f"GPU ({host}, {idx}) names an unknown host")
        elif idx not in hosts[host].available:
            problems.append(f"GPU ({host}, {idx}) is not available")
    return problems


def evaluate(instance: GpuSelectInstance, selection: Selection) -> float:
    """``B(S)`` in GB/s (to maximise), by the model's reference evaluation."""
    return instance.bound.value(to_masks(instance, selection))


def metrics(instance: GpuSelectInstance, selection: Selection) -> dict[str, float]:
    """``bandwidth`` (= B(S)), ``hosts_used`` and ``max_gpus_per_host``."""
    counts = [c for c in (bin(m).count("1") for m in to_masks(instance, selection)) if c]
    return {
        "bandwidth": evaluate(instance, selection),
        "hosts_used": float(len(counts)),
        "max_gpus_per_host": float(max(counts, default=0)),
    }


def to_dict(instance: GpuSelectInstance, selection: Selection) -> dict[str, Any]:
    """JSON form ``{"gpus": [["n0", 3], ...]}``; under a learned bandwidth model also
    ``"bandwidth_model"``: the model's kind, SHA-256 and training rows, so that a result says
    which model scored it."""
    out: dict[str, Any] = {"gpus": [[h, i] for h, i in selection.gpus]}
    if isinstance(instance.bandwidth, LearnedModel):
        out["bandwidth_model"] = instance.bandwidth.identity()
    return out


def from_dict(instance: GpuSelectInstance, data: Mapping[str, Any]) -> Selection:
    """Read ``{"gpus": [["n0", 3], ...]}``."""
    gpus = data.get("gpus") if isinstance(data, Mapping) else None
    if not isinstance(gpus, list) or not all(
        isinstance(p, list)
        and len(p) == 2
        and isinstance(p[0], str)
        and isinstance(p[1], int)
        and not isinstance(p[1], bool)
        for p in gpus
    ):
        raise InvalidSolutionError("solution.gpus: must be a list of [host name, index] pairs")
    return Selection.of(gpus)


def describe(instance: GpuSelectInstance, selection: Selection) -> str:
    """The objective explained, one line per used host with its GPUs (and the
    ``CUDA_VISIBLE_DEVICES`` a launcher sets there).

    Examples
    --------
    >>> from topoopt.gpuselect.generate import examples
    >>> inst = examples()[0]
    >>> print(describe(inst, Selection.of([("n0", i) for i in range(4)]
    ...                                   + [("n1", i) for i in range(4, 8)])))
    objective B(S) = 50 GB/s (BandPilot eq. 2; higher is better)
      B(S): the collective bandwidth of the 8 GPUs chosen, by the topology model
    hosts used: 2 of 2, at most 4 GPUs on one
    n0 (H100): GPUs 0, 1, 2, 3 (CUDA_VISIBLE_DEVICES=0,1,2,3)
    n1 (H100): GPUs 4, 5, 6, 7 (CUDA_VISIBLE_DEVICES=4,5,6,7)
    """
    masks = to_masks(instance, selection)
    used = [(h, indices_of(m)) for h, m in zip(instance.hosts, masks, strict=True) if m]
    lines = [
        f"objective B(S) = {evaluate(instance, selection):g} GB/s (BandPilot eq. 2; higher is "
        "better)",
        f"  B(S): the collective bandwidth of the {instance.k} GPUs chosen, by the "
        f"{instance.bandwidth.kind} model",
        f"hosts used: {len(used)} of {len(instance.hosts)}, at most "
        f"{max((len(i) for _, i in used), default=0)} GPUs on one",
    ]
    for host, indices in used:
        listed = ", ".join(str(i) for i in indices)
        visible = ",".join(str(i) for i in indices)
        lines.append(f"{host.name} ({host.type}): GPUs {listed} (CUDA_VISIBLE_DEVICES={visible})")
    return "\n".join(lines)
