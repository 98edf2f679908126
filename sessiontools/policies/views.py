"""What a policy and the walk hand each other: the agent's view at a check point (`CountView`), a
message a compaction may keep (`Candidate`), what it keeps (`Kept`), what the walk knows when it
compacts (`CompactionAsk`) and a compaction as the agent's own code makes it (`Plan`). Re-exported
by `policies.base`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class CountView:
    """What the agent knows at a check point: the usage total it trusts from its newest reply since
    the last compaction (None when there is none), and the sizes of the messages after that reply
    (or of the whole context when there is no such reply), each as `(chars, bytes)`."""

    last_usage_total: float | None
    trailing: Sequence[tuple[int, int]] = ()
    context: Sequence[tuple[int, int]] = ()
    #: The context's messages (the transcript's `Message`s, aligned with `context`), for rules that
    #: read what a message is (Codex estimates the encrypted reasoning of earlier turns).
    messages: Sequence[Any] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A message a compaction may keep: its index, role, whether a turn may start there, its size."""

    index: int
    role: str
    turn_start: bool
    tokens: float
    message: Any = field(default=None, compare=False, repr=False)  # the transcript's Message, for rules that read it


@dataclass(slots=True)
class Kept:
    """What a policy keeps after its summary: message indices (ascending) and notes."""

    indices: tuple[int, ...]
    notes: list[str] = field(default_factory=list)
    #: The kept messages leave the context at the next user prompt that starts a new agent process
    #: (`Policy.new_process`): what the agent attached in memory and never wrote to its transcript.
    until_next_prompt: bool = False


@dataclass(frozen=True, slots=True)
class CompactionAsk:
    """What the walk knows when it compacts, for a policy's own compactor (`Policy.compactor`).

    `context`: message indices of the simulated context, in order (the newest compaction's kept
    messages, then the workload after it); `reply`: (message index, prompt tokens, output tokens,
    recorded) of the newest reply in it, where the walk has one since the last compaction (a reply
    the recording answered in that very context carries its own usage: `recorded`); `recorded`: the
    positions in the path's recorded compactions made right after the context's last message, not
    yet reproduced; `before_call`: it comes right before the model call after the context (a check
    before sampling or between turns, a retry after a rejection), not after a run's final reply."""

    reason: str
    context: tuple[int, ...]
    reply: tuple[int, float, int, bool] | None = None
    recorded: tuple[int, ...] = ()
    before_call: bool = False


@dataclass(frozen=True, slots=True)
class Plan:
    """A compaction as the agent's own code makes it (`Compactor.plan`): the messages it keeps, the
    tokens before it records, the size of its summarisation request's input, and, where the
    recording made this very compaction, which recorded one it is (its summary is taken)."""

    kept: tuple[int, ...]
    tokens_before: int
    summarization_input: float
    recorded: int | None = None
    parent_id: str | None = None  # the agent's own newest record before it (None: the context's last message's)
    first_kept_id: str | None = None  # the agent's own first kept record (None: the first kept message's)
    matches_recorded: bool = False
    summary_tokens: float | None = None  # the policy's own summary size (None: the walk's model)
    is_split_turn: bool = False
    messages_summarized: int = 0
    turn_prefix_messages: int = 0
    state: Any = field(default=None, compare=False, repr=False)  # the compactor's own, for `Compactor.made`
    #: The agent's own preparation of this compaction (Pi's `Preparation`), which `resummarize` builds its
    #: summarisation requests from; the walk carries it on the run's compaction and does not read it.
    preparation: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class GivenSummary:
    """A compaction's summary written by the walk's caller (`resummarize`): its text, and its truth in
    tokens as the endpoint counted them (None: the truth model's of the text)."""

    text: str
    tokens: float | None = None
