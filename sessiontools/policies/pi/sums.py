"""Prefix sums over a Pi path's entries for what Pi 0.x's compactor (`policies.pi.compactor`) adds up
again at every compaction of every setting of a grid, made once per grid and extended as far as a
question needs.

Each entry's message is the one 0.x summarises of it (`prepare.message_for_compaction_v0`).
The length of serializeConversation of the messages of some entries (`_serialized_chars`: each
message's part, joined by a blank line) is two integer sums over their positions, the characters
and the number of non-empty parts: a run of consecutive positions is two subtractions (the same
integers a loop adds). The file operations of a run of messages (`_file_ops`) are those of its
entries that have any, merged in order: the entries between are skipped, not looked up.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from sessiontools.policies.pi.prepare import message_for_compaction_v0
from sessiontools.policies.pi.serialize import FileOps, own_file_ops, serialized_length
from sessiontools.read.pi.entries import Entry

try:
    # `serialized_length(m, v)` and `own_file_ops(m, v)`'s dicts (or None) of a plain message in C
    # (_pi_measure.c), None for any other (Python measures it). Bench s0049, one Pi setting (NOGC,
    # phcg.sh, +-25 between runs): phase walk ~1645 -> ~1515 (100k instructions); EntrySums of the
    # whole path, min of 7 (ms): Python 1.9, C lengths and Python file ops 0.83, both in C 0.57.
    from sessiontools.read._native import pi_message_measure as c_measure
except ImportError:  # not built on this machine: `serialized_length` and `own_file_ops` of each
    c_measure = None


def message_length(m: Any, version: str) -> int:
    """`serialized_length(m, version)`, in C where it takes `m` (`c_measure`)."""
    got = c_measure(m, version) if c_measure is not None else None
    return got[0] if got is not None else serialized_length(m, version)


class EntrySums:
    """By entry position of a path: prefix sums of each entry's message's serialized length, of how many
    are not empty and of how many entries have a message, and the entries with file operations (see
    the module docstring)."""

    __slots__ = ("entries", "version", "chars", "parts", "msgs", "odd", "ops_at", "ops", "where", "flat", "flat_at")

    def __init__(self, entries: Sequence[Entry], version: str) -> None:
        # Each entry's message is measured here once (made once per path per grid): no memo by message.
        self.entries, self.version = entries, version
        self.chars, self.parts, self.msgs = [0], [0], [0]
        self.odd: list[int] = []  # positions whose message is no object (a malformed line): not measured
        self.ops_at: list[int] = []  # positions whose message has file operations, ascending
        self.ops: list[FileOps] = []  # their operations
        #: The same operations flat, by kind (read, written, edited): each kind's files of the entries
        #: with operations in order, and where each entry's start (`add_ops` merges a range in one call).
        self.flat: tuple[list[str], list[str], list[str]] = ([], [], [])
        self.flat_at: tuple[list[int], list[int], list[int]] = ([0], [0], [0])
        #: The position of each entry's own message object (a message two entries share: none).
        where: dict[int, int] = {}
        shared: set[int] = set()
        for q, e in enumerate(entries):
            if e.type == "message" and e.message is not None:
                if id(e.message) in where:
                    shared.add(id(e.message))
                where[id(e.message)] = q
        for k in shared:
            del where[k]
        self.where = where

    def _extend(self, upto: int) -> None:
        chars, parts, msgs, entries, v = self.chars, self.parts, self.msgs, self.entries, self.version
        c, n, t = chars[-1], parts[-1], msgs[-1]
        measure = c_measure
        for q in range(len(chars) - 1, upto):
            e = entries[q]
            # the common case (a message entry holding a dict) without the call
            m = e.message if e.type == "message" and e.message is not None else message_for_compaction_v0(e)
            if m is not None:
                t += 1
                if measure is not None and (got := measure(m, v)) is not None:
                    k, found = got
                    if found is not None:
                        found = FileOps(*found)
                elif not isinstance(m, Mapping):
                    self.odd.append(q)
                    found = k = None
                else:
                    k = serialized_length(m, v)
                    found = own_file_ops(m, v)
                if k:
                    c += k
                    n += 1
                if found is not None:
                    self.ops_at.append(q)
                    self.ops.append(found)
                    for files, flat, at in zip((found.read, found.written, found.edited), self.flat, self.flat_at,
                                               strict=True):
                        flat.extend(files)
                        at.append(len(flat))
            chars.append(c)
            parts.append(n)
            msgs.append(t)

    def _measured(self, lo: int, hi: int) -> bool:
        """Positions [lo, hi) are measured (and hold no `odd` one)."""
        if hi >= len(self.chars):
            self._extend(hi)
        return not (self.odd and any(lo <= q < hi for q in self.odd))

    def serialized(self, positions: Sequence[int]) -> int | None:
        """The serialized length of the messages of the entries at `positions` (ascending, distinct);
        None where one of them is not measured (the caller serializes them itself)."""
        if not positions:
            return 0
        lo, hi = positions[0], positions[-1] + 1
        if not self._measured(lo, hi):
            return None
        chars, parts = self.chars, self.parts
        if hi - lo == len(positions):  # a run of consecutive positions
            total, n = chars[hi] - chars[lo], parts[hi] - parts[lo]
        else:
            total = n = 0
            for q in positions:
                total += chars[q + 1] - chars[q]
                n += parts[q + 1] - parts[q]
        return total + 2 * max(0, n - 1)

    def add_ops(self, messages: Sequence[Any], ops: FileOps) -> bool:
        """Merge the file operations of `messages` into `ops`, in order, when they are the messages of
        every entry from the first one's to the last one's (else False, `ops` untouched): the first
        and last are entries' own messages and as many entries between them have one as `messages`
        holds (the one copy of a reply given the simulated usage may be among them: it has its
        original's content and place)."""
        if not messages:
            return True
        lo, hi = self.where.get(id(messages[0])), self.where.get(id(messages[-1]))
        if lo is None or hi is None or hi < lo or not self._measured(lo, hi + 1):
            return False
        if self.msgs[hi + 1] - self.msgs[lo] != len(messages):
            return False
        at = self.ops_at
        k0, k1 = bisect_left(at, lo), bisect_right(at, hi)
        if k1 > k0:  # each kind's files of those entries in order, merged as one `update` each merges them
            for into, flat, starts in zip((ops.read, ops.written, ops.edited), self.flat, self.flat_at, strict=True):
                a, b = starts[k0], starts[k1]
                if b > a:
                    into.update(dict.fromkeys(flat[a:b]))
        return True
