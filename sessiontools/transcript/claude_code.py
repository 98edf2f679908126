"""A Claude Code transcript as the agent-neutral transcript (`transcript.model`).

Paths. The main path ends at the last non-sidechain ``user``/``assistant`` line of the file and
walks ``parentUuid`` back to the root, continuing through a ``compact_boundary``'s
``logicalParentUuid``, so the whole history is one path with its compactions on it. Claude Code
parents the result of each parallel tool call on *its* ``tool_use`` line, so the results of the
earlier calls are side leaves: a ``tool_result`` line hanging off the path with no children of its
own is put back on it, and so is a later ``tool_use`` line of the same response (same
``message.id``) that hangs off it with its result (Claude Code parents the next request on the last
result it wrote). Lines are then in file order. Every sidechain leaf (``isSidechain``, a
subagent) is its own path with ``sidechain=True``, after the main path; it stops where the lines
stop being sidechain lines (a subagent does not see the main conversation). Newer Claude Code
writes subagents to ``<session>/subagents/agent-*.jsonl``: ``load_claude_transcript`` adds those
files' paths as sidechains too.

Messages. ``user`` lines: the compact summary (``isCompactSummary``, or text starting with "This
session is being continued from a previous conversation") -> SUMMARY; tool results -> TOOL; text
-> USER; ``isMeta`` and local-command lines (``<command-name>``, ``<local-command-stdout>``, ...)
-> OTHER (they are sent to the model all the same: the lab's token counts after a ``/compact``
only match with them). ``assistant`` lines -> ASSISTANT (text, thinking, tool calls ``name + " " + input JSON``).
``attachment`` lines whose text the line determines (`claude_attachments`: a file the user edited)
-> OTHER, as Claude Code sends them; ``system`` lines and the other attachments are not messages
(with ``--bare`` Claude Code 2.1.332 sends no attachment; see lab/README.md).

Requests. One per API response: assistant lines sharing ``message.id`` (else ``requestId``, else
the line's uuid) are one request, at the first of them, with the response's final usage (its line
of most tokens: Claude Code writes a line per content block and ``output_tokens`` is a running
count; `claude_usage.billed_responses`): ``Usage(input=input_tokens,
cache_read=cache_read_input_tokens, cache_write=cache_creation_input_tokens, output=output_tokens)``.
`Transcript.billed` is every billed response of the session's files, on these paths or not. ``<synthetic>`` replies and
replies without usage are not requests (``TranscriptPath.skipped``). The context of a request is
what Claude Code sends: before any compaction every earlier message; after one, the summary, the
preserved messages, then every message after the summary; synthetic replies are never sent.

Compactions. A ``compact_boundary`` gives trigger (``manual`` -> MANUAL; ``auto`` -> THRESHOLD,
or OVERFLOW when it is reactive: a synthetic "Prompt is too long" reply since the previous
compaction, a boundary written right after an ``api-request`` line that got no response (the rejected
request; the 400 is not written), or ``preTokens >= provider_limit`` when the caller knows the
provider's limit; the file itself records no window), ``tokens_before``/``tokens_after``
(``preTokens``/``postTokens``), the summary (the text after ``Summary:`` in the summary message, up to Claude Code's continuation
instructions) and ``kept`` = the ``preservedMessages.uuids`` (else ``preservedSegment``
head..tail). Older files without boundaries begin with the summary message: a compaction at
message 0 with trigger UNKNOWN (format ``claude-code-legacy``).

A file read without its texts (``ClaudeFile.texts`` False: `inspect`'s selective reading) gives a
lean transcript: the same paths, messages (their roles decided from the same blocks), requests,
usage, compactions and diagnostics, but messages without units (a summary message keeps its text)
and requests without their context; no count reads either (tests/read/test_claude_lean.py). A
session the C summed up for `inspect` (`read.claude_code.summary.ClaudeSummary`) gives a leaner one
still (`claude_summary`).

The rules live beside this module: a line's message in `claude_messages`, one path's messages,
requests and compactions in `claude_builder`, the paths in `claude_paths`, the billing in
`claude_usage`, the attachments sent as text in `claude_attachments`.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable
from operator import attrgetter
from typing import Any

from sessiontools.read.claude_code import (
    ClaudeFile,
    Record,
    load_claude_file,
    subagent_files,
)
from sessiontools.read.claude_code.summary import ClaudeSummary
from sessiontools.read.diagnostics import Diagnostic, DiagnosticKind
from sessiontools.read.parse import gc_paused
from sessiontools.read.values import cleaned_for
from sessiontools.transcript.claude_builder import Builder, trigger_of
from sessiontools.transcript.claude_messages import summary_text
from sessiontools.transcript.claude_paths import record_paths
from sessiontools.transcript.claude_usage import billed_responses
from sessiontools.transcript.model import (
    Agent,
    Compaction,
    Transcript,
    TranscriptPath,
    Usage,
)

__all__ = ["claude_transcript", "format_of", "load_claude_transcript", "summary_text"]

_LINE = attrgetter("line")  # sort key of records, messages and diagnostics


def load_claude_transcript(path: str | os.PathLike[str], *, provider_limit: int | None = None,
                           subagents: bool = True) -> Transcript:
    """Read a transcript file and build its neutral Transcript; with ``subagents`` the files in
    ``<session>/subagents/`` are added as sidechain paths (their diagnostics and billed responses too)."""
    subs = [load_claude_file(sub) for sub in subagent_files(path)] if subagents else []
    return claude_transcript(load_claude_file(path), provider_limit=provider_limit, subagents=subs)


# -- the transcript ---------------------------------------------------------------------------------

def _settings(f: ClaudeFile) -> dict[str, Any]:
    types = Counter(r.type for r in f.records)
    first: dict[str, Any] | None = None
    models: set[str] = set()
    titles: list[str] = []
    boundaries = 0
    for r in f.records:  # one pass for the rest
        t = r.type
        if t == "assistant":
            if isinstance(m := r.message.get("model"), str):
                models.add(m)
            if first is None:
                first = r.raw
        elif t == "user":
            if first is None:
                first = r.raw
        elif t == "summary":
            if isinstance(title := r.raw.get("summary"), str):
                titles.append(title)
        elif t == "system" and r.subtype == "compact_boundary":  # a boundary (docstring: "Compactions")
            boundaries += 1
    first = {} if first is None else first
    return {
        "version": f.version, "cwd": first.get("cwd"), "git_branch": first.get("gitBranch"),
        "entrypoint": first.get("entrypoint"), "models": sorted(models), "titles": titles,
        "compact_boundaries": boundaries, "line_types": dict(sorted(types.items())),
    }


def _orphans(f: ClaudeFile, nodes: dict[str, Record]) -> list[Diagnostic]:
    return [Diagnostic(f.path, r.line, f"parentUuid {r.parent} is not in the file: the line starts a chain",
                       DiagnosticKind.NOTICE) for r in nodes.values() if r.parent and r.parent not in nodes]


def _rejected(f: ClaudeFile) -> frozenset[str]:
    """Boundaries written right after an `api-request` line that got no response: the provider
    rejected the request (the 400 itself is not written) and the compaction is reactive (2.1.332;
    a threshold compaction comes before the request is logged)."""
    out: set[str] = set()
    last = None
    for r in f.records:
        t = r.type
        # a boundary (rule: the module docstring, "Compactions")
        if t == "system" and r.subtype == "compact_boundary":
            if last == "api-request" and r.uuid:
                out.add(r.uuid)
            last = t
        elif t == "api-request" or t == "assistant" or t == "user":
            last = t
    return frozenset(out)


def _off_path(f: ClaudeFile, paths: list[TranscriptPath], rejected: frozenset[str],
              provider_limit: int | None) -> list[Compaction]:
    """The file's ``compact_boundary`` lines on none of its paths (branches off the resumed path):
    every boundary line is a compaction, two with equal ``preTokens`` are two."""
    on = {c.line for p in paths for c in p.compactions}
    out = []
    for r in f.records:
        # a boundary (rule: the module docstring, "Compactions")
        if r.type == "system" and r.subtype == "compact_boundary" and r.line not in on:
            meta = r.raw.get("compactMetadata")
            meta = meta if isinstance(meta, dict) else {}
            pre, post = meta.get("preTokens"), meta.get("postTokens")
            pre = pre if isinstance(pre, int) else None
            reactive = r.uuid in rejected or (provider_limit is not None and pre is not None and pre >= provider_limit)
            out.append(Compaction(index=-1, line=r.line, trigger=trigger_of(meta, reactive), tokens_before=pre,
                                  tokens_after=post if isinstance(post, int) else None, id=r.uuid,
                                  timestamp=r.timestamp))
    return out


def format_of(version: str | None, legacy: bool) -> str:
    """A file's `Transcript.format`: ``claude-code-legacy`` (a summary first, no boundary), else
    ``claude-code-<major>.<minor>`` of its version, else ``claude-code``."""
    if legacy:
        return "claude-code-legacy"
    if version and re.match(r"\d+\.\d+", version):
        return "claude-code-" + ".".join(version.split(".")[:2])
    return "claude-code"


def _file_transcript(f: ClaudeFile, provider_limit: int | None, final: dict[int, Usage]) -> Transcript:
    paths: list[TranscriptPath] = []
    rejected = _rejected(f)
    nodes = f.nodes()
    with gc_paused():  # (a collection every few hundred messages would traverse all built so far)
        for chain, side in record_paths(f, nodes):
            b = Builder(provider_limit, rejected, final, f.texts)
            for r in chain:
                b.add(r)
            paths.append(b.path(chain[-1].uuid if chain else None, side))
    # legacy: a summary first and no boundary line (rule: the module docstring, "Compactions")
    legacy = bool(paths) and bool(paths[0].compactions) and not any(
        r.type == "system" and r.subtype == "compact_boundary" for r in f.records)
    fmt = format_of(f.version, legacy)
    settings = _settings(f)
    # the largest prompt a request of the resumed path or a sidechain was answered with: the window
    # Claude Code ran at was at least that (`ClaudeCodePolicy.recorded_window`)
    settings["largest_answered_prompt"] = max((r.usage.prompt for p in paths for r in p.requests), default=0)
    return cleaned_for(f, Transcript(
        agent=Agent.CLAUDE_CODE, source=f.path, session_id=f.session_id, format=fmt, paths=paths,
        diagnostics=sorted([*f.diagnostics, *_orphans(f, nodes)], key=_LINE),
        settings=settings, off_path_compactions=_off_path(f, paths, rejected, provider_limit)))


def claude_transcript(f: ClaudeFile | ClaudeSummary, *, provider_limit: int | None = None,
                      subagents: list[ClaudeFile] | None = None) -> Transcript:
    """The neutral Transcript of one parsed Claude Code file (main path first, then sidechains),
    with the paths of its subagent files (``subagents``, default ``f.subagents``) as sidechains.

    Requests on the paths carry their response's final usage; `Transcript.billed` is every billed
    response of the session's files, on a path or not (`claude_usage.billed_responses`)."""
    if isinstance(f, ClaudeSummary):  # (the C's summary of a session read for `inspect`)
        from sessiontools.transcript.claude_summary import summary_transcript

        return summary_transcript(f)
    subs = f.subagents if subagents is None else subagents
    billed, final = billed_responses([f, *subs])
    t = _file_transcript(f, provider_limit, final)
    t.billed = billed
    return with_sidechains(t, ((sub.path, _file_transcript(sub, provider_limit, final)) for sub in subs))


def with_sidechains(t: Transcript, subagents: Iterable[tuple[str, Transcript]]) -> Transcript:
    """`t` with each subagent file's transcript (its path, its transcript) added: its paths as
    sidechains, its diagnostics after `t`'s, its path in `settings["subagent_files"]`."""
    for path, st in subagents:
        for p in st.paths:
            p.sidechain = True
        t.paths.extend(st.paths)
        t.diagnostics.extend(st.diagnostics)
        t.settings.setdefault("subagent_files", []).append(path)
    return t
