"""The error every topology reader raises for a malformed file."""

from __future__ import annotations

from os import PathLike

from topoopt.core.errors import TopooptError

__all__ = ["TopologyError"]


class TopologyError(TopooptError, ValueError):
    """A topology, a topology file or a free-node list breaks a rule.

    Parameters
    ----------
    rule
        The rule that was broken, in plain words (it names the switch or node concerned).
    source
        Where the input came from: a file path, or a short description such as
        ``"<hostlist>"``; ``None`` for a topology built in Python.
    line
        1-based line of ``source`` where the problem is, when known.
    path
        For JSON input (which carries no line numbers): the JSON path of the offending
        field, e.g. ``"items[3].metadata.labels"``.

    Examples
    --------
    >>> str(TopologyError("switch 's9' is not defined", source="topology.conf", line=4))
    "topology.conf:4: switch 's9' is not defined"
    >>> str(TopologyError("empty hostlist", source="<free>"))
    '<free>: empty hostlist'
    """

    def __init__(
        self,
        rule: str,
        *,
        source: str | PathLike[str] | None = None,
        line: int | None = None,
        path: str | None = None,
    ) -> None:
        self.rule = rule
        self.source = None if source is None else str(source)
        self.line = line
        self.path = path
        where = self.source or ""
        if line is not None:
            where = f"{where}:{line}"
        if path:
            where = f"{where}: {path}" if where else path
        super().__init__(f"{where}: {rule}" if where else rule)

    def at(self, source: str | PathLike[str] | None, line: int | None = None) -> TopologyError:
        """The same rule located in ``source`` (and ``line``, when this error has none)."""
        return TopologyError(
            self.rule,
            source=source,
            line=self.line if self.line is not None else line,
            path=self.path,
        )
