"""Per-message work of Pi's compaction port, memoised across the settings of a grid.

Each memo is keyed by `id(message)`; every message memoised is kept alive in one list beside the
memos (`PiMemo.alive`), so that an id is never reused for another message while the memos live
(they live in `TruthModel.shared`). Values are plain, so the memos add no tuples for the cyclic
garbage collector to walk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontools.policies.pi.serialize import FileOps, extract_file_ops, serialized_length
from sessiontools.tokens.chars4 import estimate_tokens


def _found_ops(m: Any, version: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None:
    """One message's (read, written, edited) files in first-seen order, None when it has none."""
    role = m.get("role")
    if role != "assistant" and (role != "toolResult" or version == "0"):
        return None  # `extract_file_ops` reads only these
    one = FileOps()
    extract_file_ops(m, one, version)
    return (tuple(one.read), tuple(one.written), tuple(one.edited)) if (one.read or one.written or one.edited) else None


class PiMemo:
    """Pi's estimateTokens, extractFileOps and serializeConversation sizes, per message, per version."""

    def __init__(self, shared: dict[Any, Any], version: str) -> None:
        self.v = version
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

    def file_ops(self, messages: Sequence[Any], ops: FileOps, version: str) -> None:
        """`extract_file_ops` of each message, in order, with each message's operations found once per grid."""
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
                read, written, edited = found
                for f in read:
                    ops.read[f] = None
                for f in written:
                    ops.written[f] = None
                for f in edited:
                    ops.edited[f] = None

    def serialized_chars(self, messages: Sequence[Any]) -> int:
        """Length of Pi's serializeConversation of `messages`, from per-message parts."""
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
