"""Opening input files: the one place that turns an operating-system error into a user's message."""

from __future__ import annotations

import os
from pathlib import Path

from sessiontools.errors import InputError


def open_error(where: str | os.PathLike[str], exc: OSError) -> InputError:
    """`InputError` for an OSError raised while opening or reading `where` (a path or a URL)."""
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{where}: no such file")
    if isinstance(exc, PermissionError):
        return InputError(f"{where}: permission denied")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{where}: is a directory")
    return InputError(f"{where}: cannot read ({exc.strerror or exc})")


def read_file_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a local file (never written to). Raises `InputError`."""
    p = Path(path)
    try:
        return p.read_bytes()
    except OSError as exc:
        raise open_error(p, exc) from exc
