"""What estimate-error reads for one file (`Source`): a neutral transcript plus what the agent's
rules need beyond it. Built by `analysis.estimate.source.transcript_source`, for an agent whose
reader keeps more than the transcript by its own maker (`transcript.load.ESTIMATE_SOURCES`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sessiontools.transcript.model import Agent, Request, Transcript


@dataclass(slots=True)
class Source:
    """One file as estimate-error reads it."""

    transcript: Transcript
    #: per path: file lines after which the agent distrusts earlier usage (Pi 1.x: compactions, edits)
    resets: list[tuple[int, ...]] = field(default_factory=list)
    #: skipped replies by reason, each counted once over every path
    skipped: Counter[str] = field(default_factory=Counter)
    version: str | None = None  # the agent's rule version (Pi: "0" or "1")
    #: per path: rejected requests whose error states the provider's count (A known), kind `overflow`
    overflows: list[tuple[Request, ...]] = field(default_factory=list)
    #: The messages' `raw` are the agent's own message objects, measured as the agent counts them
    #: (`MessageMeasurer.native`: Pi's dicts); else each message is measured over its neutral units.
    native_messages: bool = False
    #: The context's system messages are sent merged into one (Pi 1.x, as pi-ai does).
    merges_systems: bool = False

    @property
    def agent(self) -> Agent:
        return self.transcript.agent
