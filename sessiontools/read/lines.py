"""Physical lines of a JSONL file held in memory, the one way every reader numbers them."""

from __future__ import annotations

from collections.abc import Iterator


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
