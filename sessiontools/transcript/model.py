"""The agent-neutral transcript model every analysis reads.

A reader (`read/<agent>/`) parses an agent's files into its own records; `transcript/<agent>.py`
turns them into these values. Everything above this layer (estimators, policies, replay, analysis)
reads only these types, so adding an agent is adding a reader, an adapter and a policy.

Shapes:
- `Transcript`: one file (one session), its paths (main chain first), diagnostics, recorded settings.
- `TranscriptPath`: one conversation line in order: `messages`, the `requests` made along it (each
  with its recorded `Usage` and the messages it sent, as index ranges), `compactions`, `overflows`.
- `Message`: text units with their kinds, so that any tokenizer counts the same text the agent sent.

A non-request is never a `Request`: a harness's pseudo-reply (zero usage, a model id that is no
model), an aborted or failed call. What was left out is counted in `TranscriptPath.skipped` with a
reason, so reports can say so; the aborted and failed calls an adapter can place are also
`TranscriptPath.unusable` (`UnusableReply`: their prompt was sent, so a replay bills and checks them),
and the replies recorded with no usage, a zero usage or a zero prompt `TranscriptPath.unmetered`
(`UnmeteredReply`: no truth to bill or fit; a replay counts them).

The values (`Unit`, `Usage`, `Message`, `Request`, ...) are never changed once built (use
`dataclasses.replace`). They are not `frozen` dataclasses only because a frozen dataclass's
constructor sets each field through `object.__setattr__`, about three times slower than a plain
one, and one is built for every message, unit and request of every file read; they compare and
hash by value all the same (`unsafe_hash`), as the readers' records do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import repeat
from typing import Any, overload

from sessiontools.read.agents import Agent

__all__ = ["Agent"]  # re-exported: the model names agents by the readers' enum


class Role(StrEnum):
    """Who a message is from, in terms every agent shares."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SUMMARY = "summary"
    OTHER = "other"


class UnitKind(StrEnum):
    """What a piece of text is: tokenizers and content-mix statistics care."""

    SYSTEM = "system"
    USER = "user"
    TEXT = "text"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    SUMMARY = "summary"
    IMAGE = "image"
    OTHER = "other"


class Trigger(StrEnum):
    """Why a compaction ran, as far as the file tells."""

    THRESHOLD = "threshold"
    MANUAL = "manual"
    OVERFLOW = "overflow"
    UNKNOWN = "unknown"


@dataclass(slots=True, unsafe_hash=True)  # a value: see the module docstring
class Unit:
    """One piece of text the model was sent or produced. A tool call is `name + arguments JSON`;
    an image has empty text (its size is the estimator's business)."""

    kind: UnitKind
    text: str


@dataclass(slots=True, unsafe_hash=True)  # a value: see the module docstring
class Cost:
    """The recorded itemised cost of one request in USD, when the file has one."""

    input: float
    cache_read: float
    cache_write: float
    output: float
    total: float


@dataclass(slots=True, unsafe_hash=True)  # a value: see the module docstring
class Usage:
    """Recorded usage by class, as the provider counted it."""

    input: int  # uncached input
    cache_read: int
    cache_write: int
    output: int
    cost: Cost | None = None
    #: the part of `cache_write` written to the 1-hour cache (Claude Code records
    #: `cache_creation.ephemeral_1h_input_tokens`; Anthropic bills it at twice the input price)
    cache_write_1h: int = 0

    @property
    def prompt(self) -> int:
        """A: the actual prompt tokens (input + cache read + cache write)."""
        return self.input + self.cache_read + self.cache_write

    @property
    def total(self) -> int:
        return self.prompt + self.output


@dataclass(slots=True, unsafe_hash=True)  # a value: see the module docstring
class Message:
    """One conversation item on a path."""

    index: int  # position in TranscriptPath.messages
    id: str | None  # the file's id for it (Pi entry id, Claude Code uuid, ...)
    line: int  # 1-based physical line in the file
    role: Role
    units: tuple[Unit, ...]
    timestamp: str | None = None
    #: the agent's own object for it, for estimators that must count exactly as that agent does
    raw: Any = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        return "\n".join(u.text for u in self.units if u.text)


