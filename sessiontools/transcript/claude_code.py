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
and requests without their context; no count reads either (tests/read/test_claude_lean.py).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from operator import attrgetter
from typing import Any

from sessiontools.read.claude_code import (
    CONTINUATION_PREFIX,
    ClaudeFile,
    Record,
    content_text,
    load_claude_file,
    subagent_files,
)
from sessiontools.read.claude_code.summary import ClaudeSummary
from sessiontools.read.diagnostics import Diagnostic, DiagnosticKind
from sessiontools.read.parse import gc_paused
from sessiontools.read.values import cleaned_for
from sessiontools.transcript.claude_attachments import attachment_text
from sessiontools.transcript.claude_paths import record_paths
from sessiontools.transcript.claude_usage import billed_responses, usage_of
from sessiontools.transcript.limits import provider_counts
from sessiontools.transcript.model import (
    Agent,
    Compaction,
    Message,
    Overflow,
    Ranges,
    Request,
    Role,
    Transcript,
    TranscriptPath,
    Trigger,
    Unit,
    UnitKind,
    Usage,
    merge_ranges,
    ranges_of,
)

_COMMAND_PREFIXES = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                     "<local-command-stderr>", "<local-command-caveat>")
_SUMMARY_TAILS = ("\n\nIf you need specific details from before compaction", "\nIf you need specific details",
                  "\n\nContinue the conversation from where it left off", "\n\nPlease continue the conversation")
#: json.dumps(x, ensure_ascii=False), without building an encoder per call
_JSON = json.JSONEncoder(ensure_ascii=False).encode
_TOO_LONG = re.compile(r"prompt is too long", re.I)
_LINE = attrgetter("line")  # sort key of records, messages and diagnostics


def load_claude_transcript(path: str | os.PathLike[str], *, provider_limit: int | None = None,
                           subagents: bool = True) -> Transcript:
    """Read a transcript file and build its neutral Transcript; with ``subagents`` the files in
    ``<session>/subagents/`` are added as sidechain paths (their diagnostics and billed responses too)."""
    subs = [load_claude_file(sub) for sub in subagent_files(path)] if subagents else []
    return claude_transcript(load_claude_file(path), provider_limit=provider_limit, subagents=subs)


# -- messages ---------------------------------------------------------------------------------------

def _block_units(content: Any, assistant: bool) -> list[Unit]:
    text_kind = UnitKind.TEXT if assistant else UnitKind.USER
    if isinstance(content, str):
        return [Unit(text_kind, content)]
    units: list[Unit] = []
    append = units.append
    for b in content if isinstance(content, list) else ():
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            append(Unit(text_kind, b.get("text") or ""))
        elif t == "tool_use":
            append(Unit(UnitKind.TOOL_CALL, f"{b.get('name') or ''} {_JSON(b.get('input'))}"))
        elif t == "tool_result":
            c = b.get("content")
            append(Unit(UnitKind.TOOL_RESULT, c if isinstance(c, str) else content_text(c)))
            if isinstance(c, list):  # (not a string: that would test every character)
                units += [Unit(UnitKind.IMAGE, "") for x in c if isinstance(x, dict) and x.get("type") == "image"]
        elif t == "thinking" or t == "redacted_thinking":
            append(Unit(UnitKind.THINKING, b.get("thinking") or ""))
        elif t == "image":
            append(Unit(UnitKind.IMAGE, ""))
        else:
            append(Unit(UnitKind.OTHER, _JSON(b)))
    return units


def _message(r: Record, index: int) -> Message | None:
    if r.type == "assistant":
        return Message(index, r.uuid, r.line, Role.ASSISTANT, tuple(_block_units(r.content, True)),
                       r.timestamp, r.raw)
    if r.type != "user":
        return None
    return _user_message(r, index, r.content)


def _user_message(r: Record, index: int, content: Any, texts: bool = True) -> Message:
    """A user line's message; without `texts` (a lean file, `ClaudeFile.texts`) of no units but
    the summary's, its role decided as with them."""
    full = content_text(content)
    text = full.lstrip()
    if r.raw.get("isCompactSummary") or text.startswith(CONTINUATION_PREFIX):  # Record.is_compact_summary
        return Message(index, r.uuid, r.line, Role.SUMMARY, (Unit(UnitKind.SUMMARY, full),), r.timestamp, r.raw)
    if texts:
        units = tuple(_block_units(content, False))
        tool = any(u.kind is UnitKind.TOOL_RESULT for u in units)
    else:  # (the blocks `_block_units` makes a TOOL_RESULT unit of)
        units = ()
        tool = type(content) is list and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    if r.raw.get("isMeta") or text.startswith(_COMMAND_PREFIXES):
        role = Role.OTHER
    else:
        role = Role.TOOL if tool else Role.USER  # claude_paths._has_tool_result
    return Message(index, r.uuid, r.line, role, units, r.timestamp, r.raw)


