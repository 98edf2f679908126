"""One setting of a Pi session replayed as every replay runs it (`replay_source`, the one walk)."""

from __future__ import annotations

from typing import Any

from sessiontools.replay import ReplayRun, ReplaySettings, replay_source


def walk_run(session: Any, settings: ReplaySettings) -> ReplayRun:
    """The run of `session`'s default path under `settings` (window, reserve, keep, policy)."""
    (pr,) = replay_source(session, windows=[settings.context_window], reserves=[settings.reserve_tokens],
                          keeps=[settings.keep_recent_tokens], policy=settings.policy.value)
    return pr.runs[0]  # type: ignore[no-any-return]
