"""The agent-neutral truth model: what a simulated context of any agent's `TranscriptPath` costs.

`NeutralTruth`: overhead + each message's tokens (what the recorded usage attributes to it by the
one attribution rule of every agent, `replay.truth.attribute`, else ratio * chars/4) + the simulated summaries, fitted on the path's own
requests by the one truth-fit rule (`replay.truth.fit_overhead_ratio`). The walk that uses it is
`replay.walk`.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sessiontools.policies.base import chars4
from sessiontools.replay.priors import TruthPrior, prior_text
from sessiontools.transcript.model import Message, Role, TranscriptPath

DEFAULT_SUMMARY_TOKENS = 1500
TURN_START_ROLES = (Role.USER, Role.ASSISTANT, Role.SUMMARY, Role.OTHER)


@dataclass(frozen=True, slots=True)
class NeutralTruth:
    """Truth of a context: overhead + each message's tokens (+ summaries). A message's tokens are
    what the recorded usage attributes to it (`attribute_messages`), else ratio * chars/4."""

    overhead: float
    ratio: float
    summary_tokens: float
    n: int  # requests fitted
    attributed: Mapping[int, float] = field(default_factory=dict)
    prior_dominated: bool = True  # too few requests for the data alone to decide (`fit_overhead_ratio`)
    prior: TruthPrior | None = None  # learnt from the run's other sessions (None: PRIOR_RATIO)
    messages: int = 0  # messages of the path (those not attributed are modelled)

    def message_tokens(self, m: Message) -> float:
        got = self.attributed.get(m.index)
        return got if got is not None else self.ratio * chars4(len(m.text))

    def to_dict(self) -> dict[str, Any]:
        """The run record's `truth_model`."""
        return {
            "overhead_tokens": round(self.overhead), "ratio_to_chars4": round(self.ratio, 4),
            "entries_attributed": len(self.attributed), "entries_modelled": self.messages - len(self.attributed),
            "summary_tokens": round(self.summary_tokens), "requests_fitted": self.n,
            "prior_dominated": self.prior_dominated,
            "notes": [f"{self.n} request(s): overhead and ratio shrunk toward the prior ({prior_text(self.prior)})"]
            if self.prior is not None and self.prior_dominated else [],
        }


def attribute_messages(path: TranscriptPath, overhead: float = 0.0) -> dict[int, float]:
    """Each message's tokens as the recorded usage tells them, by message index: the one attribution
    of every agent (`replay.truth.attribute`: the growth of the prompt between two requests of one
    context shared over the messages appended, in proportion to chars/4; after a compaction or an edit
    the messages not known yet share what the prompt leaves after `overhead` and the known ones)."""
    from sessiontools.replay.truth import attribute

    counted = {m.index: chars4(len(m.text)) for m in path.messages}
    contexts = []
    wanted = {}
    for k, r in enumerate(path.requests):
        ctx = list(r.context_indices())
        contexts.append((k, ctx, len(ctx), None))
        wanted[k] = float(r.usage.prompt)
    return attribute(contexts, wanted, counted, overhead, key=_itself)


def _itself(x: int) -> int:
    return x


def fit_neutral_truth(path: TranscriptPath, summary_tokens: float | None = None,
                      prior: TruthPrior | None = None) -> NeutralTruth:
    """Fit overhead and ratio on the path's requests (A ~ O + r * chars/4 of the context) by the one
    truth-fit rule of every agent (`replay.truth.fit_overhead_ratio`: shrunk toward the prior when
    there are few requests, ratio and overhead within physical bounds; `prior`: a ratio learnt from the
    run's other sessions, `replay.priors`)."""
    from sessiontools.replay.truth import PRIOR_RATIO, fit_overhead_ratio

    prior_ratio = prior.ratio if prior is not None else PRIOR_RATIO
    if not path.requests:  # nothing to fit: the prior's ratio times chars/4, no overhead
        return NeutralTruth(0.0, prior_ratio, float(summary_tokens or DEFAULT_SUMMARY_TOKENS), 0, prior=prior,
                            messages=len(path.messages))
    c4 = [chars4(len(m.text)) for m in path.messages]  # once per message, summed per request below
    xs = [float(sum(c4[i] for i in r.context_indices())) for r in path.requests]
    ys = [float(r.usage.prompt) for r in path.requests]
    fit = fit_overhead_ratio(xs, ys, prior_ratio)
    overhead, ratio = fit.overhead, fit.ratio
    if summary_tokens is None:
        # The summary message as the agent sent it (Codex: its fixed prefix + the summary). Not the
        # recorded tokens after: Codex and Claude Code record the whole new context there, whose kept
        # messages the simulator counts itself.
        sums = [len(path.messages[c.index].text) if c.index < len(path.messages) else len(c.summary or "")
                for c in path.compactions if c.summary]
        summary_tokens = ratio * chars4(int(statistics.median(sums))) if sums else DEFAULT_SUMMARY_TOKENS
    ratio = ratio if ratio > 0 else 1.0
    # With the fitted overhead every recorded context's truth is its recorded prompt (`attribute`).
    attributed = attribute_messages(path, overhead)
    return NeutralTruth(overhead, ratio, float(summary_tokens), fit.n, attributed, fit.prior_dominated, prior,
                        len(path.messages))
