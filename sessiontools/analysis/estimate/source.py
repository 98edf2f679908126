"""What estimate-error reads for one file: a neutral transcript plus what the agent's rules need.

`transcript_source(loaded, ...)` turns whatever a reader loaded into a `Source`
(`transcript.source`): an agent whose reader keeps more than the transcript (Pi: its session tree,
for context edits and resets) by its own maker (`transcript.load.ESTIMATE_SOURCES`), any other
through its transcript adapter; everything after it reads `transcript.model` types only.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sessiontools.transcript.model import Transcript
from sessiontools.transcript.source import Source

__all__ = ["Source", "transcript_source"]


def _has_agent(loaded: Any) -> bool:
    return getattr(loaded, "agent", None) is not None


def _other_source(loaded: Any, leaf: str | None, all_leaves: bool, version: str | None) -> Source:
    """A loaded file through its agent's transcript adapter (`transcript.load.transcript_of`)."""
    from sessiontools.transcript.load import transcript_of

    t = transcript_of(loaded, leaf=leaf, all_leaves=all_leaves)
    return transcript_source(t, version=version or t.format)


def transcript_source(loaded: Any, *, leaf: str | None = None, all_leaves: bool = False,
                      version: str | None = None) -> Source:
    """The Source of one loaded file of any agent (or of a `Transcript`)."""
    if isinstance(loaded, Transcript):
        resets = [tuple(c.line for c in p.compactions) for p in loaded.paths]
        skipped: Counter[str] = Counter()
        for p in loaded.paths:
            skipped.update(p.skipped)
        return Source(loaded, resets, skipped, version)
    if _has_agent(loaded):
        from sessiontools.transcript.load import ESTIMATE_SOURCES

        make = ESTIMATE_SOURCES.get(loaded.agent, _other_source)
        return make(loaded, leaf, all_leaves, version)
    raise TypeError(f"estimate-error cannot read a {type(loaded).__name__}")
