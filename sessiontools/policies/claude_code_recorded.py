"""What a Claude Code recording shows about its release's rule: the count the release compared with
its threshold before each request it sent (`recorded_counts`), whether and from where auto-compact
was switched off (`auto_compact_off`, `threshold_off_from`), and so which rule wrote the file
(`default_policy`). The rule itself is `policies.claude_code` (and its versions, `claude_code_rules`).
"""

from __future__ import annotations

import weakref
from typing import Any

from sessiontools.policies.base import CountView, PolicyName
from sessiontools.policies.claude_code import ClaudeCodePolicy, claude_threshold
from sessiontools.policies.claude_code_rules import (
    DEFAULT_WINDOW,
    LONG_WINDOW,
    NEWEST,
    context_window,
    model_default_window,
    rule_for,
)
from sessiontools.policies.claude_code_rules import threshold as rule_threshold
from sessiontools.transcript.model import Role, Transcript, TranscriptPath, Trigger

#: `recorded_counts` by id(path), while the path lives, then by (rule, model): `default_policy` and
#: `Policy.threshold_off_from` read one pass over a file.
_COUNTS: dict[int, tuple[weakref.ref[TranscriptPath], dict[tuple[Any, str | None], list[tuple[int, float]]]]] = {}


def recorded_counts(path: TranscriptPath, policy: ClaudeCodePolicy | None = None) -> list[tuple[int, float]]:
    """(message index, count) at each request the recording sent (answered or rejected), in order: the
    count `policy`'s release compared with T before it (its newest reply's usage, plus its estimate of
    the messages after that reply); no count before a session's first reply or after a compaction
    until the next reply. `policy` None: the newest usage alone. The same list for the same path and
    rule (do not change it)."""
    got = _COUNTS.get(id(path))
    if got is None or got[0]() is not path:
        key = id(path)
        try:
            ref = weakref.ref(path, lambda _, key=key: _COUNTS.pop(key, None))
        except TypeError:  # a path-like object that cannot be weakly referenced: not memoised
            return _recorded_counts(path, policy)
        got = _COUNTS[key] = (ref, {})
    rule = (policy.rule if policy is not None else None, policy.model if policy is not None else None)
    counts = got[1].get(rule)
    if counts is None:
        counts = got[1][rule] = _recorded_counts(path, policy)
    return counts


def _recorded_counts(path: TranscriptPath, policy: ClaudeCodePolicy | None) -> list[tuple[int, float]]:
    cuts = sorted(c.index for c in path.compactions)
    starts = {e.index for e in (*path.requests, *path.overflows)}
    answered = {r.index: r for r in path.requests}
    events = sorted(starts)
    out: list[tuple[int, float]] = []
    last: tuple[int, float] | None = None  # (last message of the newest reply, its usage total)
    for ix in events:
        if last is not None and not any(last[0] < c < ix for c in cuts):
            count = last[1]
            if policy is not None:
                view = CountView(last[1], [policy.size(m) for m in path.messages[last[0] + 1:ix]])
                count = policy.count(view)
            out.append((ix, count))
        r = answered.get(ix)
        if r is not None:
            end = ix
            while end + 1 < len(path.messages) and path.messages[end + 1].role == Role.ASSISTANT and end + 1 not in starts:
                end += 1
            u = r.usage
            last = (end, float(u.input + u.cache_read + u.cache_write + u.output))
    return out


def auto_compact_off(path: TranscriptPath, threshold: int, policy: ClaudeCodePolicy | None = None) -> bool:
    """Whether the file shows auto-compact was off: a request was sent (answered or rejected) while the
    release's count (`recorded_counts`) was already at or above `threshold`, with no compaction
    between that count's reply and the request (every release checks its count before each request)."""
    return any(c >= threshold for _, c in recorded_counts(path, policy))


def threshold_off_from(path: TranscriptPath, threshold: int, policy: ClaudeCodePolicy | None = None) -> int | None:
    """The first request after the last recorded threshold compaction that was sent while the
    release's count (`recorded_counts`) was at or above `threshold` (None: none): from there the
    file shows auto-compact was switched off for the rest of the session (`/config` saves it at once;
    every release checks it before each threshold check). Earlier requests were all counted below
    `threshold`, so switching off there changes nothing the walk would have fired on."""
    last = max((c.index for c in path.compactions if c.trigger == Trigger.THRESHOLD), default=-1)
    return next((ix for ix, c in recorded_counts(path, policy) if ix > last and c >= threshold), None)


def _model_default(t: Transcript, version: str | None, model: str | None) -> int | None:
    """The "model-default" window the file's release gave its model (`model_default_window`), at the
    window it ran (1M when a request was answered with a prompt above 200k, else the model's)."""
    largest = t.settings.get("largest_answered_prompt")
    window = LONG_WINDOW if isinstance(largest, int) and largest > DEFAULT_WINDOW else context_window(model)
    return model_default_window(version, model, window)


def default_policy(t: Transcript) -> PolicyName:
    """The rule that wrote a Claude Code file: `claude-code-reactive` when it compacted only after the
    provider rejected a request (the lab's reactive recordings: no threshold compaction, at least one
    reactive one), when the release compacts at its threshold only with a configured auto-compact
    window (2.1.332: `threshold_needs_window`), the file has no threshold compaction and the release
    gives the model no "model-default" window (`model_default_window`) or the file shows it off, or when
    auto-compact was evidently off (no automatic compaction, and a request sent with the release's
    count at or above its own threshold for the model, `auto_compact_off`); else `claude-code`."""
    main = [p for p in t.paths if not p.sidechain]
    triggers = {c.trigger for p in main for c in p.compactions}
    if Trigger.OVERFLOW in triggers and Trigger.THRESHOLD not in triggers:
        return PolicyName.CLAUDE_CODE_REACTIVE
    if Trigger.THRESHOLD not in triggers and main:
        version = t.settings.get("version")
        rule = rule_for(version if isinstance(version, str) else None)
        model = next((r.model for r in reversed(main[0].requests) if r.model), None)
        pol = ClaudeCodePolicy(rule=rule, model=model)
        if rule.threshold_needs_window:  # no threshold compaction: no auto-compact window was configured,
            given = _model_default(t, version if isinstance(version, str) else None, model)
            if given is None or auto_compact_off(main[0], claude_threshold(given), pol):
                return PolicyName.CLAUDE_CODE_REACTIVE  # nor one the release gives the model (or it was off)
            return PolicyName.CLAUDE_CODE
        if rule is not NEWEST and auto_compact_off(main[0], rule_threshold(rule, context_window(model), model), pol):
            return PolicyName.CLAUDE_CODE_REACTIVE
    return PolicyName.CLAUDE_CODE
