"""Per-message work of Pi's compaction port, memoised across the settings of a grid.

Each memo is keyed by `id(message)`; every message memoised is kept alive in one list beside the
memos (`PiMemo.alive`), so that an id is never reused for another message while the memos live
(they live in `TruthModel.shared`). Values are plain, so the memos add no tuples for the cyclic
garbage collector to walk.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from sessiontools.policies.pi.serialize import FileOps, extract_file_ops, serialized_length
from sessiontools.read.pi.entries import Entry
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.context import branch_summary_message, custom_message


def _found_ops(m: Any, version: str, scratch: FileOps | None = None) -> tuple[dict[str, None], ...] | None:
    """One message's (read, written, edited) files in first-seen order (as dicts, merged by
    `dict.update`, which keeps the first-seen order of `FileOps`), None when it has none.
    `scratch`: an empty FileOps to collect into (left empty again), saving one per message."""
    role = m.get("role")
    if role != "assistant" and (role != "toolResult" or version == "0"):
        return None  # `extract_file_ops` reads only these
    one = scratch if scratch is not None else FileOps()
    extract_file_ops(m, one, version)
    if not (one.read or one.written or one.edited):
        return None
    found = (one.read.copy(), one.written.copy(), one.edited.copy())
    one.read.clear()
    one.written.clear()
    one.edited.clear()
    return found


class BaseSums:
    """0.x: per base entry, the serialized size and file operations of the message Pi's compaction
    takes from it (`_message_for_compaction_v0`), as prefix sums, so that a compaction's summarised
    messages, a contiguous run of base entries, are measured by two lookups instead of one per message.
    """

    def __init__(self, base: Sequence[Entry]) -> None:
        self.pos: dict[int, int] = {}  # id(the entry's own message) -> base index
        n = len(base)
        self.chars = [0] * (n + 1)  # prefix sums of serialized lengths
        self.parts = [0] * (n + 1)  # prefix counts of non-empty serialized parts
        self.messages = [0] * (n + 1)  # prefix counts of entries that give a message
        self.ops_at: list[int] = []  # base indices of the messages with file operations, ascending
        self.ops: list[Any] = []
        chars = parts = count = 0
        scratch = FileOps()
        for j, e in enumerate(base):
            if e.type == "message":
                m: Any = e.message
                self.pos[id(m)] = j
            elif e.type == "custom_message":
                m = custom_message(e.data, default_content=False)
            elif e.type == "branch_summary":
                m = branch_summary_message(e.data)
            else:
                m = None
            if m is not None:
                count += 1
                k = serialized_length(m, "0")
                if k:
                    chars += k
                    parts += 1
                found = _found_ops(m, "0", scratch)
                if found is not None:
                    self.ops_at.append(j)
                    self.ops.append(found)
            self.chars[j + 1], self.parts[j + 1], self.messages[j + 1] = chars, parts, count

    @staticmethod
    def usable(base: Sequence[Entry]) -> bool:
        """Every message entry holds its message as a dict (the entry's own object is the key)."""
        return all(e.message is not None for e in base if e.type == "message")

    def span(self, messages: Sequence[Any]) -> tuple[int, int] | None:
        """(a, b + 1) when `messages` are the messages of base entries a..b, in order (the first and
        last are those entries' own objects and the count matches); else None."""
        if not messages:
            return None
        a = self.pos.get(id(messages[0]))
        b = self.pos.get(id(messages[-1]))
        if a is None or b is None or b < a or len(messages) != self.messages[b + 1] - self.messages[a]:
            return None
        return a, b + 1


class PiMemo:
    """Pi's estimateTokens, extractFileOps and serializeConversation sizes, per message, per version."""

    def __init__(self, shared: dict[Any, Any], version: str, base: Sequence[Entry] | None = None) -> None:
        """`base`: the workload's base path, when the simulated path holds its entries in order with
        none left out (0.x with no recovery artefacts): then `BaseSums` answer for whole runs."""
        self.v = version
        self.base = base if version == "0" else None
        self._sums: BaseSums | None = None
        self.estimates: dict[int, int] = shared.setdefault(("estimate", version), {})
        self.serialized: dict[int, int] = shared.setdefault(("serialized", version), {})
        self.alive: list[Any] = shared.setdefault("alive", [])  # every message memoised, of any version
        self.shared = shared
        self._ops: dict[str, dict[int, Any]] = {}

    def estimate(self, m: Any) -> int:
        """Pi's estimateTokens of one message."""
        n = self.estimates.get(id(m))
        if n is None:
            n = self.estimates[id(m)] = estimate_tokens(m, self.v)
            self.alive.append(m)
        return int(n)

    def same_estimate(self, copy: Any, original: Any) -> None:
        """Memoise `copy`'s estimate as `original`'s (a copy of a message with only its usage changed)."""
        if id(copy) not in self.estimates:
            self.estimates[id(copy)] = self.estimate(original)
            self.alive.append(copy)

    def sums(self) -> BaseSums | None:
        """The `BaseSums` of the base path (built once per grid), or None when they do not apply."""
        if self._sums is None and self.base is not None:
            got = self.shared.get("base sums")
            if got is None:
                got = self.shared["base sums"] = BaseSums(self.base) if BaseSums.usable(self.base) else False
            self._sums = got or None
            if got is False:
                self.base = None
        return self._sums

    def file_ops(self, messages: Sequence[Any], ops: FileOps, version: str) -> None:
        """`extract_file_ops` of each message, in order, with each message's operations found once per grid."""
        sums = self.sums() if version == "0" else None
        span = sums.span(messages) if sums is not None else None
        if span is not None:
            assert sums is not None
            read, written, edited = ops.read, ops.written, ops.edited  # `_merge_ops`, inlined
            for r, w, e in sums.ops[bisect_left(sums.ops_at, span[0]):bisect_left(sums.ops_at, span[1])]:
                if r:
                    read.update(r)
                if w:
                    written.update(w)
                if e:
                    edited.update(e)
            return
        memo = self._ops.get(version)
        if memo is None:
            memo = self._ops[version] = self.shared.setdefault(("file_ops", version), {})
        missing = memo  # a value no message has: a message with no operations is memoised as None
        for m in messages:
            found = memo.get(id(m), missing)
            if found is missing:
                found = memo[id(m)] = _found_ops(m, version)
                self.alive.append(m)
            if found is not None:
                _merge_ops(ops, found)

    def serialized_chars(self, messages: Sequence[Any]) -> int:
        """Length of Pi's serializeConversation of `messages`, from per-message parts."""
        sums = self.sums()
        span = sums.span(messages) if sums is not None else None
        if span is not None:
            assert sums is not None
            a, b = span
            return sums.chars[b] - sums.chars[a] + 2 * max(0, sums.parts[b] - sums.parts[a] - 1)
        total = parts = 0
        memo, v = self.serialized, self.v
        for m in messages:
            n = memo.get(id(m))
            if n is None:
                n = memo[id(m)] = serialized_length(m, v)
                self.alive.append(m)
            if n:
                total += n
                parts += 1
        return total + 2 * max(0, parts - 1)


def _merge_ops(ops: FileOps, found: tuple[Any, Any, Any]) -> None:
    """Add one message's (read, written, edited) files to `ops`, keeping first-seen order (a key
    already there keeps its place, as `ops.read[f] = None` does)."""
    read, written, edited = found
    if read:
        ops.read.update(read)
    if written:
        ops.written.update(written)
    if edited:
        ops.edited.update(edited)
