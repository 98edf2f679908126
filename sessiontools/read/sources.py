"""One entry point for every agent's files: sniff which agent wrote a file, read it with that reader.

Detection looks at the first lines only (64 KiB): a Codex rollout starts with `session_meta`
(`{"timestamp", "type", "payload"}`) or an old bare item; a Claude Code transcript's lines carry
`sessionId`/`uuid` (and no Pi `session` header); anything else is handed to the Pi reader, which
says itself when a file is no Pi session. Adding an agent is adding a `Reader` to `READERS`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontools.errors import InputError
from sessiontools.read.agents import Agent

SNIFF_BYTES = 65536


@dataclass(frozen=True, slots=True)
class Reader:
    """An agent's reader: how to recognise its files and how to read one."""

    agent: Agent
    recognises: Callable[[bytes], bool]
    load: Callable[..., Any]  # (path, *, content_hash: bool) -> the agent's raw session object


def _codex_recognises(head: bytes) -> bool:
    from sessiontools.read.codex.load import is_rollout

    return is_rollout(head)


def _codex_load(path: str, *, content_hash: bool = False) -> Any:
    from sessiontools.read.codex.load import load_rollout

    return load_rollout(path)


def _claude_recognises(head: bytes) -> bool:
    from sessiontools.read.claude_code.load import looks_like_claude_code

    return looks_like_claude_code(head)


def _claude_load(path: str, *, content_hash: bool = False) -> Any:
    from sessiontools.read.claude_code.load import load_claude_session

    return load_claude_session(path)


def _pi_load(path: str, *, content_hash: bool = False) -> Any:
    from sessiontools.read.pi.load import load_session

    return load_session(path, content_hash=content_hash)


READERS: list[Reader] = [
    Reader(Agent.CODEX, _codex_recognises, _codex_load),
    Reader(Agent.CLAUDE_CODE, _claude_recognises, _claude_load),
]
#: The reader for files no other reader recognises (it reports what it cannot read).
FALLBACK = Reader(Agent.PI, lambda head: True, _pi_load)


def expand_sources(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Session files named, `*.jsonl` below directories (sorted), glob matches; each once, in order.

    A Claude Code subagent file found in a directory is left out when its session file exists (it
    is read as part of that session); one named explicitly is kept.
    """
    from sessiontools.read.claude_code.load import transcript_files

    return transcript_files(paths)


def head_of(path: str | os.PathLike[str]) -> bytes:
    """The first bytes of a file, for detection ("" for what cannot be opened: the reader says why)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(SNIFF_BYTES)
    except OSError:
        return b""


def detect_agent(head: bytes) -> Agent:
    """The agent whose reader recognises these first bytes (Pi when none does)."""
    return reader_for(head).agent


def reader_for(head: bytes) -> Reader:
    for r in READERS:
        if r.recognises(head):
            return r
    return FALLBACK


def load_source(path: str | os.PathLike[str], *, content_hash: bool = False) -> Any:
    """Read one session file with its agent's reader: a Pi `Session`, a Codex `Rollout`, ...

    Every returned object has `path`, `diagnostics` and a class attribute `agent`.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory")
    reader = reader_for(head_of(p))
    return reader.load(str(path), content_hash=content_hash)


