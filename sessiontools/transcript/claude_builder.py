"""One path of a Claude Code transcript built from its records (`transcript.claude_code`'s docstring:
"Messages", "Requests", "Compactions"): its messages, requests with their final usage and context,
compactions with their trigger and kept messages, overflows and skipped replies."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from sessiontools.read.claude_code import Record, content_text
from sessiontools.transcript.claude_attachments import attachment_text
from sessiontools.transcript.claude_messages import block_units, summary_text, user_message
from sessiontools.transcript.claude_usage import usage_of
from sessiontools.transcript.limits import provider_counts
from sessiontools.transcript.model import (
    Compaction,
    Message,
    Overflow,
    Ranges,
    Request,
    Role,
    TranscriptPath,
    Trigger,
    Unit,
    UnitKind,
    UnmeteredReply,
    Usage,
    merge_ranges,
    ranges_of,
)

_TOO_LONG = re.compile(r"prompt is too long", re.I)


def trigger_of(meta: dict[str, Any], reactive: bool) -> Trigger:
    trig = meta.get("trigger")
    if trig == "manual":
        return Trigger.MANUAL
    if trig == "auto":
        return Trigger.OVERFLOW if reactive else Trigger.THRESHOLD
    return Trigger.UNKNOWN


class Builder:
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
        self.unmetered: list[UnmeteredReply] = []
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
                        tuple(block_units(msg.get("content"), True)) if self.texts else (), r.timestamp, r.raw)
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
            # a boundary (rule: transcript.claude_code, "Compactions")
            if t == "system" and r.subtype == "compact_boundary":
                if self.pending is not None:
                    self._compaction(self.pending, None)
                self.pending = r
            return  # other lines are no messages (_message)
        else:
            m = user_message(r, index, r.content, self.texts)
        self.messages.append(m)
        if r.uuid:
            self.by_uuid[r.uuid] = index
        if m.role is Role.SUMMARY:
            if self.pending is not None:
                self._compaction(self.pending, m)
            elif not self.compactions and index == 0:
                self._legacy(m)

    def _assistant(self, r: Record, m: Message, msg: dict[str, Any]) -> None:
        if msg.get("model") == "<synthetic>":  # no API response (rule: transcript.claude_code, "Requests")
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
        if usage is None or usage.prompt <= 0:  # unmetered: no truth (`UnmeteredReply`)
            why = "no usage" if usage is None else "zero prompt"
            self.skipped[why] += 1
            self.unmetered.append(UnmeteredReply(m.index, r.line, why, usage))
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
        trigger = trigger_of(meta, reactive)
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
                              tuple(self.overflows), sidechain, self.skipped, unmetered=tuple(self.unmetered))
