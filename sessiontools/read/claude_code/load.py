"""Open Claude Code transcripts (the only module of this reader that touches files).

``load_claude_file(path)`` reads one ``.jsonl`` transcript (``read.sources.expand_sources`` finds them
in directories and globs, with every agent's files); ``default_projects_dir(env, home)``
is where Claude Code keeps them: ``$CLAUDE_CONFIG_DIR/projects`` when that variable is set, else
``~/.claude/projects`` (the caller passes the environment: core code does not read it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from operator import attrgetter
from pathlib import Path
from typing import Any

import orjson

from sessiontools.read.claude_code.checks import TREE, check_line, check_tree
from sessiontools.read.claude_code.lean import LEAN_SPEC, project_lines
from sessiontools.read.claude_code.records import (
    CONVERSATION_TYPES,
    KNOWN_TYPES,
    ClaudeFile,
    Record,
    parse_record,
)
from sessiontools.read.claude_code.summary import ClaudeSummary, summarize
from sessiontools.read.diagnostics import Diagnostic, DiagnosticKind
from sessiontools.read.files import digest_of, read_file_bytes
from sessiontools.read.lines import DEFAULT_MAX_LINE_BYTES, line_views, too_long
from sessiontools.read.parse import gc_paused, surrogate_line

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


def parse_bytes(data: bytes, path: str = "<memory>", *,
                max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, texts: bool = True) -> ClaudeFile:
    """Parse transcript bytes; bad lines become Diagnostics, the rest records (file order). A line
    over `max_line_bytes` (None: any length) is skipped with its reason. Without `texts` the long
    texts no count reads are validated and not built (`lean.LEAN_SPEC`: for `inspect`)."""
    with gc_paused():  # (see `gc_paused`: parsed JSON holds no cycles)
        records, diags, unknown = _parse_lines(data, path, max_line_bytes, texts)
    for t, n in unknown.items():
        diags.append(Diagnostic(path, n, f"unknown line type {t!r} (kept, not interpreted)", DiagnosticKind.NOTICE))
    return ClaudeFile(path, _relink(records), sorted(diags, key=attrgetter("line")), texts=texts)


def _decoded(n: int, raw: memoryview, after: int, data: bytes, path: str, limit: int,
             diags: list[Diagnostic]) -> Any:
    """One line's JSON value, read the ordinary way (orjson, then the careful fallback), or None
    when the line is blank, over `limit` bytes (0: any) or not JSON (its diagnostic added to `diags`)."""
    if not raw:
        return None
    if limit and len(raw) > limit:
        diags.append(Diagnostic(path, n, too_long(len(raw), limit) or "", DiagnosticKind.SKIPPED))
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not bytes(raw).strip():  # a line of blanks (orjson rejects it): nothing to read
            return None
        obj, changed = surrogate_line(raw)
        if obj is None:
            last = after > len(data) or _NONBLANK.search(data, after) is None  # only blank lines after it
            why = "truncated last line (not JSON)" if last and not data.endswith(b"\n") else "not JSON"
            diags.append(Diagnostic(path, n, why, DiagnosticKind.SKIPPED))
            return None
        diags.append(Diagnostic(path, n, f"lone surrogate escape(s) in {changed} string(s) replaced by U+FFFD",
                                DiagnosticKind.RECOVERED))
        return obj


def _values(data: bytes, path: str, limit: int, diags: list[Diagnostic]) -> Iterator[tuple[int, Any, bool]]:
    """`(n, value, checked)` of each line that holds JSON, the ordinary way (`checked`: False)."""
    for n, raw, after in line_views(data):
        obj = _decoded(n, raw, after, data, path, limit, diags)
        if obj is not None:
            yield n, obj, False


def _lean_values(data: bytes, path: str, limit: int, diags: list[Diagnostic]) -> Iterator[tuple[int, Any, bool]]:
    """`_values` with the C scanner (`read._native.project_lines`): every line validated in one pass
    and built without the long texts `lean.LEAN_SPEC` names; a line the scanner leaves (not sure
    orjson reads it the same, or a skipped text of a kind the checks would drop) or whose checked
    fields do not all pass their fast marks (`checked`: True when they do) goes the ordinary way."""
    view = memoryview(data)
    for n, (start, stop, fields) in enumerate(project_lines(data, LEAN_SPEC, 1, limit), 1):
        if fields is not None and check_tree(fields, TREE):
            yield n, fields, True
            continue
        obj = _decoded(n, view[start:stop], stop + 1, data, path, limit, diags)
        if obj is not None:
            yield n, obj, False


def _parse_lines(data: bytes, path: str, max_line: int | None = DEFAULT_MAX_LINE_BYTES, texts: bool = True,
                 ) -> tuple[list[Record], list[Diagnostic], dict[str, int]]:
    """The records, the diagnostics and the first line of each unknown line type. Each line is
    parsed from a view of `data` (no copy of the file cut into lines)."""
    records: list[Record] = []
    diags: list[Diagnostic] = []
    seen: set[str] = set()
    unknown: dict[str, int] = {}
    limit = max_line or 0
    lean = not texts and project_lines is not None and check_tree is not None
    for n, obj, checked in (_lean_values if lean else _values)(data, path, limit, diags):
        if type(obj) is dict and not checked:
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


def load_claude_file(path: str | os.PathLike[str], *,
                     max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, texts: bool = True) -> ClaudeFile:
    """Read one transcript file (never written to); `texts`: see `parse_bytes`."""
    p = Path(path)
    return parse_bytes(read_file_bytes(p), str(p), max_line_bytes=max_line_bytes, texts=texts)


#: Keys only Claude Code's lines carry among the JSONL session formats read here (a Pi entry has
#: `id`/`parentId`, a Codex line `payload`): the conversation tree, a title's leaf, a snapshot's message.
_CLAUDE_KEY = re.compile(rb'"(?:sessionId|uuid|parentUuid|leafUuid|isSidechain|messageId)"\s*:')
_TYPE = re.compile(rb'"type"\s*:\s*"([^"\\]{1,64})"')
_SNIFF_LINES = 400


def _claims(obj: dict[str, Any]) -> bool | None:
    """What one whole line says: True (a Claude Code line), False (another agent's header), None (nothing)."""
    t = obj.get("type")
    if t == "session":  # a Pi session header
        return False
    if not isinstance(t, str) or t not in KNOWN_TYPES:  # a list or object type is unhashable
        return None
    if t == "file-history-snapshot":
        return "messageId" in obj or "snapshot" in obj
    if t == "summary":
        return "leafUuid" in obj or "summary" in obj
    return "sessionId" in obj or "uuid" in obj or "parentUuid" in obj or None


def _claims_prefix(raw: bytes) -> bool:
    """Whether the start of a line that does not parse (cut by the end of the head, or damaged) is a
    Claude Code line: a line type Claude Code writes and one of its keys, in the bytes there are."""
    m = _TYPE.search(raw)
    return m is not None and m.group(1).decode("utf-8", "replace") in KNOWN_TYPES and (
        _CLAUDE_KEY.search(raw) is not None)


def _head_lines(head: bytes, n: int) -> Iterator[bytes]:
    """``head.split(b"\\n", n)[:n]``, one line at a time: the first line usually says, and the head
    (64 KiB) of a file of short lines was cut into hundreds of bytes objects for each file sniffed."""
    start = 0
    for _ in range(n):
        nl = head.find(b"\n", start)
        if nl < 0:
            yield head[start:]
            return
        yield head[start:nl]
        start = nl + 1


def looks_like_claude_code(head: bytes) -> bool:
    """True when ``head`` (the first bytes of a file, however many the caller read) looks like a
    Claude Code transcript: among its lines, one of a line type Claude Code writes with the keys it
    writes (a ``file-history-snapshot`` or ``summary`` line counts, so does the start of a line cut
    by the end of the head: a first user message of 20 KB or more). A Pi session header first says
    no. Other tools' JSONL files that carry a ``sessionId`` (OpenClaw's ``*.trajectory.jsonl``
    traces: ``session.started``, ...) are not Claude Code transcripts: their line types are not."""
    for raw in _head_lines(head, _SNIFF_LINES):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            if _claims_prefix(raw):
                return True
            continue
        if not isinstance(obj, dict):
            continue
        verdict = _claims(obj)
        if verdict is not None:
            return verdict
    return False


def load_claude_session(path: str | os.PathLike[str], *, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
                        texts: bool = True, summary: bool = False, data: bytes | None = None,
                        content_hash: bool = False) -> ClaudeFile | ClaudeSummary:
    """A transcript file (its bytes `data` when the caller has them) with its subagent files
    (`subagent_files`) read into `subagents`, each read once. With `summary` (and without `texts`:
    `inspect`), the C's summary of them when it is sure of every line (`summary.summarize`), else the
    same files read the ordinary way; with `content_hash` (for result caches), the ordinary reading
    and the key of the session file's bytes and its subagent files' (`read.files.digest_of`)."""
    p = Path(path)
    subs = subagent_files(path)
    datas = [read_file_bytes(p) if data is None else data, *(read_file_bytes(sub) for sub in subs)]
    if summary and not texts and not content_hash:
        s = summarize(datas, [str(p), *map(str, subs)], max_line_bytes)
        if s is not None:
            return s
    f = parse_bytes(datas[0], str(p), max_line_bytes=max_line_bytes, texts=texts)
    f.subagents = [parse_bytes(d, str(sub), max_line_bytes=max_line_bytes, texts=texts)
                   for sub, d in zip(subs, datas[1:], strict=True)]
    if content_hash:
        f.content_hash = digest_of(datas[0], *(part for sub, d in zip(subs, datas[1:], strict=True)
                                               for part in (Path(sub).name.encode(), d)))
    return f
