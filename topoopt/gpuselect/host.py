"""A host of the cluster: its name, type, number of GPUs and which of them are idle."""

from __future__ import annotations

from dataclasses import dataclass

from topoopt.gpuselect.masks import mask_of


@dataclass(frozen=True)
class Host:
    """One server of the cluster (BandPilot §3.1: the GPUs of ``A`` are grouped by host).

    Attributes
    ----------
    name
        Unique host name.
    type
        Host type (e.g. ``"H100"``); bandwidth models key their tables by it.
    gpus
        Number of GPUs, local indices ``0 .. gpus - 1``.
    available
        Idle local indices, increasing.
    """

    name: str
    type: str
    gpus: int
    available: tuple[int, ...]

    @property
    def available_mask(self) -> int:
        """Bitmask of the idle GPUs."""
        return mask_of(self.available)

    @property
    def n_available(self) -> int:
        return len(self.available)
