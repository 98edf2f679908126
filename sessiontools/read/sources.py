"""One entry point for every agent's files: sniff which agent wrote a file, read it with that reader.

Detection looks at the first lines only (64 KiB): a Codex rollout starts with `session_meta`
(`{"timestamp", "type", "payload"}`) or an old bare item; a Claude Code transcript's lines carry
`sessionId`/`uuid` (and no Pi `session` header); anything else is handed to the Pi reader, which
says itself when a file is no Pi session. Adding an agent is adding a `Reader` to `READERS`.

Inputs may also be fsspec URLs (`s3://...`, `gs://...`, `memory://...`, see `read/remote.py`): the
bytes are fetched once and handed to the reader's `from_bytes` (a Claude Code session read from a
URL comes without its subagent files).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontools.errors import InputError
from sessiontools.read.agents import Agent
from sessiontools.read.files import DEFAULT_MAX_FILE_BYTES, check_input, open_error
from sessiontools.read.lines import DEFAULT_MAX_LINE_BYTES
from sessiontools.read.remote import expand_url, is_url, read_url, url_of

SNIFF_BYTES = 65536


@dataclass(frozen=True, slots=True)
class Reader:
    """An agent's reader: how to recognise its files and how to read one."""

    agent: Agent
    recognises: Callable[[bytes], bool]
    load: Callable[..., Any]  # (path, *, content_hash, max_line_bytes) -> the agent's raw session object
    from_bytes: Callable[..., Any]  # (data, path, *, content_hash, max_line_bytes) -> the same, from bytes


def _codex_recognises(head: bytes) -> bool:
    from sessiontools.read.codex.load import is_rollout

    return is_rollout(head)


def _codex_load(path: str, *, content_hash: bool = False, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES) -> Any:
    from sessiontools.read.codex.load import load_rollout

    return load_rollout(path, max_line_bytes=max_line_bytes)


def _codex_bytes(data: bytes, path: str, *, content_hash: bool = False,
                 max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES) -> Any:
    from sessiontools.read.codex.load import read_rollout_bytes

    return read_rollout_bytes(data, path, max_line_bytes=max_line_bytes)


def _claude_recognises(head: bytes) -> bool:
    from sessiontools.read.claude_code.load import looks_like_claude_code

    return looks_like_claude_code(head)


def _claude_load(path: str, *, content_hash: bool = False, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES) -> Any:
    from sessiontools.read.claude_code.load import load_claude_session

    return load_claude_session(path, max_line_bytes=max_line_bytes)


def _claude_bytes(data: bytes, path: str, *, content_hash: bool = False,
                  max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES) -> Any:
    from sessiontools.read.claude_code.load import parse_bytes

    return parse_bytes(data, path, max_line_bytes=max_line_bytes)


def _pi_bytes(data: bytes, path: str, *, content_hash: bool = False,
              max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, selective: bool = False) -> Any:
    from sessiontools.read.pi.load import read_data

    return read_data(data, path, content_hash=content_hash, max_line_bytes=max_line_bytes, selective=selective)


def _pi_load(path: str, *, content_hash: bool = False, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
             selective: bool = False) -> Any:
    from sessiontools.read.pi.load import load_session

    return load_session(path, content_hash=content_hash, max_line_bytes=max_line_bytes, selective=selective)


READERS: list[Reader] = [
    Reader(Agent.CODEX, _codex_recognises, _codex_load, _codex_bytes),
    Reader(Agent.CLAUDE_CODE, _claude_recognises, _claude_load, _claude_bytes),
]
#: The reader for files no other reader recognises (it reports what it cannot read).
FALLBACK = Reader(Agent.PI, lambda head: True, _pi_load, _pi_bytes)