def summary_text(text: str) -> str:
    """The summary inside Claude Code's summary message: after ``Summary:``, before its instructions."""
    i = text.find("Summary:")
    s = text[i + len("Summary:"):] if i >= 0 else text
    cut = min((j for t in _SUMMARY_TAILS if (j := s.find(t)) >= 0), default=len(s))
    return s[:cut].strip()






# -- one path ---------------------------------------------------------------------------------------

class _Builder:
    def __init__(self, provider_limit: int | None, rejected: frozenset[str] = frozenset(),
                 final: dict[int, Usage] | None = None, texts: bool = True):
        self.provider_limit = provider_limit
        self.texts = texts  # False: a lean file's path (`ClaudeFile.texts`): no units, no contexts
        self.rejected = rejected  # boundaries right after a request that got no response
        self.final = final or {}  # id(record) -> its response's final usage (`billed_responses`)
        self.messages: list[Message] = []
        self.by_uuid: dict[str, int] = {}
        self.unsent: set[int] = set()
        self.requests: list[Request] = []
        self.compactions: list[Compaction] = []
        self.overflows: list[Overflow] = []
        self.skipped: Counter[str] = Counter()
        self.seen_responses: set[str] = set()
        self.pending: Record | None = None  # a boundary waiting for its summary message
        self.window: tuple[int, Ranges] | None = None  # (summary index, kept) of the last compaction
        self.overflow_since = False
        self.sent: list[tuple[int, int]] = []  # _context's ranges of sent messages in [sent_from, sent_to)
        self.sent_from = self.sent_to = 0

    def add(self, r: Record) -> None:
        t = r.type
        index = len(self.messages)
        if t == "assistant":
            msg = r.message
            m = Message(index, r.uuid, r.line, Role.ASSISTANT,
                        tuple(_block_units(msg.get("content"), True)) if self.texts else (), r.timestamp, r.raw)
            self.messages.append(m)
            if r.uuid:
                self.by_uuid[r.uuid] = index
            self._assistant(r, m, msg)
            return
        if t == "attachment":
            text = attachment_text(r.raw)
            if text is None:
                return  # an attachment not rendered (`claude_attachments`): no message
            m = Message(index, r.uuid, r.line, Role.OTHER, (Unit(UnitKind.OTHER, text),), r.timestamp, r.raw)
        elif t != "user":
            if t == "system" and r.subtype == "compact_boundary":  # Record.is_boundary
                if self.pending is not None:
                    self._compaction(self.pending, None)
                self.pending = r
            return  # other lines are no messages (_message)
        else:
            m = _user_message(r, index, r.content, self.texts)
        self.messages.append(m)
        if r.uuid:
            self.by_uuid[r.uuid] = index
        if m.role is Role.SUMMARY:
            if self.pending is not None:
                self._compaction(self.pending, m)
            elif not self.compactions and index == 0:
                self._legacy(m)

    def _assistant(self, r: Record, m: Message, msg: dict[str, Any]) -> None:
        if msg.get("model") == "<synthetic>":  # Record.is_synthetic
            self.unsent.add(m.index)
            self.skipped["synthetic"] += 1
            text = content_text(r.content)
            if r.raw.get("isApiErrorMessage") and _TOO_LONG.search(text):
                n, lim = provider_counts(text)
                self.overflows.append(Overflow(m.index, r.line, text, n, lim))
                self.overflow_since = True
            return
        key = msg.get("id") or r.raw.get("requestId") or r.uuid
        if key in self.seen_responses:
            return
        self.seen_responses.add(key)
        usage = self.final.get(id(r)) or usage_of(msg.get("usage"))
        if usage is None:
            self.skipped["no usage"] += 1
            return
        # (index, line, usage, context, provider, model, timestamp, id, stop_reason)
        context = self._context(m.index) if self.texts else ()  # (no count reads a lean path's contexts)
        self.requests.append(Request(m.index, r.line, usage, context, "anthropic", msg.get("model"),
                                     r.timestamp, msg.get("id") or r.raw.get("requestId"), msg.get("stop_reason")))

    def _context(self, i: int) -> Ranges:
        start = 0 if self.window is None else self.window[0] + 1
        if self.sent_from != start or i < self.sent_to:  # a new window (or out of order): start over
            self.sent_from = self.sent_to = start
            self.sent = []
        # The sent messages of [start, i), extended from where the previous request left them: every
        # index below the newest message is final (`unsent` only gains the newest message).
        sent = self.sent
        for j in range(self.sent_to, i):
            if j in self.unsent:
                continue
            if sent and sent[-1][1] == j:
                sent[-1] = (sent[-1][0], j + 1)
            else:
                sent.append((j, j + 1))
        self.sent_to = max(self.sent_to, i)
        if self.window is None:
            return tuple(sent)
        s, kept = self.window
        return merge_ranges(((s, s + 1), *kept, *sent))

    def _kept(self, meta: dict[str, Any]) -> Ranges:
        pm = meta.get("preservedMessages") if isinstance(meta.get("preservedMessages"), dict) else {}
        uuids = pm.get("uuids") or pm.get("allUuids") or []
        idx = sorted({self.by_uuid[u] for u in uuids if isinstance(u, str) and u in self.by_uuid})
        if not idx:
            seg = meta.get("preservedSegment") if isinstance(meta.get("preservedSegment"), dict) else {}
            a, b = self.by_uuid.get(seg.get("headUuid") or ""), self.by_uuid.get(seg.get("tailUuid") or "")
            idx = list(range(a, b + 1)) if a is not None and b is not None and a <= b else []
        return ranges_of([j for j in idx if j not in self.unsent])

    def _compaction(self, boundary: Record, summary: Message | None) -> None:
        meta = boundary.raw.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        pre, post = meta.get("preTokens"), meta.get("postTokens")
        pre = pre if isinstance(pre, int) else None
        reactive = self.overflow_since or boundary.uuid in self.rejected or (
            self.provider_limit is not None and pre is not None and pre >= self.provider_limit)
        trigger = _trigger(meta, reactive)
        kept = self._kept(meta)
        index = summary.index if summary is not None else len(self.messages)
        text = summary_text(summary.text) if summary is not None else None
        self.compactions.append(Compaction(
            index=index, line=boundary.line, trigger=trigger, tokens_before=pre,
            tokens_after=post if isinstance(post, int) else None, summary=text, kept=kept,
            id=boundary.uuid, timestamp=boundary.timestamp))
        self.pending = None
        self.overflow_since = False
        if summary is not None:
            self.window = (summary.index, kept)

    def _legacy(self, m: Message) -> None:
        self.compactions.append(Compaction(index=m.index, line=m.line, trigger=Trigger.UNKNOWN, tokens_before=None,
                                           summary=summary_text(m.text), id=m.id, timestamp=m.timestamp))
        self.window = (m.index, ())

    def path(self, leaf: str | None, sidechain: bool) -> TranscriptPath:
        if self.pending is not None:
            self._compaction(self.pending, None)
        return TranscriptPath(leaf, tuple(self.messages), tuple(self.requests), tuple(self.compactions),
                              tuple(self.overflows), sidechain, self.skipped)


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
        elif t == "system" and r.subtype == "compact_boundary":  # Record.is_boundary
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
        if t == "system" and r.subtype == "compact_boundary":  # Record.is_boundary
            if last == "api-request" and r.uuid:
                out.add(r.uuid)
            last = t
        elif t == "api-request" or t == "assistant" or t == "user":
            last = t
    return frozenset(out)


