"""Data files by name: ``data:NAME`` references, resolved through a search path of folders.

Some inputs are measurements that a project may not copy: the BandPilot artifact's nccl-tests
tables, for instance, live in one shared folder and nowhere else. An instance names such a file
by a *data name* instead of a path — ``"data:hosts/H100_node26_allreduce_16MiB.csv"`` — wherever
it may name a file, and the name is looked up in the **data folders**, in order:

* ``TOPOOPT_DATA``, when set: folders separated by ``os.pathsep`` (``:`` on Linux and macOS);
  an empty entry stands for the default folders (``TOPOOPT_DATA=/srv/nccl:`` searches
  ``/srv/nccl``, then the default). Relative folders are taken from the working directory.
* otherwise the default: the folder ``shared/data`` beside the topoopt checkout, when it exists
  — the checkout topoopt is imported from (an editable install) and the checkout holding the
  working directory (a checkout is a folder with ``pyproject.toml`` and ``topoopt/__init__.py``).

The first folder holding ``NAME`` wins. So an instance file naming data loads from any folder
— copied, moved or cloned alone — wherever the data folders are configured, and a missing file
is one line naming the field, the name and every folder looked in
(:class:`DataNotFoundError`; ``topoopt`` exits with status 2).

``NAME`` is a relative path with ``/`` separators: no absolute path, no ``..``, ``.`` or empty
component, no backslash; so a name never leaves its data folder. The folders themselves are
the caller's configuration: a data name is read whatever ``allow_paths`` says, regular files
only, size-capped, strict UTF-8 (see :class:`topoopt.core.safejson.FileAccess`, which routes
every ``data:`` reference here).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from topoopt.core.errors import InvalidInstanceError

PREFIX = "data:"
"""What starts a data name in a file reference."""
ENV = "TOPOOPT_DATA"
"""The environment variable holding the data folders."""
DEFAULT_FOLDER = ("shared", "data")
"""The default data folder, relative to the parent of a topoopt checkout."""


class DataNotFoundError(InvalidInstanceError):
    """A ``data:`` name is not in any data folder (the message names the folders looked in)."""


def is_data_name(reference: object) -> bool:
    """Whether ``reference`` is a data name (a string starting with ``data:``).

    >>> is_data_name("data:hosts/t.csv"), is_data_name("hosts/t.csv")
    (True, False)
    """
    return isinstance(reference, str) and reference.startswith(PREFIX)


def _is_checkout(folder: Path) -> bool:
    return (folder / "pyproject.toml").is_file() and (folder / "topoopt" / "__init__.py").is_file()


def checkouts() -> list[Path]:
    """The topoopt checkouts the default data folder is looked for beside: the one topoopt is
    imported from (an editable install), then the one holding the working directory."""
    found: list[Path] = []
    package_root = Path(__file__).resolve().parents[2]
    if _is_checkout(package_root):
        found.append(package_root)
    try:
        cwd = Path.cwd().resolve()
    except OSError:  # the working directory was removed
        return found
    for folder in (cwd, *cwd.parents):
        if _is_checkout(folder):
            if folder not in found:
                found.append(folder)
            break
    return found


def default_folders() -> list[Path]:
    """``shared/data`` beside each checkout of :func:`checkouts`, those that exist."""
    out: list[Path] = []
    for root in checkouts():
        folder = root.parent.joinpath(*DEFAULT_FOLDER)
        if folder.is_dir() and folder not in out:
            out.append(folder)
    return out


def search_path(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The data folders, in lookup order (module docstring); ``environ`` defaults to
    ``os.environ``."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV)
    if raw is None:
        return default_folders()
    out: list[Path] = []
    for entry in raw.split(os.pathsep):
        for folder in default_folders() if entry == "" else [Path(entry).absolute()]:
            if folder not in out:
                out.append(folder)
    return out


def check_name(reference: str, field: str) -> str:
    """The name of the data name ``reference`` (``data:`` removed), or an error at ``field``.

    >>> check_name("data:hosts/t.csv", "f")
    'hosts/t.csv'
    >>> check_name("data:../t.csv", "bandwidth.intra.T")
    Traceback (most recent call last):
    ...
    topoopt.core.errors.InvalidInstanceError: bandwidth.intra.T: data name '../t.csv' must be a \
relative path of '/'-separated names without '..', '.' or empty parts (e.g. \
data:hosts/table.csv)
    """
    name = reference[len(PREFIX) :]
    parts = name.split("/")
    if not name or "\\" in name or any(p in ("", ".", "..") for p in parts):
        raise InvalidInstanceError(
            field,
            f"data name {name!r} must be a relative path of '/'-separated names without "
            "'..', '.' or empty parts (e.g. data:hosts/table.csv)",
        )
    return name


def _where(folders: Sequence[Path], origin: str) -> str:
    if not folders:
        return f"no data folder ({origin}); set TOPOOPT_DATA to the folder holding it"
    shown = ", ".join(str(f) for f in folders)
    return f"looked in {shown} ({origin}); set TOPOOPT_DATA to the folder holding it"


def _origin(environ: Mapping[str, str] | None) -> str:
    env = os.environ if environ is None else environ
    if ENV in env:
        return f"{ENV}={env[ENV]!r}"
    return f"{ENV} unset; the default is {'/'.join(DEFAULT_FOLDER)} beside a topoopt checkout"


def resolve(
    reference: str,
    field: str,
    folders: Sequence[Path] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """The file the data name ``reference`` names: ``NAME`` in the first data folder that
    holds it.

    ``folders`` defaults to :func:`search_path` of ``environ`` (``os.environ``).

    Raises
    ------
    InvalidInstanceError
        At ``field``, for a malformed name (:func:`check_name`).
    DataNotFoundError
        At ``field``, naming the data name and the folders looked in, when none holds it.
    """
    name = check_name(reference, field)
    if folders is None:
        search, origin = search_path(environ), _origin(environ)
    else:
        search, origin = [Path(f) for f in folders], "the folders given"
    for folder in search:
        target = folder / name
        if target.exists():
            return target
    raise DataNotFoundError(field, f"data file {reference!r} not found: {_where(search, origin)}")


__all__ = [
    "DEFAULT_FOLDER",
    "ENV",
    "PREFIX",
    "DataNotFoundError",
    "check_name",
    "checkouts",
    "default_folders",
    "is_data_name",
    "resolve",
    "search_path",
]
