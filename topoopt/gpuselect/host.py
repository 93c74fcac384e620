"""A host of the cluster: its name, type, number of GPUs and which of them are idle."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Any

from topoopt.core import validate as v
from topoopt.core.errors import InvalidInstanceError
from topoopt.gpuselect.masks import MAX_GPUS_PER_HOST, mask_of


def type_name(value: Any, path: str) -> str:
    """A host type: a non-empty string (a NumPy string is stored as ``str``).

    A number is refused, not converted: JSON files and code alike write a numeric type in
    quotes (``"4090"``), so the type a table is keyed by is the type the host names.

    Examples
    --------
    >>> type_name("H100", "type")
    'H100'
    >>> type_name(4090, "type")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topoopt.core.errors.InvalidInstanceError: type: must be a string, got 4090 (write ...)
    """
    if isinstance(value, str) and value:
        return str(value)
    number = v.as_number(value)
    if isinstance(number, int) and not isinstance(number, bool):
        raise InvalidInstanceError(
            path,
            f'must be a string, got {value!r} (write a numeric host type in quotes: "{number}")',
        )
    raise InvalidInstanceError(path, f"must be a non-empty string, got {value!r}")


@dataclass(frozen=True, init=False)
class Host:
    """One server of the cluster (BandPilot §3.1: the GPUs of ``A`` are grouped by host).

    Parameters
    ----------
    name
        Host name (a non-empty string; unique within an instance).
    type
        Host type, a non-empty string (e.g. ``"H100"``, ``"4090"``; a number is refused);
        bandwidth models key their tables by it.
    gpus
        Number of GPUs, local indices ``0 .. gpus - 1``; ``1 <= gpus <= 16``.
    available
        Idle local indices: any collection (list, tuple, set, NumPy array, ...) of distinct
        indices below ``gpus``, stored sorted as a tuple; ``None`` (the default) means every GPU
        is idle.

    Notes
    -----
    Integers may be given as integral floats (``8.0``) or NumPy integers and are stored as
    ``int``; booleans are refused.

    Raises
    ------
    InvalidInstanceError
        With a field path relative to the host (``gpus``, ``available[1]``); inside an
        instance the path is prefixed (``hosts[2].available[1]``).

    Examples
    --------
    >>> Host("n0", "H100", 8.0, [5, 1])
    Host(name='n0', type='H100', gpus=8, available=(1, 5))
    >>> Host("n1", "V100", 4).available_mask
    15
    """

    name: str
    type: str
    gpus: int
    available: tuple[int, ...]

    def __init__(
        self, name: str, type: str, gpus: int, available: Iterable[int] | None = None
    ) -> None:
        put = object.__setattr__
        put(self, "name", v.as_str(name, "name"))
        put(self, "type", type_name(type, "type"))
        count = v.as_int(gpus, "gpus", minimum=1)
        if count > MAX_GPUS_PER_HOST:
            raise InvalidInstanceError("gpus", f"must be <= {MAX_GPUS_PER_HOST}, got {count}")
        put(self, "gpus", count)
        put(self, "available", self._idle(available, count))

    def _idle(self, value: Any, gpus: int) -> tuple[int, ...]:
        if value is None:
            return tuple(range(gpus))
        listed = tuple(value) if isinstance(value, Set) else v.as_tuple(value, "available")
        seen: set[int] = set()
        for j, raw in enumerate(listed):
            where = f"available[{j}]"
            idx = v.as_int(raw, where, minimum=0)
            if idx >= gpus:
                raise InvalidInstanceError(
                    where, f"unknown GPU index {idx}: host {self.name!r} has GPUs 0..{gpus - 1}"
                )
            if idx in seen:
                raise InvalidInstanceError(where, f"GPU {idx} is listed twice")
            seen.add(idx)
        return tuple(sorted(seen))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Host:
        """Read ``{"name": ..., "type": ..., "gpus": 8, "available": [...]}`` (``available``
        optional: every GPU idle)."""
        data = v.as_mapping(data, "host")
        return cls(
            name=v.field(data, "name"),
            type=v.field(data, "type"),
            gpus=v.field(data, "gpus"),
            available=data.get("available"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the host (``available`` always listed)."""
        return {
            "name": self.name,
            "type": self.type,
            "gpus": self.gpus,
            "available": list(self.available),
        }

    @property
    def available_mask(self) -> int:
        """Bitmask of the idle GPUs."""
        return mask_of(self.available)

    @property
    def n_available(self) -> int:
        """Number of idle GPUs."""
        return len(self.available)
