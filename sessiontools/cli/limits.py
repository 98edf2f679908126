"""Limits on inputs the user can change from the environment (read here, in cli/: core code never
reads the environment)."""

import os

from sessiontools.errors import UsageError

_BYTES = "a number of bytes (0 for no limit)"


def _env(name: str, parse: type[int] | type[float], what: str) -> float | None:
    """`$name` parsed as a finite number >= 0 (None when unset or empty); a usage error otherwise."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    from sessiontools.read.values import number_text

    value = number_text(raw, parse)
    if value is None or value < 0:
        raise UsageError(f"{name}={raw!r}: give {what}")
    return value


def max_line_bytes() -> int | None:
    """The longest input line read: `$SESSIONTOOLS_MAX_LINE_BYTES` (0 = no limit), else the default."""
    from sessiontools.read.lines import DEFAULT_MAX_LINE_BYTES, MAX_LINE_BYTES_ENV

    value = _env(MAX_LINE_BYTES_ENV, int, _BYTES)
    return DEFAULT_MAX_LINE_BYTES if value is None else (int(value) or None)


#: How long an export waits for another export into the same dataset (seconds); the override.
LOCK_TIMEOUT_ENV = "SESSIONTOOLS_LOCK_TIMEOUT"


def lock_timeout() -> float:
    """How long an export waits for the dataset's lock: `$SESSIONTOOLS_LOCK_TIMEOUT` seconds (0: do
    not wait), else the default (`report.dataset.LOCK_TIMEOUT`)."""
    from sessiontools.report.dataset import LOCK_TIMEOUT

    value = _env(LOCK_TIMEOUT_ENV, float, "a number of seconds (0: do not wait)")
    return LOCK_TIMEOUT if value is None else value


def max_file_bytes() -> int | None:
    """The largest input file read: `$SESSIONTOOLS_MAX_FILE_BYTES` (0 = no limit), else the default."""
    from sessiontools.read.files import DEFAULT_MAX_FILE_BYTES, MAX_FILE_BYTES_ENV

    value = _env(MAX_FILE_BYTES_ENV, int, _BYTES)
    return DEFAULT_MAX_FILE_BYTES if value is None else (int(value) or None)
