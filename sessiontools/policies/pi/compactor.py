"""Pi's compaction as its own code makes it, on the Pi entries a transcript carries (`Policy.compactor`).

The walk (`replay.walk`) keeps the simulated context as message indices; each message of a Pi
transcript keeps its entry (`TranscriptPath.native`). At a compaction the compactor lays the
context out as the entry path Pi would hold (the kept entries, the newest compaction's entry, the
entries after it; the newest reply carrying the usage the provider would report for the simulated
context when it is not the recorded one) and runs the exact port of `prepareCompaction`
(`policies.pi.prepare`) on it: its first kept entry, tokens before, split turn and summarised
messages are Pi's. A compaction the recording made at the same place with the same first kept entry
is that one (its summary is taken); any other writes a modelled summary of the truth model's size
with Pi's file lists.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from sessiontools.policies.base import CompactionAsk, Compactor, Plan, PolicySettings
from sessiontools.policies.pi.path_layout import PathLayout
from sessiontools.policies.pi.prepare import NoCompaction, PathHints, Preparation, prepare_compaction
from sessiontools.policies.pi.serialize import (
    FileOps,
    compute_file_lists,
    format_file_operations,
    own_file_ops,
)
from sessiontools.policies.pi.settings import CompactionSettings
from sessiontools.policies.pi.sums import EntrySums, message_length
from sessiontools.read.pi.entries import Entry
from sessiontools.tokens.chars4 import estimate_tokens

#: Characters of Pi's summarisation prompt around the serialized conversation, and of the split
#: turn's prefix prompt (what a summarisation request sends besides the conversation).
SUMMARY_PROMPT_CHARS = 2500
TURN_PREFIX_PROMPT_CHARS = 1200


def with_usage(e: Entry, prompt: int, output: int) -> Entry:
    """A copy of an assistant entry carrying the usage a provider would report for `prompt` tokens."""
    msg = dict(e.message or {})
    msg["usage"] = {"input": prompt, "output": output, "cacheRead": 0, "cacheWrite": 0, "totalTokens": prompt + output}
    return Entry(e.type, e.id, e.parent_id, e.line, e.index, {**e.data, "message": msg})


def summarization_input(truth: Any, prep: Preparation, serialized_chars: Any) -> float:
    """The summariser's prompt in truth tokens: the serialized conversation (+ previous summary and
    prompt), and the split turn's prefix request. `serialized_chars`: messages -> Pi's
    serializeConversation length."""
    serialized = serialized_chars(prep.messages_to_summarize) + len(str(prep.previous_summary or ""))
    sum_in = truth.text_tokens(serialized + SUMMARY_PROMPT_CHARS)
    if prep.is_split_turn and prep.turn_prefix_messages:
        sum_in += truth.text_tokens(serialized_chars(prep.turn_prefix_messages) + TURN_PREFIX_PROMPT_CHARS)
    return float(sum_in)


def modelled_summary(truth: Any, prep: Preparation, n: int, parent_id: str | None) -> tuple[Entry, float]:
    """The n-th compaction's entry with a modelled summary (the truth model's size, then Pi's file
    lists) after entry `parent_id`, and the summary's truth."""
    read, modified = compute_file_lists(prep.file_ops)
    chars = int(truth.summary_tokens * truth.summary_chars_per_token)
    summary = "s" * chars + format_file_operations(read, modified)
    entry = Entry("compaction", f"replay-{n}", parent_id, 0, -1,
                  {"type": "compaction", "id": f"replay-{n}", "parentId": parent_id, "summary": summary,
                   "firstKeptEntryId": prep.first_kept_entry_id, "tokensBefore": prep.tokens_before,
                   "details": {"readFiles": read, "modifiedFiles": modified}})
    return entry, truth.summary_tokens + truth.text_tokens(len(summary) - chars)


