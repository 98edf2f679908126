"""A Pi transcript path's entries as Pi's compactor (`policies.pi.compactor`) lays them out at every
compaction of every setting of a grid: made once per path per grid (`PathLayout`), and the entry
positions of a compaction's context (`PathLayout.positions`).

The positions of a context are its messages' entries and the entries that send no message (model and
thinking changes, an extension's custom entries) from the first kept entry on, the skipped ones
(compaction entries, a failed attempt's 1.x omission edits) left out: the rule is
`PathLayout.loop_positions`, one message at a time. When the path's messages keep their entries'
order (`monotone`), every entry between the first and last message of a run of consecutive messages
is one of the run's or sends none; a context that is a few such runs (its kept prefix and the
messages since, a message the workload leaves out between them) has for positions a few slices of
sorted position lists (`Columns`): before each run the entries since the previous one that send
none, then every entry to the run's last message's. A grid asks ~175-message contexts at ~150
compactions (bench s0049): the loop, and the entries and messages read for its positions, were ~6%
of the grid's walk. `tests/policies/test_pi_path_layout.py` holds the slices to the loop on every
compaction of the samples and real sessions and on generated layouts.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any, NamedTuple

from sessiontools.policies.pi.prepare import message_for_compaction_v0
from sessiontools.read.pi.entries import Entry
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.workload import is_overflow_error, recovery_groups

#: At most this many runs of consecutive messages in a context taken by slices (`PathLayout._runs`):
#: a kept prefix and the messages since are one or two (a message left out of the workload between).
MAX_RUNS = 8


class Columns(NamedTuple):
    """Sorted position lists of a layout under one set of skipped positions, with their entries and
    (0.x) the messages 0.x summarises of them (`prepare.message_for_compaction_v0`; None: none)."""

    kept: list[int]  # positions not skipped
    silent: list[int]  # positions not skipped whose entry sends no message
    skipped_messages: list[int]  # message indices whose entry is skipped
    kept_entries: list[Entry]
    silent_entries: list[Entry]
    kept_messages: list[Any]
    silent_messages: list[Any]
    kept_tokens: list[int | None]
    silent_tokens: list[int | None]


class Positions(NamedTuple):
    """The entry positions of a compaction's context (`PathLayout.positions`), and when they came from
    the slices (`ordered`: the context is one ascending run), their entries and messages too."""

    at: list[int]
    ordered: bool
    entries: list[Entry] | None
    messages: list[Any] | None
    tokens: list[int | None] | None


class PathLayout:
    """By entry position of a path (its `TranscriptPath.native` table), the same for every setting:
    `position` (an entry's position by id, compactions aside: Pi may keep from an entry that sends no
    message), `with_message` (the entries of the path's messages), `skip` (compaction entries and the
    1.x omission edits of each failed attempt, on the path only with their failure), `group_end` (the
    last entry of each failed attempt's group), `system` (the system entries' positions) and
    `monotone` (each message's entry is at or after the previous message's)."""

    __slots__ = ("all", "of", "position", "with_message", "skip", "group_end", "system", "monotone", "message_of",
                 "entry_tokens", "_columns", "_other", "_run")

    def __init__(self, all_: Sequence[Entry], of_message: Sequence[int], version: str, path: Any = None) -> None:
        self.all, self.of = all_, of_message
        position: dict[str, int] = {}
        for p, e in enumerate(all_):
            if e.id is not None and e.type != "compaction":
                position.setdefault(e.id, p)
        self.position = position
        base = [p for p, e in enumerate(all_) if e.type != "compaction"]
        entries = [all_[p] for p in base]
        # (an entry's role is its message's, resolved when read: the call only for the assistant replies)
        failed = {j for j, e in enumerate(entries) if e.role == "assistant" and is_overflow_error(e, version)}
        artefacts, ends = recovery_groups(entries, failed)
        self.skip = frozenset(p for p, e in enumerate(all_) if e.type == "compaction") | {base[j] for j in artefacts}
        self.group_end = {base[j]: base[k] for j, k in ends.items()}
        self.with_message = frozenset(of_message)
        # (1.x: the system entries' messages merge into the one Pi sends)
        self.system = tuple(p for p, e in enumerate(all_) if e.role == "system" and e.type != "compaction")
        self.monotone = all(a <= b for a, b in zip(of_message, of_message[1:], strict=False))
        #: (0.x) the message 0.x summarises of each entry (`message_for_compaction_v0`; None: none).
        self.message_of: list[Any] = (list(map(message_for_compaction_v0, all_)) if version == "0"
                                      else [None] * len(all_))
        self.entry_tokens = _entry_tokens(all_, of_message, path) if version == "0" else [None] * len(all_)
        self._run = tuple(range(len(of_message)))  # a context that is one run of messages is a slice of it
        self._columns: Columns | None = None
        self._other: tuple[frozenset[int], Columns] | None = None  # the newest other skip's (a walk's after a rejection)

    def columns(self, skip: frozenset[int]) -> Columns:
        """The sorted lists under `skip`: the layout's own (every setting's until a rejection puts a
        failed attempt's group on its path) and the newest other one are kept."""
        if skip is self.skip and self._columns is not None:
            return self._columns
        if self._other is not None and self._other[0] is skip:
            return self._other[1]
        kept = [q for q in range(len(self.all)) if q not in skip]
        wm = self.with_message
        silent = [q for q in kept if q not in wm]
        all_, msgs = self.all, self.message_of
        toks = self.entry_tokens
        got = Columns(kept, silent, [i for i, p in enumerate(self.of) if p in skip], [all_[q] for q in kept],
                      [all_[q] for q in silent], [msgs[q] for q in kept], [msgs[q] for q in silent],
                      [toks[q] for q in kept], [toks[q] for q in silent])
        if skip is self.skip:
            self._columns = got
        else:
            self._other = (skip, got)
        return got

    def positions(self, context: Sequence[int], kept_from: int, before_call: bool, skip: frozenset[int]) -> Positions:
        """The entry positions of `context` (see the module docstring; `before_call`: also those up to
        the next message's entry, before a model call, unless the context ends a failed attempt's
        group)."""
        of = self.of
        got = self._run_positions(context, kept_from, before_call, skip) if self.monotone and context else None
        if got is not None:
            return got
        out, prev = self.loop_positions(context, kept_from, skip)
        if before_call and context and context[-1] + 1 < len(of) and prev not in self.group_end:
            wm = self.with_message
            out += [q for q in range(prev + 1, of[context[-1] + 1]) if q not in wm and q not in skip]
        return Positions(out, False, None, None, None)

    def loop_positions(self, context: Sequence[int], kept_from: int, skip: frozenset[int]) -> tuple[list[int], int]:
        """The rule, one message at a time: the positions and the last message's entry (-1: none)."""
        wm, of = self.with_message, self.of
        out: list[int] = []
        prev = -1
        for i in context:
            p = of[i]
            if p == prev or p in skip:
                continue
            lo = prev + 1 if prev >= 0 else kept_from
            if p > lo:  # entries between two messages (most messages follow the previous one's entry)
                out += [q for q in range(lo, p) if q not in wm and q not in skip]
            out.append(p)
            prev = p
        return out, prev

    def _runs(self, context: Sequence[int]) -> list[tuple[int, int]] | None:
        """`context` as runs of consecutive messages (first, last), ascending with a gap between two,
        when it is a tuple of at most `MAX_RUNS` of them (else None). Each run is found by bisection
        (in an ascending context, message index minus place is constant along a run and grows at
        each gap) and then checked exactly (a slice of `_run`), so any other context is None. The
        next run starts above the gap: the bisection ended where it read a larger index minus place."""
        if type(context) is not tuple or context[0] < 0 or context[-1] >= len(self._run):
            return None
        n, run = len(context), self._run
        out: list[tuple[int, int]] = []
        s = 0
        while s < n:
            a = context[s]
            e = bisect_right(range(n), a - s, lo=s, key=lambda t: context[t] - t)
            b = a + e - s - 1
            if len(out) == MAX_RUNS or context[s:e] != run[a:b + 1]:
                return None
            out.append((a, b))
            s = e
        return out

    def _run_positions(self, context: Sequence[int], kept_from: int, before_call: bool, skip: frozenset[int],
                       ) -> Positions | None:
        """`positions` by slices when `context` is a few runs of consecutive messages (`_runs`) none
        of whose entries is skipped (else None): before each run the entries that send none since
        the previous run's last message (or the first kept entry), then every entry to its last
        message's (the loop's answer when the path's messages keep their entries' order)."""
        runs = self._runs(context)
        if runs is None:
            return None
        cols = self.columns(skip)
        sk, of = cols.skipped_messages, self.of
        kept, silent = cols.kept, cols.silent
        cuts: list[tuple[bool, int, int]] = []  # (of `kept`, lo, hi) of each slice, in order
        prev = -1
        for a, b in runs:
            if sk and bisect_left(sk, a) < len(sk) and sk[bisect_left(sk, a)] <= b:
                return None
            pa, pb = of[a], of[b]
            lo = prev + 1 if prev >= 0 else kept_from
            if pa > lo:
                cuts.append((False, bisect_left(silent, lo), bisect_left(silent, pa)))
            cuts.append((True, bisect_left(kept, pa if pa > prev else prev + 1), bisect_right(kept, pb)))
            prev = pb
        b = runs[-1][1]
        if before_call and b + 1 < len(of) and prev not in self.group_end:
            cuts.append((False, bisect_right(silent, prev), bisect_left(silent, of[b + 1])))
        at: list[int] = []
        entries: list[Entry] = []
        messages: list[Any] = []
        tokens: list[int | None] = []
        for k, lo, hi in cuts:
            if hi > lo:
                at += (kept if k else silent)[lo:hi]
                entries += (cols.kept_entries if k else cols.silent_entries)[lo:hi]
                messages += (cols.kept_messages if k else cols.silent_messages)[lo:hi]
                tokens += (cols.kept_tokens if k else cols.silent_tokens)[lo:hi]
        return Positions(at, True, entries, messages, tokens)


def _entry_tokens(all_: Sequence[Entry], of_message: Sequence[int], path: Any) -> list[int | None]:
    """0.x's estimateTokens of each message entry's message (`e.message or {}`, as `find_cut_point_v0`
    estimates it), None for an entry that is no message: by the characters Pi's chars/4 counts of a
    message of `path` (the transcript path, if given) whose raw object is the entry's own
    (`policies.pi.measures`, measured once per path: `chars4.message_chars` exactly), else by
    `estimate_tokens`."""
    out: list[int | None] = [None] * len(all_)
    messages = getattr(path, "messages", None)
    if messages is not None and len(messages) == len(of_message):
        from sessiontools.policies.pi.measures import path_measures

        chars = path_measures(path, "0").chars
        for i, q in enumerate(of_message):
            e = all_[q]
            if e.type == "message" and e.message is not None and messages[i].raw is e.message and chars[i] >= 0:
                out[q] = -(-chars[i] // 4)
    for q, e in enumerate(all_):
        if e.type == "message" and out[q] is None:
            out[q] = estimate_tokens(e.message or {}, "0")
    return out