class MessageColumns(Sequence[Message]):
    """A path's messages kept as the columns a reader's C scanner gives (ids, lines, roles), each
    `Message` (no units, no timestamp) made only when asked for: a `TranscriptPath.messages` for a
    transcript that is only counted (`inspect` of a summed-up Claude Code session or Codex rollout,
    `transcript.claude_summary`, `transcript.codex_summary`), where a `Message` per message was most of the transcript's cost
    (issue 28). Compares equal to the tuple of its messages; `inspect` reads the columns."""

    __slots__ = ("ids", "lines", "roles")

    def __init__(self, ids: list[str | None], lines: list[int], roles: list[Role]) -> None:
        self.ids, self.lines, self.roles = ids, lines, roles

    def __len__(self) -> int:
        return len(self.lines)

    @overload
    def __getitem__(self, i: int) -> Message: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Message, ...]: ...
    def __getitem__(self, i: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(i, slice):
            return tuple(self)[i]
        n = len(self.lines)
        k = i + n if i < 0 else i
        if not 0 <= k < n:
            raise IndexError("message index out of range")
        return Message(k, self.ids[k], self.lines[k], self.roles[k], ())

    def __iter__(self) -> Iterator[Message]:
        n = len(self.lines)
        return map(Message, range(n), self.ids, self.lines, self.roles, repeat((), n))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageColumns | tuple):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (a value, but compared by its messages: not hashed)


Ranges = tuple[tuple[int, int], ...]


def ranges_of(indices: Iterable[int]) -> Ranges:
    """Message indices, in order, as ranges: consecutive indices share one range."""
    return merge_ranges((i, i + 1) for i in indices)