def _serialized_chars(messages: Sequence[Any], version: str, memo: dict[int, tuple[Any, int]]) -> int:
    """The length of Pi's serializeConversation of `messages` in characters (code points, as the truth
    model counts text and as Pi's exact walk (deleted in session 10) summed it; a
    character beyond the BMP is one, not JavaScript's two): the messages' own serializations (each its
    parts joined by a blank line, empty when it has none) joined by a blank line. Each message's length
    is kept in `memo` (by id, with the message, so an id is never another's), which the walks of a grid
    share (`TruthModel.shared`): each message is measured once per grid, by `serialized_length` (the
    exact walk's: that length without building the serialization where it can)."""
    total = parts = 0
    for m in messages:
        got = memo.get(id(m))
        n = got[1] if got is not None and got[0] is m else _serialized_one(m, version, memo)
        if n:
            total += n
            parts += 1
    return total + 2 * max(0, parts - 1)


def _estimate(m: Any, version: str, memo: dict[int, tuple[Any, int]]) -> int:
    """Pi's estimateTokens of one message, kept in `memo` (by id, with the message, as
    `_serialized_chars` keeps its lengths): Pi's cut point and tokens before estimate the same
    messages at every compaction of every setting of a grid."""
    got = memo.get(id(m))
    if got is None or got[0] is not m:
        got = memo[id(m)] = (m, estimate_tokens(m, version))
    return got[1]


def _file_ops(messages: Sequence[Any], ops: FileOps, version: str, memo: dict[int, tuple[Any, FileOps | None]]) -> None:
    """`extract_file_ops` of each message, in order, each message's own operations found once per grid
    (kept in `memo` as `_estimate` keeps its estimates) and merged by `dict.update`: a file already seen
    keeps its place, a new one comes after, as `ops.read[f] = None` does."""
    for m in messages:
        got = memo.get(id(m))
        found = got[1] if got is not None and got[0] is m else _own_ops(m, version, memo)
        if found is not None:
            ops.read.update(found.read)
            ops.written.update(found.written)
            ops.edited.update(found.edited)


def _own_ops(m: Any, version: str, memo: dict[int, tuple[Any, FileOps | None]]) -> FileOps | None:
    """One message's own file operations (None: none), kept in `memo` (`_file_ops`)."""
    got = memo[id(m)] = (m, own_file_ops(m, version))
    return got[1]


def _own_ops_of(m: Any, version: str, memo: dict[int, tuple[Any, FileOps | None]]) -> FileOps | None:
    """`_own_ops` through `memo`."""
    got = memo.get(id(m))
    return got[1] if got is not None and got[0] is m else _own_ops(m, version, memo)


def _serialized_one(m: Any, version: str, memo: dict[int, tuple[Any, int]]) -> int:
    """One message's `serialized_length`, kept in `memo` (`_serialized_chars`)."""
    got = memo.get(id(m))
    if got is None or got[0] is not m:
        got = memo[id(m)] = (m, message_length(m, version))
    return got[1]


