"""A truth model that knows each recorded message's own tokens: usage deltas attributed to messages.

`replay.neutral.NeutralTruth` prices every message at ratio * chars/4, which is far off for text
whose tokens per character differ from the session's average (CJK, code, base64). When two
consecutive requests of a path share their context (the second sent the first's messages and then
some), the provider counted exactly the new messages' tokens: `prompt(second) - prompt(first)`.
This model gives each message its share of that delta (in proportion to chars/4, at least 1 per
message); messages no delta covers (the first request's, those around a compaction) keep the
fitted ratio. A compaction's summary is priced as the first request after it measured it: its
prompt minus the overhead and the kept messages (the median over the path's compactions).

This is what Pi's exact replay does with its entries (`replay.truth`), for any agent's transcript.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from sessiontools.policies.base import chars4
from sessiontools.replay.neutral import NeutralTruth, fit_neutral_truth
from sessiontools.transcript.model import Message, TranscriptPath


@dataclass(frozen=True, slots=True)
class AttributedTruth(NeutralTruth):
    """NeutralTruth with recorded per-message tokens where the usage deltas tell them."""

    tokens: dict[int, float] = field(default_factory=dict)  # message index -> tokens
    attributed: int = 0

    def message_tokens(self, m: Message) -> float:
        t = self.tokens.get(m.index)
        return t if t is not None else self.ratio * chars4(len(m.text))


def _attribute(path: TranscriptPath) -> dict[int, float]:
    out: dict[int, float] = {}
    prev: tuple[list[int], int] | None = None
    for r in path.requests:
        ctx = list(r.context_indices())
        if prev is not None and len(ctx) > len(prev[0]) and ctx[:len(prev[0])] == prev[0]:
            new = ctx[len(prev[0]):]
            delta = r.usage.prompt - prev[1]
            weights = [max(1, chars4(len(path.messages[i].text))) for i in new]
            if delta >= len(new):
                total = sum(weights)
                for i, w in zip(new, weights, strict=True):
                    out.setdefault(i, delta * w / total)
        prev = (ctx, r.usage.prompt)
    return out


def attributed_truth(path: TranscriptPath, summary_tokens: float | None = None) -> AttributedTruth:
    """Fit the ratio model (`fit_neutral_truth`), then attribute the usage deltas (module docstring)."""
    base = fit_neutral_truth(path, summary_tokens)
    tokens = _attribute(path)
    truth = AttributedTruth(base.overhead, base.ratio, base.summary_tokens, base.n, tokens, len(tokens))
    if summary_tokens is None:
        measured = []
        for c in path.compactions:
            after = next((r for r in path.requests if r.index > c.index), None)
            if after is None or c.index not in set(after.context_indices()):
                continue
            rest = sum(truth.message_tokens(path.messages[i]) for i in after.context_indices() if i != c.index)
            if (s := after.usage.prompt - truth.overhead - rest) > 0:
                measured.append(s)
        if measured:
            truth = AttributedTruth(base.overhead, base.ratio, float(statistics.median(measured)), base.n, tokens,
                                    len(tokens))
    return truth