def expand_sources(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path | str]:
    """Session files named, `*.jsonl` below directories (sorted), glob matches; each once, in order.

    A Claude Code subagent file found in a directory is left out when its session file exists (it
    is read as part of that session); one named explicitly is kept. An fsspec URL expands the same
    way and its files come back as URL strings (a `Path` would fold `//`).
    """
    from sessiontools.read.claude_code.load import transcript_files

    seen: set[str] = set()
    local: list[str | os.PathLike[str]] = []
    for raw in paths:
        if not is_url(raw):
            local.append(raw)
            continue
        yield from transcript_files(local)
        local = []
        for url in expand_url(url_of(raw) or os.fspath(raw)):
            if url not in seen:
                seen.add(url)
                yield url
    yield from transcript_files(local)


def head_of(path: str | os.PathLike[str]) -> bytes:
    """The first bytes of a file, for detection ("" for what cannot be opened: the reader says why)."""
    if is_url(path):
        try:
            return read_url(url_of(path) or os.fspath(path), SNIFF_BYTES)
        except InputError:
            return b""
    try:
        check_input(path, None)
        with open(path, "rb") as fh:
            return fh.read(SNIFF_BYTES)
    except (OSError, InputError):
        return b""


def detect_agent(head: bytes) -> Agent:
    """The agent whose reader recognises these first bytes (Pi when none does)."""
    return reader_for(head).agent


def pi_header_first(head: bytes) -> bool:
    """Whether the first non-blank line of `head` is a Pi session header (an object with `"type":
    "session"`). No other reader claims such a file (Codex's `is_rollout` wants `session_meta` or no
    `type`; Claude Code's sniffing says no at a Pi header), so `reader_for` gives it to Pi without
    importing them (a fifth of a small `inspect`'s start-up). Anything else, a line that does not
    parse included, goes through every reader."""
    import orjson

    start = 0
    while start < len(head):
        nl = head.find(b"\n", start)
        line = head[start:] if nl < 0 else head[start:nl]
        if line.strip():
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                return False
            return isinstance(obj, dict) and obj.get("type") == "session"
        if nl < 0:
            break
        start = nl + 1
    return False


def reader_for(head: bytes) -> Reader:
    if pi_header_first(head):
        return FALLBACK
    for r in READERS:
        if r.recognises(head):
            return r
    return FALLBACK


def load_source(path: str | os.PathLike[str], *, content_hash: bool = False,
                max_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
                max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, selective: bool = False) -> Any:
    """Read one session file with its agent's reader: a Pi `Session`, a Codex `Rollout`, ...

    Every returned object has `path`, `diagnostics` and a class attribute `agent`. Only a regular
    file of at most `max_bytes` is opened (`read.files.check_input`); a line over `max_line_bytes`
    (None: any length) is skipped with a `file:line` reason. `selective`: a Pi session is read with
    only the fields a command that does not replay reads (`read.pi.selective`; inspect).
    """
    limits = {"content_hash": content_hash, "max_line_bytes": max_line_bytes}
    pi = {**limits, "selective": selective}  # (only the Pi reader reads selectively on request)
    if is_url(path):
        url = url_of(path) or os.fspath(path)
        data = read_url(url)
        reader = reader_for(data[:SNIFF_BYTES])
        return reader.from_bytes(data, url, **(pi if reader is FALLBACK else limits))
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory")
    check_input(p, max_bytes)
    try:
        fh = open(p, "rb")
    except OSError:
        return FALLBACK.load(str(path), **limits)  # the reader says why it cannot
    with fh:
        try:
            head = fh.read(SNIFF_BYTES)
            reader = reader_for(head)
            if reader is not FALLBACK:
                return reader.load(str(path), **limits)
            # A Pi session (or no session: the Pi reader says so): the file is opened once.
            if len(head) == SNIFF_BYTES:  # read again from the start: one buffer (head + rest copied it all)
                fh.seek(0)
                data = fh.read()
            else:
                data = head
        except OSError as exc:
            raise open_error(p, exc) from exc
    return FALLBACK.from_bytes(data, str(path), **pi)




def content_digest(path: str | os.PathLike[str]) -> str:
    """sha256 (hex) of a file's bytes, local or URL: the identity of a file in an exported dataset."""
    import hashlib

    if is_url(path):
        return hashlib.sha256(read_url(url_of(path) or os.fspath(path))).hexdigest()
    h = hashlib.sha256()
    check_input(path, None)
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    return h.hexdigest()