def _trigger(meta: dict[str, Any], reactive: bool) -> Trigger:
    trig = meta.get("trigger")
    if trig == "manual":
        return Trigger.MANUAL
    if trig == "auto":
        return Trigger.OVERFLOW if reactive else Trigger.THRESHOLD
    return Trigger.UNKNOWN


def _off_path(f: ClaudeFile, paths: list[TranscriptPath], rejected: frozenset[str],
              provider_limit: int | None) -> list[Compaction]:
    """The file's ``compact_boundary`` lines on none of its paths (branches off the resumed path):
    every boundary line is a compaction, two with equal ``preTokens`` are two."""
    on = {c.line for p in paths for c in p.compactions}
    out = []
    for r in f.records:
        if r.type == "system" and r.subtype == "compact_boundary" and r.line not in on:  # Record.is_boundary
            meta = r.raw.get("compactMetadata")
            meta = meta if isinstance(meta, dict) else {}
            pre, post = meta.get("preTokens"), meta.get("postTokens")
            pre = pre if isinstance(pre, int) else None
            reactive = r.uuid in rejected or (provider_limit is not None and pre is not None and pre >= provider_limit)
            out.append(Compaction(index=-1, line=r.line, trigger=_trigger(meta, reactive), tokens_before=pre,
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
            b = _Builder(provider_limit, rejected, final, f.texts)
            for r in chain:
                b.add(r)
            paths.append(b.path(chain[-1].uuid if chain else None, side))
    legacy = bool(paths) and bool(paths[0].compactions) and not any(
        r.type == "system" and r.subtype == "compact_boundary" for r in f.records)  # Record.is_boundary
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
    for sub in subs:
        st = _file_transcript(sub, provider_limit, final)
        for p in st.paths:
            p.sidechain = True
        t.paths.extend(st.paths)
        t.diagnostics.extend(st.diagnostics)
        t.settings.setdefault("subagent_files", []).append(sub.path)
    return t