def merge_ranges(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Ranges in the order given, empty ones dropped, touching ones joined (the concatenation is kept)."""
    out: list[tuple[int, int]] = []
    for a, b in ranges:
        if b <= a:
            continue
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return tuple(out)


@dataclass(slots=True, unsafe_hash=True)  # a value: see the module docstring
class Request:
    """One real model call with usable usage."""

    index: int  # position in messages of the (first) assistant message this call produced
    line: int
    usage: Usage
    context: Ranges  # the messages sent: the concatenation of messages[a:b] over these ranges
    provider: str | None = None
    model: str | None = None
    timestamp: str | None = None
    id: str | None = None  # the file's id of the reply (entry id, message id, response id)
    stop_reason: str | None = None
    context_window: int | None = None  # as the agent recorded it for this request, when it does

    def context_indices(self) -> Iterator[int]:
        for a, b in self.context:
            yield from range(a, b)


class BilledRows(Sequence[Request]):
    """A transcript's billed responses kept as a reader's C rows, each `Request` (no context, no
    context window) made only when asked for: a `Transcript.billed` for a transcript that is only
    counted (`transcript.claude_summary`, `transcript.codex_summary`), as `MessageColumns` for messages. A row is (line, model,
    timestamp, id, stop reason, input, cache read, cache write, output, 1h part of cache write);
    `provider` is every row's. Compares equal to the list of its requests; `inspect` reads the rows."""

    __slots__ = ("provider", "rows")

    def __init__(self, provider: str | None, rows: list[tuple[Any, ...]]) -> None:
        self.provider, self.rows = provider, rows

    def __len__(self) -> int:
        return len(self.rows)

    def _request(self, row: tuple[Any, ...]) -> Request:
        line, model, ts, rid, stop, i, r, w, o, h = row
        return Request(-1, line, Usage(i, r, w, o, None, h), (), self.provider, model, ts, rid, stop)

    @overload
    def __getitem__(self, i: int) -> Request: ...
    @overload
    def __getitem__(self, i: slice) -> list[Request]: ...
    def __getitem__(self, i: int | slice) -> Request | list[Request]:
        if isinstance(i, slice):
            return [self._request(row) for row in self.rows[i]]
        return self._request(self.rows[i])

    def __iter__(self) -> Iterator[Request]:
        return map(self._request, self.rows)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BilledRows | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


@dataclass(slots=True, unsafe_hash=True)  # a value: see the module docstring
class Compaction:
    """A recorded compaction: the history before it was replaced by a summary."""

    index: int  # position in messages of the summary message that replaced the history
    line: int
    trigger: Trigger
    tokens_before: int | None  # as recorded
    tokens_after: int | None = None
    summary: str | None = None  # readable summary text (None when encrypted or absent)
    writer: str = "agent"  # "agent", "hook" (an extension or hook wrote it), "provider" (remote)
    kept: Ranges = ()  # messages kept verbatim after it
    id: str | None = None
    timestamp: str | None = None


@dataclass(slots=True, unsafe_hash=True)  # a value: see the module docstring
class Overflow:
    """A request the provider rejected as too long."""

    index: int
    line: int
    text: str
    provider_tokens: int | None = None  # "prompt is too long: 205334 tokens > 200000 maximum" -> 205334
    provider_limit: int | None = None  # -> 200000


@dataclass(slots=True, unsafe_hash=True)  # a value: see the module docstring
class UnusableReply:
    """A model call whose reply the agent recorded without a usage it trusts: aborted (the user
    stopped it), or ended by an error that is not a context overflow (`Overflow`). Not a `Request`
    (its usage is no truth), but the prompt was sent: a replay bills it at the truth of its context,
    and a policy that checks after a run's final reply checks after it too (`Policy.unusable_count`)."""

    index: int  # position in messages of the assistant message the call produced
    line: int
    stop_reason: str  # as recorded ("aborted", "error")
    usage: Usage | None = None  # as recorded (its classes and cost are what the call cost), None: none
    usage_total: int = 0  # the agent's own total of the usage it recorded (Pi: `calculateContextTokens`)
    id: str | None = None
    timestamp: str | None = None
    provider: str | None = None  # the model that was called, as recorded (its window: `replay.transcripts`)
    model: str | None = None

    @property
    def output(self) -> int:
        """The output tokens its usage records (0 without one)."""
        return self.usage.output if self.usage is not None else 0


@dataclass(slots=True, unsafe_hash=True)  # a value: see the module docstring
class UnmeteredReply:
    """A reply the agent recorded with no usage, an all-zero usage or a zero prompt ("unmetered"):
    the file says nothing of what its prompt cost. Not a `Request` (a prompt of 0 is no truth) and not
    an `UnusableReply` (nothing says a prompt was billed): a replay makes no request point of it, bills
    nothing for it and fits nothing to it; its messages stay on the path as content, and the run record
    counts it (`unmetered_replies`) so that a table can say what it left out."""

    index: int  # position in messages of the assistant message
    line: int
    reason: str  # "no usage", "zero usage" or "zero prompt"
    usage: Usage | None = None  # as recorded (its output, if any), None: none


@dataclass(slots=True, weakref_slot=True)
class TranscriptPath:
    """One conversation line: the main chain, one branch, or one sidechain (a subagent). Weakly
    referable: a memo of what is read from a path lives as long as the path (`policies.claude_code`)."""

    leaf_id: str | None
    messages: tuple[Message, ...] | MessageColumns
    requests: tuple[Request, ...]
    compactions: tuple[Compaction, ...]
    overflows: tuple[Overflow, ...]
    sidechain: bool = False
    skipped: Counter[str] = field(default_factory=Counter)  # replies that are not requests, by reason
    #: The agent's own records of the path, as its adapter gives them beside the messages (Pi: its
    #: entries and each message's entry, `transcript.pi.neutral.EntryTable`), for an exact port of
    #: the agent's code (`Policy.compactor`); None when the adapter keeps none.
    native: Any = None
    #: The calls the agent recorded without a usage it trusts (`UnusableReply`), in path order.
    unusable: tuple[UnusableReply, ...] = ()
    #: The replies recorded without a prompt's usage (`UnmeteredReply`), in path order.
    unmetered: tuple[UnmeteredReply, ...] = ()

    def context(self, request: Request) -> list[Message]:
        """The messages `request` sent, in order."""
        return [self.messages[i] for i in request.context_indices()]


@dataclass(slots=True)
class Transcript:
    """One session file of one agent, read into the neutral model."""

    agent: Agent
    source: str  # the file it came from
    session_id: str | None
    format: str  # e.g. "pi-v3", "codex-0.171", "claude-code-2.1"
    paths: list[TranscriptPath]  # main path first
    diagnostics: list[Any] = field(default_factory=list)  # read.Diagnostic
    settings: dict[str, Any] = field(default_factory=dict)  # what the agent recorded about its config
    #: Every billed response in the file, once each, on any path or none (branches off the resumed
    #: path, sidechains, subagent files): what the user paid for. Empty when the reader has no list
    #: of its own: then the requests of `paths` are the billed ones (`billed_requests`).
    billed: list[Request] | BilledRows = field(default_factory=list)
    #: Recorded compactions on no path of `paths` (branches off the resumed path), in file order.
    off_path_compactions: list[Compaction] = field(default_factory=list)

    def billed_requests(self) -> list[Request]:
        """`billed`, else every request of every path once (by line and id)."""
        if self.billed:
            return list(self.billed)
        seen: set[tuple[int, str | None]] = set()
        out: list[Request] = []
        for p in self.paths:
            for r in p.requests:
                if (r.line, r.id) not in seen:
                    seen.add((r.line, r.id))
                    out.append(r)
        return out

    @property
    def main(self) -> TranscriptPath | None:
        return self.paths[0] if self.paths else None
