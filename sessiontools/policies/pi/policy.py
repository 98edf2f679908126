"""Pi's compaction rule as `Policy` objects: `pi-0` (0.73.1) and `pi-1` (1.6.0).

Check points: both check after a run's final reply (`RUN_END`); 1.x also checks its projected
estimate before each request of a run but the first (`BETWEEN_TURNS`). T = W - reserveTokens; the
count is the newest trusted usage total plus chars/4 of the messages after it; Pi compacts when the
count is strictly above T (`shouldCompact`). Both are reactive: after a context-overflow error Pi
compacts and retries once; its "recovery attempted" flag is cleared when a user message starts and
by any assistant reply that is not an error (1.6.0: nor `length`), in 0.73.1 and 1.6.0 alike
(`agent-session.js` `_processAgentEvent`), so a second overflow in the same run after a successful
reply is recovered again. A retry that overflows again is an error message, which leaves the flag set:
Pi does not compact for an overflow again until the next user message (`replay.walk._Walk.failed`).
The flag is `PiRecovery`, the state both walks ask (`Policy.recovery`).

On Pi sessions the walk uses the exact port (`policies.pi.prepare`) for the cut and the tokens
before (`compactor`, `policies.pi.compactor`); `keep` here is `findCutPoint` on the neutral messages of other agents' transcripts:
walk back summing Pi's own estimate of each message (chars/4 of what `size` counts, as Pi's
`estimateTokens`) to keepRecentTokens, then forward to a turn start. It does not split a turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sessiontools.policies.base import (
    Candidate,
    CheckPoint,
    CountView,
    Kept,
    Policy,
    PolicyName,
    PolicySettings,
    Recovery,
    chars4,
    count_plus,
)


class PiPolicy(Policy):
    """Pi 0.x (`pi-0`) or 1.x (`pi-1`)."""

    reactive = True
    summary_request_sends_kept = False  # prepareCompaction's messagesToSummarize + the previous summary
    failed_reply_counts = True  # its error message (`replay.walk._Walk.failed`)
    recorded_compaction_after_rejection = True  # the failed attempt, then the overflow compaction
    records_context_edits = True  # context_edit entries: the truth of a recorded context is the model's sum
    recorded_summary_priced = True  # the request after a compaction sends the summary, kept and new entries only

    def __init__(self, version: str) -> None:
        if version not in ("0", "1"):
            raise ValueError(f"unknown Pi version {version!r}")
        self.version = version
        self.name = PolicyName.PI_1 if version == "1" else PolicyName.PI_0
        points = {CheckPoint.RUN_END} | ({CheckPoint.BETWEEN_TURNS} if version == "1" else set())
        self.check_points = frozenset(points)

    def reply_ends_run(self, stop_reason: str | None, rejected: bool) -> bool:
        """Pi's agent loop ends at any reply but a tool call (an error included: agent_end, then its
        compaction check), as the workload's `last_in_run` marks them (`transcript.pi.workload`)."""
        return rejected or (stop_reason is not None and stop_reason != "toolUse")

    def unusable_count(self, view: CountView, reply: Any) -> float:
        """0.x checks an aborted final reply by that reply's own (usually empty) usage
        (`calculateContextTokens`); an error, and any such reply in 1.x, by the estimate from the last
        trusted usage plus the messages after it."""
        if self.version == "0" and reply.stop_reason == "aborted":
            return float(reply.usage_total)
        return self.count(view)

    def threshold(self, settings: PolicySettings) -> int:
        return settings.context_window - settings.reserve_tokens

    def truth_count(self, message: Any) -> int:
        """Pi's `estimateTokens` of its own message object (`Message.raw`), as the exact walk's truth
        fit counted each entry's messages; chars/4 of the text for another agent's message."""
        from sessiontools.tokens.chars4 import estimate_tokens

        raw = message.raw
        return estimate_tokens(raw, self.version) if isinstance(raw, Mapping) else chars4(len(message.text))

    def truth_counter(self, tokenizer: str | None = None) -> Any:
        """With `tokenizer`: its count of Pi's own message object over the units Pi's chars/4 counts,
        as Pi's own count of each message."""
        if tokenizer is None:
            return self.truth_count
        from sessiontools.tokens.registry import shared_message_counter

        by_raw = shared_message_counter(tokenizer, self.version)
        other = super().truth_counter(tokenizer)
        return lambda m: by_raw(m.raw) if isinstance(m.raw, Mapping) else other(m)

    def path_counter(self, path: Any, tokenizer: str | None = None) -> Any:
        """`truth_counter(tokenizer)` over the messages of a Pi transcript path, each message's units
        read once for every counter and the sizer (`policies.pi.measures`), a tokenizer's counts of
        all of them asked in one batch; another agent's path: `truth_counter`."""
        one = self.truth_counter(tokenizer)
        if getattr(path, "native", None) is None:
            return one
        from sessiontools.policies.pi.measures import path_measures

        measures = path_measures(path, self.version)
        if tokenizer is None:
            counts = [-(-c // 4) for c in measures.chars]
        else:
            from sessiontools.tokens.registry import shared_units_counts

            counts = shared_units_counts(tokenizer, measures.texts, measures.images)
        owns = measures.owns

        def count(m: Any) -> int:
            return counts[m.index] if owns(m) else one(m)

        if min(measures.chars, default=0) >= 0:  # every message measured: its counts by index, as they are
            count.path_counts = (path.messages, counts)  # type: ignore[attr-defined]
        return count

    def count(self, view: CountView) -> float:
        if view.last_usage_total is not None:
            return view.last_usage_total + sum(chars4(c) for c, _ in view.trailing)
        return float(sum(chars4(c) for c, _ in view.context))

    def count_columns(self) -> tuple[Any, Any]:
        """`count` with a usage: the newest usage total plus chars/4 of each trailing message."""
        return _chars4_term, count_plus

    def checkpoint(self, path: Any, request: Any, context: Sequence[Any], resets: Sequence[int] = ()) -> Any:
        """Pi's own estimate before `request`, exactly: `estimateContextTokens` over Pi's own message
        objects (`Message.raw`) of the context (0.x), or 1.x's projected view that distrusts usage
        older than the newest reset before the request (a compaction or context edit, `resets`), then
        counts the whole context with chars/4 (the system messages merged as pi-ai sends them)."""
        from sessiontools.policies.checkpoint import Checkpoint
        from sessiontools.policies.pi.usage import current_system_message, estimate_context_tokens
        from sessiontools.tokens.chars4 import estimate_tokens

        raw = _Raws(context)
        est = estimate_context_tokens(raw, self.version)
        if est.last_usage_index is not None:
            used = context[est.last_usage_index]
            trailing = tuple(m.index for m in context[est.last_usage_index + 1:])
            if self.version == "0":
                return Checkpoint(est.tokens, est.usage_tokens, trailing, used.index)
            latest = max((line for line in resets if line < request.line), default=-1)
            if used.id is not None and used.line > latest:
                return Checkpoint(est.tokens, est.usage_tokens, trailing, used.index)
        if self.version == "0":
            return Checkpoint(est.tokens, 0, tuple(m.index for m in context))
        system = current_system_message(raw)
        tokens = estimate_tokens(system, "1") if system is not None else 0
        tokens += sum(estimate_tokens(r, "1") for r in raw if r.get("role") != "system")
        return Checkpoint(tokens, 0, tuple(m.index for m in context))

    def keep(self, candidates: Sequence[Candidate], settings: PolicySettings) -> Kept:
        acc = 0.0
        start = len(candidates)
        for k in range(len(candidates) - 1, -1, -1):
            c = candidates[k]
            acc += c.tokens if c.message is None else chars4(self.size(c.message)[0])  # Pi's estimateTokens
            start = k
            if acc >= settings.keep_recent_tokens:
                break
        cuts = [k for k, c in enumerate(candidates) if c.turn_start]  # Pi's valid cut points
        cut = next((k for k in cuts if k >= start), None)
        if cut is None and cuts:
            # None at or after it: 1.x cuts at the last valid cut point, 0.x keeps its first one.
            cut = cuts[-1] if self.version == "1" else cuts[0]
        return Kept(tuple(c.index for c in candidates[cut:]) if cut is not None else ())

    def sizer(self, path: Any) -> Any:
        """On a Pi transcript (its entries carried, `TranscriptPath.native`): the characters behind
        Pi's own `estimateTokens` of each message object (tool-call arguments, thinking, 1.x system
        sections), as the exact walk counts, and the bytes of those same units (Pi's count reads no
        bytes: this keeps a message's neutral units unbuilt); on another agent's, `size` (its text)."""
        if getattr(path, "native", None) is None:
            return self.size
        from sessiontools.policies.pi.measures import path_measures

        measures = path_measures(path, self.version)
        chars, nbytes, owns, v = measures.chars, measures.bytes, measures.owns, self.version

        def other(message: Any) -> tuple[int, int]:  # a message the measures do not own
            raw = message.raw
            if not isinstance(raw, Mapping):
                return self.size(message)
            from sessiontools.tokens.chars4 import message_chars

            return message_chars(raw, v), len(message.text.encode("utf-8"))

        def size(message: Any) -> tuple[int, int]:
            if owns(message):
                i = message.index
                return chars[i], nbytes[i]
            return other(message)

        own = measures.messages

        def many(messages: Iterable[Any]) -> list[tuple[int, int]]:
            """`size` of each message, in one call (a grid's workload), `owns` inlined (one loop: the
            same by `map` over `operator` callables measured 2.5x the instructions). It calls `other`,
            not `size`: `size.many` referring to `size` would be a cycle holding the path's messages
            until a collection (with the collector paused, a leak of every replayed path)."""
            n, out = len(own), []
            for m in messages:
                i = m.index
                out.append((chars[i], nbytes[i]) if 0 <= i < n and own[i] is m and chars[i] >= 0 else other(m))
            return out

        size.many = many  # type: ignore[attr-defined]  # (`replay.path_grid` reads it when present)
        return size

    def compactor(self, path: Any, truth: Any, settings: PolicySettings) -> Any:
        """Pi's exact `prepareCompaction` on the Pi entries of a Pi transcript path
        (`policies.pi.compactor`); None on another agent's (then `keep`, Pi's rule on neutral messages)."""
        if getattr(path, "native", None) is None:
            return None
        from sessiontools.policies.pi.compactor import PiCompactor

        return PiCompactor(path, truth, settings, self.version)

    def clears_recovery(self, stop_reason: str | None) -> bool:
        """Whether an assistant reply clears Pi's `_overflowRecoveryAttempted`: any reply but an error
        (0.73.1 `agent-session.js` `_processAgentEvent`); 1.6.0 also keeps it after `length`. A user
        message clears it too."""
        if stop_reason == "error":
            return False
        return not (self.version == "1" and stop_reason == "length")

    def recovery(self) -> PiRecovery:
        return PiRecovery(self)


class PiRecovery(Recovery):
    """Pi's `_overflowRecoveryAttempted`: Pi compacts and retries unless it already tried since the
    flag was last cleared (a user message, or a reply `PiPolicy.clears_recovery` accepts)."""

    __slots__ = ("policy",)
    clears_only = True  # `replied` clears `tried` by `PiPolicy.clears_recovery(stop_reason)` alone

    def __init__(self, policy: PiPolicy) -> None:
        super().__init__(True)
        self.policy = policy

    def replied(self, stop_reason: str | None) -> None:
        if self.policy.clears_recovery(stop_reason):
            self.tried = False

    def may_retry(self) -> bool:
        return not self.tried


class _Raws(Sequence[Any]):
    """Pi's own message objects (`Message.raw`) of a context, read through it (not copied)."""

    __slots__ = ("_context",)

    def __init__(self, context: Sequence[Any]) -> None:
        self._context = context

    def __len__(self) -> int:
        return len(self._context)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [m.raw for m in self._context[k]]
        return self._context[k].raw

    def __iter__(self) -> Iterator[Any]:
        return (m.raw for m in self._context)


def pi_policy(name: str | PolicyName) -> PiPolicy:
    """The Policy object for `pi-0` or `pi-1`."""
    n = PolicyName(name)
    if n not in (PolicyName.PI_0, PolicyName.PI_1):
        raise ValueError(f"{n} is not a Pi policy")
    return PiPolicy("1" if n == PolicyName.PI_1 else "0")


def _chars4_term(size: tuple[int, int]) -> int:
    return chars4(size[0])

