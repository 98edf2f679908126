"""A Codex rollout as the agent-neutral transcript (`transcript.model`).

One path (a rollout is linear; a resume appends to it). Decisions, each a reading of what Codex does:

- **Messages**: index 0 is the system prompt (`session_meta.base_instructions`, sent first on every
  request) when the rollout records it; then one message per `response_item`, in file order
  (developer -> SYSTEM, user -> USER, assistant text / function calls -> ASSISTANT with TEXT /
  TOOL_CALL units, reasoning -> ASSISTANT with THINKING units, tool outputs -> TOOL). A tool call's
  unit text is `name + " " + arguments`.
- **Requests**: `event_msg` `token_count` lines whose `info.total_token_usage` differs from the
  previous one's (Codex repeats an unchanged count); the request's usage is `info.last_token_usage`.
  A count with zero input and output is no request (Codex writes one after a compaction, with an
  estimate of the new history in `total_tokens`, and one after an overflow, with the window there).
  The summarisation call of a compaction (the count just before a `compacted` line, whose reply is
  the summary) is not an agent request either; its reply message is dropped from the path. Both
  are counted in `TranscriptPath.skipped`.
- **Usage**: OpenAI counts cached tokens inside `input_tokens`, so `Usage(input = input_tokens -
  cached_input_tokens, cache_read = cached_input_tokens, cache_write = 0, output = output_tokens)`;
  `output_tokens` already includes reasoning tokens, as Codex counts them (`Usage.total` ==
  Codex's `total_tokens`). `Request.id` is the `response_id` of the matching `token_usage_record`
  (0.171), `context_window` is `info.model_context_window` (95% of the configured window).
- **Context** of a request: the system message, then the history since the newest compaction (its
  replacement history, written as messages at the `compacted` line, then every later item) up to
  the request's first reply message.
- **Compactions**: one per `compacted` line. `index` = the summary message (the replacement history's
  summary message, else a SUMMARY message made from `compacted.message`); `summary` = the message
  after Codex's fixed prefix (None when empty: an OpenAI-hosted compaction leaves an encrypted item,
  `writer = "provider"`); `kept` = the other replacement-history messages; `tokens_before` = the
  `total_tokens` of the last agent request before it (what Codex compares with its limit, before
  adding its bytes/4 estimate of newer items); `tokens_after` = Codex's estimate written right after.
  Older rollouts without `compacted` lines but with `context_compacted` events get compactions with
  no summary. Trigger: `threshold` (Codex compacts automatically), `manual` for a `/compact` turn.
- **Billed** (`Transcript.billed`): every model call the rollout counts, the summarisation calls of
  compactions included: each `token_count` whose `total_token_usage` changed, with its
  `last_token_usage` (else the change of the total) and the model of the turn, as ccusage counts
  Codex usage (its totals are the last `total_token_usage`). A spawned subagent's rollout (0.119+,
  `session_meta.source.subagent.thread_spawn`) begins with its parent's counts replayed within one
  second: those are the parent's, not billed again (ccusage's rule too).
- **Overflows**: a failed turn with `codex_error_info: "context_window_exceeded"` (or an `error`
  event that says so). Codex does not record the provider's numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sessiontools.read.codex.load import with_slots
from sessiontools.read.codex.records import (
    Compacted,
    CompactionEvent,
    ErrorEvent,
    Other,
    ResponseItem,
    Rollout,
    SessionMeta,
    TaskEvent,
    TokenCount,
    TokenUsage,
    TurnContext,
    UsageRecord,
)
from sessiontools.read.parse import gc_paused
from sessiontools.read.values import cleaned_for
from sessiontools.transcript.codex_billed import billed, usage_of
from sessiontools.transcript.codex_items import (
    ASSISTANT_ITEMS,
    CALLS,
    ROLES,
    TOOL_ITEMS,
    item_message,
    lean_item_message,
)
from sessiontools.transcript.codex_items import output_text as output_text  # (policies.codex reads it here)
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
)

_MAP = (dict, Mapping)  # a dict (what JSON gives) is tested first, without the ABC machinery
OVERFLOW_INFO = "context_window_exceeded"


@dataclass
class _Builder:
    rollout: Rollout
    messages: list[Message] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    overflows: list[Overflow] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    system: int | None = None  # index of the system-prompt message
    window_start: int = 0  # first message of the current history (after the newest compaction)
    first_reply: int | None = None  # first assistant message since the last request
    prev_total: TokenUsage | None = None
    last_usage_record: UsageRecord | None = None
    last_agent_total: int | None = None
    awaiting_after: int | None = None  # compaction index waiting for its tokens_after
    model: str | None = None
    provider: str | None = None
    window: int | None = None
    turn_trigger: str | None = None
    metas: list[SessionMeta] = field(default_factory=list)  # (every one, in order: `Rollout.metas`)
    turn_overflowed: bool = False
    count_first: bool | None = None  # 2025 rollouts of 0.4x write a response's count before its items
    pending: TokenCount | None = None  # count-first: a request waiting for its first reply message
    reply_less: bool = False  # the newest request's response recorded no item (no model item since the last)
    lean: bool = False  # a lean reading (`Rollout.full_item`): messages without units (`lean_item_message`)

    def add(self, msg_item: Mapping[str, Any], line: int, ts: str | None) -> Message:
        n = len(self.messages)
        m = (lean_item_message(msg_item, n, line, ts) or item_message(self.whole(msg_item, line), n, line, ts)
             if self.lean else item_message(msg_item, n, line, ts))
        self.messages.append(m)
        if m.role == Role.ASSISTANT and self.first_reply is None:
            self.first_reply = m.index
            if self.pending is not None:
                self.flush_pending()
        return m

    def flush_pending(self) -> None:
        """Count-first rollouts: the waiting count becomes a request whose reply is the first
        assistant message after it (or, with none, the last message, as for any count)."""
        r, self.pending = self.pending, None
        if r is not None and r.last is not None:
            self.append_request(r, r.last)

    def on_meta(self, r: SessionMeta) -> None:
        self.metas.append(r)
        self.provider = self.provider or r.model_provider
        if len(self.metas) == 1 and r.base_instructions:
            self.system = len(self.messages)
            self.messages.append(Message(self.system, None, r.line, Role.SYSTEM,
                                         (Unit(UnitKind.SYSTEM, r.base_instructions),), r.timestamp))
            self.window_start = len(self.messages)

    def context(self, end: int) -> Ranges:
        pairs = [(self.system, self.system + 1)] if self.system is not None and self.system < self.window_start else []
        return merge_ranges([*pairs, (self.window_start, end)])

    def on_count(self, r: TokenCount) -> None:
        self.window = r.context_window or self.window
        last = r.last
        if last is not None and last.is_zero and self.awaiting_after is not None:
            c = self.compactions[self.awaiting_after]  # Codex's estimate of the compacted history
            self.compactions[self.awaiting_after] = _replace(c, tokens_after=last.total_tokens)
            self.awaiting_after = None
        if r.total is not None and r.total == self.prev_total:
            return  # Codex repeats an unchanged count: no new request
        self.prev_total = r.total
        if last is None or last.is_zero:
            return
        self.awaiting_after = None
        if self.count_first is None:  # the first request: a reply before its count says items come first
            self.count_first = self.rollout.schema == "2025" and self.first_reply is None
        if self.count_first:
            self.flush_pending()
            self.pending, self.first_reply = r, None
            return
        self.append_request(r, last)

    def on_agent_count(self, r: TokenCount) -> None:
        before = len(self.requests)
        self.on_count(r)
        if len(self.requests) > before:
            self.last_agent_total = self.requests[-1].usage.total

    def append_request(self, r: TokenCount, last: TokenUsage) -> None:
        index = self.first_reply if self.first_reply is not None else max(len(self.messages) - 1, 0)
        self.reply_less = self.first_reply is None and not self.count_first
        rec = self.last_usage_record
        rid = rec.response_id if rec is not None and rec.usage == last else None
        # (index, line, usage, context, provider, model, timestamp, id, stop_reason, context_window)
        self.requests.append(Request(index, r.line, usage_of(last), self.context(index), self.provider, self.model,
                                     r.timestamp, rid, None, r.context_window))
        self.last_agent_total = self.requests[-1].usage.total
        if not self.count_first:
            self.first_reply = None
        self.last_usage_record = None

    def pop_summary_call(self, r: Compacted) -> None:
        """Drop the summarisation call (the request just before `compacted`) and its reply message."""
        if self.pending is not None:  # count-first: a count with no reply before `compacted` (0.4x)
            self.pending = None
            self.skipped["compaction summarisation call"] += 1
            return
        if not self.requests:
            return
        if self.reply_less:  # 0.77 - 0.1xx: the summary reply is not recorded; the call has no items
            self.requests.pop()
            self.last_agent_total = self.requests[-1].usage.total if self.requests else None
            self.reply_less = False
            self.skipped["compaction summarisation call"] += 1
            return
        req = self.requests[-1]
        tail = self.messages[req.index:]
        summary = r.summary
        if summary is None or not tail or len(tail) != 1 or tail[0].role != Role.ASSISTANT:
            return
        if self.text_of(tail[0]).strip() != summary.strip():
            return
        self.requests.pop()
        self.messages.pop()
        self.skipped["compaction summarisation call"] += 1

    def whole(self, item: Mapping[str, Any], line: int) -> Mapping[str, Any]:
        """A lean reading's item whole (`Rollout.full_item`; an item read whole is its own)."""
        return self.rollout.full_item(line) or item

    def text_of(self, m: Message) -> str:
        """A message's text, from its whole item where a lean reading built no units
        (`lean_item_message`)."""
        if not self.lean or m.raw is None:
            return m.text
        return item_message(self.whole(m.raw, m.line), m.index, m.line, m.timestamp).text

    def on_compacted(self, r: Compacted) -> None:
        self.pop_summary_call(r)
        self.first_reply = None
        start = len(self.messages)
        summary_index = None
        for item in r.replacement_history or ():
            m = self.add(item, r.line, r.timestamp)
            if m.role == Role.SUMMARY:
                summary_index = m.index
        self.first_reply = None
        if summary_index is None:
            text = r.message
            self.messages.append(Message(len(self.messages), None, r.line, Role.SUMMARY,
                                         (Unit(UnitKind.SUMMARY, text),), r.timestamp))
            summary_index = len(self.messages) - 1
        kept = merge_ranges([(start, summary_index), (summary_index + 1, len(self.messages))])
        if r.replacement_history is None:
            start = summary_index  # older rollouts: the rebuilt history is not recorded
        self.window_start = start
        encrypted = r.encrypted or (not r.message.strip() and r.replacement_history is not None)
        self.compactions.append(Compaction(
            index=summary_index, line=r.line,
            trigger=Trigger.MANUAL if self.turn_trigger and "compact" in self.turn_trigger else Trigger.THRESHOLD,
            tokens_before=self.last_agent_total, summary=None if encrypted else r.summary,
            writer="provider" if encrypted else "agent", kept=kept, timestamp=r.timestamp,
        ))
        self.awaiting_after = len(self.compactions) - 1

    def on_overflow(self, line: int, ts: str | None, text: str) -> None:
        n, limit = provider_counts(text)
        self.overflows.append(Overflow(max(len(self.messages) - 1, 0), line, text, n, limit))

    def feed(self, r: Any) -> None:
        kind = type(r)
        if kind is Other:  # the most common line (events, world state): nothing to build
            return
        if kind is ResponseItem:  # then the other common lines, by exact type
            self.add(r.payload, r.line, r.timestamp)
        elif kind is TokenCount:
            self.on_agent_count(r)
        elif kind is UsageRecord:
            self.last_usage_record = r
        elif isinstance(r, SessionMeta):
            self.on_meta(r)
        elif isinstance(r, TurnContext):
            self.model = r.model or self.model
        elif isinstance(r, ResponseItem):
            self.add(r.payload, r.line, r.timestamp)
        elif isinstance(r, UsageRecord):
            self.last_usage_record = r
        elif isinstance(r, TokenCount):
            self.on_agent_count(r)
        elif isinstance(r, Compacted):
            agent_total = self.last_agent_total
            self.on_compacted(r)
            # the popped summarisation call must not count as "the last agent request"
            self.last_agent_total = self.requests[-1].usage.total if self.requests else agent_total
            if self.compactions[-1].tokens_before != self.last_agent_total:
                self.compactions[-1] = _replace(self.compactions[-1], tokens_before=self.last_agent_total)
        elif isinstance(r, TaskEvent):
            self.window = r.context_window or self.window
            if r.kind == "started":
                self.turn_trigger = r.trigger
            elif r.error_info == OVERFLOW_INFO and not self.turn_overflowed:
                self.on_overflow(r.line, r.timestamp, r.error_message or OVERFLOW_INFO)
            self.turn_overflowed = False
        elif isinstance(r, ErrorEvent) and _is_overflow_text(r.message, r.info):
            self.on_overflow(r.line, r.timestamp, r.message)
            self.turn_overflowed = True  # one overflow per failed turn: its task_complete repeats it


