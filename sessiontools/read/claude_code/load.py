"""Open Claude Code transcripts (the only module of this reader that touches files).

``load_claude_file(path)`` reads one ``.jsonl`` transcript; ``transcript_files(paths)`` expands
files, directories (every ``*.jsonl`` below, sorted) and globs; ``default_projects_dir(env, home)``
is where Claude Code keeps them: ``$CLAUDE_CONFIG_DIR/projects`` when that variable is set, else
``~/.claude/projects`` (the caller passes the environment: core code does not read it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from operator import attrgetter
from pathlib import Path

import orjson

from sessiontools.read.claude_code.checks import check_line
from sessiontools.read.claude_code.records import (
    CONVERSATION_TYPES,
    KNOWN_TYPES,
    ClaudeFile,
    Record,
    parse_record,
)
from sessiontools.read.diagnostics import Diagnostic, DiagnosticKind
from sessiontools.read.files import path_key, read_file_bytes
from sessiontools.read.lines import line_views
from sessiontools.read.pi.load import expand_paths, gc_paused

_SNIFF = 8192
_NONBLANK = re.compile(rb"\S")  # (bytes.strip's whitespace is \s)


def default_projects_dir(env: Mapping[str, str], home: Path) -> Path:
    """``$CLAUDE_CONFIG_DIR/projects`` if set, else ``<home>/.claude/projects``."""
    cfg = env.get("CLAUDE_CONFIG_DIR")
    return Path(cfg) / "projects" if cfg else home / ".claude" / "projects"


def subagent_files(session: str | os.PathLike[str]) -> list[Path]:
    """The subagent transcripts newer Claude Code writes beside a session file:
    ``<project>/<session id>/subagents/agent-*.jsonl`` (sorted)."""
    p = Path(session)
    folder = p.with_suffix("") / "subagents"
    return sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []


def _is_stitched_subagent(f: Path) -> bool:
    return f.parent.name == "subagents" and f.parent.parent.with_suffix(".jsonl").is_file()


def transcript_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Files named, ``*.jsonl`` below directories (sorted), glob matches; each once, in order.

    A subagent file found in a directory or glob is left out when its session file exists: it is
    read as part of that session (``subagent_files``). A subagent file named explicitly is kept.
    """
    seen: set[Path] = set()
    for raw in paths:
        explicit = Path(os.fspath(raw)).is_file()
        for f in expand_paths([raw]):
            key = path_key(f)
            if key in seen or (not explicit and _is_stitched_subagent(f)):
                continue
            seen.add(key)
            yield f


def parse_bytes(data: bytes, path: str = "<memory>") -> ClaudeFile:
    """Parse transcript bytes; bad lines become Diagnostics, the rest records (file order)."""
    with gc_paused():  # (see `gc_paused`: parsed JSON holds no cycles)
        records, diags, unknown = _parse_lines(data, path)
    for t, n in unknown.items():
        diags.append(Diagnostic(path, n, f"unknown line type {t!r} (kept, not interpreted)", DiagnosticKind.NOTICE))
    return ClaudeFile(path, _relink(records), sorted(diags, key=attrgetter("line")))


def _parse_lines(data: bytes, path: str) -> tuple[list[Record], list[Diagnostic], dict[str, int]]:
    """The records, the diagnostics and the first line of each unknown line type. Each line is
    parsed from a view of `data` (no copy of the file cut into lines)."""
    records: list[Record] = []
    diags: list[Diagnostic] = []
    seen: set[str] = set()
    unknown: dict[str, int] = {}
    loads, JSONDecodeError = orjson.loads, orjson.JSONDecodeError
    end = len(data)
    for n, raw, after in line_views(data):
        if not raw:
            continue
        try:
            obj = loads(raw)
        except JSONDecodeError:
            if not bytes(raw).strip():  # a line of blanks (orjson rejects it): nothing to read
                continue
            last = after > end or _NONBLANK.search(data, after) is None  # only blank lines after it
            why = "truncated last line (not JSON)" if last and not data.endswith(b"\n") else "not JSON"
            diags.append(Diagnostic(path, n, why, DiagnosticKind.SKIPPED))
            continue
        if type(obj) is dict:
            diags.extend(Diagnostic(path, n, why, DiagnosticKind.RECOVERED) for why in check_line(obj))
        rec = parse_record(obj, n, path)
        if isinstance(rec, Diagnostic):
            diags.append(rec)
            continue
        uuid = rec.uuid
        if uuid:
            if uuid in seen and rec.type in CONVERSATION_TYPES:
                diags.append(Diagnostic(path, n, f"duplicate uuid {uuid}: the first line is kept",
                                        DiagnosticKind.SKIPPED))
                continue
            seen.add(uuid)
        if rec.type not in KNOWN_TYPES and rec.type not in unknown:
            unknown[rec.type] = n
        records.append(rec)
    return records, diags, unknown


def _relink(records: list[Record]) -> list[Record]:
    """Parent conversation lines across the other lines that sit in the uuid chain.

    Claude Code (2.0.x) writes ``progress`` lines (hook and tool progress) with a ``uuid`` and a
    ``parentUuid``, and the next conversation line is parented on them: read literally, every such
    line would cut the conversation there. A conversation line whose ``parentUuid`` (or a boundary's
    ``logicalParentUuid``) names such a line is parented on that line's nearest conversation
    ancestor instead (``None`` when there is none: it starts a chain, as it would have).
    """
    through = {r.uuid: r.parent for r in records if r.uuid and r.type not in CONVERSATION_TYPES}
    if not through:
        return records

    def resolve(uuid: str | None) -> str | None:
        seen: set[str] = set()
        while uuid is not None and uuid in through and uuid not in seen:
            seen.add(uuid)
            uuid = through[uuid]
        return uuid

    out: list[Record] = []
    for r in records:
        if r.type in CONVERSATION_TYPES and (r.parent in through or r.logical_parent in through):
            r = replace(r, parent=resolve(r.parent), logical_parent=resolve(r.logical_parent))
        out.append(r)
    return out


def load_claude_file(path: str | os.PathLike[str]) -> ClaudeFile:
    """Read one transcript file (never written to)."""
    p = Path(path)
    return parse_bytes(read_file_bytes(p), str(p))


def looks_like_claude_code(head: bytes) -> bool:
    """True when ``head`` looks like a Claude Code transcript: among its first JSON lines, one of a
    line type Claude Code writes (a Pi session header first says no). Other tools' JSONL files that
    carry a ``sessionId`` (OpenClaw's ``*.trajectory.jsonl`` traces: ``session.started``, ...) are not
    Claude Code transcripts."""
    for raw in head[:_SNIFF].split(b"\n")[:20]:
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or obj.get("type") == "session":
            return False
        t = obj.get("type")
        if t in ("summary", "queue-operation"):
            return True
        if type(t) is str and t in KNOWN_TYPES and ("sessionId" in obj or "uuid" in obj):
            return True
    return False


def load_claude_session(path: str | os.PathLike[str]) -> ClaudeFile:
    """A transcript file with its subagent files (`subagent_files`) read into `subagents`."""
    f = load_claude_file(path)
    f.subagents = [load_claude_file(sub) for sub in subagent_files(path)]
    return f
