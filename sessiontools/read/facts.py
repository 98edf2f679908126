"""What a session file says about itself in its first lines: its agent, working directory, start.

`--group-by project|day|week|month` needs these for every file of a folder, so they come from the
first 64 KiB (the bytes agent detection reads anyway), never from a full read: Pi's header
(`{"type":"session",...,"timestamp","cwd"}`), Codex's `session_meta` line and Claude Code's first
lines all carry a `cwd` and an ISO `timestamp`. The first of each wins.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import orjson

from sessiontools.read.sources import detect_agent, head_of

_CWD = re.compile(rb'"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*"(\d{4}-\d\d-\d\dT[^"]*)"')


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """`agent` (pi, codex, claude-code), `cwd` and `started` (ISO 8601 text) when the head has them."""

    agent: str
    cwd: str | None
    started: str | None


def facts_from_head(head: bytes) -> SessionFacts:
    cwd = None
    m = _CWD.search(head)
    if m:
        try:
            value = orjson.loads(m.group(1))
            cwd = value if isinstance(value, str) and value else None
        except orjson.JSONDecodeError:
            cwd = None
    t = _TIMESTAMP.search(head)
    return SessionFacts(detect_agent(head).value, cwd, t.group(1).decode("ascii", "replace") if t else None)


def session_facts(path: str | os.PathLike[str]) -> SessionFacts:
    """The facts of one file (a file that cannot be read has none: its reader reports why)."""
    return facts_from_head(head_of(path))
