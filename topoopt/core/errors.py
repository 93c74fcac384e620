"""Errors raised by topoopt.

Every error a user can provoke with bad input derives from :class:`TopooptError`, so a
scheduler can catch one type. Input errors name the field (a JSON path such as
``job.tp``) and the rule that was broken.
"""

from __future__ import annotations


class TopooptError(Exception):
    """Base class of every error topoopt raises on purpose.

    Its message is always one line: control characters that reach it from the input (a key
    or a name with a newline, an escape sequence) are escaped
    (:func:`topoopt.core.text.printable`).
    """

    def __str__(self) -> str:
        from topoopt.core.text import printable

        return printable(super().__str__())


class InvalidInstanceError(TopooptError, ValueError):
    """An instance (or a file holding one) breaks a rule of its family.

    Parameters
    ----------
    field
        JSON path of the offending field, e.g. ``"topology.minipods[2].free_nodes"``.
    rule
        The rule that was broken, in plain words.

    Examples
    --------
    >>> str(InvalidInstanceError("alpha", "must lie in [0, 1], got 1.5"))
    'alpha: must lie in [0, 1], got 1.5'
    """

    def __init__(self, field: str, rule: str) -> None:
        self.field = field
        self.rule = rule
        super().__init__(f"{field}: {rule}")


class InvalidSolutionError(TopooptError, ValueError):
    """A solution given by the user does not have the shape its family expects."""


class UnknownSolverError(TopooptError, KeyError):
    """No solver is registered under the requested name."""

    def __str__(self) -> str:  # KeyError would quote the message
        from topoopt.core.text import printable

        return printable(self.args[0])


class UnknownFamilyError(TopooptError, KeyError):
    """No problem family is registered under the requested name."""

    def __str__(self) -> str:
        from topoopt.core.text import printable

        return printable(self.args[0])


class InvalidOptionError(TopooptError, ValueError):
    """A solver was called with an option it does not know or a value it does not accept."""


class BackendUnavailableError(TopooptError, RuntimeError):
    """A MIP backend was requested that is unknown or whose Python package is not installed."""


class UnsupportedInstanceError(TopooptError, ValueError):
    """A solver was asked to solve an instance outside its scope (the message says why)."""
