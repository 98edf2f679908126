"""Limits on inputs the user can change from the environment (read here, in cli/: core code never
reads the environment)."""

import os

from sessiontools.errors import UsageError


def max_file_bytes() -> int | None:
    """The largest input file read: `$SESSIONTOOLS_MAX_FILE_BYTES` (0 = no limit), else the default."""
    from sessiontools.read.files import DEFAULT_MAX_FILE_BYTES, MAX_FILE_BYTES_ENV

    raw = os.environ.get(MAX_FILE_BYTES_ENV)
    if raw is None or raw.strip() == "":
        return DEFAULT_MAX_FILE_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{MAX_FILE_BYTES_ENV}={raw!r}: give a number of bytes (0 for no limit)") from None
    if value < 0:
        raise UsageError(f"{MAX_FILE_BYTES_ENV}={raw!r}: give a number of bytes (0 for no limit)")
    return value or None
