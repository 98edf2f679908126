"""The agent's own estimate of a context's size before a recorded request: its policy's one count.

Every agent decides compaction from an estimate of the context it is about to send: the usage the
provider reported for the last reply, plus an estimate of the messages added after it. The rule is
the agent's policy's (`Policy.checkpoint`, looked up by `policies.registry.own_policy`): there is no
second definition here. estimate-error judges the same count the replay walks with:

- Codex and Claude Code: `policy_checkpoint`, the policy's `Policy.size` and `Policy.count` over
  the messages after the newest earlier reply. Codex: the last response's `total_tokens` plus
  ceil(bytes/4) of each later item as codex-rs serializes it (`policies.codex.item_bytes`); Claude
  Code: the last response's usage including output plus its release's count of the messages after
  its first line (`policies.claude_code`).
- Pi: `PiPolicy.checkpoint`, `estimateContextTokens` (0.x) or 1.x's projected view, exactly, over
  Pi's own message objects.

Each returns a `Checkpoint`: the estimate, its usage part and the context messages counted after
the usage, so that the calibrated hybrid (`tokens.hybrid`) can count the same trailing part with
a calibrated model. `ContextView` is a request's context read through its index ranges, not copied.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from sessiontools.policies.base import CountView
from sessiontools.transcript.model import Message, Request, Role, TranscriptPath


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The agent's estimate of one request's context: usage part + trailing part."""

    tokens: int
    usage_tokens: int  # recorded usage the agent trusted (0 when none)
    trailing: tuple[int, ...]  # indices (in path.messages) of the context messages counted after it
    usage_index: int | None = None  # message index of the reply whose usage was used


class ContextView(Sequence[Message]):
    """A request's context messages (`messages` through the request's index ranges), not copied:
    a check point reads only its end (the last usage and the messages after it), so a request
    costs O(ranges + trailing), not O(context)."""

    __slots__ = ("_len", "_messages", "_offsets", "_ranges")

    def __init__(self, messages: Sequence[Message], ranges: Sequence[tuple[int, int]]) -> None:
        self._messages = messages
        self._ranges = tuple((a, b) for a, b in ranges if b > a)
        self._offsets: list[int] = []
        n = 0
        for a, b in self._ranges:
            self._offsets.append(n)
            n += b - a
        self._len = n

    def __len__(self) -> int:
        return self._len

    def index_at(self, k: int) -> int:
        """The message index (in `messages`) of context position `k` (0 <= k < len)."""
        if len(self._ranges) == 1:  # the common case: one run of messages
            return self._ranges[0][0] + k
        j = bisect_right(self._offsets, k) - 1
        return self._ranges[j][0] + k - self._offsets[j]

    @overload
    def __getitem__(self, k: int) -> Message: ...

    @overload
    def __getitem__(self, k: slice) -> list[Message]: ...

    def __getitem__(self, k: int | slice) -> Message | list[Message]:
        if isinstance(k, slice):
            return [self._messages[self.index_at(p)] for p in range(self._len)[k]]
        if k < 0:
            k += self._len
        if not 0 <= k < self._len:
            raise IndexError(k)
        return self._messages[self.index_at(k)]

    def __iter__(self) -> Iterator[Message]:
        for a, b in self._ranges:
            yield from self._messages[a:b]


#: The last path's requests (a tuple, immutable) and their index: one build per path, not per request.
_BY_INDEX: tuple[tuple[Request, ...], dict[int, Request]] = ((), {})


def _requests_by_index(requests: tuple[Request, ...]) -> dict[int, Request]:
    """A path's requests by message index."""
    global _BY_INDEX
    cached = _BY_INDEX
    if cached[0] is not requests:
        cached = _BY_INDEX = (requests, {r.index: r for r in requests})
    return cached[1]


def _messages(policy: Any, context: Sequence[Message]) -> Sequence[Message]:
    """The context's messages for a count that reads them (`Policy.count_reads_messages`), as the walk gives them."""
    return context if policy.count_reads_messages else ()


def policy_checkpoint(policy: Any, path: TranscriptPath, request: Request, context: Sequence[Message]) -> Checkpoint:
    """The agent's own count before `request`, by its policy's one definition (`Policy.size` and
    `Policy.count`, the same the replay uses): the newest earlier reply's usage total, plus the
    policy's count of the context messages after that reply (Codex: after all the items of the
    response; Claude Code: after its first line, `counts_own_reply`); none: the whole context."""
    by_index = _requests_by_index(path.requests)
    for k in range(len(context) - 1, -1, -1):
        m = context[k]
        prev = by_index.get(m.index) if m.role == Role.ASSISTANT else None
        if prev is not None and prev.index < request.index:
            j = k
            if not policy.counts_own_reply:  # the response's later items (reasoning, text, calls) are its own
                while j + 1 < len(context) and context[j + 1].role == Role.ASSISTANT and context[j + 1].index not in by_index:
                    j += 1
            trailing = context[j + 1:]
            view = CountView(float(prev.usage.total), [policy.size(t) for t in trailing], (), _messages(policy, context))
            return Checkpoint(math.ceil(policy.count(view)), prev.usage.total, tuple(t.index for t in trailing),
                              m.index)
    view = CountView(None, (), [policy.size(t) for t in context], _messages(policy, context))
    return Checkpoint(math.ceil(policy.count(view)), 0, tuple(t.index for t in context))