def _is_overflow_text(message: str, info: str | None) -> bool:
    low = message.lower()
    return info == OVERFLOW_INFO or any(k in low for k in (
        "context window", "context_length_exceeded", "maximum context length", "context length"))


def _replace(c: Compaction, **kw: Any) -> Compaction:
    from dataclasses import replace

    return replace(c, **kw)


def _events_as_compactions(b: _Builder, rollout: Rollout) -> None:
    """2025 rollouts that record `context_compacted` events but no `compacted` lines."""
    if b.compactions:
        return
    for r in rollout.records:
        if isinstance(r, CompactionEvent) and r.source == "context_compacted":
            b.compactions.append(Compaction(index=max(len(b.messages) - 1, 0), line=r.line, trigger=Trigger.THRESHOLD,
                                            tokens_before=None, summary=None, writer="agent", timestamp=r.timestamp))


def _format(rollout: Rollout, cli_version: str | None) -> str:
    if rollout.schema in ("2025", "legacy"):
        return "codex-2025" if rollout.schema == "2025" else "codex-legacy"
    v = cli_version or ""
    parts = v.split(".")
    return f"codex-{parts[0]}.{parts[1]}" if len(parts) >= 2 else "codex"


try:
    from sessiontools.read._native import codex_feed as _codex_feed
