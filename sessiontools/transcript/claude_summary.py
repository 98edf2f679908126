"""The neutral transcript of a Claude Code session the C summed up for `inspect`
(`read.claude_code.summary.ClaudeSummary`, sessiontools/read/_claude.c).

It is the lean transcript (`transcript.claude_code`, a file read without its texts) with less in
it: the same paths, messages (index, uuid, line, role, kept as the C's columns: `model.MessageColumns`;
no units, timestamp or raw line),
compactions (no summary text), skipped replies, billed responses (`Transcript.billed`, the C's rows: `model.BilledRows`),
diagnostics, format and the settings `inspect` reports (the scalar ones: version, cwd, git
branch, entrypoint, compact boundaries, largest answered prompt); no per-path requests, and no
models, titles or line types in the settings. Only `inspect` reads a session this way
(tests/read/test_claude_summary.py holds its JSON equal to the ordinary way's).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sessiontools.read.claude_code.summary import ClaudeSummary, FileSummary
from sessiontools.read.parse import gc_paused
from sessiontools.read.values import cleaned_for
from sessiontools.transcript.claude_code import format_of, with_sidechains
from sessiontools.transcript.model import (
    Agent,
    BilledRows,
    Compaction,
    MessageColumns,
    Role,
    Transcript,
    TranscriptPath,
    Trigger,
    ranges_of,
)

#: The C's codes (_claude.c: R_*, TR_*).
_ROLES = (Role.USER, Role.ASSISTANT, Role.TOOL, Role.SUMMARY, Role.OTHER)
_TRIGGERS = (Trigger.THRESHOLD, Trigger.MANUAL, Trigger.OVERFLOW, Trigger.UNKNOWN)


def _path(leaf: str | None, side: bool, lines: list[int], uuids: list[str], roles: list[int],
          comps: list[tuple[Any, ...]], synthetic: int, no_usage: int) -> TranscriptPath:
    messages = MessageColumns(uuids, lines, list(map(_ROLES.__getitem__, roles)))
    compactions = tuple(Compaction(index=index, line=line, trigger=_TRIGGERS[trigger], tokens_before=pre,
                                   tokens_after=post, kept=ranges_of(kept), id=uuid, timestamp=ts)
                        for index, line, trigger, pre, post, kept, uuid, ts in comps)
    skipped: Counter[str] = Counter()
    if synthetic:
        skipped["synthetic"] = synthetic
    if no_usage:
        skipped["no usage"] = no_usage
    return TranscriptPath(leaf, messages, (), compactions, (), side, skipped)


def _file(f: FileSummary, session_id: str | None = None) -> Transcript:
    version, sid, cwd, branch, entrypoint, boundaries, off = f.facts
    paths = [_path(*p) for p in f.paths]
    legacy = bool(paths) and bool(paths[0].compactions) and not boundaries
    settings = {"version": version, "cwd": cwd, "git_branch": branch, "entrypoint": entrypoint,
                "compact_boundaries": boundaries, "largest_answered_prompt": f.largest}
    return cleaned_for(f, Transcript(
        agent=Agent.CLAUDE_CODE, source=f.path, session_id=sid, format=format_of(version, legacy), paths=paths,
        diagnostics=f.diagnostics(), settings=settings,
        off_path_compactions=[Compaction(index=-1, line=line, trigger=_TRIGGERS[trigger], tokens_before=pre,
                                         tokens_after=post, id=uuid, timestamp=ts)
                              for line, trigger, pre, post, uuid, ts in off]))


def summary_transcript(s: ClaudeSummary) -> Transcript:
    """As `claude_code.claude_transcript` makes it: the session file's transcript, its subagent
    files' paths as sidechains (their diagnostics after its), every billed response of them all."""
    with gc_paused():  # (a collection every few hundred messages would traverse all built so far)
        return _transcript(s)


def _transcript(s: ClaudeSummary) -> Transcript:
    t = _file(s.files[0])
    t.billed = BilledRows("anthropic", s.billed)
    return with_sidechains(t, ((sub.path, _file(sub)) for sub in s.files[1:]))
