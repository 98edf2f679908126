"""Limits on inputs the user can change from the environment (read here, in cli/: core code never
reads the environment)."""

import os

from sessiontools.errors import UsageError


def _env_number(name: str, what: str) -> float | None:
    """`$name` as a number >= 0 (None when unset or empty); a usage error otherwise."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value >= 0 and value != float("inf")):
        raise UsageError(f"{name}={raw!r}: give {what}")
    return value


def max_line_bytes() -> int | None:
    """The longest input line read: `$SESSIONTOOLS_MAX_LINE_BYTES` (0 = no limit), else the default."""
    from sessiontools.read.lines import DEFAULT_MAX_LINE_BYTES, MAX_LINE_BYTES_ENV

    value = _env_number(MAX_LINE_BYTES_ENV, "a whole number of bytes (0 for no limit)")
    if value is None:
        return DEFAULT_MAX_LINE_BYTES
    if value != int(value):
        raise UsageError(f"{MAX_LINE_BYTES_ENV}={os.environ[MAX_LINE_BYTES_ENV]!r}: give a whole number of bytes "
                         "(0 for no limit)")
    return int(value) or None


#: How long an export waits for another export into the same dataset (seconds); the override.
LOCK_TIMEOUT_ENV = "SESSIONTOOLS_LOCK_TIMEOUT"


def lock_timeout() -> float:
    """How long an export waits for the dataset's lock: `$SESSIONTOOLS_LOCK_TIMEOUT` seconds (0: do
    not wait), else the default (`report.dataset.LOCK_TIMEOUT`)."""
    from sessiontools.report.dataset import LOCK_TIMEOUT

    value = _env_number(LOCK_TIMEOUT_ENV, "a number of seconds (0: do not wait)")
    return LOCK_TIMEOUT if value is None else value


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
