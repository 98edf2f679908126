"""The agent's own estimate of a context's size at a check point, one function per agent.

Every agent decides compaction from an estimate of the context it is about to send: the usage the
provider reported for the last reply, plus an estimate of the messages added after it. The rule
differs by agent, so it is looked up in ONE registry, `OWN_ESTIMATES`, by `Agent`:

- Pi (`pi`): `estimateContextTokens` (0.x) or the projected view of 1.x that distrusts usage older
  than a compaction or context edit (`policies.pi.usage`): last trusted usage (`totalTokens` or
  input + output + cache) plus Pi's chars/4 (`estimateTokens`) of the trailing messages. Exact.
- Codex (`codex`) and Claude Code (`claude-code`): their policy's own count (`policy_checkpoint`:
  `Policy.size` and `Policy.count`, the one definition the replay uses too). Codex: the last
  response's `total_tokens` plus ceil(bytes/4) of each later item as codex-rs serializes it
  (`policies.codex.item_bytes`, codex-rs `approx_token_count`); Claude Code: the last response's
  usage including output plus ceil(chars/4 x 4/3) of the messages after its first line (measured on
  the recordings of 2.1.332, `policies.claude_code`).

Each returns a `Checkpoint`: the estimate, its usage part and the context messages counted after
the usage, so that the calibrated hybrid (`tokens.hybrid`) can count the same trailing part with
a calibrated model. `resets` are the file lines after which the agent no longer trusts earlier
usage (Pi 1.x: compactions and context edits on the path); the source of the transcript knows them.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from sessiontools.policies.base import CountView
from sessiontools.transcript.model import Agent, Message, Request, Role, TranscriptPath


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


class _Raws(Sequence[Any]):
    """The agent's own objects (`Message.raw`) of a context, read through it."""

    __slots__ = ("_context",)

    def __init__(self, context: Sequence[Message]) -> None:
        self._context = context

    def __len__(self) -> int:
        return len(self._context)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [m.raw for m in self._context[k]]
        return self._context[k].raw

    def __iter__(self) -> Iterator[Any]:
        return (m.raw for m in self._context)


#: (path, request, context messages in order, resets, pi_version or None) -> Checkpoint
OwnEstimate = Callable[[TranscriptPath, Request, Sequence[Message], Sequence[int], str | None], Checkpoint]


def _pi(path: TranscriptPath, request: Request, context: Sequence[Message], resets: Sequence[int],
        version: str | None) -> Checkpoint:
    """Pi's own check-point estimate (exact: Pi's functions over Pi's own message objects)."""
    from sessiontools.policies.pi.usage import current_system_message, estimate_context_tokens
    from sessiontools.tokens.chars4 import estimate_tokens

    version = version or "1"
    raw = _Raws(context)
    est = estimate_context_tokens(raw, version)
    if est.last_usage_index is not None:
        used = context[est.last_usage_index]
        trailing = tuple(m.index for m in context[est.last_usage_index + 1:])
        if version == "0":
            return Checkpoint(est.tokens, est.usage_tokens, trailing, used.index)
        latest = max((line for line in resets if line < request.line), default=-1)
        if used.id is not None and used.line > latest:
            return Checkpoint(est.tokens, est.usage_tokens, trailing, used.index)
    if version == "0":
        return Checkpoint(est.tokens, 0, tuple(m.index for m in context))
    system = current_system_message(raw)
    tokens = estimate_tokens(system, "1") if system is not None else 0
    tokens += sum(estimate_tokens(r, "1") for r in raw if r.get("role") != "system")
    return Checkpoint(tokens, 0, tuple(m.index for m in context))


#: The last path's requests (a tuple, immutable) and their index: one build per path, not per request.
_BY_INDEX: tuple[tuple[Request, ...], dict[int, Request]] = ((), {})


def _requests_by_index(requests: tuple[Request, ...]) -> dict[int, Request]:
    """A path's requests by message index."""
    global _BY_INDEX
    cached = _BY_INDEX
    if cached[0] is not requests:
        cached = _BY_INDEX = (requests, {r.index: r for r in requests})
    return cached[1]


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
            view = CountView(float(prev.usage.total), [policy.size(t) for t in trailing], ())
            return Checkpoint(math.ceil(policy.count(view)), prev.usage.total, tuple(t.index for t in trailing),
                              m.index)
    view = CountView(None, (), [policy.size(t) for t in context])
    return Checkpoint(math.ceil(policy.count(view)), 0, tuple(t.index for t in context))


def _codex(path: TranscriptPath, request: Request, context: Sequence[Message], resets: Sequence[int],
           version: str | None) -> Checkpoint:
    from sessiontools.policies.codex import codex_policy

    return policy_checkpoint(codex_policy(), path, request, context)


def _claude_code(path: TranscriptPath, request: Request, context: Sequence[Message], resets: Sequence[int],
                 version: str | None) -> Checkpoint:
    from sessiontools.policies.claude_code import claude_code_policy

    return policy_checkpoint(claude_code_policy("claude-code"), path, request, context)


#: The one registry: the agent's own check-point estimate, by agent.
OWN_ESTIMATES: dict[Agent, OwnEstimate] = {
    Agent.PI: _pi,
    Agent.CODEX: _codex,
    Agent.CLAUDE_CODE: _claude_code,
}


def own_estimate(agent: Agent, path: TranscriptPath, request: Request, context: Sequence[Message],
                 resets: Sequence[int] = (), version: str | None = None) -> Checkpoint:
    """The check-point estimate `agent` itself computes for `request` (see the module doc)."""
    return OWN_ESTIMATES[agent](path, request, context, resets, version)


def pi_calibrated_hybrid(messages: Sequence[Any], pi_version: str, model: Any,
                         model_encoding: str = "o200k_base") -> float:
    """The calibrated hybrid for a Pi context (for replay): Pi's own check point (last trusted usage,
    `estimateContextTokens`) with the trailing messages counted by `model` (a
    `tokens.features.FeatureModel`, e.g. `load_calibration(...).lookup(provider, model_id)`) instead
    of chars/4; with no trusted usage, `model` over the whole context.

    `messages`: Pi's message dicts of the context (as `build_context` gives them).
    `model_encoding`: the tokenizer of the `model` feature,
    `tokens.registry.calibration_encoding_for(provider, model_id)` (o200k when the model has none).
    """
    from sessiontools.policies.pi.usage import estimate_context_tokens
    from sessiontools.tokens.features import calibrated_hybrid, pi_features

    est = estimate_context_tokens(messages, pi_version)
    need = getattr(model, "tokenizers", ())
    full = pi_features(messages, pi_version, need, model_encoding)
    if est.last_usage_index is None:
        return calibrated_hybrid(None, full, full, model)
    trailing = pi_features(messages[est.last_usage_index + 1:], pi_version, need, model_encoding)
    return calibrated_hybrid(est.usage_tokens, trailing, full, model)
