"""Whole messages over a pipe between this process and one it forked: the `--jobs` workers
(`read.forks`) and the tiktoken helper (`tokens.remote`) both frame theirs by a length and need
every byte of it, which one `os.read` or `os.write` on a pipe does not promise."""

from __future__ import annotations

import os

#: The most one `os.read` asks for (a pipe holds 64 KiB; a larger ask only allocates a larger buffer).
_CHUNK = 1 << 20


def read_exactly(fd: int, n: int) -> bytes | None:
    """`n` bytes from `fd`, or None when the other end closed (or the pipe broke) before them."""
    parts = []
    while n:
        try:
            chunk = os.read(fd, min(n, _CHUNK))
        except OSError:
            return None
        if not chunk:
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def write_all(fd: int, data: bytes) -> None:
    """All of `data` to `fd` (an `OSError`, such as a broken pipe, is the caller's to handle)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