class PiCompactor(Compactor):
    """One run's Pi compactions on the entries of a Pi transcript path (see the module docstring)."""

    def __init__(self, path: Any, truth: Any, settings: PolicySettings, version: str) -> None:
        self.path, self.truth, self.v = path, truth, version
        table = path.native
        self.all: tuple[Entry, ...] = table.entries
        self.of_message: tuple[int, ...] = table.of_message
        self.cs = CompactionSettings(True, settings.reserve_tokens, settings.keep_recent_tokens)
        # The path's layout is every setting's: made once per grid (kept in the truth's shared memo with the path).
        memo = truth.shared.setdefault(("pi compactor layout", version), {})
        got = memo.get(id(path))
        if got is None or got[0] is not path:
            got = memo[id(path)] = (path, PathLayout(table.entries, table.of_message, version, path),
                                    EntrySums(table.entries, version))
        self.layout: PathLayout = got[1]
        self.position, self.skip = self.layout.position, self.layout.skip
        self.group_end, self.system = self.layout.group_end, self.layout.system
        self.sums: EntrySums = got[2]
        self.ordered = False  # the newest `positions` came from the layout's slices (its context one ascending run)
        self.comp: Entry | None = None  # the newest compaction's entry on the simulated path
        self.comp_after = -1  # the entry position after which it was made
        self.made_count = 0
        self.placed: list[tuple[int, Entry | None]] = []  # (entry position after which, entry) of each compaction made
        self.last_pos = -1  # the newest plan's last entry position
        self.kept_from = 0  # the entry position of the newest compaction's first kept entry (0: none yet)
        #: (original message, its copy) of the newest reply `entries` gave the simulated usage (`with_usage`).
        self.copied: tuple[Any, Any] | None = None
        self.path_pos: list[int] = []  # the entry position of each entry `entries` gave (-1: the compaction's)
        self.path_messages: list[Any] = []  # (0.x) the message it summarises of each (None: none)
        self.path_tokens: list[int | None] = []  # (0.x) the estimate of each message entry's (None: no message)
        #: The newest `entries`' index of the compaction's entry (-1: none), and of the path's newest
        #: compaction entry (`prepare.PathHints`; None: unknown).
        self.comp_at, self.newest = -1, None
        self.unskipped = False  # a rejection put a compaction entry back on the path (`rejected`)

    def positions(self, ask: CompactionAsk) -> list[int]:
        """The entry positions on Pi's path for the context of `ask`, before the failed attempt's group:
        the context's entries and those that send no message (model and thinking changes, an
        extension's custom entries) from the first kept entry on; before a model call (a retry, 1.x's
        check between turns), also those up to that call (`PathLayout.positions`)."""
        return self.layout.positions(ask.context, self.kept_from, ask.before_call, self.skip).at

    def entries(self, ask: CompactionAsk) -> list[Entry]:
        """The entry path Pi holds for the context of `ask` (see the module docstring); `path_pos` and
        `path_messages` (0.x: the message it summarises of each, `prepare.PathHints`) beside it."""
        all_, layout = self.all, self.layout
        got = layout.positions(ask.context, self.kept_from, ask.before_call, self.skip)
        qs, self.ordered = got.at, got.ordered
        out = got.entries if got.entries is not None else [all_[q] for q in qs]
        at = list(qs)
        msgs = got.messages if got.messages is not None else [layout.message_of[q] for q in qs]
        # (the reply's copy has its original's content, so its estimate)
        toks = got.tokens if got.tokens is not None else [layout.entry_tokens[q] for q in qs]
        self.copied = None
        if ask.reply is not None and not ask.reply[3]:  # the newest reply with the simulated usage
            q = self.of_message[ask.reply[0]]
            k = bisect_left(qs, q)
            if k < len(qs) and qs[k] == q:
                e = out[k] = with_usage(all_[q], int(ask.reply[1] + 0.5), ask.reply[2])
                self.copied = (all_[q].message, e.message)
                msgs[k] = e.message
        prev = qs[-1] if qs else -1
        newest: int | None = None if self.unskipped else -1  # the path's newest compaction entry (None: the port finds it)
        if ask.reason == "overflow" and prev in self.group_end:
            # Pi's path holds the failed attempt and its omission edits when it compacts to retry.
            group = range(prev + 1, self.group_end[prev] + 1)
            out.extend(all_[q] for q in group)
            at.extend(group)
            msgs.extend(layout.message_of[q] for q in group)
            toks.extend(layout.entry_tokens[q] for q in group)
            prev = self.group_end[prev]
            if any(all_[q].type == "compaction" for q in group):
                newest = None
        self.comp_at = -1
        if self.comp is not None:  # after the entry it was made after, before the context's next one
            k = bisect_right(qs, self.comp_after)
            self.comp_at = k = k if k < len(qs) else len(out)
            out.insert(k, self.comp)
            at.insert(k, -1)
            msgs.insert(k, None)  # (0.x summarises no compaction entry's message)
            toks.insert(k, None)
            if newest is not None:
                newest = k
        self.last_pos, self.path_pos, self.path_messages, self.path_tokens, self.newest = prev, at, msgs, toks, newest
        return out

    def _messages(self, lo: int, hi: int) -> tuple[Any, ...]:
        """The messages of path[lo:hi] that 0.x summarises (`prepare.PathHints.messages`)."""
        return tuple([m for m in self.path_messages[lo:hi] if m is not None])

    def plan(self, ask: CompactionAsk) -> Plan | str:
        shared, v = self.truth.shared, self.v
        memos = (shared.setdefault(("pi estimates", v), {}), shared.setdefault(("pi file ops", v), {}),
                 shared.setdefault(("pi serialized lengths", v), {}))
        path = self.entries(ask)
        copied = self.copied
        if copied is not None and copied[0] is not None:
            # The newest reply's copy with the simulated usage (`with_usage`) shares the original's
            # content, which is all an estimate, a serialization and the file operations read: the
            # original's measures (made once per grid) serve it, held only for this plan.
            orig, copy = copied
            for memo, one in zip(memos, (_estimate, _own_ops_of, _serialized_one), strict=True):
                memo[id(copy)] = (copy, one(orig, v, memo))
        try:
            return self._plan(ask, path, *memos)
        finally:
            if copied is not None:
                for memo in memos:
                    memo.pop(id(copied[1]), None)

    def _plan(self, ask: CompactionAsk, path: list[Entry], estimates: dict[int, Any], ops: dict[int, Any],
              memo: dict[int, Any]) -> Plan | str:
        sums = self.sums if self.v == "0" else None  # 0.x's measures by entry (`EntrySums`)
        hints = PathHints(self.newest, self._messages, self.path_tokens) if sums is not None and self.newest is not None else None
        prep = prepare_compaction(path, self.cs, self.v, estimate=lambda m: _estimate(m, self.v, estimates),
                                  file_ops=lambda ms, into, v: (sums is not None and sums.add_ops(ms, into))
                                  or _file_ops(ms, into, v, ops), hints=hints)
        if isinstance(prep, NoCompaction):
            return prep.reason
        assert isinstance(prep, Preparation)
        fk = self.position.get(prep.first_kept_entry_id)  # type: ignore[arg-type]
        if fk is None:
            return "first kept entry not in the workload"
        of = self.of_message
        c = ask.context
        # (one ascending run of messages whose entries keep their order: the kept ones are its tail)
        kept = c[bisect_left(c, fk, key=of.__getitem__):] if self.ordered else tuple(i for i in c if of[i] >= fk)
        sum_in = summarization_input(self.truth, prep, lambda ms: self._serialized(prep, ms, memo))
        common: dict[str, Any] = dict(is_split_turn=prep.is_split_turn, messages_summarized=len(prep.messages_to_summarize),
                                      turn_prefix_messages=len(prep.turn_prefix_messages),
                                      first_kept_id=prep.first_kept_entry_id)
        for k in ask.recorded:
            entry = self.all[self.of_message[self.path.compactions[k].index]]
            data: Mapping[str, Any] = entry.data
            if data.get("firstKeptEntryId") == prep.first_kept_entry_id:
                return Plan(kept, prep.tokens_before, sum_in, recorded=k, parent_id=self.asked_after(),
                            matches_recorded=data.get("tokensBefore") == prep.tokens_before,
                            state=(entry, self.last_pos), preparation=prep, **common)
        after = self.asked_after()
        entry, tokens = modelled_summary(self.truth, prep, self.made_count + 1, after)
        return Plan(kept, prep.tokens_before, sum_in, parent_id=after, summary_tokens=tokens,
                    state=(entry, self.last_pos), preparation=prep, **common)

    def _serialized(self, prep: Preparation, ms: Sequence[Any], memo: dict[int, Any]) -> int:
        """`_serialized_chars` of the summarised messages or the split turn's prefix of `prep`: in 0.x by
        the grid's prefix sums over the entries they come from (`EntrySums`), the reply given the
        simulated usage (`with_usage`, an assistant message) measured as its original."""
        copied = self.copied
        if self.v == "0" and (copied is None or (copied[0] is not None and copied[0].get("role") == "assistant")):
            got = None
            if ms is prep.messages_to_summarize:
                end = prep.turn_start_index if prep.is_split_turn else prep.first_kept_index
                got = self.sums.serialized(self._entry_positions(prep.boundary_start, end or 0))
            elif ms is prep.turn_prefix_messages:
                got = self.sums.serialized(self._entry_positions(prep.turn_start_index or 0, prep.first_kept_index))
            if got is not None:
                return got
        return _serialized_chars(ms, self.v, memo)

    def _entry_positions(self, lo: int, hi: int) -> list[int]:
        """The entry positions of path[lo:hi] but the compaction's (`path_pos`)."""
        got = self.path_pos[lo:hi]
        if lo <= self.comp_at < hi:
            del got[self.comp_at - lo]
        return got

    def asked_after(self) -> str | None:
        return self.all[self.last_pos].id if self.last_pos >= 0 else None

    def context_sizes(self, context: Sequence[int], sizes: Sequence[tuple[int, int]]) -> Sequence[tuple[int, int]]:
        """Pi's estimate of a context without a usage, as the exact walk's `pi_estimate_before`: the
        newest compaction's summary, the messages, and in 1.x the one current system message of every
        system entry so far (pi-ai sends the newest) instead of the context's own system messages.
        Each as chars (an estimate x 4: chars/4 gives it back)."""
        from sessiontools.tokens.chars4 import estimate_tokens

        out: list[tuple[int, int]] = []
        if self.comp is not None:
            est = estimate_tokens({"role": "compactionSummary", "summary": self.comp.data.get("summary") or ""}, self.v)
            out.append((4 * est, 0))
        if self.v == "0" or not self.system:
            return [*out, *sizes]
        from sessiontools.policies.pi.usage import current_system_message
        from sessiontools.transcript.pi.neutral import own_messages

        last = self.of_message[context[-1]] if context else -1
        system = current_system_message([m for p in self.system if p <= last for m in own_messages(self.all[p], "1")])
        all_, of = self.all, self.of_message
        out += [sz for i, sz in zip(context, sizes, strict=True) if all_[of[i]].role != "system"]
        if system is not None:
            out.append((4 * estimate_tokens(system, "1"), 0))
        return out

    def rejected(self, index: int) -> None:
        at = self.of_message[index]
        end = self.group_end.get(at)
        if end is not None and end > at:
            group = range(at + 1, end + 1)
            self.skip = self.skip - set(group)
            if any(self.all[q].type == "compaction" for q in group):
                self.unskipped = True  # a compaction entry may now be on the context's path: the port finds the newest

    def recorded_summary(self, k: int) -> float | None:
        """The truth of every message of recorded compaction k's entry (1.x: its summary and the system
        message it carries), as the exact walk prices the entry."""
        at = self.of_message[self.path.compactions[k].index]
        msgs = self.path.messages
        return sum(self.truth.message_tokens(msgs[i]) for i, p in enumerate(self.of_message) if p == at)

    def keeps_recorded(self, plan: Plan, summary: str) -> bool:
        return plan.recorded is not None and summary == (plan.state[0].data.get("summary") or "")

    def made(self, plan: Plan | None, recorded: int | None = None, kept: Sequence[int] = (),
             summary: str | None = None) -> None:
        self.made_count += 1
        if plan is not None:
            self.comp, self.comp_after = plan.state[0], plan.state[1]
            if summary is not None and not self.keeps_recorded(plan, summary):
                e = self.comp
                self.comp = Entry("compaction", e.id, e.parent_id, 0, -1, {**e.data, "summary": summary})
        elif recorded is not None:
            at = self.of_message[self.path.compactions[recorded].index]
            self.comp, self.comp_after = self.all[at], at
        self.placed.append((self.comp_after, self.comp))
        first = self.comp.data.get("firstKeptEntryId") if self.comp is not None else None
        at = self.position.get(first) if isinstance(first, str) else None
        self.kept_from = at if at is not None else (self.of_message[kept[0]] if kept else self.comp_after + 1)

    def simulated_path(self) -> tuple[Entry, ...]:
        """Pi's simulated path: the base entries (a failed attempt's omission edits only where this run
        was rejected there too) with each compaction's entry after the entry it was made after."""
        after: dict[int, list[Entry]] = {}
        for at, e in self.placed:
            if e is not None:
                after.setdefault(at, []).append(e)
        out: list[Entry] = [*after.get(-1, ())]
        for p, e in enumerate(self.all):
            if p not in self.skip:
                out.append(e)
            out.extend(after.get(p, ()))
        return tuple(out)
