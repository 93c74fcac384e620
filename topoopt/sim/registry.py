"""Named plug-ins of the simulator: queue policies, trace formats and performance models.

Each kind has one :class:`Registry`: topoopt's own entries register themselves when their
module is imported, and an installed package adds its own through the registry's entry-point
group (``name = "package.module:OBJECT"``) without a change to topoopt, as families do
(``docs/sim.md``, "Plugging in").
"""

from __future__ import annotations

import difflib
import importlib
import warnings
from collections.abc import Callable
from typing import Generic, TypeVar

from topoopt.core.errors import TopooptError

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries of one kind by name, filled by their modules and by entry points.

    Parameters
    ----------
    kind
        What an entry is, for messages (``"queue policy"``).
    group
        The entry-point group installed packages declare entries in.
    modules
        topoopt's own modules whose import registers the built-in entries.
    """

    def __init__(self, kind: str, group: str, modules: tuple[str, ...]) -> None:
        self.kind = kind
        self.group = group
        self._modules = modules
        self._entries: dict[str, T] = {}
        self._loaded = False

    def register(self, name: str, entry: T) -> T:
        """Add ``entry`` under ``name`` (a second registration of a name replaces the first)."""
        if not isinstance(name, str) or not name:
            raise TopooptError(f"{self.kind}: a name must be a non-empty string, got {name!r}")
        self._entries[name] = entry
        return entry

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for module in self._modules:
            importlib.import_module(module)
        from importlib.metadata import entry_points

        for point in sorted(entry_points(group=self.group), key=lambda p: p.name):
            try:
                self.register(point.name, point.load())
            except Exception as exc:  # one broken plug-in must not break the simulator
                warnings.warn(
                    f"{self.kind} plug-in {point.name!r} ({point.value}) failed to load: "
                    f"{type(exc).__name__}: {exc}",
                    RuntimeWarning,
                    stacklevel=2,
                )

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        self._load()
        return sorted(self._entries)

    def get(self, name: str) -> T:
        """The entry ``name``.

        Raises
        ------
        TopooptError
            For an unknown name, listing the known ones (and the closest).
        """
        self._load()
        if name in self._entries:
            return self._entries[name]
        close = difflib.get_close_matches(str(name), self._entries, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        known = ", ".join(self.names())
        raise TopooptError(f"unknown {self.kind} {name!r}{hint} (known: {known})")

    def decorator(self, name: str) -> Callable[[T], T]:
        """``@registry.decorator("name")``: register the decorated object under ``name``."""
        return lambda entry: self.register(name, entry)