except ImportError:  # not built on this machine: `_Builder.feed` takes every record
    _codex_feed = None

#: What `read._native.codex_feed` (sessiontools/read/_codex_path.c) needs, in its order.
_KINDS = (Other, ResponseItem, TokenCount, UsageRecord, TurnContext, TaskEvent, CompactionEvent, with_slots(Message),
          with_slots(Request), with_slots(Usage), ROLES, Role.TOOL, Role.ASSISTANT, Role.SUMMARY, Role.OTHER,
          TOOL_ITEMS, CALLS, ASSISTANT_ITEMS, OVERFLOW_INFO)


def _feed_all(b: _Builder, records: tuple[Any, ...]) -> None:
    """Every record fed to `b`: in a lean reading, the common ones by `codex_feed` (C: the same
    changes `_Builder.feed` makes, tests/transcript/test_codex_feed.py), the others by `feed`."""
    if _codex_feed is None or not b.lean:
        for r in records:
            b.feed(r)
        return
    i, n = 0, len(records)
    while i < n:
        i = _codex_feed(b, records, i, _KINDS)
        if i < n:
            b.feed(records[i])
            i += 1


def codex_transcript(rollout: Rollout) -> Transcript:
    """A Codex rollout as a neutral transcript (see the module docstring for each decision)."""
    b = _Builder(rollout, lean=rollout.full_item is not None)
    with gc_paused():  # (a collection every few hundred messages would traverse all built so far)
        _feed_all(b, rollout.records)
    b.flush_pending()
    _events_as_compactions(b, rollout)
    path = TranscriptPath(None, tuple(b.messages), tuple(b.requests), tuple(b.compactions), tuple(b.overflows),
                          skipped=+b.skipped)
    metas = b.metas  # (`Rollout.metas`, without another pass over the records)
    first = metas[0] if metas else None
    cli_version = next((m.cli_version for m in metas if m.cli_version), None)  # Rollout.cli_version
    settings: dict[str, Any] = {
        "cli_version": cli_version,
        "model_provider": b.provider,
        "model": b.model,
        "cwd": first.cwd if first else None,
        "originator": first.originator if first else None,
        "model_context_window": b.window,
        "session_metas": len(metas),
        "schema": rollout.schema,
    }
    return cleaned_for(rollout, Transcript(Agent.CODEX, rollout.path, first.id if first else None,
                                           _format(rollout, cli_version), [path], list(rollout.diagnostics), settings,
                                           billed=billed(rollout, b.provider, metas)))
