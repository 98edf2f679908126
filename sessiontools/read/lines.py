"""Physical lines of a JSONL file held in memory, the one way every reader numbers them."""

from __future__ import annotations

from collections.abc import Iterator

#: The longest line read (a JSON line is parsed into objects several times its size: one line of
#: gigabytes would exhaust memory). Claude Code's lines with images run to a few MB. The CLI's
#: override: the environment variable SESSIONTOOLS_MAX_LINE_BYTES (0 = no limit).
DEFAULT_MAX_LINE_BYTES = 256 * 1024**2
MAX_LINE_BYTES_ENV = "SESSIONTOOLS_MAX_LINE_BYTES"


def too_long(size: int, limit: int | None) -> str | None:
    """The `file:line` reason for a line of `size` bytes over `limit` (None or 0: any size)."""
    if not limit or size <= limit:
        return None
    return (f"line of {size:,} bytes, over the limit of {limit:,} bytes for one line; skipped "
            f"(raise it with {MAX_LINE_BYTES_ENV}=N, 0 for no limit)")


def line_views(data: bytes) -> Iterator[tuple[int, memoryview, int]]:
    """`(n, line, after)` for each physical line of `data`: its 1-based number, a view of it without
    its newline (no copy of the file cut into lines) and the offset just after its newline, which is
    `len(data) + 1` for a last line with no newline. A final newline ends the last line; it does not
    start an empty one."""
    view, find = memoryview(data), data.find
    start, end, n = 0, len(data), 0
    while start < end:
        n += 1
        nl = find(b"\n", start)
        stop = nl if nl >= 0 else end
        yield n, view[start:stop], stop + 1
        start = stop + 1
