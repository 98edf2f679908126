"""A Pi session as the agent-neutral transcript (`transcript.model`).

Messages: one per message an entry contributes to a context, in path order (`entry_messages`:
messages, custom messages, branch summaries; a compaction contributes its summary, and in 1.x the
system message it carries). Each keeps Pi's own message dict in `raw`, so that Pi-exact estimators
still count exactly what Pi counts.

Unusable replies: the aborted ones and the errors that are no overflow (`UnusableReply`, with their
recorded usage and Pi's `calculateContextTokens` of it): not requests, but sent and billed.

Requests: the assistant messages whose usage Pi trusts (`requests.skip_reason`); the context of
each is what `build_context` gives for the path before it, mapped back to message indices. A
message that a 1.x `context_edit` rewrote is mapped to the original (its text is the unedited one;
an omitted message is left out, as Pi leaves it out).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from sessiontools.read.pi.entries import Entry, Session
from sessiontools.read.values import cleaned_for, integer
from sessiontools.transcript.limits import provider_counts
from sessiontools.transcript.model import (
    Agent,
    Compaction,
    Cost,
    Message,
    Overflow,
    Ranges,
    Request,
    Role,
    Transcript,
    TranscriptPath,
    Trigger,
    Unit,
    UnmeteredReply,
    UnusableReply,
    Usage,
)
from sessiontools.transcript.pi.context import (
    ProjectedEntry,
    compaction_summary_message,
    entry_messages_v0,
    entry_messages_v1,
)
from sessiontools.transcript.pi.incremental import iter_request_generations
from sessiontools.transcript.pi.kinds import compaction_kind
from sessiontools.transcript.pi.message_units import message_units
from sessiontools.transcript.pi.overflow import is_context_overflow
from sessiontools.transcript.pi.requests import plain_request, skip_reason
from sessiontools.transcript.pi.tree import Path, SessionTree
from sessiontools.transcript.pi.usage import calculate_context_tokens
from sessiontools.transcript.pi.usage_record import c_usage_record, usage_record

RawMessage = Mapping[str, Any]

ROLES = {
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "toolResult": Role.TOOL,
    "bashExecution": Role.TOOL,
    "custom": Role.USER,  # an extension's message, sent to the model as a user message
    "branchSummary": Role.SUMMARY,
    "compactionSummary": Role.SUMMARY,
    "system": Role.SYSTEM,
}
TRIGGERS = {"threshold": Trigger.THRESHOLD, "manual": Trigger.MANUAL, "overflow": Trigger.OVERFLOW}


#: The skip reasons (`transcript.pi.requests.skip_reason`) of a reply without a prompt's usage.
_UNMETERED = {"no_usage": "no usage", "zero_usage": "zero usage", "zero_prompt": "zero prompt"}


try:
    from sessiontools.read._native import pi_path_messages as _c_messages
except ImportError:  # not built on this machine: the loop does every entry, with the same results
    _c_messages = None

#: The slot `Message.units` is stored in (a `PiMessage` fills it on first read).
_UNITS_SLOT = Message.units  # type: ignore[attr-defined]
#: Its setter, bound once: `_UNITS_SLOT.__set__` looked up in each message's `__init__` made a method
#: wrapper each time (~4% of building a path's messages: bench s0049, 12.5M -> 12.0M instructions).
_SET_UNITS = _UNITS_SLOT.__set__


class PiMessage(Message):
    """A Message of a Pi transcript path: its units are `message_units(raw)`, made on first read
    (`units` None when built) and then kept. Pi's own rules count `raw` and never read them, so a
    replay under them does not pay for them (a tool call's arguments through `JSON.stringify`);
    every other reader (estimate-error, other agents' policies, the cleaned view) gets the same
    units as if they had been built at once."""

    __slots__ = ()

    def __init__(self, index: int, id: str | None, line: int, role: Role, units: tuple[Unit, ...] | None = None,
                 timestamp: str | None = None, raw: Any = None) -> None:
        self.index, self.id, self.line, self.role, self.timestamp, self.raw = index, id, line, role, timestamp, raw
        _SET_UNITS(self, units)

    @property  # type: ignore[override]
    def units(self) -> tuple[Unit, ...]:
        got: tuple[Unit, ...] | None = _UNITS_SLOT.__get__(self, Message)
        if got is None:
            raw = self.raw
            got = message_units(raw) if type(raw) is dict or isinstance(raw, Mapping) else ()
            _SET_UNITS(self, got)
        return got

    @units.setter
    def units(self, value: tuple[Unit, ...] | None) -> None:  # (`dataclasses.replace`, unpickling)
        _SET_UNITS(self, value)


def own_messages(entry: Entry, pi_version: str) -> tuple[RawMessage, ...]:
    """The messages an entry contributes to some context (a 0.x compaction: its summary)."""
    if pi_version == "1":
        return entry_messages_v1(entry)
    if entry.type == "compaction":
        return (compaction_summary_message(entry.data),)
    return entry_messages_v0(entry)


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _timestamp(entry: Entry) -> str | None:
    return _str(entry.timestamp)


class EntryTable(NamedTuple):
    """A Pi transcript path's side table (`TranscriptPath.native`): the path's entries in order, and
    the position in them of each message's entry, by message index."""

    entries: tuple[Entry, ...]
    of_message: tuple[int, ...]

    def entry(self, message: int) -> Entry:
        return self.entries[self.of_message[message]]


class _PathBuilder:
    """Builds one TranscriptPath from one Pi path."""

    def __init__(self, path: Path, pi_version: str) -> None:
        self.path = path
        self.version = pi_version
        self.messages: list[Message] = []
        #: id of an entry -> (its first message index, how many messages it has): an entry's own
        #: messages are consecutive (an entry seen twice on a path: its later place).
        self.span: dict[int, tuple[int, int]] = {}
        self.first_slot: list[int] = []  # entry position -> its first message index
        self.of_message: list[int] = []  # each message's entry position (`EntryTable`)
        messages, of_message, span, first_slot = self.messages, self.of_message, self.span, self.first_slot
        v0 = pi_version != "1"
        other = Role.OTHER
        entries = path.entries
        # (in C where built, from `pos` on while the entries take the 0.x fast path below; then the
        # loop does the next entry itself and hands the rest back: `read/_pi_path.c`)
        fast = _c_messages if v0 and type(entries) is tuple else None
        pos, n = 0, len(entries)
        while pos < n:
            if fast is not None:
                pos = fast(Entry, PiMessage, Message, entries, pos, ROLES, other, messages, of_message, span,
                           first_slot)
                if pos >= n:
                    break
            at, e = pos, entries[pos]
            pos += 1
            first = len(messages)
            first_slot.append(first)
            eid, line, ts = e.id, e.line, e.data.get("timestamp")  # (`_timestamp`, inline: once per entry)
            if not isinstance(ts, str):
                ts = None
            msg = e.message
            if v0 and msg is not None:
                # Fast path, most entries: a 0.x message entry's own messages are its message dict
                # (`entry_messages_v0`), without the calls (bench s0049: with the timestamp read inline,
                # this loop 11.9M -> 6.9M instructions).
                messages.append(PiMessage(first, eid, line, ROLES.get(msg.get("role"), other), None, ts, msg))
                of_message.append(at)
                span[id(e)] = (first, 1)
                continue
            for m in own_messages(e, pi_version):
                # (the exact type first: an ABC test is slow)
                role = ROLES.get(m.get("role"), other) if type(m) is dict or isinstance(m, Mapping) else other
                messages.append(PiMessage(len(messages), eid, line, role, None, ts, m))
                of_message.append(at)
            span[id(e)] = (first, len(messages) - first)

    def slot(self, e: Entry, k: int) -> int:
        """The index of entry `e`'s `k`-th own message (KeyError: it has none)."""
        first, n = self.span[id(e)]
        if not 0 <= k < n:
            raise KeyError((id(e), k))
        return first + k

    def requests(self) -> tuple[tuple[Request, ...], Counter[str], tuple[UnusableReply, ...],
                                tuple[UnmeteredReply, ...]]:
        entries = self.path.entries
        skipped: Counter[str] = Counter()
        usable = []
        unusable = []
        unmetered: list[UnmeteredReply] = []
        for i, e in enumerate(entries):
            if e.role != "assistant" or e.message is None:
                continue
            msg = e.message
            # (`plain_request` first: the common reply, decided without the general rules)
            plain = plain_request(msg, msg.get("usage"), msg.get("stopReason"))
            reason = None if plain else skip_reason(msg, self.version)
            if reason is None:
                usable.append(i)
            else:
                skipped[reason] += 1
                if reason in ("aborted", "error") and not is_context_overflow(e.message, None, self.version):
                    unusable.append(self._unusable(e, reason))
                elif reason in _UNMETERED:
                    raw = e.message.get("usage")
                    unmetered.append(UnmeteredReply(self.slot(e, 0), e.line, _UNMETERED[reason],
                                                    usage_record(raw) if isinstance(raw, Mapping) else None))
        out = []
        first_slot = self.first_slot
        base: Ranges = ()
        last_gen = None
        # Where each request's context is (`iter_request_generations`): the ranges of the messages of
        # the generation's rebuilt projection (read once per generation), then entries[start:i], each
        # with its own messages, which are the consecutive indices first_slot[start]:first_slot[i].
        for i, rebuilt, start, _, gen in iter_request_generations(entries, usable, self.version):
            if gen != last_gen:
                base, last_gen = self._ranges(rebuilt), gen
            a, b = first_slot[start], first_slot[i]
            if a == b:
                ranges = base
            elif base and base[-1][1] == a:
                ranges = (*base[:-1], (base[-1][0], b))
            else:
                ranges = (*base, (a, b))
            e = entries[i]
            msg = e.message
            assert msg is not None
            g = msg.get
            p, m, s, ts = g("provider"), g("model"), g("stopReason"), e.data.get("timestamp")
            # (positional: index, line, usage, context, provider, model, timestamp, id, stop_reason;
            # b: the reply is its entry's first own message, `slot(e, 0)`; `_str` of each, inline)
            raw = msg["usage"]
            # (the C first, where built: `usage_record` of the usage JSON gives, None for anything else)
            usage = None if c_usage_record is None else c_usage_record(Usage, Cost, raw)
            out.append(Request(b, e.line, usage_record(raw) if usage is None else usage, ranges, p if isinstance(p, str) else None,
                               m if isinstance(m, str) else None, ts if isinstance(ts, str) else None, e.id,
                               s if isinstance(s, str) else None))
        return tuple(out), skipped, tuple(unusable), tuple(unmetered)

    def _ranges(self, projected: Sequence[ProjectedEntry]) -> Ranges:
        """The ranges of the messages of projected entries: each entry's projected messages are its
        first own messages (consecutive indices; a 1.x edit that omits them leaves none)."""
        ranges: list[tuple[int, int]] = []
        span = self.span
        for pe in projected:
            got = span.get(id(pe.source))
            n = min(len(pe.messages), got[1]) if got is not None else 0
            if n:
                a = got[0]  # type: ignore[index]
                if ranges and ranges[-1][1] == a:
                    ranges[-1] = (ranges[-1][0], a + n)
                else:
                    ranges.append((a, a + n))
        return tuple(ranges)

    def _unusable(self, e: Entry, stop: str) -> UnusableReply:
        """An aborted or failed call (not an overflow): its recorded usage and Pi's total of it, as Pi's
        check after it reads it (`calculateContextTokens`; 0 without a usage object)."""
        msg = e.message or {}
        raw = msg.get("usage")
        usage = raw if isinstance(raw, Mapping) else None
        return UnusableReply(self.slot(e, 0), e.line, stop, usage_record(usage) if usage is not None else None,
                             calculate_context_tokens(usage) if usage is not None else 0, e.id, _timestamp(e),
                             _str(msg.get("provider")), _str(msg.get("model")))

    def compactions(self) -> tuple[Compaction, ...]:
        out = []
        entries = self.path.entries
        for pos, e in enumerate(entries):
            if e.type != "compaction":
                continue
            n = len(own_messages(e, self.version))
            index = self.slot(e, n - 1)
            first_kept = e.data.get("firstKeptEntryId")
            kept_from = next((self.first_slot[p] for p in range(pos) if entries[p].id == first_kept), None)
            kept = ((kept_from, self.first_slot[pos]),) if kept_from is not None and kept_from < self.first_slot[pos] else ()
            tokens = e.data.get("tokensBefore")
            out.append(Compaction(
                index=index, line=e.line, trigger=TRIGGERS.get(compaction_kind(entries, pos, self.version), Trigger.UNKNOWN),
                tokens_before=integer(tokens, None),
                summary=_str(e.data.get("summary")), writer="hook" if e.data.get("fromHook") else "agent",
                kept=kept, id=e.id, timestamp=_timestamp(e),
            ))
        return tuple(out)

    def overflows(self) -> tuple[Overflow, ...]:
        out = []
        for e in self.path.entries:
            msg = e.message
            if e.role != "assistant" or msg is None or msg.get("stopReason") != "error":
                continue
            if not is_context_overflow(msg, None, self.version):
                continue
            text = _str(msg.get("errorMessage")) or ""
            n, limit = provider_counts(text)
            out.append(Overflow(self.slot(e, 0), e.line, text, n, limit))
        return tuple(out)

    def build(self) -> TranscriptPath:
        requests, skipped, unusable, unmetered = self.requests()
        return TranscriptPath(self.path.leaf_id, tuple(self.messages), requests, self.compactions(),
                              self.overflows(), skipped=skipped,
                              native=EntryTable(tuple(self.path.entries), tuple(self.of_message)), unusable=unusable,
                              unmetered=unmetered)


def path_transcript(path: Path, pi_version: str) -> TranscriptPath:
    """One Pi path as a neutral TranscriptPath."""
    return _PathBuilder(path, pi_version).build()


def pi_transcript(
    session: Session, *, leaf: str | None = None, all_leaves: bool = False, pi_version: str | None = None,
    paths: Callable[[SessionTree], list[Path]] | None = None,
) -> Transcript:
    """A Pi session as a Transcript: the default path (or `leaf`'s, or every leaf's). Built from the
    entries as Pi reads them (its counts are Pi's), its strings in the cleaned view (`cleaned_for`:
    no lone surrogate; each `Message.raw` stays the entry's own message)."""
    version = pi_version or session.pi_version
    tree = SessionTree(session)
    chosen = paths(tree) if paths else (tree.all_paths() if all_leaves else [tree.path(leaf)])
    header = session.header
    settings: dict[str, Any] = {"pi_version": version}
    if header is not None and header.cwd is not None:
        settings["cwd"] = header.cwd
    return cleaned_for(session, Transcript(
        agent=Agent.PI, source=session.path, session_id=header.id if header else None,
        format=f"pi-v{session.format_version}", paths=[path_transcript(p, version) for p in chosen],
        diagnostics=list(session.diagnostics), settings=settings,
    ))
