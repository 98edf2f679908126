"""One setting of a Pi session replayed as every replay runs it (`replay_source`, the one walk), and
the one truth model it fits."""

from __future__ import annotations

from typing import Any

from sessiontools.policies.registry import own_policy
from sessiontools.replay import ReplayRun, ReplaySettings, replay_source
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.truth_model import TruthModel
from sessiontools.transcript.load import transcript_of


def walk_run(session: Any, settings: ReplaySettings) -> ReplayRun:
    """The run of `session`'s default path under `settings` (window, reserve, keep, policy)."""
    (pr,) = replay_source(session, windows=[settings.context_window], reserves=[settings.reserve_tokens],
                          keeps=[settings.keep_recent_tokens], policy=settings.policy.value)
    return pr.runs[0]  # type: ignore[no-any-return]


def pi_truth(session: Any, *, prior: Any = None, summary_tokens: float | None = None, **kw: Any) -> TruthModel:
    """The one truth model of `session`'s default path as replay fits it (`fit_neutral_truth` with
    the file's own policy: Pi's `estimateTokens` counts each message); `kw`: `tokenizer`, `counter`."""
    t = transcript_of(session)
    path = t.paths[0]
    return fit_neutral_truth(path, summary_tokens, prior, own_policy(t, path), **kw)
